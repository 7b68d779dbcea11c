#!/bin/bash
# broker_conns.sh - connections at scale (issue 14, item 6): the broker's RSS
# per idle connection with N idle connections (100,000 by default), and a
# connect storm (10,000 connects in a second) with established clients whose
# round trips must not stall, measured with `shootout bench mqtt-conns`
# against `shootout broker` and, with -m, Mosquitto side by side. Not a test:
# run by hand, results go to docs/BENCHMARKS.md ("Connections at scale").
#
#   tests/perf/broker_conns.sh [-n IDLE] [-r RATE] [-s SECS] [-e ESTABLISHED]
#                              [-t BROKER_THREADS] [-m] [-i] [-f] [-b BIN] [-o DIR]
#
# Each side needs a descriptor per connection: the script raises its own
# open-files limit (ulimit -n, inherited by the broker and the client it
# starts; nothing changes globally). Where the hard limit cannot be raised
# (no CAP_SYS_RESOURCE), it says so and exits 3, measuring nothing; -f
# measures the most that fits instead. The client spreads its connections
# over loopback source addresses 127.0.0.1, .2, ... (mqtt-conns --sources,
# one per 28,000 connections: one address has about 28,000 ephemeral
# ports), so 100,000 need no more than the descriptors.
# -t N passes --threads N to our broker (N > 1 needs a broker that has it),
# whose loops the connections are spread over. -i measures the idle
# connections only (no storm).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
bin="$here/build/release/shootout"
n=100000 rate=10000 secs=1 est=100 threads=1 mosq=0 out="" idle_only=0 fit=0
while getopts "n:r:s:e:t:mifb:o:" opt; do
    case $opt in
    n) n=$OPTARG ;;
    r) rate=$OPTARG ;;
    s) secs=$OPTARG ;;
    e) est=$OPTARG ;;
    t) threads=$OPTARG ;;
    m) mosq=1 ;;
    i) idle_only=1 ;;
    f) fit=1 ;;
    b) bin=$OPTARG ;;
    o) out=$OPTARG ;;
    *) sed -n '2,24p' "$0" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "$0: no shootout binary at $bin (make first)" >&2; exit 1; }
if [ "$mosq" = 1 ] && ! command -v mosquitto >/dev/null; then
    echo "$0: -m needs mosquitto" >&2
    exit 1
fi
[ -n "$out" ] || out=$(mktemp -d /tmp/broker-conns.XXXXXX)
mkdir -p "$out"

# Descriptors beyond the connections: listeners, epoll, logs, the storm's
# connections between connect() and DISCONNECT.
spare=512
storm_fds=$((est + spare))
need=$((n + spare))
[ "$storm_fds" -gt "$need" ] && need=$storm_fds
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt "$need" ]; then
    if ! ulimit -Hn "$need" 2>/dev/null; then
        echo "the hard open-files limit is $hard and cannot be raised here (raising it" \
             "needs CAP_SYS_RESOURCE); the broker and the client each need a descriptor per" \
             "connection, so $n idle connections do not fit (they need $need)." >&2
        if [ "$fit" = 0 ]; then
            echo "$0: not measured; -n $((hard - spare)) fits, or -f measures that" >&2
            exit 3
        fi
        n=$((hard - spare))
        echo "-f: measuring $n idle connections instead" >&2
    fi
fi
ulimit -n "$(ulimit -Hn)"
echo "open-files limit: $(ulimit -n); idle connections: $n; storm: $rate/s for $secs s with $est established"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"

if [ "$threads" != 1 ] && ! "$bin" broker --help | grep -q -- '--threads'; then
    echo "$0: this broker does not take --threads (its --help names no such option)" >&2
    exit 2
fi

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

pid=""
stop_broker() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        pid=""
    fi
}
trap stop_broker EXIT

# start_broker KIND: starts ours or mosquitto on a free port; sets pid, port.
start_broker() {
    port=$(free_port)
    case $1 in
    shootout)
        targs=()
        # Always said: the default is one loop per CPU, and a binary older
        # than --threads has one loop (the check above refuses N > 1 there).
        "$bin" broker --help | grep -q -- '--threads' && targs=(--threads "$threads")
        "$bin" broker --bind 127.0.0.1 --port "$port" --max-connections $((n + est + spare)) \
            "${targs[@]}" >"$out/broker-$1-$port.log" 2>&1 &
        ;;
    mosquitto)
        printf 'per_listener_settings false\npersistence false\nallow_anonymous true\nlog_dest stderr\nlog_type error\nmax_connections -1\nlistener %s 127.0.0.1\n' \
            "$port" >"$out/mosquitto.conf"
        mosquitto -c "$out/mosquitto.conf" >"$out/broker-$1-$port.log" 2>&1 &
        ;;
    esac
    pid=$!
    for _ in $(seq 100); do
        if "$bin" bench mqtt-conns --target "127.0.0.1:$port" --idle 1 --hold 0 --timeout 1 \
            --progress never >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    echo "$0: $1 did not start (see $out/broker-$1-$port.log)" >&2
    exit 1
}

# The established clients' round trips add up to 5,000 a second whatever
# their number: a probe for stalls, not a load of its own.
gap=$((est * 200))
kinds=(shootout)
[ "$mosq" = 1 ] && kinds+=(mosquitto)
rc=0
for kind in "${kinds[@]}"; do
    echo
    echo "== $kind: $n idle connections"
    start_broker "$kind"
    "$bin" bench mqtt-conns --target "127.0.0.1:$port" --idle "$n" --hold 10 --threads 2 \
        --timeout 30 --server-pid "$pid" --label "$kind" --json "$out/idle-$kind.json" || rc=1
    stop_broker
    [ "$idle_only" = 1 ] && continue
    echo
    echo "== $kind: storm of $rate connects/s for $secs s, $est established clients"
    start_broker "$kind"
    "$bin" bench mqtt-conns --target "127.0.0.1:$port" --storm "$rate" --duration "$secs" \
        --established "$est" --ping-gap "$gap" --threads 2 --server-pid "$pid" --label "$kind" \
        --json "$out/storm-$kind.json" || rc=1
    stop_broker
done
echo
echo "JSON and broker logs: $out"
exit $rc
