# SPDX-License-Identifier: MIT
#
# lib.sh - shared helpers of the "other launchers" tests (sourced): ranks
# started WITHOUT ddprun, as torchrun, srun (Slurm) and mpirun (Open MPI)
# start them, with libddp.so preloaded by hand.  Neither torchrun nor Slurm
# nor Open MPI is needed: each rank is started here in the background with
# exactly the variables that launcher sets (launcher_env), so rank 0's
# libddp must host the rendezvous store itself (runtime/job/ddp_job.c).
#
# The equivalence check is the one of tests/e2e/sync: N ranks of
# samples/mlp at batch B with stride sharding (DDP_SHARD) end with the
# parameters of ONE plain process at batch N*B (relerr.py, independent of
# libddp), and every rank's save file is bit-identical.
set -u
BUILD=${BUILD:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
RELERR=$HERE/../sync/relerr.py
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ddp-launchers.XXXXXX")
FAILED=0
BG_PIDS=()
DATA=$BUILD/data/mlp.rec
SECRET=0123456789abcdef0123456789abcdef

cleanup() {
	local p
	for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ -n "${KEEP_TMP:-}" ]; then echo "# kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# This suite may itself run inside Slurm, mpirun or torchrun: nothing of
# theirs (nor any DDP_* setting) may leak into the emulated ranks.
for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\|OMPI_[A-Za-z0-9_]*\|PMIX_[A-Za-z0-9_]*\|PMI_[A-Za-z0-9_]*\|TORCHELASTIC_[A-Za-z0-9_]*\|DDP_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK GROUP_WORLD_SIZE ROLE_RANK \
	ROLE_WORLD_SIZE MASTER_ADDR MASTER_PORT MPI_LOCALRANKID MPI_LOCALNRANKS

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; FAILED=1; }

need() {
	local f
	for f in "$BUILD/cpudev/lib/libcuda.so.1" "$BUILD/lib/libddp.so" "$DATA" "$BUILD/samples/mlp"; do
		[ -e "$f" ] || { echo "$f is not built (make all)"; exit 77; }
	done
	command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
}

# free_port [PAIR]: prints a TCP port free on 127.0.0.1 (with PAIR: one whose
# successor is free too, for torchrun's MASTER_PORT + 1)
free_port() {
	python3 - "${1:-}" <<'EOF'
import socket, sys
pair = sys.argv[1] == "pair"
for _ in range(200):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    try:
        if pair:
            t = socket.socket(); t.bind(("127.0.0.1", p + 1)); t.close()
        print(p); break
    except OSError:
        pass
    finally:
        s.close()
EOF
}

# hold_port PORT: a dummy TCP listener on 127.0.0.1:PORT in the background
# (torchrun's own TCPStore on MASTER_PORT, or a port already taken); it
# accepts, never answers, and writes "accepted" to $TMP/hold.PORT for each
# connection.  Returns once the port is listening.
hold_port() {
	python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
print("up", flush=True)
conns = []
while True:
    c, _ = s.accept(); conns.append(c); print("accepted", flush=True)
' "$1" >"$TMP/hold.$1" 2>&1 &
	BG_PIDS+=($!)
	local i
	for i in $(seq 1 100); do
		grep -q up "$TMP/hold.$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "cannot hold port $1: $(cat "$TMP/hold.$1")"
	return 1
}

