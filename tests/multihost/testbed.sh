#!/usr/bin/env bash
# A multi-host test bed on one Linux machine: N hosts as network namespaces on a bridge, each
# with its own address, hostname and bandwidth-shaped link, and a login host that runs mpirun.
# OpenMPI reaches the hosts through an rsh agent (rsh_agent.sh) that enters a host's namespace
# where ssh would log in. Needs root, `ip netns`, `unshare` and `tc`.
#
# As a library (what the tests do):
#   source tests/multihost/testbed.sh
#   bed_up 4 1gbit                       # hosts h0..h3, each link shaped to 1 Gbit/s both ways
#   bed_mpirun -np 4 attograd train ...  # mpirun on the login host over the bed's hostfile
#   bed_hostfile h0 h1                   # later bed_mpirun calls use only these hosts
#   bed_cut h2 / bed_blackhole h2        # the link goes down / every packet is lost
#   bed_down                             # also on EXIT, INT, TERM and HUP (bed_up sets the trap)
# As a command (a shell, or a command, with the bed up and its variables exported):
#   tests/multihost/testbed.sh [--hosts N] [--rate RATE] [-- COMMAND ...]
#
# Every name holds the creating shell's pid ("ag<pid>"): two beds never collide. When that shell
# is SIGKILLed (no trap runs), a guard process removes the bed within a second, and bed_up
# removes any bed whose creator is gone before it makes its own. The
# addresses (10.251.0.0/24) exist only inside the bed's namespaces, never on the machine's own
# interfaces; each bed has its own bridge, so two beds may use the same addresses.

BED_SUBNET=10.251.0
BED_TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Why the bed cannot run here, or nothing when it can.
bed_unavailable() {
  [ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)"; return; }
  for tool in ip tc unshare; do command -v $tool >/dev/null || { echo "no '$tool' command"; return; }; done
  local probe="agprobe$$"
  ip netns add "$probe" 2>/dev/null || { echo "'ip netns add' fails here (no network namespaces)"; return; }
  if ! ip netns exec "$probe" tc qdisc add dev lo root tbf rate 1gbit burst 128kb latency 50ms 2>/dev/null; then
    ip netns del "$probe"; echo "tc tbf is not available (sch_tbf)"; return
  fi
  ip netns del "$probe"
}

# Removes the beds (namespaces, bridge, /etc/netns files) whose creating process is gone.
bed_reap_stale() {
  local ns pid
  for ns in $(ip netns list | sed -n 's/^\(ag[0-9]\+\)-[a-z0-9]*.*/\1/p' | sort -u); do
    pid=${ns#ag}
    kill -0 "$pid" 2>/dev/null && continue
    BED=$ns _bed_remove
  done
}

# Kills every process inside the bed's namespaces, deletes them, the bridge and the hosts files.
_bed_remove() {
  local ns pids
  for ns in $(ip netns list | awk '{print $1}' | grep "^$BED-"); do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -n "$pids" ] && kill -CONT $pids 2>/dev/null && kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    rm -rf "/etc/netns/$ns"
  done
  ip link del "${BED}br" 2>/dev/null
  rm -rf "/tmp/$BED".*  # BED_DIR
  return 0
}

# Adds one host: namespace $BED-$1 with eth0 = 10.251.0.$2 on the bridge, link shaped to $3
# (a tc rate, or "none") in both directions.
_bed_add_host() {
  local host=$1 addr=$BED_SUBNET.$2 rate=$3 ns=$BED-$1 veth=${BED}$1
  ip netns add "$ns" || return 1
  ip link add "$veth" type veth peer name eth0 netns "$ns" || return 1
  ip link set "$veth" master "${BED}br" up
  ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
  if [ "$rate" != none ]; then
    # A token bucket on each end of the veth pair: the host's sending (eth0) and receiving
    # (the bridge side) are each limited to the rate. The burst is 1 ms at that rate, at least
    # one 64 KB segment (veth passes segments of up to 64 KB).
    local bits burst
    bits=$(tc_rate_bits "$rate") || return 1
    burst=$(( bits / 8 / 1000 )); [ $burst -lt 65536 ] && burst=65536
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 50ms || return 1
    tc qdisc add dev "$veth" root tbf rate "$rate" burst "$burst" latency 50ms || return 1
  fi
  # /etc/hosts of every namespace of the bed (ip netns exec bind-mounts /etc/netns/NS/hosts).
  echo "$addr $host" >>"/tmp/$BED.hosts"
}

