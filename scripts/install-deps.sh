#!/usr/bin/env bash
# Installs the Debian packages shootout needs to build, test and benchmark.
# Idempotent: packages already present are left alone, and apt is not
# touched at all when nothing is missing.
#
#   scripts/install-deps.sh            everything, the heavy contenders too
#   scripts/install-deps.sh --minimal  without heavy_packages (JDK- and
#                                      Erlang-based contenders, ~500 MB)
set -euo pipefail

minimal=0
case "${1:-}" in
  "") ;;
  --minimal) minimal=1 ;;
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-deps: unknown option '$1' (try --minimal or --help)" >&2; exit 2 ;;
esac

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
  # the Node.js a2b peer (make node-peer): Debian's Node 18 or newer
  nodejs
)
# The heavy contenders `shootout run` races when they are installed (JVM and
# Erlang brokers and servers): left out by --minimal. Each runs as a private
# instance started by peers/<name>/start, never as the system service.
heavy_packages=(
  # RabbitMQ's MQTT plugin (Erlang), peers/rabbitmq
  rabbitmq-server
  # ActiveMQ 5's MQTT transport (Java), peers/activemq; the MQTT codec it
  # needs is packaged apart
  activemq libmqtt-client-java default-jdk-headless
)
[ "$minimal" -eq 1 ] || packages+=("${heavy_packages[@]}")
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
# The Debian mosquitto, rabbitmq-server and activemq packages start system
# brokers (on 1883, 5672/25672 + epmd 4369, 61616); shootout starts private
# instances on free ports, so keep the system ones out of the way: stopped,
# and not started at boot.
for svc in mosquitto rabbitmq-server activemq; do
  if [ -d /run/systemd/system ]; then
    if systemctl is-enabled --quiet "$svc" 2>/dev/null || systemctl is-active --quiet "$svc" 2>/dev/null; then
      $SUDO systemctl disable --now "$svc" || true
    fi
  elif [ -x "/etc/init.d/$svc" ]; then
    # Only when the daemon runs (under its own account: mosquitto, rabbitmq,
    # activemq): rabbitmq-server's stop runs rabbitmqctl, which would leave
    # a system epmd behind when there was nothing to stop.
    if pgrep -u "${svc%-server}" >/dev/null 2>&1; then
      $SUDO "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
    fi
    if command -v update-rc.d >/dev/null; then
      $SUDO update-rc.d "$svc" disable >/dev/null 2>&1 || true
    fi
  fi
done
