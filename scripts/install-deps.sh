#!/usr/bin/env bash
# Installs the Debian packages shootout needs to build, test and benchmark.
# Idempotent: packages already present are left alone, and apt is not
# touched at all when nothing is missing.
set -euo pipefail

packages=(
  # build
  build-essential clang pkg-config
  # Car service: protoc-c generates the C message code at build time;
  # nghttp2 carries gRPC, zlib compresses its messages; OpenSSL for TLS and
  # password hashing
  protobuf-c-compiler libprotobuf-c-dev libnghttp2-dev zlib1g-dev libssl-dev
  # a2b service: SQLite embedded, PostgreSQL through libpq (the server is
  # started by the tests themselves)
  libsqlite3-dev libpq-dev postgresql
  # unit tests and fuzzing (libFuzzer + sanitizer runtimes)
  libcmocka-dev libclang-rt-14-dev
  # end-to-end tests: real third-party MQTT, gRPC and HTTP clients
  python3 python3-pytest python3-paho-mqtt mosquitto-clients
  python3-grpcio python3-protobuf protobuf-compiler curl
  # the peers the benchmarks race against (Mosquitto; the gRPC C++ server,
  # built from peers/), and the load tools our client is checked against
  mosquitto libgrpc++-dev libprotobuf-dev protobuf-compiler-grpc g++ nghttp2-client wrk
  # the tests' own tools: strace for the simulated power cuts, mount for the
  # full-disk test's tmpfs (not in a minimal root), openssl for TLS
  # certificates
  strace mount openssl
  # the library car_json is measured against (make json-bench)
  libcjson-dev
  # the Node.js peers (make node-peer): Debian's Node 18 or newer
  nodejs
)
# npm comes with NodeSource's nodejs, which conflicts with Debian's npm package:
# ask for Debian's only where no npm is installed.
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The Debian mosquitto package starts a system broker on 1883; shootout
# starts its own peers on free ports, so keep the system one out of the way.
if [ -d /run/systemd/system ] && systemctl is-active --quiet mosquitto 2>/dev/null; then
  $SUDO systemctl stop mosquitto || true
fi