# "10gbit" -> 10000000000
tc_rate_bits() {
  python3 -c "
import re, sys
m = re.fullmatch(r'([0-9.]+)([kmg]?)bit', sys.argv[1].lower())
if not m: sys.exit('bad rate ' + sys.argv[1] + ' (e.g. 10gbit, 1gbit, 100mbit)')
print(int(float(m[1]) * {'': 1, 'k': 1e3, 'm': 1e6, 'g': 1e9}[m[2]]))" "$1"
}

# Removes the bed once the process $1 that made it is gone: a SIGKILL (a ctest timeout) cannot
# be trapped. Runs in a session of its own, so that a signal to the test's process group leaves
# it be; it ends with the bed.
_bed_guard() {
  for _ in $(seq 120); do ip netns list | grep -q "^$BED-" && break; sleep 0.5; done  # until it exists
  while kill -0 "$1" 2>/dev/null && ip netns list | grep -q "^$BED-"; do sleep 1; done
  kill -0 "$1" 2>/dev/null || _bed_remove
}

# bed_up N RATE: hosts h0..h(N-1) at 10.251.0.10+i, the login host "login" at 10.251.0.2
# (unshaped: it only launches). Exports BED, BED_HOSTS, BED_HOSTFILE, BED_MPIRUN_FLAGS.
bed_up() {
  local n=$1 rate=${2:-none} i
  local why; why=$(bed_unavailable); [ -z "$why" ] || { echo "testbed: $why" >&2; return 1; }
  bed_reap_stale
  export BED="ag$$"
  trap 'bed_down' EXIT
  trap 'bed_down; exit 130' INT
  trap 'bed_down; exit 143' TERM HUP
  _bed_remove
  # (in a subshell, so that it is no job of this shell's: a `wait` here does not wait for it)
  (setsid bash -c "source '$BED_TOOLS/testbed.sh'; BED=$BED; _bed_guard $$" </dev/null >/dev/null 2>&1 &)
  ip link add "${BED}br" type bridge || return 1
  ip link set "${BED}br" up
  rm -f "/tmp/$BED.hosts"; echo "127.0.0.1 localhost" >"/tmp/$BED.hosts"
  _bed_add_host login 2 none || return 1
  # After a job ends, mpirun waits until every daemon has confirmed it; for a daemon behind a
  # cut link, until TCP gives up on the unacknowledged data: ~15 min with Linux's default of 15
  # retransmissions, ~3 s with 3 (200 ms doubling: 0.2 + 0.4 + 0.8 + 1.6). The login host gets
  # 3, as a cluster's login node may; its connections to the daemons carry no data while a job
  # runs, so only a job's end can trip it. The compute hosts keep the default: MPI's own
  # connections between them must not give up before --comm-timeout does.
  ip netns exec "$BED-login" sysctl -qw net.ipv4.tcp_retries2=3 || return 1
  BED_HOSTS=""
  for ((i = 0; i < n; i++)); do
    _bed_add_host h$i $((10 + i)) "$rate" || return 1
    BED_HOSTS+="h$i "
  done
  export BED_HOSTS=${BED_HOSTS% }
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep "^$BED-"); do
    mkdir -p "/etc/netns/$ns" && cp "/tmp/$BED.hosts" "/etc/netns/$ns/hosts"
  done
  rm -f "/tmp/$BED.hosts"
  export BED_DIR; BED_DIR=$(mktemp -d "/tmp/$BED.XXXX")
  bed_hostfile $BED_HOSTS
  # OpenMPI: the rsh agent instead of ssh; both the byte transport (btl) and the launcher's
  # channel (oob) on the bed's network; one rank per host.
  export BED_MPIRUN_FLAGS="--allow-run-as-root --map-by node --bind-to none
    --mca plm_rsh_agent $BED_TOOLS/rsh_agent.sh --mca btl self,tcp
    --mca btl_tcp_if_include $BED_SUBNET.0/24 --mca oob_tcp_if_include $BED_SUBNET.0/24"
  export BED_TOOLS
}

