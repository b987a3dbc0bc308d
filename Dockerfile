# syntax=docker/dockerfile:1
# Build stage: compile TypeScript with the dev dependencies.
# NOTE: the image's Node 24 is the runtime. --ignore-scripts also skips the postinstall
# that provisions a Node on older machines (scripts/provision-node.mjs); on 24 it would
# provision nothing anyway.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json

# Runtime stage: production dependencies and the compiled output only.
FROM node:24-bookworm-slim
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
RUN ln -s /app/dist/cli/main.js /usr/local/bin/switchyard && chmod +x /app/dist/cli/main.js
# NOTE: a fixed non-root uid so Kubernetes' runAsNonRoot can verify it.
RUN groupadd --gid 10001 switchyard && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin switchyard
USER 10001:10001
EXPOSE 8080 9464
ENTRYPOINT ["switchyard"]
CMD ["all", "--config", "/etc/switchyard/switchyard.yaml"]
