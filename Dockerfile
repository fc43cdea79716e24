# The provider image: `node dist/daemon.js`, production dependencies
# only, running as uid/gid 65532 (daemonset/base/daemonset.yaml prepares the socket
# directory for that group).
#
#   docker build -t vault-csi-provider-ts:0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" .
#
# Base: Node.js 26 "Lithium", the Active LTS line (LTS since 2026-10-28, supported until the
# end of April 2029), on Debian 13 (trixie) slim. Pinned to the exact release tag rather than
# `26-slim`, so a rebuild runs the Node version it was tested with and an upgrade is a
# reviewed one-line change (Renovate and Dependabot both bump such tags). The tag pins
# Node, not the Debian layer under it: to make builds bit-for-bit repeatable, append the
# digest your registry resolves (`node:26.13.0-trixie-slim@sha256:…`).
# test/deploy/dockerfile.test.ts lints this file with hadolint, checks the policy above,
# and starts dist/ exactly as ENTRYPOINT + CMD below would.

# ---- build: compile TypeScript, then join the daemon's modules into dist/daemon.js (needs the
# dev dependencies: tsc, esbuild)
FROM node:26.13.0-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY scripts/bundle.mjs ./scripts/
COPY src ./src
# proto/messages.cjs (the gRPC messages' code, package.json's "#proto-messages") goes into the bundle.
COPY proto ./proto
RUN npx tsc -p tsconfig.json --outDir dist && node scripts/bundle.mjs

# ---- deps: production dependencies only
FROM node:26.13.0-trixie-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts

# ---- runtime
FROM node:26.13.0-trixie-slim
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="vault-csi-provider-ts" \
      org.opencontainers.image.description="HashiCorp Vault / OpenBao provider for the Kubernetes Secrets Store CSI driver" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="docker.io/library/node:26.13.0-trixie-slim"
ENV NODE_ENV=production
# V8's code caches, written once below at build time and read by every start: Node's own compile
# cache (Node >= 22.1) for the modules it loads, and the launcher's (dist/daemon.js,
# src/launcher/) for the daemon's joined modules, made after a start so that it holds the functions
# a start runs (~30 ms less per start on Node 26, npm run bench, footprint). Both name the Node
# version and flags they were made with. At run time (read-only root filesystem) nothing is
# written: without a matching cache the daemon starts as it would without one.
ENV NODE_COMPILE_CACHE=/app/.compile-cache
WORKDIR /app
# npm, npx and corepack are not used at run time: leave them (and their advisories) out.
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack
COPY --from=deps /app/node_modules ./node_modules
# dist/daemon.js is the launcher, dist/daemon-main.cjs (and its map) the daemon's modules joined;
# dist/src is tsc's output, for the CLI (node dist/src/cli/main.js).
COPY --from=build /app/dist/daemon.js /app/dist/daemon-main.cjs /app/dist/daemon-main.cjs.map ./dist/
COPY --from=build /app/dist/src ./dist/src
# proto/messages.cjs: the gRPC messages' code, generated from the .proto files beside it (the CLI,
# dist/src, loads it through package.json's "#proto-messages"; the daemon has it inside dist/daemon-main.cjs).
COPY proto ./proto
COPY package.json ./
RUN mkdir .compile-cache && chown 65532:65532 .compile-cache
USER 65532:65532
# Fills the caches as the daemon's user with the ENTRYPOINT's flags: -fill-code-cache starts the
# daemon on a private socket (and an ephemeral loopback health port), writes the cache once it
# serves, and stops it.
RUN ["node", "--max-semi-space-size=2", "--max-old-space-size=128", "dist/daemon.js", "-fill-code-cache"]
# node itself is PID 1 (not npm or a shell, which do not pass SIGTERM on), so the daemon
# drains its Mounts on SIGTERM. dist/daemon.js runs the daemon's modules joined in one file
# (scripts/bundle.mjs; packages stay in node_modules): Node loads one module instead of ~60,
# ~35–45 ms less per start. Source maps are not loaded: they cost start-up time and memory on
# every node (npm run bench, footprint); `node --enable-source-maps dist/src/main.js` runs the
# same code unjoined and maps a trace to src/ when needed.
# The heap flags keep a 110-pod Mount storm's peak RSS low (npm run bench, footprint); the
# bench reads them, and the script, from here.
ENTRYPOINT ["node", "--max-semi-space-size=2", "--max-old-space-size=128", "dist/daemon.js"]
CMD ["-endpoint=/provider/vault.sock"]
