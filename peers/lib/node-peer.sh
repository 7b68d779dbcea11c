# shellcheck shell=bash
# node-peer.sh - what the Node.js contenders' start scripts share (sourced,
# not run): the contender contract's --version checks (CONTENDERS.md, issue
# 13), from the installed package, and --port/--dir/--threads to exec node
# on the contender's program in DIR.
#
#   node_contender DIR PACKAGE PRODUCT PROGRAM "$@"
#
# DIR is the contender's directory, PACKAGE the npm package whose version is
# the product's (node_modules/PACKAGE/package.json), PRODUCT its name in the
# --version line, PROGRAM the .js file started with --bind 127.0.0.1 --port.

node_contender() {
  local here=$1 package=$2 product=$3 program=$4
  shift 4
  local unavailable="$here/../../build/peers/node-peer.unavailable"
  local pkg_json="$here/node_modules/$package/package.json"
  local node port="" dir=""
  node=$(command -v node 2>/dev/null || true)
  while [ $# -gt 0 ]; do
    case "$1" in
    --version)
      if [ -z "$node" ]; then
        echo "not installed: apt-get install nodejs npm"
        exit 3
      elif [ -s "$unavailable" ]; then
        echo "not installed: $(head -n 1 "$unavailable" | head -c 200)"
        exit 3
      elif [ ! -f "$pkg_json" ]; then
        echo "not installed: make node-peer"
        exit 3
      fi
      # Read without starting node: the first "version" of the package file.
      echo "$product $(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkg_json" | head -n 1) (Node.js $("$node" --version))"
      exit 0 ;;
    --port) port=${2:-}; shift 2 || break ;;
    --dir) dir=${2:-}; shift 2 || break ;;
    --threads) shift 2 || break ;; # one event loop: no such knob
    *) echo "$(basename "$here")/start: unknown argument '$1'" >&2
       echo "usage: peers/$(basename "$here")/start --version | --port PORT --dir DIR [--threads N]" >&2
       exit 2 ;;
    esac
  done
  local name
  name=$(basename "$here")
  if ! [[ "$port" =~ ^[0-9]+$ ]] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
    echo "$name/start: --port 1..65535 required" >&2
    exit 2
  fi
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "$name/start: --dir must be an existing directory" >&2
    exit 2
  fi
  if [ -z "$node" ] || [ ! -f "$pkg_json" ]; then
    echo "$name/start: not installed: make node-peer" >&2
    exit 3
  fi
  # Anything node or the program writes relative to its cwd lands in DIR.
  cd "$dir" || exit 2
  exec "$node" "$here/$program" --bind 127.0.0.1 --port "$port"
}
