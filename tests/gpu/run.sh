#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/gpu/run.sh - the ddprun suite for a machine with a real GPU
# (docs/gpu.md).  One command, one report:
#
#   tests/gpu/run.sh [--quick] [--no-build] [--steps N] [--budget S] [--parts LIST]
#                    [--report-root DIR | REPORT_DIR]
#   make gpu-test [GPU_REPORT_DIR=DIR] [GPU_TEST_FLAGS=--quick]
#
# Without REPORT_DIR the report goes to REPORT_ROOT/DATE-DEVICE-COMMIT
# (REPORT_ROOT: --report-root, default docs/gpu-validation), e.g.
# docs/gpu-validation/2026-11-28-h100-80gb-hbm3-460b182/.
#
# Without a GPU (nvidia-smi missing or listing none) it prints
#   gpu suite skipped: no GPU (nvidia-smi found no device)
# and exits 77, touching nothing.  With one it builds everything for the
# GPU's compute capability into $GPU_BUILD (default $BUILD/gpu; --no-build
# uses what is there), then for each program (samples mlp, charlm, fused,
# cublas_mlp, and samples/torch_train.py default/--foreach/--fused/--amp-bf16):
#   - a plain run at batch 2B (the reference) and at batch B (the baseline);
#   - ddprun -n 1 --backend nccl at B: parameters bit-identical to the
#     baseline, step-time overhead;
#   - ddprun -n 2 --shard DATA at B with --backend host and with --backend
#     nccl (two ranks on the one GPU: NCCL_MULTI_RANK_GPU_ENABLE=1 where
#     NCCL >= 2.30, else NCCL_HOSTID per rank), NCCL twice: DDP_OVERLAP
#     unset (auto: stream-ordered) and off (synchronous), side by side:
#     rank 0's parameters equal the reference (relative L2 <= 1e-5, <= 1e-2
#     with bf16), ranks bit-identical, the communicator used the asked
#     backend, the overlap mode that ran (sync.json) is the one asked;
#   - a trace per ddprun run (--trace), `ddprun report` of it, and the rank
#     logs' summaries (-v);
# checks that gpt's weight-matrix gradients are sliced from cuBLAS's declared
# extents, and measures the launch rate with and without libddp (bench/launch_rate
# on the GPU) and allreduce bandwidth through libddp vs a direct NCCL call
# (tests/gpu/coll_gpu_bench).  Writes REPORT_DIR/report.md (date, GPU,
# driver, CUDA, NCCL, PyTorch; a table of checks with numbers) and the
# traces and logs under REPORT_DIR/runs/.  Exit status: 0 when no check
# failed, 1 otherwise, 2 on a bad command line.
#
# Parts (docs/gpu.md "Parts and budget"), in priority order: c_samples,
# gpt2 (GPT-2-small in PyTorch: plain at 2B, PyTorch DDP under torchrun,
# ddprun -n 2 overlap on and off), torch_train (its foreach, fused, clip and
# GradScaler variants, the same side by side), gpt (samples/gpt the same),
# coll_bench, launch_rate, cublas_mlp, torch_alloc.  Each has a GPU-time
# estimate; --budget S (default 480, or GPU_SUITE_BUDGET) drops parts from
# the end of that order while the estimates add up to more than S, each
# reported as skipped with its estimate; --quick runs a subset with fewer
# steps; --parts a,b runs those only.  A run that would start after the
# budget is spent is reported as skipped, never silently left out.
#
# Settings (environment): GPU_BUILD, GPU_SUITE_BUDGET, DDP_NCCL_LIB (NCCL to
# use; default: PyTorch's, else the system's), GPU_SUITE_COMMIT (the commit
# the report names, where the tree's copy has no git metadata),
# GPU_NCCL_MODE=multirank|hostid
# (how two ranks share the GPU; default by NCCL version), PYTHON (python3),
# NVIDIA_SMI (nvidia-smi), GPT2_SIZE (small; tiny on the CPU device) and
# GPT2_ARGS (more options of the gpt2 part's runs).
#
# --cpu-device (development only, not for users): runs the suite on the CPU
# device (build/cpudev/lib), the NCCL rows through its NCCL stand-in, the
# PyTorch parts with the real wheel in trace mode (values meaningless: only
# structure is checked there; the DDP twins run on the CPU with gloo beside
# the script on the CPU, which are real numbers), so the checks and the
# report can be exercised without a GPU.  Its report never goes to
# docs/gpu-validation: it needs REPORT_DIR or --report-root.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
PY=${PYTHON:-python3}
SMI=${NVIDIA_SMI:-nvidia-smi}
QUICK=0 NOBUILD=0 CPU=0 PLAN=0 STEPS= STEPS_ASKED=0 OUT= ROOTDIR= PARTS_ASKED= BUDGET=${GPU_SUITE_BUDGET:-480}
usage() {
	echo "tests/gpu/run.sh: $1; usage: tests/gpu/run.sh [--quick] [--no-build] [--steps N] [--budget S] [--parts LIST] [--plan] [--report-root DIR | REPORT_DIR]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1 ;;
	--no-build) NOBUILD=1 ;;
	--cpu-device) CPU=1 ;;
	--plan) PLAN=1 ;;
	--steps) [ $# -ge 2 ] && [ "$2" -ge 1 ] 2>/dev/null || usage "--steps needs a positive integer"
		STEPS=$2 STEPS_ASKED=1; shift ;;
	--budget) [ $# -ge 2 ] && [ "$2" -ge 1 ] 2>/dev/null || usage "--budget needs a positive number of seconds"
		BUDGET=$2; shift ;;
	--parts) [ $# -ge 2 ] && [ -n "$2" ] || usage "--parts needs a comma-separated list of parts"
		PARTS_ASKED=$2; shift ;;
	--report-root) [ $# -ge 2 ] && [ -n "$2" ] || usage "--report-root needs a folder"
		ROOTDIR=$2; shift ;;
	-h|--help) sed -n '4,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) usage "unknown option $1" ;;
	*) [ -z "$OUT" ] || usage "one REPORT_DIR only"; OUT=$1 ;;
	esac
	shift
done
[ -n "$OUT" ] && [ -n "$ROOTDIR" ] && usage "give REPORT_DIR or --report-root, not both"
[ $CPU -eq 1 ] && [ $PLAN -eq 0 ] && [ -z "$OUT$ROOTDIR" ] &&
	usage "--cpu-device needs REPORT_DIR or --report-root (docs/gpu-validation is for real GPU runs)"
[ "$BUDGET" -ge 1 ] 2>/dev/null || usage "GPU_SUITE_BUDGET must be a positive number of seconds"
# --cpu-device: real PyTorch from the cache venv where it is installed
# (branch torch's ${DDPRUN_CACHE:-$HOME/.cache/ddprun}/torch-2.15.0), unless PYTHON says otherwise
if [ $CPU -eq 1 ] && [ -z "${PYTHON:-}" ] && [ -x "${DDPRUN_CACHE:-$HOME/.cache/ddprun}/torch-2.15.0/bin/python" ]; then
	PY=${DDPRUN_CACHE:-$HOME/.cache/ddprun}/torch-2.15.0/bin/python
fi

# ---- the parts: name|GPU estimate full|GPU estimate --quick (0: not in
# --quick)|what.  In priority order: --budget drops from the end.  The
# estimates and how they were derived: docs/gpu.md "Parts and budget".
PART_DEFS=(
	"c_samples|60|40|mlp, charlm, fused: plain, -n 1, -n 2 host and NCCL overlap auto/off"
	"gpt2|100|70|GPT-2 small in PyTorch: plain at 2B, PyTorch DDP, ddprun -n 2 overlap auto/off"
	"torch_train|190|95|torch_train.py foreach, fused, clip, GradScaler beside PyTorch DDP (--quick: foreach, GradScaler)"
	"gpt|25|20|samples/gpt: plain, -n 1, -n 2 host and NCCL overlap auto/off; cuBLAS slices"
	"coll_bench|15|10|allreduce bandwidth, libddp vs direct NCCL"
	"launch_rate|10|5|host time per launch with and without libddp"
	"cublas_mlp|25|0|cudart + cuBLAS sample, the same rows as c_samples"
	"torch_alloc|45|0|torch_train under ddprun -n 2 (NCCL) with keep-grads and the two other allocators"
)
SUITE_OVERHEAD=10 # the environment probes (PyTorch's import, nvidia-smi, NCCL's version)
TORCH_VARIANTS=$([ $QUICK -eq 1 ] && echo "foreach gradscaler" || echo "foreach fused clip gradscaler")
declare -a P_NAME P_EST P_WHAT P_STATE P_WALL
np=0
for d in "${PART_DEFS[@]}"; do
	IFS='|' read -r n ef eq w <<<"$d"
	P_NAME[np]=$n P_WHAT[np]=$w P_EST[np]=$([ $QUICK -eq 1 ] && echo "$eq" || echo "$ef") P_STATE[np]=run P_WALL[np]=-
	if [ -n "$PARTS_ASKED" ]; then
		case ",$PARTS_ASKED," in *",$n,"*) [ "${P_EST[np]}" -gt 0 ] || P_EST[np]=$ef ;; *) P_STATE[np]="not asked (--parts)" ;; esac
	elif [ "${P_EST[np]}" -eq 0 ]; then
		P_STATE[np]="not in --quick"
	fi
	np=$((np + 1))
