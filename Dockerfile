# One image for the API, the worker, the migrations and the payments emulator; docker-compose.yml
# picks the process with `command`. TypeScript runs through tsx, so there is no build step.
FROM node:20-slim

WORKDIR /app
ENV NODE_ENV=production

# Dependencies first, so code changes do not reinstall them. tsx is a runtime dependency.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY . .

USER node
EXPOSE 3000
CMD ["npm", "run", "api"]
