# <hub>/proxy:<tag>: an Envoy base image plus the agent `mesh-agent` (docs/spec/CONVENTIONS.md).
# The injected containers give only arguments, so the entry point is the agent: `mesh-init` runs
# `capture ...` (iptables-restore, as root with NET_ADMIN), `mesh-proxy` runs `proxy sidecar ...`
# as uid 1337, gateways `proxy router ...`. The agent runs on the Node runtime copied from the
# pinned Node image (the binary needs libstdc++, installed here with iptables).
#
# ENVOY_IMAGE is pinned by tag; pass --build-arg ENVOY_IMAGE=envoyproxy/envoy:v1.36.0@sha256:<digest>
# (scripts/images.sh --envoy-image) to pin the digest as well.
ARG BUILD_IMAGE=meshproject/mesh-build:latest
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
ARG ENVOY_IMAGE=envoyproxy/envoy:v1.36.0
FROM ${BUILD_IMAGE} AS build
FROM ${NODE_IMAGE} AS node

FROM ${ENVOY_IMAGE}
USER root
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends iptables libstdc++6 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=build /app /app
RUN ln -s /app/dist/bin/mesh-agent.js /usr/local/bin/mesh-agent \
 && mkdir -p /etc/mesh/proxy /var/lib/mesh/data /var/run/secrets/workload-spiffe-uds \
 && chown -R 1337:1337 /etc/mesh/proxy /var/lib/mesh/data /var/run/secrets/workload-spiffe-uds
USER 1337:1337
ENTRYPOINT ["/usr/local/bin/mesh-agent"]
