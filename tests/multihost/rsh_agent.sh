#!/bin/sh
# OpenMPI's plm_rsh_agent for the test bed (testbed.sh): called as `rsh_agent.sh HOST COMMAND...`
# where ssh would be; runs COMMAND on HOST, i.e. in the namespace $BED-HOST with the hostname
# HOST (a UTS namespace of its own), through a shell, as sshd would.
host=$1
shift
# The hosts' OpenMPI configuration (what openmpi-mca-params.conf would hold on a cluster): a
# daemon whose connection to mpirun has been silent for 2 s probes it every second, and after 2
# unanswered probes takes mpirun for lost, ends its ranks and exits, so that a host cut off from
# mpirun is left with nothing running (OpenMPI's default waits 300 s before the first probe).
export OMPI_MCA_oob_tcp_keepalive_time=2 OMPI_MCA_oob_tcp_keepalive_intvl=1 OMPI_MCA_oob_tcp_keepalive_probes=2
ip netns exec "$BED-$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
status=$?
# mpirun watches its ssh sessions: one that ends tells it the daemon has ended. ssh would learn
# that over the network, so while the host's link is down (testbed.sh's bed_cut and
# bed_blackhole leave a marker) this session does not end either, as ssh's would not (until
# mpirun itself is gone).
while [ -e "$BED_DIR/down.$host" ] && kill -0 "$PPID" 2>/dev/null; do sleep 0.2; done
exit $status
