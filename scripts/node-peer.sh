#!/usr/bin/env bash
# Installs the npm packages of every Node.js peer (each peers/*/package.json,
# pinned by its package-lock.json: a2b-node, aedes, node-grpc, node-fastify);
# `make node-peer` runs it.
#
# A failure the project can fix (npm missing, a lock file npm refuses, a
# package whose engines exclude this Node) skips the peers with a message, and
# under CI=true fails. A registry this machine cannot reach at all (no route,
# no name, or a TLS proxy whose certificate the machine does not trust) is no
# fault of the project's: it is written to build/peers/node-peer.unavailable,
# which the tests and `shootout run` give as the reason the peers did not run,
# and never fails the build.
set -uo pipefail
cd "$(dirname "$0")/.."

note=build/peers/node-peer.unavailable
mkdir -p build/peers
rm -f "$note"

give_up() {
  echo "node-peer: $1"
  case "${CI:-}" in true|1) echo "node-peer: CI=true: failing"; exit 1 ;; esac
  echo "node-peer: the Node peers are skipped"
  exit 0
}

command -v npm >/dev/null 2>&1 || give_up "npm is not installed (see scripts/install-deps.sh)"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in peers/*/package.json; do
  dir=${pkg%/package.json}
  echo "node-peer: $dir"
  # --engine-strict: a dependency that does not support this Node fails here,
  # not at the first request.
  npm ci --prefix "$dir" --no-audit --no-fund --engine-strict 2>&1 | tee "$log" && continue
  # npm 9 writes "npm ERR! code X", npm 10 and later "npm error code X".
  code=$(sed -n 's/^npm \(ERR!\|error\) code \([A-Z_0-9]*\).*/\2/p' "$log" | head -1)
  case "$code" in
    ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|\
    SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|\
    UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_*)
      echo "the npm registry cannot be reached from this machine ($code)" >"$note"
      echo "node-peer: $(cat "$note"); the Node peers are left out"
      exit 0 ;;
  esac
  give_up "npm ci failed in $dir (${code:-no npm error code})"
done
