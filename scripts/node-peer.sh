#!/usr/bin/env bash
# Installs the Node.js a2b peer's npm packages (peers/a2b-node, pinned by its
# package-lock.json); `make node-peer` runs it.
#
# A failure the project can fix (npm missing, a lock file npm refuses, a
# package whose engines exclude this Node) skips the peer with a message, and
# under CI=true fails. A registry this machine cannot reach at all (no route,
# no name, or a TLS proxy whose certificate the machine does not trust) is no
# fault of the project's: it is written to build/peers/node-peer.unavailable,
# which the tests and `shootout run` give as the reason the peer did not run,
# and never fails the build.
set -uo pipefail
cd "$(dirname "$0")/.."

note=build/peers/node-peer.unavailable
mkdir -p build/peers
rm -f "$note"

give_up() {
  echo "node-peer: $1"
  case "${CI:-}" in true|1) echo "node-peer: CI=true: failing"; exit 1 ;; esac
  echo "node-peer: the Node peer is skipped"
  exit 0
}

command -v npm >/dev/null 2>&1 || give_up "npm is not installed (see scripts/install-deps.sh)"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# --engine-strict: a dependency that does not support this Node fails here,
# not at the first request.
if npm ci --prefix peers/a2b-node --no-audit --no-fund --engine-strict 2>&1 | tee "$log"; then
  exit 0
fi
# npm 9 writes "npm ERR! code X", npm 10 and later "npm error code X".
code=$(sed -n 's/^npm \(ERR!\|error\) code \([A-Z_0-9]*\).*/\2/p' "$log" | head -1)
case "$code" in
  ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|\
  SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|\
  UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_*)
    echo "the npm registry cannot be reached from this machine ($code)" >"$note"
    echo "node-peer: $(cat "$note"); the Node peer is left out"
    exit 0 ;;
esac
give_up "npm ci failed (${code:-no npm error code})"
