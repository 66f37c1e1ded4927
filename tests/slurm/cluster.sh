# A real two-node Slurm cluster on this one machine, for the multi-node tests: munge with its
# own key and socket, slurmctld, and two slurmd daemons from the one binary (slurmd -N n1,
# slurmd -N n2), each node with its own port, NodeHostname this host. Everything lives under
# one folder; every daemon is stopped by its pid.
#   source tests/slurm/cluster.sh
#   slurm_up DIR        starts the daemons, waits (bounded) until sinfo shows n1 and n2 idle;
#                       exports SLURM_CONF; returns non-zero (and prints the logs) if not
#   slurm_down          stops every daemon it started (safe to call twice, from a trap)
# Needs root (SlurmUser=root) and Debian's munge, slurmctld, slurmd, slurm-client.

slurm_pids=()
slurm_dir=

# A TCP port below the ephemeral range that nothing uses (ss tells which are taken).
slurm_free_port() {
	local p i
	for i in $(seq 100); do
		p=$((20000 + RANDOM % 12000))
		case " ${slurm_ports:-} " in *" $p "*) continue;; esac
		ss -Htan "sport = :$p" | grep -q . && continue
		slurm_ports="${slurm_ports:-} $p"
		echo "$p"
		return 0
	done
	return 1
}

slurm_logs() {
	local f
	for f in "$slurm_dir"/*.log; do
		[ -f "$f" ] || continue
		echo "---- $f"
		tail -n 30 "$f"
	done
}

slurm_up() {
	slurm_dir=$1
	local d=$1 host i p_ctl p1 p2
	host=$(hostname -s)
	mkdir -p "$d/munge" "$d/state" "$d/spool"
	chmod 0700 "$d/munge"
	p_ctl=$(slurm_free_port) && p1=$(slurm_free_port) && p2=$(slurm_free_port) || {
		echo "slurm_up: no free port" >&2; return 1; }
	# munge: its own key, socket, pidfile and seed, nothing under /etc or /run
	dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
	chmod 0400 "$d/munge/munge.key"
	munged --force --key-file="$d/munge/munge.key" --socket="$d/munge/munge.socket" \
		--pid-file="$d/munge/munged.pid" --seed-file="$d/munge/munged.seed" \
		--log-file="$d/munged.log" || { slurm_logs >&2; return 1; }
	for i in $(seq 100); do [ -s "$d/munge/munged.pid" ] && break; sleep 0.05; done
	slurm_pids+=("$(cat "$d/munge/munged.pid")")

	cat >"$d/slurm.conf" <<CONF
ClusterName=pvgtest
SlurmctldHost=$host
SlurmctldPort=$p_ctl
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/linear
SchedulerType=sched/builtin
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$p1 CPUs=1 State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$p2 CPUs=1 State=UNKNOWN
PartitionName=pvg Nodes=n[1-2] Default=YES MaxTime=INFINITE State=UP
CONF
	export SLURM_CONF="$d/slurm.conf"
	slurmctld -i -f "$SLURM_CONF" || { slurm_logs >&2; return 1; }
	for i in $(seq 100); do [ -s "$d/slurmctld.pid" ] && break; sleep 0.05; done
	[ -s "$d/slurmctld.pid" ] || { slurm_logs >&2; return 1; }
	slurm_pids+=("$(cat "$d/slurmctld.pid")")
	for n in n1 n2; do
		mkdir -p "$d/spool/$n"
		slurmd -N "$n" -f "$SLURM_CONF" || { slurm_logs >&2; return 1; }
		for i in $(seq 100); do [ -s "$d/slurmd-$n.pid" ] && break; sleep 0.05; done
		[ -s "$d/slurmd-$n.pid" ] || { slurm_logs >&2; return 1; }
		slurm_pids+=("$(cat "$d/slurmd-$n.pid")")
	done
	# bounded wait: both nodes idle
	for i in $(seq 150); do
		if [ "$(sinfo -h -N -o '%N %t' 2>/dev/null | sort | tr '\n' ' ')" = "n1 idle n2 idle " ]; then
			return 0
		fi
		sleep 0.2
	done
	echo "slurm_up: the nodes did not become idle:" >&2
	sinfo -N >&2 2>&1 || true
	slurm_logs >&2
	return 1
}

slurm_down() {
	local p i
	# the daemons in reverse order of start: node daemons, then the controller, then munge
	for ((i = ${#slurm_pids[@]} - 1; i >= 0; i--)); do
		p=${slurm_pids[$i]}
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${slurm_pids[@]}"; do
		for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
		kill -KILL "$p" 2>/dev/null || true
	done
	slurm_pids=()
}