# launcher_env MODE R N: sets ENVV to the variables MODE gives rank R of N
# on one node (torchrun: TR_PORT = MASTER_PORT; slurm: SLURM_JOB, SLURM_STEP;
# ompi: nothing of its own names a port).
launcher_env() {
	local mode=$1 r=$2 n=$3
	case $mode in
	torchrun) # torch/distributed/elastic/agent/server/local_elastic_agent.py
		ENVV=(RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n GROUP_RANK=0
			GROUP_WORLD_SIZE=1 ROLE_RANK=$r ROLE_WORLD_SIZE=$n ROLE_NAME=default
			MASTER_ADDR=127.0.0.1 MASTER_PORT=$TR_PORT TORCHELASTIC_RUN_ID=ddp-test-$$
			TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0
			TORCHELASTIC_USE_AGENT_STORE=True TORCHELASTIC_ERROR_FILE=$TMP/torchelastic.$r.json
			OMP_NUM_THREADS=1) ;;
	slurm) # srun -n N on one node
		ENVV=(SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_NPROCS=$n SLURM_LOCALID=$r
			SLURM_TASKS_PER_NODE=$n SLURM_STEP_TASKS_PER_NODE=$n SLURM_NODEID=0
			SLURM_NNODES=1 SLURM_JOB_NUM_NODES=1 SLURM_NODELIST=localhost
			SLURM_JOB_NODELIST=localhost SLURM_JOB_ID=$SLURM_JOB SLURM_JOBID=$SLURM_JOB
			SLURM_STEP_ID=$SLURM_STEP SLURM_STEPID=$SLURM_STEP SLURM_STEP_NUM_TASKS=$n
			SLURM_CPUS_ON_NODE=$n SLURM_TASK_PID=$$ SLURMD_NODENAME=localhost) ;;
	ompi) # mpirun -np N on one node (Open MPI 4/5)
		ENVV=(OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$n OMPI_COMM_WORLD_LOCAL_RANK=$r
			OMPI_COMM_WORLD_LOCAL_SIZE=$n OMPI_COMM_WORLD_NODE_RANK=$r OMPI_UNIVERSE_SIZE=$n
			PMIX_RANK=$r PMIX_NAMESPACE=ddp-test-$$ OMPI_MCA_orte_launch=1) ;;
	horovod) # horovodrun --gloo -np N on one node (horovod/runner/gloo_run.py)
		ENVV=(HOROVOD_RANK=$r HOROVOD_SIZE=$n HOROVOD_LOCAL_RANK=$r HOROVOD_LOCAL_SIZE=$n
			HOROVOD_CROSS_RANK=0 HOROVOD_CROSS_SIZE=1 HOROVOD_HOSTNAME=localhost
			HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1 HOROVOD_GLOO_RENDEZVOUS_PORT=$HVD_PORT
			HOROVOD_CONTROLLER=gloo HOROVOD_CPU_OPERATIONS=gloo HOROVOD_GLOO_IFACE=lo) ;;
	*) echo "launcher_env: unknown mode $mode" >&2; return 1 ;;
	esac
}

# start_rank NAME MODE R N [VAR=VALUE...] -- ARGS...: starts rank R of N of
# samples/mlp in the background as MODE would, with libddp.so preloaded, the
# CPU device, stride sharding of $DATA, every rank writing in place, and
# --save $TMP/NAME.R.bin (through sh -c and the launcher's own rank variable,
# as a user would write it; after START_DELAY seconds when that is set).
# Extra VAR=VALUE words are added to (or, with an
# empty value, override) the environment.  stdout/stderr: $TMP/NAME.R.out/err.
start_rank() {
	local name=$1 mode=$2 r=$3 n=$4 rankvar
	shift 4
	local extra=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do extra+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	launcher_env "$mode" "$r" "$n" || return 1
	case $mode in torchrun) rankvar=RANK ;; slurm) rankvar=SLURM_PROCID ;; ompi) rankvar=OMPI_COMM_WORLD_RANK ;;
	horovod) rankvar=HOROVOD_RANK ;; esac
	env "${ENVV[@]}" LD_PRELOAD="$BUILD/lib/libddp.so" \
		LD_LIBRARY_PATH="$BUILD/cpudev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		DDP_STORE_SECRET=$SECRET DDP_SHARD="$DATA" DDP_WRITE_DIR="$TMP/$name.w" DDP_ALL_RANKS_WRITE=1 \
		"${extra[@]}" \
		timeout 60 sh -c 'sleep '"${START_DELAY:-0}"'; exec "$0" "$@" --save "'"$TMP/$name"'.$'"$rankvar"'.bin"' \
		"$BUILD/samples/mlp" --data "$DATA" "$@" >"$TMP/$name.$r.out" 2>"$TMP/$name.$r.err" &
	RANK_PIDS+=($!)
}

