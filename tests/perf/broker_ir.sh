#!/bin/sh
# broker_ir.sh - broker instructions per message under callgrind, for one or
# more broker binaries side by side: the loadtest (mqtt-load) and the
# pingtest (mqtt-ping), each broker run once idle (start and stop alone) and
# once per experiment; the idle count is taken off, so what is left is the
# cost of the messages (and their connections). Instruction counts do not
# depend on the machine's load, so two binaries compare within a run.
#
#   tests/perf/broker_ir.sh [-a 'BROKER ARGS'] BIN [BIN...]
#
# BROKER_IR_EXPS="load" (or "ping") runs one experiment only.
#
# The load generator is build/release/shootout (run natively, on loopback).
# Prints one line per binary and experiment: Ir, Ir per message, and the
# ratio to the first binary.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
client="$here/build/release/shootout"
args=""
if [ "${1:-}" = "-a" ]; then
    args=$2
    shift 2
fi
[ $# -ge 1 ] || { echo "usage: $0 [-a 'BROKER ARGS'] BIN [BIN...]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: valgrind is not installed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The loadtest delivers conns/2 * messages; the pingtest a request and a
# reply per message of each pair, and pair 0's to every wildcard
# subscriber: (pairs + wsubs) * messages * 2.
LOAD="mqtt-load --conns 100 --messages 2000"
LOAD_MSGS=100000
PING="mqtt-ping --pairs 100 --wsubs 20 --messages 200"
PING_MSGS=$(((100 + 20) * 200 * 2))

# ir BIN TAG [EXPERIMENT...]: the broker's Ir over a run of the experiment
# (none: idle).
ir() {
    bin=$1 tag=$2
    shift 2
    out="$tmp/$tag.cg"
    # One loop unless -a says otherwise (a later --threads wins), as the
    # article's race runs it; a binary older than --threads has one anyway.
    one=""
    "$bin" broker --help | grep -q -- '--threads' && one="--threads 1"
    # shellcheck disable=SC2086
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" broker --port 0 \
        --sys-interval 0 $one $args >"$tmp/$tag.log" 2>&1 &
    vp=$!
    # Under valgrind the broker takes a few seconds to listen; port 0
    # picks a free port, which the log line names.
    i=0
    until grep -q "listening" "$tmp/$tag.log" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -ge 300 ] || ! kill -0 $vp 2>/dev/null; then
            echo "$0: $bin did not start:" >&2
            cat "$tmp/$tag.log" >&2
            kill $vp 2>/dev/null
            exit 1
        fi
        sleep 0.1
    done
    port=$(sed -n 's/.*listening on [^ ]*:\([0-9][0-9]*\) .*/\1/p' "$tmp/$tag.log")
    if [ $# -gt 0 ]; then
        # shellcheck disable=SC2068
        "$client" bench $@ --target "127.0.0.1:$port" --timeout 60 >"$tmp/$tag.bench" 2>&1 ||
            { echo "$0: $tag: the bench failed:" >&2; cat "$tmp/$tag.bench" >&2; kill $vp; exit 1; }
    fi
    kill -TERM $vp
    wait $vp || true
    grep -E '^(summary|totals):' "$out" | head -1 | awk '{print $2}'
}

printf '%-10s %-40s %14s %10s %7s\n' experiment binary Ir Ir/msg ratio
for exp in ${BROKER_IR_EXPS:-load ping}; do
    first=""
    n=0
    for bin in "$@"; do
        n=$((n + 1))
        idle=$(ir "$bin" "idle$n")
        if [ $exp = load ]; then
            total=$(ir "$bin" "load$n" $LOAD)
            msgs=$LOAD_MSGS
        else
            total=$(ir "$bin" "ping$n" $PING)
            msgs=$PING_MSGS
        fi
        per=$(awk -v t="$total" -v i="$idle" -v m="$msgs" 'BEGIN {printf "%.1f", (t - i) / m}')
        [ -n "$first" ] || first=$per
        ratio=$(awk -v p="$per" -v f="$first" 'BEGIN {printf "%.3f", p / f}')
        printf '%-10s %-40s %14s %10s %7s\n' $exp "$bin" "$total" "$per" "$ratio"
    done
done