done
for n in ${PARTS_ASKED//,/ }; do
	printf '%s\n' "${P_NAME[@]}" | grep -qx "$n" || usage "unknown part '$n' in --parts (parts: ${P_NAME[*]})"
done
plan_total() {
	local i t=$SUITE_OVERHEAD
	for i in $(seq 0 $((np - 1))); do [ "${P_STATE[i]}" = run ] && t=$((t + P_EST[i])); done
	echo $t
}
PLANNED_FULL=$(plan_total)
# in priority order, a part is kept when it still fits the budget
kept=$SUITE_OVERHEAD
for i in $(seq 0 $((np - 1))); do
	[ "${P_STATE[i]}" = run ] || continue
	if [ $((kept + P_EST[i])) -le "$BUDGET" ]; then kept=$((kept + P_EST[i]))
	else P_STATE[i]="dropped by --budget $BUDGET"; fi
done
# --plan: the parts, their estimates and what the budget keeps; runs nothing
if [ $PLAN -eq 1 ]; then
	printf '%-12s %-8s %-13s %s\n' part priority "estimate(s)" state
	for i in $(seq 0 $((np - 1))); do
		printf '%-12s %-8d %-13s %s\n' "${P_NAME[i]}" $((i + 1)) "${P_EST[i]}" "${P_STATE[i]}"
	done
	echo "estimated ${PLANNED_FULL}s on one H100 for what was asked (${SUITE_OVERHEAD}s of probes included); $(plan_total)s planned within the budget of ${BUDGET}s"
	exit 0
fi

# ---- is there a GPU?  (before anything is written)
if [ $CPU -eq 0 ]; then
	if ! command -v "$SMI" >/dev/null 2>&1; then
		echo "gpu suite skipped: no GPU (nvidia-smi not found)"
		exit 77
	fi
	if ! "$SMI" -L 2>/dev/null | grep -q '^GPU [0-9]'; then
		echo "gpu suite skipped: no GPU (nvidia-smi found no device)"
		exit 77
	fi
fi

T_START=$(date +%s)
# the commit: GPU_SUITE_COMMIT where the copy of the tree has no (or stale) git metadata
COMMIT=${GPU_SUITE_COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)}
[[ $COMMIT =~ ^[0-9A-Za-z._-]+$ ]] || usage "GPU_SUITE_COMMIT must be letters, digits, '.', '_' or '-'"
[ -n "$STEPS" ] || { [ $QUICK -eq 1 ] && STEPS=12 || STEPS=40; }
# no REPORT_DIR: REPORT_ROOT/DATE-DEVICE-COMMIT (docs/gpu-validation by default)
if [ -z "$OUT" ]; then
	if [ $CPU -eq 1 ]; then dev_slug=cpudev
	else
		dev_slug=$("$SMI" --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1 |
			tr 'A-Z' 'a-z' | sed 's/^nvidia //; s/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
	fi
	OUT=${ROOTDIR:-$ROOT/docs/gpu-validation}/$(date -u +%Y-%m-%d)-${dev_slug:-gpu}-$COMMIT
	[ -e "$OUT" ] && OUT=$OUT-$(date -u +%H%M%S)
fi
mkdir -p "$OUT/runs" || exit 1
OUT=$(cd "$OUT" && pwd)
RUNS=$OUT/runs
LOG=$OUT/suite.log
: >"$LOG"
# the gradient-sync tests' independent comparer (relative L2 of two float32 files)
RELERR=$ROOT/tests/e2e/sync/relerr.py

# ---- checks: name, PASS|FAIL|SKIP|INFO, details
NCHK=0 NPASS=0 NFAIL=0 NSKIP=0
declare -a C_NAME C_RES C_DET
check() {
	C_NAME[NCHK]=$1 C_RES[NCHK]=$2 C_DET[NCHK]=$3
	NCHK=$((NCHK + 1))
	case $2 in PASS) NPASS=$((NPASS + 1)) ;; FAIL) NFAIL=$((NFAIL + 1)) ;; SKIP) NSKIP=$((NSKIP + 1)) ;; esac
	printf '%-5s %s: %s\n' "$2" "$1" "$3" | tee -a "$LOG"
}
elapsed() { echo $(($(date +%s) - T_START)); }
# budget_left SECONDS: true when that much of the budget is left
budget_left() { [ $(($(elapsed) + $1)) -le "$BUDGET" ]; }
run_timeout() { local left=$((BUDGET - $(elapsed))); [ $left -lt 20 ] && left=20; [ $left -gt 180 ] && left=180; echo $left; }
note() { echo "$*" | tee -a "$LOG"; }

# ---- environment facts
if [ $CPU -eq 1 ]; then
	GPU_NAME="none (--cpu-device: the CPU device, cpudev)" DRIVER=- CAP=- ARCH=
	B=${GPU_BUILD:-$BUILD}
