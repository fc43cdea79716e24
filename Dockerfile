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

# ---- build: compile TypeScript (the CLI runs tsc's output), then join the daemon and its packages
# into dist/daemon.js with its source map (needs the dev dependencies: tsc, esbuild)
FROM node:26.13.0-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY scripts/bundle.mjs ./scripts/
COPY src ./src
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
WORKDIR /app
# npm, npx and corepack are not used at run time: leave them (and their advisories) out.
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack
# node_modules and dist/src (tsc's output) are the CLI's (node dist/src/cli/main.js); the daemon is
# dist/daemon.js, everything it runs in one file, and its source map.
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/daemon.js /app/dist/daemon.js.map ./dist/
COPY --from=build /app/dist/src ./dist/src
# The gRPC services' .proto files, which @grpc/proto-loader reads at start.
COPY proto ./proto
COPY package.json ./
USER 65532:65532
# node itself is PID 1 (not npm or a shell, which do not pass SIGTERM on), so the daemon
# drains its Mounts on SIGTERM. A logged stack trace names src/ files and lines by dist/daemon.js.map,
# read when the first one is logged (src/observability/stack-map.ts), not with --enable-source-maps.
# The heap flags keep a 110-pod Mount storm's peak RSS low (bench/NOTES.md); the bench reads them,
# and the script, from here.
ENTRYPOINT ["node", "--max-semi-space-size=2", "--max-old-space-size=128", "dist/daemon.js"]
CMD ["-endpoint=/provider/vault.sock"]
