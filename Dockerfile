# syntax=docker/dockerfile:1
# Build, check and push: docs/operations.md#build-and-push-the-image (scripts/check-image.sh).
#
# The Node base image of both stages. A registry mirror, or a vetted copy of the same
# image, can stand in for Docker Hub's:
#   docker build --build-arg NODE_IMAGE=mirror.example.com/library/node:24-bookworm-slim .
ARG NODE_IMAGE=node:24-bookworm-slim

# Build stage: compile TypeScript with the dev dependencies.
# NOTE: the image's Node 24 is the runtime. --ignore-scripts also skips the postinstall
# that provisions a Node on older machines (scripts/provision-node.mjs); on 24 it would
# provision nothing anyway.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY console ./console
COPY scripts/build-console.mjs ./scripts/
RUN npx tsc -p tsconfig.build.json && node scripts/build-console.mjs

# Runtime stage: production dependencies and the compiled output only.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
# NOTE: 64 MB semi-spaces for V8's young generation, more than its default: the roles
# allocate a short-lived object graph per call and event, and with the default the router
# spent much of its CPU in scavenges; the flag costs some resident memory at full load
# (npm run bench -- route; figures: docs/architecture.md#measured-figures-behind-the-code).
# `npm run bench` runs with the same flag (package.json).
ENV NODE_OPTIONS=--max-semi-space-size=64
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY config ./config
COPY LICENSE ./
LABEL org.opencontainers.image.title="switchyard" \
      org.opencontainers.image.description="Kafka-based event router: Segment-spec calls in, signed webhooks out" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN ln -s /app/dist/cli/main.js /usr/local/bin/switchyard && chmod +x /app/dist/cli/main.js
# NOTE: a fixed non-root uid so Kubernetes' runAsNonRoot can verify it.
RUN groupadd --gid 10001 switchyard && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin switchyard
USER 10001:10001
EXPOSE 8080 9464
ENTRYPOINT ["switchyard"]
CMD ["all", "--config", "/etc/switchyard/switchyard.yaml"]