else
	IFS=, read -r GPU_NAME DRIVER CAP GPU_MEM <<<"$("$SMI" --query-gpu=name,driver_version,compute_cap,memory.total \
		--format=csv,noheader -i 0 2>/dev/null | sed 's/, /,/g')"
	ARCH=${CAP//./}
	B=${GPU_BUILD:-$BUILD/gpu}
fi
CUDA_DRV=$("$SMI" 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)
NVCC_BIN=$(command -v nvcc || { [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ] && echo "$CUDA_HOME/bin/nvcc"; })
CUDA_TK=$([ -n "$NVCC_BIN" ] && "$NVCC_BIN" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
TORCH_INFO=$(timeout 120 "$PY" -c 'import torch; print(torch.__version__, torch.version.cuda, ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "-", torch.cuda.is_available())' 2>/dev/null | tail -1)
read -r TORCH_VER TORCH_CUDA TORCH_NCCL TORCH_GPU <<<"${TORCH_INFO:-- - - False}"
# torchrun beside $PY (a venv's), else on PATH: the DDP twin's launcher
if [ -z "${TORCHRUN:-}" ]; then
	TORCHRUN=$(dirname "$(command -v "$PY" 2>/dev/null || echo /nonexistent/x)")/torchrun
	[ -x "$TORCHRUN" ] || TORCHRUN=$(command -v torchrun 2>/dev/null)
fi

# NCCL: DDP_NCCL_LIB, else PyTorch's, else the system's, else the toolkit's
find_nccl() {
	local p
	[ -n "${DDP_NCCL_LIB:-}" ] && { echo "$DDP_NCCL_LIB"; return; }
	p=$("$PY" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
	[ -n "$p" ] && [ -e "$p" ] && { echo "$p"; return; }
	p=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 / { print $NF; exit }')
	[ -n "$p" ] && { echo "$p"; return; }
	for p in "${CUDA_HOME:-/usr/local/cuda}"/lib64/libnccl.so.2 "${CUDA_HOME:-/usr/local/cuda}"/lib/libnccl.so.2; do
		[ -e "$p" ] && { echo "$p"; return; }
	done
}
if [ $CPU -eq 1 ]; then
	# the CPU device's NCCL stand-in (docs/cpu-device.md "NCCL"), never a real NCCL
	NCCL_LIB=
	[ -e "$B/cpudev/lib/nccl/libnccl.so.2" ] && NCCL_LIB=$(cd "$B/cpudev/lib/nccl" && pwd)/libnccl.so.2
else
	NCCL_LIB=$(find_nccl)
fi
NCCL_CODE=$([ -n "$NCCL_LIB" ] && "$PY" -c 'import ctypes, sys
l = ctypes.CDLL(sys.argv[1]); v = ctypes.c_int(0); l.ncclGetVersion(ctypes.byref(v)); print(v.value)' "$NCCL_LIB" 2>/dev/null)
NCCL_VER=-
[ -n "$NCCL_CODE" ] && NCCL_VER=$((NCCL_CODE / 10000)).$((NCCL_CODE / 100 % 100)).$((NCCL_CODE % 100))
NCCL_MODE=${GPU_NCCL_MODE:-$([ "${NCCL_CODE:-0}" -ge 23000 ] && echo multirank || echo hostid)}
[ $CPU -eq 1 ] && NCCL_MODE=standin
[ -n "$NCCL_LIB" ] && export DDP_NCCL_LIB=$NCCL_LIB

note "gpu suite: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), GPU $GPU_NAME (cc $CAP), driver $DRIVER, CUDA ${CUDA_DRV:--} (toolkit ${CUDA_TK:--}), NCCL $NCCL_VER ($NCCL_LIB), PyTorch $TORCH_VER; steps $STEPS; build $B"

# ---- build
# The data sets come from /usr/share/common-licenses (ddp-mkdata); a machine
# without it uses the ones built here ($BUILD/data, carried along), which
# make is then told not to remake.
MAKE_DATA=()
if [ ! -d /usr/share/common-licenses ] && [ "$B" != "$BUILD" ] && [ -s "$BUILD/data/mlp.rec" ] &&
	[ -s "$BUILD/data/charlm.rec" ]; then
	mkdir -p "$B/data" && cp "$BUILD/data/mlp.rec" "$BUILD/data/charlm.rec" "$B/data/"
	MAKE_DATA=(-o "$B/data/mlp.rec" -o "$B/data/charlm.rec")
	note "no /usr/share/common-licenses: using the data sets of $BUILD/data"
fi
if [ $NOBUILD -eq 1 ]; then
	check build INFO "--no-build: using $B as it is"
elif [ $CPU -eq 1 ]; then
	if make -j"$(nproc)" BUILD="$B" gpu-suite-sim-build >"$RUNS/build.log" 2>&1; then
		check build PASS "make gpu-suite-sim-build (CPU device) into $B"
	else check build FAIL "make gpu-suite-sim-build failed: $(tail -1 "$RUNS/build.log")"; fi
else
	if [ -z "$NVCC_BIN" ]; then
		check build FAIL "nvcc not found (set CUDA_HOME, or build elsewhere and pass --no-build)"
	elif make -j"$(nproc)" "${MAKE_DATA[@]}" BUILD="$B" CUDA_ARCHS="$ARCH" gpu-suite-build >"$RUNS/build.log" 2>&1; then
		check build PASS "make gpu-suite-build CUDA_ARCHS=$ARCH into $B ($(($(elapsed)))s)"
	else check build FAIL "make gpu-suite-build CUDA_ARCHS=$ARCH failed: $(tail -1 "$RUNS/build.log")"; fi
fi
DDPRUN=$B/bin/ddprun LIBDDP=$B/lib/libddp.so MLP_DATA=$B/data/mlp.rec CHAR_DATA=$B/data/charlm.rec
# libddp's own shared-library dependencies, when bundled (make gpu-bundle)
[ -d "$B/gpu-deps" ] && export LD_LIBRARY_PATH="$(cd "$B/gpu-deps" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -e "$LIBDDP" ]; then
	missing=$(ldd "$LIBDDP" 2>/dev/null | awk '/not found/ { print $1 }' | tr '\n' ' ')
	[ -z "$missing" ] || check "libddp.so loads" FAIL "missing shared libraries: $missing(make gpu-bundle on the build machine)"
fi
for f in "$DDPRUN" "$LIBDDP" "$MLP_DATA" "$CHAR_DATA" "$RELERR"; do
	[ -e "$f" ] || { check prerequisites FAIL "$f is not built"; }
done

# ---- how programs run
if [ $CPU -eq 1 ]; then
	PLAIN_ENV=(env "LD_LIBRARY_PATH=$B/cpudev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
	DDP_DEV=(--device cpu)
else
	PLAIN_ENV=(env)
	DDP_DEV=(--device gpu)
fi
unset DDP_SYNC DDP_CHECK DDP_LOG DDP_TRACE DDP_OPT_KERNELS DDP_GRAD_READER_KERNELS DDP_GRAD_DTYPE
# extra environment of the ddprun runs (the PyTorch parts' trace mode on the CPU device)
DDP_XENV=()
REF_CMD=()

# secs_of FILE: the seconds of the "...: ran N steps on DEV in S s" line
secs_of() { sed -n 's/.*: ran [0-9]* steps on .* in \([0-9.]*\) s\( (.*)\)\{0,1\}$/\1/p' "$1" | tail -1; }
# steps_of FILE: number of "step K loss V" lines (prefix allowed) with a finite loss
steps_of() { grep -cE '(^|\] )step [0-9]+ loss [0-9]+\.[0-9]+' "$1"; }
first_last_loss() { sed -n 's/^\(\[rank 0\] \)\{0,1\}step [0-9]* loss \([0-9.]*\).*/\2/p' "$1" | sed -n '1p;$p' | paste -sd' '; }
relerr() { "$PY" "$RELERR" "$1" "$2" ${3:+"$3"}; }

# plain DIR TAG CMD...: one run without ddprun; DIR/TAG.{out,err,bin}
plain() {
	local dir=$1 tag=$2
	shift 2
	timeout "$(run_timeout)" "${PLAIN_ENV[@]}" "$@" --save "$dir/$tag.bin" >"$dir/$tag.out" 2>"$dir/$tag.err"
}
# ddp DIR TAG N BACKEND CMD...: ddprun -n N; rank k saves DIR/TAG.k.bin;
# DIR/TAG.{out,err}, logs in DIR/TAG.logs, trace in DIR/TAG.trace
ddp() {
	local dir=$1 tag=$2 n=$3 be=$4 wrap
	shift 4
	local -a envs=() shard=()
	[ "$n" -gt 1 ] && shard=(--shard "$DATA")
	wrap='exec "$0" "$@" --save "'"$dir/$tag"'.$RANK.bin"'
	if [ "$be" = nccl ] && [ "$n" -gt 1 ]; then
		if [ "$NCCL_MODE" = multirank ]; then envs=(NCCL_MULTI_RANK_GPU_ENABLE=1)
		elif [ "$NCCL_MODE" = hostid ]; then
			envs=(NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1)
			wrap='NCCL_HOSTID=ddpgpu-host$RANK '$wrap
		fi
	fi
	envs+=("${DDP_XENV[@]}")
	mkdir -p "$dir/$tag.logs" "$dir/$tag.trace"
	local t0 rc
	t0=$(date +%s.%N)
	timeout "$(run_timeout)" env "${envs[@]}" "$DDPRUN" -n "$n" "${DDP_DEV[@]}" --backend "$be" -v --all-ranks-write \
		--log-dir "$dir/$tag.logs" --trace "$dir/$tag.trace" "${shard[@]}" -- sh -c "$wrap" "$@" \
		>"$dir/$tag.out" 2>"$dir/$tag.err"
	rc=$?
	echo "$(date +%s.%N) - $t0" | bc >"$dir/$tag.wall"
	return $rc
}
why() { tail -n 3 "$1" | tr '\n' ' ' | cut -c1-300; }
# ms_per_step SECONDS [STEPS]
ms_per_step() { [ -n "$1" ] && awk -v s="$1" -v n="${2:-$STEPS}" 'BEGIN { printf "%.3f", s * 1000 / n }'; }

# program NAME TOL DATA BATCH TSTEPS CMD...: the checks of one program (CMD
# without --steps/--batch/--save).  The equivalence runs take $STEPS steps;
# the plain and -n 1 runs TSTEPS (enough for the "%.2f s" timing line).
program() {
	local name=$1 tol=$2 batch=$4 tsteps=$5 dir=$RUNS/${1// /_} out rc t1 tn be
	DATA=$3
	shift 5
	mkdir -p "$dir"
	if ! budget_left 30; then
		check "$name" SKIP "suite time budget (${BUDGET}s) spent before it started"
		return
	fi
	# the reference: one process at 2 x batch (REF_CMD: another command line for it)
	if [ ${#REF_CMD[@]} -gt 0 ]; then plain "$dir" ref "${REF_CMD[@]}" --steps "$STEPS" --batch $((2 * batch))
	else plain "$dir" ref "$@" --steps "$STEPS" --batch $((2 * batch)); fi
	rc=$?
	if [ $rc -ne 0 ]; then
		check "$name: reference run (batch $((2 * batch)))" FAIL "exit $rc: $(why "$dir/ref.err")"
		return
	fi
	out=$(first_last_loss "$dir/ref.out")
	if [ "$(steps_of "$dir/ref.out")" -ne "$STEPS" ]; then
		check "$name: reference run" FAIL "$(steps_of "$dir/ref.out") step lines, expected $STEPS"
	elif ! awk -v f="${out% *}" -v l="${out#* }" 'BEGIN { exit !(l + 0 < f + 0) }'; then
		check "$name: reference run (batch $((2 * batch)))" FAIL "the loss does not fall: first/last $out"
	else
		check "$name: reference run (batch $((2 * batch)))" PASS "loss first/last $out in $(secs_of "$dir/ref.err") s"
	fi
	# world size 1: nothing may change
	if [ "${SKIP_N1:-0}" -eq 1 ]; then
		check "$name: ddprun -n 1" SKIP "--quick runs -n 1 for the default variant only"
	elif ! plain "$dir" plain "$@" --steps "$tsteps" --batch "$batch"; then
		check "$name: plain run (batch $batch)" FAIL "$(why "$dir/plain.err")"
	else
		be=nccl
		[ $CPU -eq 1 ] && be=host
		ddp "$dir" n1 1 $be "$@" --steps "$tsteps" --batch "$batch"
		rc=$?
		if [ $rc -eq 0 ]; then
			if cmp -s "$dir/plain.bin" "$dir/n1.0.bin"; then
				check "$name: ddprun -n 1 --backend $be" PASS "parameters bit-identical to the plain run"
			else
				check "$name: ddprun -n 1 --backend $be" FAIL "parameters differ from the plain run ($(relerr "$dir/n1.0.bin" "$dir/plain.bin" 2>&1))"
			fi
			t1=$(secs_of "$dir/plain.err") tn=$(secs_of "$dir/n1.err")
			if [ -n "$t1" ] && [ -n "$tn" ]; then
				check "$name: step time, plain vs -n 1" INFO "$(ms_per_step "$t1" "$tsteps") vs $(ms_per_step "$tn" "$tsteps") ms/step over $tsteps steps ($(awk -v a="$t1" -v b="$tn" 'BEGIN { if (a > 0) printf "%+.1f%%", (b - a) * 100 / a; else print "n/a" }'))"
			fi
		else
			check "$name: ddprun -n 1 --backend $be" FAIL "exit $rc: $(why "$dir/n1.err")"
		fi
	fi
	# two ranks on the one device, each backend; NCCL with DDP_OVERLAP
	# unset (auto: the stream-ordered path) and, beside it, off (the
	# synchronous calls): tag nccl_off
	local tag ov want
	for tag in host nccl nccl_off; do
		case " ${SKIP_TAGS:-} " in *" $tag "*) continue ;; esac
		be=${tag%_off} ov=auto
		[ $tag = nccl_off ] && ov=off
		if [ $be = nccl ] && [ -z "$NCCL_LIB" ]; then
			check "$name: ddprun -n 2 --backend nccl (overlap $ov)" FAIL "no NCCL library found (set DDP_NCCL_LIB)"
			continue
		fi
		if [ $tag = nccl_off ] && [ "${OWN_CTX:-0}" = 1 ]; then
			continue # refused either way (below)
		fi
		if ! budget_left 20; then
			check "$name: ddprun -n 2 --backend $be (overlap $ov)" SKIP "suite time budget (${BUDGET}s) spent"
			continue
		fi
		DDP_OVERLAP=$ov ddp "$dir" $tag 2 $be "$@" --steps "$STEPS" --batch "$batch"
		rc=$?
		local be0=$be
		be=$tag
		# a program with its own context (OWN_CTX=1: mlp's cuCtxCreate):
		# NCCL cannot reach its buffers, so --backend nccl must be refused
		# with the line that says to use host (the host run above trains)
		if [ $be = nccl ] && [ "${OWN_CTX:-0}" = 1 ]; then
			if [ $rc -ne 0 ] && grep -q 'made its own CUDA context' "$dir/$be.err"; then
				check "$name: ddprun -n 2 --backend nccl refused (own CUDA context)" PASS "$(grep -o 'the program made its own CUDA context[^;]*' "$dir/$be.err" | head -1)"
			else
				check "$name: ddprun -n 2 --backend nccl refused (own CUDA context)" FAIL "exit $rc: $(why "$dir/$be.err")"
			fi
			continue
		fi
		if [ ! -s "$dir/$be.0.bin" ]; then
			check "$name: ddprun -n 2 --backend $be" FAIL "exit $rc, no parameters saved: $(why "$dir/$be.err")"
			continue
		fi
		out=$(relerr "$dir/$be.0.bin" "$dir/ref.bin" "$tol" 2>&1)
		if [ $? -eq 0 ] && [ $rc -eq 0 ]; then
			check "$name: -n 2 --backend $be equals one process at 2x batch" PASS "$out <= $tol"
		else
			check "$name: -n 2 --backend $be equals one process at 2x batch" FAIL "exit $rc, $out (tolerance $tol)"
		fi
		if cmp -s "$dir/$be.0.bin" "$dir/$be.1.bin"; then
			check "$name: -n 2 --backend $be ranks bit-identical" PASS "rank 0 and rank 1 saved the same bytes"
		else
			check "$name: -n 2 --backend $be ranks bit-identical" FAIL "ranks differ ($(relerr "$dir/$be.1.bin" "$dir/$be.0.bin" 2>&1))"
		fi
		if grep -q "communicator ready: 2 ranks, $be0 backend" "$dir/$be.logs/latest/rank0.log" 2>/dev/null; then
			check "$name: -n 2 --backend $be used $be0" PASS "$(grep -o 'sync summary.*' "$dir/$be.logs/latest/rank0.log" | head -1 | cut -c1-200)"
		else
			check "$name: -n 2 --backend $be used $be0" FAIL "no 'communicator ready: 2 ranks, $be0 backend' in rank 0's log"
		fi
		# the overlap mode that ran (sync.json), and what auto chose
		out=$($PY -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j.get("overlap"), j.get("early_reductions"))' \
			"$dir/$be.trace/rank0.sync.json" 2>/dev/null)
		if [ "$ov" = off ]; then want=off; else want=on; fi
		if [ "${out%% *}" = "$want" ]; then
			check "$name: -n 2 --backend $be overlap $ov" PASS "ran with overlap ${out%% *} (early reductions ${out#* })"
		else
			check "$name: -n 2 --backend $be overlap $ov" FAIL "sync.json says overlap '${out%% *}', want $want: $(grep -m1 'DDP_OVERLAP=auto' "$dir/$be.err")"
		fi
		t1=$(secs_of "$dir/ref.err") tn=$(sed -n 's/^\[rank 0\] //p' "$dir/$be.err" >"$dir/$be.r0.err"; secs_of "$dir/$be.r0.err")
		[ -n "$tn" ] && check "$name: step time -n 2 $be" INFO "$(ms_per_step "$tn") ms/step per rank at batch $batch (one process at $((2 * batch)): $(ms_per_step "$t1"))"
		"$DDPRUN" report "$dir/$be.trace" >"$dir/$be.report.txt" 2>&1 || true
	done
}

# ---- the C samples (driver API): part c_samples
c_samples() {
	SKIP_N1=0
	local csteps
	csteps=$([ $QUICK -eq 1 ] && echo 300 || echo 1000)
	[ $CPU -eq 1 ] && csteps=100
	OWN_CTX=1 program mlp 1e-5 "$MLP_DATA" 8 $csteps "$B/samples/mlp" --data "$MLP_DATA"
	program charlm 1e-5 "$CHAR_DATA" 2 $csteps "$B/samples/charlm" --data "$CHAR_DATA" --clip 0.5
	program fused 1e-2 "$MLP_DATA" 8 $csteps "$B/samples/fused" --data "$MLP_DATA"
}

# ---- cuBLAS + runtime API: part cublas_mlp
cublas_mlp() {
	if [ $CPU -eq 1 ]; then
		check cublas_mlp SKIP "--cpu-device: this suite runs cudart programs on a GPU only (tests/e2e/sync/cublas_mlp.sh covers the CPU device)"
		return
	elif [ ! -x "$B/samples/cublas_mlp" ]; then
		check cublas_mlp FAIL "$B/samples/cublas_mlp is not built (cuBLAS missing from the toolkit?)"
		return
	fi
	# cudart/cuBLAS not where the build machine had them: try PyTorch's copies
	if ldd "$B/samples/cublas_mlp" 2>/dev/null | grep -q 'not found'; then
		libs=$("$PY" -c 'import nvidia, os
for p in nvidia.__path__:
    for d, _, fs in os.walk(p):
        if any(f.startswith(("libcublas.so", "libcudart.so")) for f in fs): print(d)' 2>/dev/null | paste -sd:)
		[ -n "$libs" ] && export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" &&
			note "cublas_mlp: using cuBLAS/cudart from $libs"
	fi
	SKIP_N1=0
	program cublas_mlp 1e-5 "$MLP_DATA" 8 "$([ $QUICK -eq 1 ] && echo 300 || echo 1000)" "$B/samples/cublas_mlp" --data "$MLP_DATA"
	# same model, init, data and optimizer as mlp: same parameters up to rounding
	if [ -s "$RUNS/cublas_mlp/ref.bin" ] && [ -s "$RUNS/mlp/ref.bin" ]; then
		out=$(relerr "$RUNS/cublas_mlp/ref.bin" "$RUNS/mlp/ref.bin" 1e-3 2>&1)
		if [ $? -eq 0 ]; then check "cublas_mlp matches samples/mlp" PASS "$out <= 1e-3 after $STEPS steps at batch 16"
		else check "cublas_mlp matches samples/mlp" FAIL "$out > 1e-3 after $STEPS steps at batch 16"; fi
	fi
}

# ---- samples/gpt (llm.c's layout, real cuBLASLt on a GPU): part gpt.
# Beside one process at 2B: ddprun -n 2 --shard gpt.bin:mode=block, overlap
# auto and off (NCCL), final parameters (bf16: relative L2 1e-2), ranks
# identical, step time vs the plain run at B and 2B.  Then the slicing
# check: the GEMMs declare their output (interpose/hook_blas.c), so gpt's
# four weight-matrix gradient kinds are reduced layer by layer (sliced_ranges
# 4 in sync.json, docs/overlap.md); the job exits 0, so the invariant check
# found every byte the optimizer reads identical on both ranks.
gpt_slices() {
	local dir=$RUNS/gpt_slices G=$B/data/gpt.bin rc n
	mkdir -p "$dir"
	timeout "$(run_timeout)" env DDP_BUCKET_MB=0.0005 "$DDPRUN" -n 2 "${DDP_DEV[@]}" --backend host \
		--trace "$dir/trace" --shard "$G:mode=block" -- "$B/samples/gpt" --data "$G" --steps 12 --batch 4 \
		>"$dir/out" 2>"$dir/err"
	rc=$?
	n=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["sliced_ranges"])' \
		"$dir/trace/rank0.sync.json" 2>/dev/null)
	if [ $rc -eq 0 ] && [ "$n" = 4 ]; then
		check "gpt: weight-matrix slices from cuBLAS's declared extents" PASS "4 kind ranges sliced, invariant check passed"
	else
		check "gpt: weight-matrix slices from cuBLAS's declared extents" FAIL "exit $rc, sliced_ranges '$n': $(why "$dir/err")"
	fi
	"$DDPRUN" report "$dir/trace" >"$dir/report.txt" 2>&1 || true
}
gpt_part() {
	local G=$B/data/gpt.bin dir=$RUNS/gpt batch=4 T=16 gsteps=$STEPS
	local -a REF_CMD
	if [ ! -x "$B/samples/gpt" ] || [ ! -e "$G" ]; then
		check "gpt" FAIL "$B/samples/gpt or $G is not built"
		return
	fi
	mkdir -p "$dir"
	# the reference's input: the ranks' block shards interleaved step by step
	# (tests/e2e/sync/blockref.py, independent of libddp)
	if ! python3 "$ROOT/tests/e2e/sync/blockref.py" "$G" "$dir/gref.bin" 2 "$gsteps" $((batch * (T + 1))) \
		>"$dir/blockref.err" 2>&1; then
		check "gpt: reference input" FAIL "blockref.py: $(why "$dir/blockref.err")"
		return
	fi
	# program(): the reference on gref.bin at 2B, plain and -n 1 at B, -n 2
	# host and NCCL overlap auto/off at B (0.005 MiB buckets: several
	# collectives per step, as tests/e2e/sync/nccl.sh)
	local tsteps=$([ $CPU -eq 1 ] && echo 20 || echo 200) tp tn tag
	SKIP_N1=0 REF_CMD=("$B/samples/gpt" --data "$dir/gref.bin") DDP_XENV=(DDP_BUCKET_MB=0.005)
	program gpt 1e-2 "$G:mode=block" $batch $tsteps "$B/samples/gpt" --data "$G"
	REF_CMD=() DDP_XENV=()
	# step time of the plain run at B beside ddprun -n 2's (rank 0's loop)
	tp=$(secs_of "$dir/plain.err" 2>/dev/null)
	for tag in nccl nccl_off; do
		tn=$(secs_of "$dir/$tag.r0.err" 2>/dev/null)
		[ -n "$tp" ] && [ -n "$tn" ] && check "gpt: step time, plain vs ddprun -n 2 ($tag)" INFO \
			"$(ms_per_step "$tp" "$tsteps") vs $(ms_per_step "$tn" "$STEPS") ms/step at batch $batch ($(awk -v a="$tp" -v b="$tn" -v m="$tsteps" -v n="$STEPS" 'BEGIN { if (a > 0) printf "x%.2f", (b / n) / (a / m); else print "n/a" }'))"
	done
	if budget_left 20; then gpt_slices; else check "gpt slices" SKIP "suite time budget (${BUDGET}s) spent"; fi
}

# ---- launch rate: host time per launch with and without libddp: part launch_rate
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
launch_rate() {
	local lr=$B/bench/launch_rate fb=$B/tests/e2e/interpose/progs/kernels.fatbin m base with i
	local -a env=(env)
	if [ ! -x "$lr" ] || [ ! -e "$fb" ]; then
		check "launch rate" FAIL "$lr or $fb is not built"
		return
	fi
	if [ $CPU -eq 1 ]; then
		m=20000
		env=(env "LD_LIBRARY_PATH=$B/cpudev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "SIMCUDA_KERNELS=$B/tests/e2e/interpose/progs/kernels.kern.so")
	else
		m=$([ $QUICK -eq 1 ] && echo 50000 || echo 200000)
	fi
	base=$(for i in 1 2 3; do timeout 60 "${env[@]}" "$lr" launches $m "$fb" 2>>"$RUNS/launch_rate.err" |
		awk '/ns_per_launch/ { print $2 }'; done | median)
	with=$(for i in 1 2 3; do timeout 60 "${env[@]}" LD_PRELOAD="$LIBDDP" DDP_LOG=warn "$lr" launches $m "$fb" \
		2>>"$RUNS/launch_rate.err" | awk '/ns_per_launch/ { print $2 }'; done | median)
	if [ -n "$base" ] && [ -n "$with" ]; then
		check "launch rate ($m launches of an empty kernel, median of 3)" PASS \
			"$base ns/launch without libddp, $with with, added $(awk -v a="$with" -v b="$base" 'BEGIN { printf "%.1f", a - b }') ns"
	else
		check "launch rate" FAIL "bench/launch_rate printed no figure (without: '${base}', with: '${with}'): $(why "$RUNS/launch_rate.err")"
	fi
}

# ---- allreduce bandwidth: libddp's collective vs a direct NCCL call: part coll_bench
coll_bench() {
	local cb=$B/tests/gpu/coll_gpu_bench sizes out rc
	local -a args=() envs=()
	if [ ! -x "$cb" ]; then
		check "allreduce bandwidth" FAIL "$cb is not built (nccl.h missing at build time?)"
		return
	fi
	if [ $CPU -eq 1 ]; then
		# the CPU device's NCCL stand-in, through libddp and directly
		args=(--backend host --no-direct -s 64K,1M)
		[ -n "$NCCL_LIB" ] && args=(--backend nccl --nccl-lib "$NCCL_LIB" -s 64K,1M)
		envs=("LD_LIBRARY_PATH=$B/cpudev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
	else
		sizes=$([ $QUICK -eq 1 ] && echo 1M,16M || echo 64K,1M,16M,64M)
		args=(--backend nccl --nccl-lib "$NCCL_LIB" -s "$sizes")
		if [ "$NCCL_MODE" = multirank ]; then envs=(NCCL_MULTI_RANK_GPU_ENABLE=1)
		else args+=(--hostid); envs=(NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1); fi
	fi
	timeout "$(run_timeout)" env "${envs[@]}" "$cb" "${args[@]}" >"$RUNS/coll_bench.out" 2>"$RUNS/coll_bench.err"
	rc=$?
	if [ $rc -ne 0 ] || ! grep -q '^coll bytes=' "$RUNS/coll_bench.out"; then
		check "allreduce bandwidth (2 ranks, one GPU)" FAIL "exit $rc: $(why "$RUNS/coll_bench.err")"
		return
	fi
	while read -r line; do
		out=$(awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			s = sprintf("%s: %s us, %s GB/s algbw through libddp", v["backend"], v["lib_us"], v["lib_algbw_gbps"])
			if ("direct_us" in v) s = s sprintf("; direct NCCL %s us, %s GB/s (libddp/direct %.0f%%)", v["direct_us"],
				v["direct_algbw_gbps"], 100 * v["lib_algbw_gbps"] / v["direct_algbw_gbps"])
			print s }' <<<"$line")
		check "allreduce f32 $(sed 's/.*bytes=\([0-9]*\).*/\1/' <<<"$line") bytes (2 ranks, one device)" PASS "$out"
	done < <(grep '^coll bytes=' "$RUNS/coll_bench.out")
}

# ---- PyTorch beside PyTorch DDP (issue 23)
# cmp_params KIND A B DIR TOL: "relerr"/"paramdiff" of A against B (B the
# closer-to-truth side); prints the figure, status 0 within TOL.  paramdiff
# (gpt2: 124M floats) measures against what training moved (DIR/init.bin).
cmp_params() {
	if [ "$1" = paramdiff ]; then "$PY" "$ROOT/tests/gpu/paramdiff.py" "$2" "$3" "$4/init.bin" "$5" 2>&1 | tail -1
		return "${PIPESTATUS[0]}"
	fi
	relerr "$2" "$3" "$5" 2>&1
}

# sbs NAME CMP TOL BATCH SPEC SCRIPT TWIN ARGS...: one PyTorch script side by
# side, each run at the same per-rank batch B (ARGS without --steps/--batch/
# --save/--device):
#   ref        SCRIPT, one process at 2B (the truth)
#   torchddp   TWIN under torchrun, 2 ranks at B (what its users run instead)
#   nccl       ddprun -n 2 --backend nccl --shard SPEC at B, DDP_OVERLAP auto
#   nccl_off   the same with DDP_OVERLAP=off
# Rows: DDP = ref and ddprun = ref (CMP within TOL), ddprun vs DDP, ranks
# identical, the backend and overlap mode that ran, step-time ratio
# ddprun/DDP (the training loops' own times), exposed communication
# (rank0.sync.json: comm_ms - comm_hidden_ms, grad_wait_ms), start-up (to the
# first step) and peak memory where the script prints them.
# --cpu-device: ref and the twin run on the CPU (gloo; real numbers, so the
# twin's data split and averaging are checked), the ddprun runs on the CPU
# device in trace mode (SIMCUDA_UNKNOWN_KERNELS=skip: PyTorch's kernels are
# skipped, values meaningless): only their structure is checked (exit 0,
# both ranks saved, NCCL stand-in used, overlap mode), value rows are SKIP.
sbs() {
	local name=$1 cmp=$2 tol=$3 batch=$4 spec=$5 script=$6 twin_script=$7
	shift 7
	local dir=$RUNS/${name// /_} dev=cuda out rc tag ov t_ddp t_lib port t0 want
	local -a initarg=() envs=()
	[ $CPU -eq 1 ] && dev=cpu
	[ "$cmp" = paramdiff ] && initarg=(--save-init "$dir/init.bin")
	mkdir -p "$dir"
	# 1. one process at 2B
	timeout "$(run_timeout)" "$PY" "$script" --device $dev --steps "$STEPS" --batch $((2 * batch)) \
		--save "$dir/ref.bin" "${initarg[@]}" "$@" >"$dir/ref.out" 2>"$dir/ref.err"
	rc=$?
	out=$(first_last_loss "$dir/ref.out")
	if [ $rc -ne 0 ] || [ ! -s "$dir/ref.bin" ]; then
		check "$name: one process at batch $((2 * batch)) ($dev)" FAIL "exit $rc: $(why "$dir/ref.err")"
		return
	elif [ "$(steps_of "$dir/ref.out")" -ne "$STEPS" ]; then
		check "$name: one process at batch $((2 * batch)) ($dev)" FAIL "$(steps_of "$dir/ref.out") step lines, expected $STEPS"
	elif ! awk -v f="${out% *}" -v l="${out#* }" 'BEGIN { exit !(l + 0 < f + 0) }'; then
		check "$name: one process at batch $((2 * batch)) ($dev)" FAIL "the loss does not fall: first/last $out"
	else
		check "$name: one process at batch $((2 * batch)) ($dev)" PASS "loss first/last $out; $(secs_of "$dir/ref.err") s for $STEPS steps$(sed -n 's/.*: peak memory \(.*\)$/, peak memory \1/p' "$dir/ref.err")"
	fi
	# 2. PyTorch DDP under torchrun
	if [ -z "$TORCHRUN" ]; then
		check "$name: PyTorch DDP (torchrun, 2 ranks)" FAIL "no torchrun beside $PY or on PATH"
	else
		local wrap='exec "$0" "$@"'
		if [ $dev = cuda ]; then
			if [ "$NCCL_MODE" = multirank ]; then envs=(NCCL_MULTI_RANK_GPU_ENABLE=1)
			else envs=(NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1); wrap='NCCL_HOSTID=ddpgpu-host$RANK '$wrap; fi
		fi
		port=$((20000 + (RANDOM * 7 + $$) % 40000))
		t0=$(date +%s.%N)
		timeout "$(run_timeout)" env "${envs[@]}" "$TORCHRUN" --nproc_per_node 2 --master-port $port --no-python \
			sh -c "$wrap" "$PY" "$twin_script" --device $dev --steps "$STEPS" --batch "$batch" \
			--save "$dir/torchddp.bin" "$@" >"$dir/torchddp.out" 2>"$dir/torchddp.err"
		rc=$?
		echo "$(date +%s.%N) - $t0" | bc >"$dir/torchddp.wall"
		if [ $rc -ne 0 ] || [ ! -s "$dir/torchddp.bin" ]; then
			check "$name: PyTorch DDP (torchrun, 2 ranks)" FAIL "exit $rc: $(why "$dir/torchddp.err")"
		else
			out=$(cmp_params "$cmp" "$dir/torchddp.bin" "$dir/ref.bin" "$dir" "$tol")
			if [ $? -eq 0 ]; then check "$name: PyTorch DDP (torchrun, 2 ranks) equals one process at 2x batch" PASS "$out <= $tol"
			else check "$name: PyTorch DDP (torchrun, 2 ranks) equals one process at 2x batch" FAIL "$out (tolerance $tol)"; fi
		fi
	fi
	t_ddp=$(secs_of "$dir/torchddp.err" 2>/dev/null)
	# 3. ddprun -n 2, NCCL, overlap auto and off
	local -a xenv=()
	[ $CPU -eq 1 ] && xenv=(SIMCUDA_UNKNOWN_KERNELS=skip DDP_CHECK_INVARIANT=0)
	for tag in nccl nccl_off; do
		ov=auto
		[ $tag = nccl_off ] && ov=off
		if [ -z "$NCCL_LIB" ]; then
			check "$name: ddprun -n 2 --backend nccl (overlap $ov)" FAIL "no NCCL library found (set DDP_NCCL_LIB)"
			continue
		fi
		if ! budget_left 20; then
			check "$name: ddprun -n 2 --backend nccl (overlap $ov)" SKIP "suite time budget (${BUDGET}s) spent"
			continue
		fi
		DATA=$spec DDP_XENV=("${xenv[@]}" "DDP_OVERLAP=$ov")
		ddp "$dir" $tag 2 nccl "$PY" "$script" --steps "$STEPS" --batch "$batch" "$@"
		rc=$?
		DDP_XENV=()
		sed -n 's/^\[rank 0\] //p' "$dir/$tag.err" >"$dir/$tag.r0.err"
		if [ $rc -ne 0 ] || [ ! -s "$dir/$tag.0.bin" ] || [ ! -s "$dir/$tag.1.bin" ]; then
			check "$name: ddprun -n 2 --backend nccl (overlap $ov)" FAIL "exit $rc: $(why "$dir/$tag.err")"
			continue
		fi
		if grep -q "communicator ready: 2 ranks, nccl backend" "$dir/$tag.logs/latest/rank0.log" 2>/dev/null; then
			check "$name: ddprun -n 2 (overlap $ov) ran, used NCCL$([ $CPU -eq 1 ] && echo ' (stand-in)')" PASS \
				"exit 0, both ranks saved; $(grep -o 'sync summary.*' "$dir/$tag.logs/latest/rank0.log" | head -1 | cut -c1-160)"
		else
			check "$name: ddprun -n 2 (overlap $ov) used NCCL" FAIL "no 'communicator ready: 2 ranks, nccl backend' in rank 0's log"
		fi
		out=$("$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j.get("overlap"), j.get("early_reductions"))' \
			"$dir/$tag.trace/rank0.sync.json" 2>/dev/null)
		want=on
		[ $ov = off ] && want=off
		if [ "${out%% *}" = "$want" ]; then
			check "$name: ddprun overlap $ov" PASS "ran with overlap ${out%% *} (early reductions ${out#* })"
		else
			check "$name: ddprun overlap $ov" FAIL "sync.json says overlap '${out%% *}', want $want: $(grep -m1 'DDP_OVERLAP=auto' "$dir/$tag.err")"
		fi
		if [ $CPU -eq 1 ]; then
			check "$name: ddprun ($tag) parameters vs one process at 2x batch and vs DDP" SKIP \
				"--cpu-device: PyTorch runs in trace mode there (its kernels skipped): the values mean nothing"
		else
			out=$(cmp_params "$cmp" "$dir/$tag.0.bin" "$dir/ref.bin" "$dir" "$tol")
			if [ $? -eq 0 ]; then check "$name: ddprun ($tag) equals one process at 2x batch" PASS "$out <= $tol"
			else check "$name: ddprun ($tag) equals one process at 2x batch" FAIL "$out (tolerance $tol)"; fi
			if cmp -s "$dir/$tag.0.bin" "$dir/$tag.1.bin"; then
				check "$name: ddprun ($tag) ranks bit-identical" PASS "rank 0 and rank 1 saved the same bytes"
			else check "$name: ddprun ($tag) ranks bit-identical" FAIL "ranks differ"; fi
			if [ -s "$dir/torchddp.bin" ]; then
				out=$(cmp_params "$cmp" "$dir/$tag.0.bin" "$dir/torchddp.bin" "$dir" "$tol")
				check "$name: ddprun ($tag) vs PyTorch DDP, final parameters" "$([ $? -eq 0 ] && echo PASS || echo FAIL)" "$out (tolerance $tol)"
			fi
		fi
		t_lib=$(secs_of "$dir/$tag.r0.err")
		[ -n "$t_lib" ] && [ -n "$t_ddp" ] && check "$name: step time ddprun ($tag) / PyTorch DDP" INFO \
			"$(awk -v a="$t_lib" -v b="$t_ddp" -v n="$STEPS" 'BEGIN { printf "%.2f (%.2f vs %.2f ms/step)", (b > 0 ? a / b : 0), 1000 * a / n, 1000 * b / n }')$([ $CPU -eq 1 ] && echo '; CPU device in trace mode vs gloo on the CPU: not comparable')"
		out=$("$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); ps=j.get("per_step", []); c=sum(p.get("comm_ms", 0) for p in ps); h=sum(p.get("comm_hidden_ms", 0) for p in ps); print("%.1f of %.1f ms of collectives not under backward (consumer waited %.1f ms) over %d steps" % (c - h, c, sum(p.get("grad_wait_ms", 0) for p in ps), len(ps)))' \
			"$dir/$tag.trace/rank0.sync.json" 2>/dev/null) && check "$name: exposed communication, ddprun ($tag)" INFO "$out"
		# GPT-2 small with overlap on (issue 29): the verdict "ddprun vs
		# DDP <= 1.00" on the training loops' own times, with the hidden
		# share of steps 3+ per rank beside it
		[ "${name%% *}" = gpt2 ] && [ $tag = nccl ] && gpt2_vs_ddp "$name" "$dir" "$t_lib" "$t_ddp"
	done
	t_ddp=$(sed -n 's/.*start-up \([0-9.]*\) s$/\1/p' "$dir/torchddp.err" 2>/dev/null)
	out="DDP ${t_ddp:+$t_ddp s to the first step, }whole run $(cat "$dir/torchddp.wall" 2>/dev/null) s"
	t_lib=$(sed -n 's/.*start-up \([0-9.]*\) s$/\1/p' "$dir/nccl.r0.err" 2>/dev/null | head -1)
	[ -s "$dir/nccl.wall" ] && out="$out; ddprun ${t_lib:+$t_lib s to the first step, }whole run $(cat "$dir/nccl.wall") s, loop $(secs_of "$dir/nccl.r0.err") s"
	t0=$(sed -n 's/.*peak memory \(.*\)$/\1/p' "$dir/torchddp.err" 2>/dev/null)
	[ -n "$t0" ] && out="$out; peak memory per rank: DDP $t0, ddprun $(sed -n 's/.*peak memory \(.*\)$/\1/p' "$dir/nccl.r0.err" | head -1)"
	check "$name: start-up, PyTorch DDP vs ddprun" INFO "$out"
}

# gpt2_vs_ddp NAME DIR T_DDPRUN T_DDP: step time of ddprun -n 2 (NCCL,
# overlap auto: on) against PyTorch DDP's, PASS when <= 1.00 on a GPU (INFO
# on the CPU device: trace mode against gloo is no comparison), and the
# share of communication hidden behind backward over steps 3+ per rank
# (comm_hidden_ms / comm_ms of rank<k>.sync.json)
gpt2_vs_ddp() {
	local name=$1 dir=$2 t_lib=$3 t_ddp=$4 hid r verdict
	hid=$(for r in 0 1; do "$PY" -c 'import json,sys; ps=[p for p in json.load(open(sys.argv[1])).get("per_step", []) if p.get("step", 0) >= 3]; c=sum(p.get("comm_ms", 0) for p in ps); h=sum(p.get("comm_hidden_ms", 0) for p in ps); print("rank %s %.0f%% of %.1f ms hidden" % (sys.argv[2], 100 * h / c if c else 0, c))' \
		"$dir/nccl.trace/rank$r.sync.json" "$r" 2>/dev/null; done | paste -sd, -)
	if [ -z "$t_lib" ] || [ -z "$t_ddp" ]; then
		check "$name: ddprun (overlap on) vs PyTorch DDP step time <= 1.00" "$([ $CPU -eq 1 ] && echo SKIP || echo FAIL)" "no loop time from one of the runs; ${hid:-no sync.json}"
		return
	fi
	verdict=$(awk -v a="$t_lib" -v b="$t_ddp" 'BEGIN { print (b > 0 && a / b <= 1.00) ? "PASS" : "FAIL" }')
	[ $CPU -eq 1 ] && verdict=INFO
	check "$name: ddprun (overlap on) vs PyTorch DDP step time <= 1.00" "$verdict" \
		"$(awk -v a="$t_lib" -v b="$t_ddp" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'); communication hidden (steps 3+): ${hid:-no sync.json}$([ $CPU -eq 1 ] && echo '; CPU device in trace mode vs gloo on the CPU: not comparable')"
}

# ---- part gpt2: the GPT-2-small-shaped model (samples/gpt2_torch.py; --tiny
# on the CPU device), 8 per rank x 1024 tokens, bf16 autocast, fused AdamW
gpt2_part() {
	local dir=$RUNS/gpt2 size=${GPT2_SIZE:-small} batch=8 W
	# on a GPU 20 steps (10 with --quick) unless --steps says otherwise:
	# each moves 497 MB of gradients (sbs and cmp_params see this STEPS)
	local STEPS=$STEPS
	[ $CPU -eq 0 ] && [ $STEPS_ASKED -eq 0 ] && STEPS=$([ $QUICK -eq 1 ] && echo 10 || echo 20)
	local -a more=()
	[ $CPU -eq 1 ] && size=${GPT2_SIZE:-tiny} batch=4 more=(--no-cudnn-attention)
	# GPT2_ARGS: more options of all four runs (e.g. --no-cudnn-attention, --opt foreach)
	read -r -a more <<<"${more[*]} ${GPT2_ARGS:-}"
	mkdir -p "$dir"
	if [ "$TORCH_VER" = - ]; then
		check gpt2 "$([ $CPU -eq 1 ] && echo SKIP || echo FAIL)" "no PyTorch for $PY (set PYTHON$([ $CPU -eq 1 ] && echo '; the wheel: make test-torch installs it'))"
		return
	fi
	local T
	T=$("$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import gpt2_torch as g; print(g.SIZES[sys.argv[2]][3])' "$ROOT/samples" $size)
	# exactly the windows the steps read: one process at 2B reads them once
	W=$((2 * batch * STEPS))
	if ! "$PY" "$ROOT/samples/gpt2_torch.py" --make-data "$B/data/gpt.bin" "$dir/data.bin" $W --size $size \
		>"$dir/data.err" 2>&1; then
		check "gpt2: data" FAIL "$(why "$dir/data.err")"
		return
	fi
	sbs "gpt2 $size" paramdiff "$GPT2_TOL" $batch "$dir/data.bin:mode=stride:record=$((2 * (T + 1)))" \
		"$ROOT/samples/gpt2_torch.py" "$ROOT/samples/gpt2_torch_ddp.py" --data "$dir/data.bin" --size $size "${more[@]}"
}
# bf16 with AdamW: the distance of two runs' parameters, measured against
# what training moved (paramdiff.py's rel_update).  On the CPU (gloo, tiny,
# 8 steps) PyTorch DDP vs one process at 2B gave 1.5e-2; one process at B
# (half the data: the negative control) gave 0.38; fp32 gave 4e-6.
GPT2_TOL=0.1

# ---- part torch_train: samples/torch_train.py's variants beside DDP
torch_train_part() {
	local v tol
	local -a flags
	if [ "$TORCH_VER" = - ]; then
		check torch_train "$([ $CPU -eq 1 ] && echo SKIP || echo FAIL)" "no PyTorch for $PY (set PYTHON)"
		return
	fi
	if [ $CPU -eq 0 ] && [ "$TORCH_GPU" != True ]; then
		check torch_train FAIL "PyTorch with CUDA is not importable by $PY (torch: ${TORCH_VER})"
		return
	fi
	# the same init as samples/mlp: --steps 0 saves the same bytes
	if timeout 120 "$PY" samples/torch_train.py --device cpu --data "$MLP_DATA" --steps 0 --save "$RUNS/torch_init.bin" \
		>/dev/null 2>"$RUNS/torch_init.err" &&
		"${PLAIN_ENV[@]}" "$B/samples/mlp" --data "$MLP_DATA" --steps 0 --save "$RUNS/mlp_init.bin" 2>/dev/null &&
		cmp -s "$RUNS/torch_init.bin" "$RUNS/mlp_init.bin"; then
		check "torch_train --steps 0 equals samples/mlp's initial parameters" PASS "bit-identical (64128 bytes)"
	else
		check "torch_train --steps 0 equals samples/mlp's initial parameters" FAIL "$(why "$RUNS/torch_init.err")"
	fi
	# foreach is AdamW's default on CUDA; clip: a max norm that bites every
	# step; gradscaler: fp16 autocast with GradScaler (unscale_ before clipping)
	for v in $TORCH_VARIANTS; do
		tol=1e-5
		case $v in
		foreach) flags=(--foreach) ;;
		fused) flags=(--fused) ;;
		clip) flags=(--fused --clip 0.05) ;;
		gradscaler) flags=(--foreach --amp-fp16) tol=1e-2 ;;
		amp-bf16) flags=(--amp-bf16) tol=1e-2 ;;
		esac
		if ! budget_left 30; then
			check "torch_train $v" SKIP "suite time budget (${BUDGET}s) spent before it started"
			continue
		fi
		sbs "torch_train $v" relerr $tol 8 "$MLP_DATA" "$ROOT/samples/torch_train.py" "$ROOT/samples/torch_train_ddp.py" \
			--data "$MLP_DATA" "${flags[@]}"
	done
}

# ---- part torch_alloc (GPU only): torch_train under ddprun -n 2 --backend
# nccl (overlap auto) beside one process at 2B, with zero_grad(set_to_none=
# False) and with the two allocators PYTORCH_CUDA_ALLOC_CONF selects beside
# the caching one (the torch_train part's runs use that)
torch_alloc_part() {
	local conf
	if [ $CPU -eq 1 ]; then
		check torch_alloc SKIP "--cpu-device: tests/torch/run.sh (make test-torch) covers the allocators on the CPU device"
		return
	fi
	if [ "$TORCH_GPU" != True ]; then
		check torch_alloc FAIL "PyTorch with CUDA is not importable by $PY (torch: ${TORCH_VER})"
		return
	fi
	SKIP_N1=1 SKIP_TAGS="host nccl_off"
	program "torch_train keep-grads" 1e-5 "$MLP_DATA" 8 100 "$PY" "$ROOT/samples/torch_train.py" --data "$MLP_DATA" --keep-grads
	for conf in expandable_segments:True backend:cudaMallocAsync; do
		PYTORCH_CUDA_ALLOC_CONF=$conf program "torch_train default $conf" 1e-5 "$MLP_DATA" 8 100 \
			"$PY" "$ROOT/samples/torch_train.py" --data "$MLP_DATA"
	done
	SKIP_N1=0 SKIP_TAGS=
}

note "parts: estimated ${PLANNED_FULL}s on one H100 for what was asked, $(plan_total)s planned within the budget of ${BUDGET}s"
for i in $(seq 0 $((np - 1))); do
	n=${P_NAME[i]}
	if [ "${P_STATE[i]}" != run ]; then
		case ${P_STATE[i]} in dropped*) check "part $n" SKIP "${P_STATE[i]} (estimate ${P_EST[i]}s; planned $PLANNED_FULL s > $BUDGET s)" ;; esac
		continue
	fi
	if ! budget_left 20; then
		P_STATE[i]="skipped: budget spent"
		check "part $n" SKIP "suite time budget (${BUDGET}s) spent before it started"
		continue
	fi
	t0=$(date +%s)
	case $n in
	c_samples) c_samples ;;
	gpt2) gpt2_part ;;
	torch_train) torch_train_part ;;
	gpt) gpt_part ;;
	coll_bench) coll_bench ;;
	launch_rate) launch_rate ;;
	cublas_mlp) cublas_mlp ;;
	torch_alloc) torch_alloc_part ;;
	esac
	P_WALL[i]=$(($(date +%s) - t0)) P_STATE[i]=ran
	note "part $n: ${P_WALL[i]} s (estimate on one H100: ${P_EST[i]} s)"
