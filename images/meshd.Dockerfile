# <hub>/meshd:<tag>: the control-plane daemon `mesh-discovery` (the Deployment `meshd` runs
# `command: [mesh-discovery]`), on the pinned Node runtime, as uid 1337 with nothing writable.
ARG BUILD_IMAGE=meshproject/mesh-build:latest
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
FROM ${BUILD_IMAGE} AS build

FROM ${NODE_IMAGE}
COPY --from=build /app /app
RUN ln -s /app/dist/bin/mesh-discovery.js /usr/local/bin/mesh-discovery \
 && ln -s /app/dist/bin/meshctl.js /usr/local/bin/meshctl
USER 1337:1337
ENTRYPOINT ["/usr/local/bin/mesh-discovery"]