bed_down() {
  trap - EXIT INT TERM HUP
  [ -n "${BED:-}" ] || return 0
  _bed_remove
  unset BED
}

# Runs a command on the login host (mpirun runs there).
bed_login() { ip netns exec "$BED-login" "$@"; }
# Runs a command on host $1 (its own hostname, as the rsh agent gives it).
bed_exec() { local h=$1; shift; ip netns exec "$BED-$h" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$h" "$@"; }
# mpirun on the login host over the bed's hostfile: bed_mpirun -np N PROGRAM ARGS...
# shellcheck disable=SC2086
bed_mpirun() { bed_login mpirun $BED_MPIRUN_FLAGS --hostfile "$BED_HOSTFILE" "$@"; }
# Makes the hostfile of bed_mpirun list only the hosts given: bed_hostfile h0 h2 h3
bed_hostfile() {
  BED_HOSTFILE=$BED_DIR/hostfile.$(echo "$@" | tr ' ' '-')
  for h in "$@"; do echo "$h slots=1"; done >"$BED_HOSTFILE"
  export BED_HOSTFILE
}

# Faults. A cut: host $1's link goes down (both ends lose carrier, as a pulled cable).
# The marker file tells rsh_agent.sh that its session to the host is cut too.
bed_cut() { touch "$BED_DIR/down.$1"; ip link set "${BED}$1" down; }
# A blackhole: the link stays up but every packet is lost (a failed switch port).
bed_blackhole() { touch "$BED_DIR/down.$1"; ip link set "${BED}$1" nomaster; }
# Heals host $1's link, and returns once the host reaches every other host again: the link and
# its bridge port come back asynchronously, and an MPI job started before then failed to wire up
# ("connect() ... Operation now in progress") and hung. A refused connection (port 9 is closed)
# proves the way there and back.
bed_heal() {
  ip link set "${BED}$1" master "${BED}br" up
  rm -f "$BED_DIR/down.$1"
  local h addrs="" i
  for h in $BED_HOSTS; do [ "$h" = "$1" ] || addrs+="$BED_SUBNET.$((10 + ${h#h})) "; done
  for ((i = 0; i < 100; i++)); do
    ip netns exec "$BED-$1" python3 -c '
import socket, sys
for a in sys.argv[1:]:
    s = socket.socket()
    s.settimeout(0.5)
    try:
        s.connect((a, 9))
    except ConnectionRefusedError:
        pass
    except OSError:
        sys.exit(1)
' $addrs && return 0
    sleep 0.2
  done
  echo "bed_heal: $1 does not reach the other hosts" >&2
  return 1
}

# The pids of processes running in host $1's namespace (empty when none are left).
bed_pids() { ip netns pids "$BED-$1" 2>/dev/null; }

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  hosts=2 rate=none
  while [ $# -gt 0 ]; do
    case $1 in
      --hosts) hosts=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      --) shift; break ;;
      -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
      *) echo "testbed.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
  done
  why=$(bed_unavailable); [ -z "$why" ] || { echo "testbed.sh: $why" >&2; exit 77; }
  bed_up "$hosts" "$rate" || exit 1
  export -f bed_login bed_exec bed_mpirun bed_hostfile bed_cut bed_blackhole bed_heal bed_pids
  echo "testbed $BED: hosts $BED_HOSTS ($BED_SUBNET.10+), links $rate; bed_mpirun -np N ... runs mpirun on the login host (\$BED_MPIRUN_FLAGS --hostfile \$BED_HOSTFILE)" >&2
  if [ $# -gt 0 ]; then "$@"; else "${SHELL:-bash}"; fi
  status=$?
  bed_down
  exit $status
fi