done

# ---- the report
case $NCCL_MODE in
multirank) NCCL_HOW=NCCL_MULTI_RANK_GPU_ENABLE=1 ;;
hostid) NCCL_HOW='NCCL_HOSTID per rank' ;;
*) NCCL_HOW="the CPU device's stand-in" ;;
esac
REPORT=$OUT/report.md
{
	echo "# ddprun GPU suite report"
	echo
	[ $CPU -eq 1 ] && echo "**--cpu-device development run: no GPU was used.** NCCL is the CPU device's stand-in; PyTorch under ddprun ran in trace mode (its kernels skipped), so its values mean nothing and only its structure was checked; the DDP twins ran on the CPU (gloo) beside the scripts on the CPU. Times are the CPU device's, not a GPU's." && echo
	echo "| | |"
	echo "|---|---|"
	echo "| date | $(date -u '+%Y-%m-%d %H:%M:%S UTC') |"
	echo "| host | $(uname -n) ($(uname -r)) |"
	echo "| GPU | $GPU_NAME (compute capability $CAP${GPU_MEM:+, $GPU_MEM}) |"
	echo "| driver | $DRIVER (CUDA ${CUDA_DRV:--}) |"
	echo "| CUDA toolkit | ${CUDA_TK:--} |"
	echo "| NCCL | $NCCL_VER ($NCCL_LIB); two ranks on one GPU via $NCCL_HOW |"
	echo "| PyTorch | $TORCH_VER (CUDA $TORCH_CUDA, NCCL $TORCH_NCCL) |"
	echo "| ddprun | $COMMIT$([ -n "${GPU_SUITE_COMMIT:-}" ] && echo ' (GPU_SUITE_COMMIT)' || { git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (+ local changes)'; }); build $B |"
	echo "| settings | steps $STEPS$([ $QUICK -eq 1 ] && echo ', --quick')${PARTS_ASKED:+, --parts $PARTS_ASKED}; budget ${BUDGET}s; took $(elapsed)s |"
	echo
	echo "**$NPASS passed, $NFAIL failed, $NSKIP skipped**"
	echo
	echo "## Parts"
	echo
	echo "Estimated on one H100 (docs/gpu.md, \"Parts and budget\"): ${PLANNED_FULL}s for what was asked, $(plan_total)s (with ${SUITE_OVERHEAD}s of probes) planned within the budget of ${BUDGET}s."
	echo
	echo "| part | priority | what | estimate on one H100 (s) | ran | wall time here (s) |"
	echo "|---|---|---|---|---|---|"
	for i in $(seq 0 $((np - 1))); do
		printf '| %s | %d | %s | %s | %s | %s |\n' "${P_NAME[i]}" $((i + 1)) "${P_WHAT[i]}" "${P_EST[i]}" "${P_STATE[i]}" "${P_WALL[i]}"
	done
	echo
	echo "| check | result | numbers |"
	echo "|---|---|---|"
	for i in $(seq 0 $((NCHK - 1))); do
		printf '| %s | %s | %s |\n' "${C_NAME[i]//|/\\|}" "${C_RES[i]}" "${C_DET[i]//|/\\|}"
	done
	echo
	echo "Each program: reference = one plain process at 2x batch; \`-n 2\` = \`ddprun -n 2 --shard DATA\` at batch B"
	echo "(stride sharding), rank 0's \`--save\` compared with tests/e2e/sync/relerr.py (relative L2); ranks compared with cmp."
	echo "Runs, logs (\`-v\`), traces and \`ddprun report\` output: \`runs/<program>/\`."
	echo
	echo "## Hook-log summaries (rank 0, -n 2)"
	for d in "$RUNS"/*/; do
		for be in host nccl; do
			[ -f "$d$be.logs/latest/rank0.log" ] || continue
			echo
			echo "### $(basename "$d") --backend $be"
			echo
			echo '```'
			grep -E 'sync summary|communicator ready|optimizer kernel|gradient-reader kernel|summary: [0-9]+ hooked|summary: (allocations|copies|kernel)|WARN|ERROR' \
				"$d$be.logs/latest/rank0.log" | sed 's/^\[rank 0\] //' | head -25
			echo '```'
		done
	done
} >"$REPORT"
echo "report: $REPORT"
echo "$NPASS passed, $NFAIL failed, $NSKIP skipped"
[ $NFAIL -eq 0 ]
