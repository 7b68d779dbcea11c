# shellcheck shell=bash
# jvm-peer.sh - what the Java contenders' start scripts share (sourced, not
# run): the contender contract's --version checks and the JVM's command line
# (CONTENDERS.md). A start script sets PEER (its directory under
# build/peers/), MAIN (the class to run) and PACKAGES (the Debian packages
# it runs from), defines peer_version (prints "<product> <version>") and
# calls jvm_peer_main "$@". An a2b contender also sets PEER_OPTIONS=(--db
# --pool): options it requires, each with a value, passed on to MAIN; and
# any may set JVM_HEAP (the -Xms and -Xmx, default 256m).

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLASSPATH_FILE=$REPO/build/peers/$PEER/classpath

# The Debian version of a package, without epoch and revision: 1:4.1.48-7 -> 4.1.48.
deb_version() {
  local v
  v=$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null) || return 1
  v=${v#*:}
  v=${v%%[-+]*}
  printf '%s' "$v"
}

# The JDK that `java` is: /usr/lib/jvm/java-17-openjdk-amd64 -> openjdk-17-jre-headless.
jdk_version() {
  local home major v
  home=$(readlink -f "$(command -v java)")
  major=${home#/usr/lib/jvm/java-}
  major=${major%%-*}
  v=$(deb_version "openjdk-$major-jre-headless") || v=$major
  printf 'OpenJDK %s' "$v"
}

# Exit 3 with the contract's one line unless everything the peer runs
# from is here; checks files only, starts no JVM.
jvm_peer_check() {
  local jar
  if ! command -v java >/dev/null; then
    echo "not installed: scripts/install-deps.sh (apt-get install default-jdk-headless)"
    exit 3
  fi
  if [ ! -r "$CLASSPATH_FILE" ]; then
    echo "not built: make peers"
    exit 3
  fi
  IFS=: read -r -a jars <"$CLASSPATH_FILE"
  for jar in "${jars[@]}"; do
    if [ ! -e "$jar" ]; then
      echo "not installed: $jar is missing (scripts/install-deps.sh: ${PACKAGES[*]}), then make peers"
      exit 3
    fi
  done
}

[ -n "${PEER_OPTIONS+set}" ] || PEER_OPTIONS=()

usage() {
  local o name extra=""
  for o in "${PEER_OPTIONS[@]}"; do
    name=${o#--}
    extra+=" $o ${name^^}"
  done
  echo "usage: $0 --version | --port PORT --dir DIR [--threads N]$extra" >&2
  exit 2
}

jvm_peer_main() {
  local port="" dir="" threads="" o
  local -A given=()
  while [ $# -gt 0 ]; do
    case $1 in
      --version) jvm_peer_check; peer_version; exit 0 ;;
      --port) [ $# -ge 2 ] || usage; port=$2; shift 2 ;;
      --dir) [ $# -ge 2 ] || usage; dir=$2; shift 2 ;;
      --threads) [ $# -ge 2 ] || usage; threads=$2; shift 2 ;;
      *)
        for o in "${PEER_OPTIONS[@]}" ""; do [ "$o" = "$1" ] && break; done
        if [ -z "$o" ] || [ $# -lt 2 ]; then usage; fi
        given[$1]=$2
        shift 2 ;;
    esac
  done
  if [ -z "$port" ] || [ ! -d "$dir" ]; then usage; fi
  local passed=()
  for o in "${PEER_OPTIONS[@]}"; do
    [ -n "${given[$o]+set}" ] || usage
    passed+=("$o" "${given[$o]}")
  done
  jvm_peer_check
  dir=$(cd "$dir" && pwd)
  cd "$dir" || exit 1
  # The heap is fixed (JVM_HEAP, a start script's, else 256m) so that the
  # JVM does not resize it during a race;
  # nothing is written outside DIR: no hsperfdata in /tmp, no attach
  # socket, crash logs and java.io.tmpdir (Netty, Jetty) in DIR.
  # shellcheck disable=SC2086  # PEER_ARGS is a list of words
  exec java -Xms"${JVM_HEAP:-256m}" -Xmx"${JVM_HEAP:-256m}" -XX:+ExitOnOutOfMemoryError \
    -XX:-UsePerfData -XX:+DisableAttachMechanism -XX:ErrorFile="$dir/hs_err_%p.log" \
    -Djava.io.tmpdir="$dir" "${JVM_ARGS[@]}" \
    -cp "$(<"$CLASSPATH_FILE")" "$MAIN" --port "$port" ${threads:+$(peer_threads "$threads")} "${passed[@]}"
}