# run_ranks NAME MODE N [VAR=VALUE...] -- ARGS...: ranks 0..N-1 together;
# waits; RCS holds their exit codes, SECS the wall time of the whole job.
run_ranks() {
	local name=$1 mode=$2 n=$3 r p t0
	shift 3
	RANK_PIDS=()
	RCS=()
	t0=$(date +%s%N)
	for r in $(seq 0 $((n - 1))); do start_rank "$name" "$mode" "$r" "$n" "$@"; done
	for p in "${RANK_PIDS[@]}"; do wait "$p"; RCS+=($?); done
	SECS=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
}

# all_zero: every rank of the last run_ranks exited 0
all_zero() { local c; for c in "${RCS[@]}"; do [ "$c" -eq 0 ] || return 1; done; }

# ref NAME ARGS...: one plain process (no libddp) -> $TMP/NAME.ref.bin
ref() {
	local name=$1
	shift
	LD_LIBRARY_PATH="$BUILD/cpudev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		timeout 60 "$BUILD/samples/mlp" --data "$DATA" "$@" --save "$TMP/$name.ref.bin" \
		>"$TMP/$name.ref.out" 2>"$TMP/$name.ref.err" ||
		{ not_ok "$name: reference run failed: $(tail -n 1 "$TMP/$name.ref.err")"; return 1; }
}

# identical NAME N: every rank's save file equals rank 0's byte for byte
identical() {
	local name=$1 n=$2 r
	[ -s "$TMP/$name.0.bin" ] || return 1
	for r in $(seq 1 $((n - 1))); do
		cmp -s "$TMP/$name.0.bin" "$TMP/$name.$r.bin" || return 1
	done
}

# equiv WHAT NAME REF N: the ranks of NAME all exited 0, rank 0 equals the
# reference REF within 1e-5, and all N ranks are bit-identical
equiv() {
	local what=$1 name=$2 refname=$3 n=$4 out
	if ! all_zero; then
		not_ok "$what: ranks exited ${RCS[*]}; rank 0 said: $(grep -m 3 -i 'error\|warn' "$TMP/$name.0.err" | tr '\n' ' ')"
		return
	fi
	if grep -q 'trains alone\|synchronisation is off' "$TMP/$name.0.err"; then
		not_ok "$what: rank 0 trained alone: $(grep -m 1 'trains alone\|synchronisation is off' "$TMP/$name.0.err")"
		return
	fi
	out=$(python3 "$RELERR" "$TMP/$name.0.bin" "$TMP/$refname.ref.bin" 1e-5)
	if [ $? -eq 0 ]; then ok "$what: $n ranks at batch B equal one process at $n x B ($out <= 1e-5)"
	else not_ok "$what: $n ranks differ from one process at $n x B ($out > 1e-5)"; fi
	if identical "$name" "$n"; then ok "$what: all $n ranks bit-identical"
	else not_ok "$what: the ranks' parameters differ"; fi
}

# no_warnings WHAT NAME N: no rank logged a warning or error
no_warnings() {
	local what=$1 name=$2 n=$3 r bad=""
	for r in $(seq 0 $((n - 1))); do
		grep -q ' WARN \| ERROR ' "$TMP/$name.$r.err" && bad="$bad rank $r: $(grep -m 1 ' WARN \| ERROR ' "$TMP/$name.$r.err")"
	done
	if [ -z "$bad" ]; then ok "$what: no warnings"; else not_ok "$what: warnings:$bad"; fi
}

# slurm_job_for_free_port: sets SLURM_JOB/SLURM_STEP so that the derived
# store port 20000 + (job*16 + step) % 12000 is free here; SLURM_PORT = it
slurm_job_for_free_port() {
	local out
	out=$(python3 -c '
import random, socket
for _ in range(200):
    job, step = random.randint(100000, 9999999), random.randint(0, 15)
    port = 20000 + (job * 16 + step) % 12000
    try:
        s = socket.socket(); s.bind(("127.0.0.1", port)); s.close()
    except OSError:
        continue
    print(job, step, port); break
')
	read -r SLURM_JOB SLURM_STEP SLURM_PORT <<<"$out"
}
