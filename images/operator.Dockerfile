# <hub>/operator:<tag>: the operator controller `mesh-operator` (the Deployment of
# `meshctl operator dump` runs `command: [mesh-operator]`), with the profiles and CRDs it installs.
ARG BUILD_IMAGE=meshproject/mesh-build:latest
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
FROM ${BUILD_IMAGE} AS build

FROM ${NODE_IMAGE}
COPY --from=build /app /app
RUN ln -s /app/dist/cli/mesh-operator.js /usr/local/bin/mesh-operator
USER 1337:1337
ENTRYPOINT ["/usr/local/bin/mesh-operator"]
