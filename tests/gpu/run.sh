#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/gpu/run.sh - the ddprun suite for a machine with a real GPU
# (docs/gpu.md).  One command, one report:
#
#   tests/gpu/run.sh [--quick] [--no-build] [--steps N] REPORT_DIR
#   make gpu-test GPU_REPORT_DIR=DIR [GPU_TEST_FLAGS=--quick]
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
# The whole suite keeps within GPU_SUITE_BUDGET seconds (default 450): a run
# that would start after that is reported as skipped, never silently left out.
#
# Settings (environment): GPU_BUILD, GPU_SUITE_BUDGET, DDP_NCCL_LIB (NCCL to
# use; default: PyTorch's, else the system's), GPU_NCCL_MODE=multirank|hostid
# (how two ranks share the GPU; default by NCCL version), PYTHON (python3),
# NVIDIA_SMI (nvidia-smi).
#
# --cpu-device (development only, not for users): runs the driver-API
# samples on the CPU device (build/cpudev/lib) with the host backend, so the
# checks and the report can be exercised without a GPU; NCCL, cuBLAS and
# PyTorch rows are reported as skipped.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
PY=${PYTHON:-python3}
SMI=${NVIDIA_SMI:-nvidia-smi}
QUICK=0 NOBUILD=0 CPU=0 STEPS= OUT=
usage() {
	echo "tests/gpu/run.sh: $1; usage: tests/gpu/run.sh [--quick] [--no-build] [--steps N] REPORT_DIR" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1 ;;
	--no-build) NOBUILD=1 ;;
	--cpu-device) CPU=1 ;;
	--steps) [ $# -ge 2 ] && [ "$2" -ge 1 ] 2>/dev/null || usage "--steps needs a positive integer"
		STEPS=$2; shift ;;
	-h|--help) sed -n '4,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) usage "unknown option $1" ;;
	*) [ -z "$OUT" ] || usage "one REPORT_DIR only"; OUT=$1 ;;
	esac
	shift
done
[ -n "$OUT" ] || usage "REPORT_DIR is missing"
# --cpu-device: real PyTorch from the cache venv where it is installed
# (branch torch's ${DDPRUN_CACHE:-$HOME/.cache/ddprun}/torch-2.15.0), unless PYTHON says otherwise
if [ $CPU -eq 1 ] && [ -z "${PYTHON:-}" ] && [ -x "${DDPRUN_CACHE:-$HOME/.cache/ddprun}/torch-2.15.0/bin/python" ]; then
	PY=${DDPRUN_CACHE:-$HOME/.cache/ddprun}/torch-2.15.0/bin/python
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
BUDGET=${GPU_SUITE_BUDGET:-450}
[ -n "$STEPS" ] || { [ $QUICK -eq 1 ] && STEPS=12 || STEPS=40; }
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
NCCL_LIB=$(find_nccl)
NCCL_CODE=$([ -n "$NCCL_LIB" ] && "$PY" -c 'import ctypes, sys
l = ctypes.CDLL(sys.argv[1]); v = ctypes.c_int(0); l.ncclGetVersion(ctypes.byref(v)); print(v.value)' "$NCCL_LIB" 2>/dev/null)
NCCL_VER=-
[ -n "$NCCL_CODE" ] && NCCL_VER=$((NCCL_CODE / 10000)).$((NCCL_CODE / 100 % 100)).$((NCCL_CODE % 100))
NCCL_MODE=${GPU_NCCL_MODE:-$([ "${NCCL_CODE:-0}" -ge 23000 ] && echo multirank || echo hostid)}
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

# secs_of FILE: the seconds of the "...: ran N steps on DEV in S s" line
secs_of() { sed -n 's/.*: ran [0-9]* steps on .* in \([0-9.]*\) s$/\1/p' "$1" | tail -1; }
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
		else
			envs=(NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1)
			wrap='NCCL_HOSTID=ddpgpu-host$RANK '$wrap
		fi
	fi
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
	# the reference: one process at 2 x batch
	plain "$dir" ref "$@" --steps "$STEPS" --batch $((2 * batch))
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
		be=${tag%_off} ov=auto
		[ $tag = nccl_off ] && ov=off
		if [ $be = nccl ] && [ $CPU -eq 1 ]; then
			check "$name: ddprun -n 2 --backend nccl (overlap $ov)" SKIP "--cpu-device: NCCL needs a GPU"
			continue
		fi
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

# ---- the C samples (driver API)
SKIP_N1=0
CSTEPS=$([ $QUICK -eq 1 ] && echo 300 || echo 1000)
[ $CPU -eq 1 ] && CSTEPS=100
OWN_CTX=1 program mlp 1e-5 "$MLP_DATA" 8 $CSTEPS "$B/samples/mlp" --data "$MLP_DATA"
program charlm 1e-5 "$CHAR_DATA" 2 $CSTEPS "$B/samples/charlm" --data "$CHAR_DATA" --clip 0.5
program fused 1e-2 "$MLP_DATA" 8 $CSTEPS "$B/samples/fused" --data "$MLP_DATA"

# ---- cuBLAS + runtime API
if [ $CPU -eq 1 ]; then
	check cublas_mlp SKIP "--cpu-device: cudart and cuBLAS cannot run on the CPU device"
elif [ ! -x "$B/samples/cublas_mlp" ]; then
	check cublas_mlp FAIL "$B/samples/cublas_mlp is not built (cuBLAS missing from the toolkit?)"
else
	# cudart/cuBLAS not where the build machine had them: try PyTorch's copies
	if ldd "$B/samples/cublas_mlp" 2>/dev/null | grep -q 'not found'; then
		libs=$("$PY" -c 'import nvidia, os
for p in nvidia.__path__:
    for d, _, fs in os.walk(p):
        if any(f.startswith(("libcublas.so", "libcudart.so")) for f in fs): print(d)' 2>/dev/null | paste -sd:)
		[ -n "$libs" ] && export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" &&
			note "cublas_mlp: using cuBLAS/cudart from $libs"
	fi
	program cublas_mlp 1e-5 "$MLP_DATA" 8 $CSTEPS "$B/samples/cublas_mlp" --data "$MLP_DATA"
	# same model, init, data and optimizer as mlp: same parameters up to rounding
	if [ -s "$RUNS/cublas_mlp/ref.bin" ] && [ -s "$RUNS/mlp/ref.bin" ]; then
		out=$(relerr "$RUNS/cublas_mlp/ref.bin" "$RUNS/mlp/ref.bin" 1e-3 2>&1)
		if [ $? -eq 0 ]; then check "cublas_mlp matches samples/mlp" PASS "$out <= 1e-3 after $STEPS steps at batch 16"
		else check "cublas_mlp matches samples/mlp" FAIL "$out > 1e-3 after $STEPS steps at batch 16"; fi
	fi
fi

# ---- llm.c's layout with real cuBLASLt: the GEMMs declare their output
# (interpose/hook_blas.c), so gpt's four weight-matrix gradient kinds are
# reduced layer by layer (sliced_ranges 4 in sync.json, docs/overlap.md);
# the job exits 0, so the invariant check (steps 1-3, 10) found every byte
# the optimizer reads identical on both ranks
gpt_slices() {
	local dir=$RUNS/gpt_slices G=$B/data/gpt.bin rc n
	mkdir -p "$dir"
	if [ ! -x "$B/samples/gpt" ] || [ ! -e "$G" ]; then
		check "gpt: weight-matrix slices from cuBLAS's declared extents" FAIL "$B/samples/gpt or $G is not built"
		return
	fi
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
if budget_left 30; then gpt_slices; else check "gpt slices" SKIP "suite time budget (${BUDGET}s) spent"; fi

# ---- launch rate: host time per launch with and without libddp
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
if budget_left 30; then launch_rate; else check "launch rate" SKIP "suite time budget (${BUDGET}s) spent"; fi

# ---- allreduce bandwidth: libddp's collective vs a direct NCCL call
coll_bench() {
	local cb=$B/tests/gpu/coll_gpu_bench sizes out rc
	local -a args=() envs=()
	if [ ! -x "$cb" ]; then
		check "allreduce bandwidth" FAIL "$cb is not built (nccl.h missing at build time?)"
		return
	fi
	if [ $CPU -eq 1 ]; then
		args=(--backend host --no-direct -s 64K,1M)
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
if budget_left 30; then coll_bench; else check "allreduce bandwidth" SKIP "suite time budget (${BUDGET}s) spent"; fi

# ---- PyTorch
# twin NAME DIR BATCH DEVICE FLAGS...: samples/torch_train_ddp.py (the DDP
# twin) under torchrun, 2 ranks at BATCH, beside the runs program() made in
# DIR (ref.bin: one process at 2 x BATCH; nccl.0.bin: ddprun -n 2 --backend
# nccl; nccl_off.0.bin: overlap off).  Rows: DDP equals the reference, ddprun
# vs DDP (relative L2 of the final parameters), step-time ratio ddprun/DDP,
# start-up (process start to the first step) of both.  DEVICE cpu: gloo on
# the CPU (--cpu-device: the twin's data split and averaging, not a GPU).
twin() {
	local name=$1 dir=$2 batch=$3 device=$4 tol=1e-5 out rc t_ddp t_lib tag wrap
	shift 4
	case " $* " in *" --amp-bf16 "*) tol=1e-2 ;; esac
	if ! budget_left 30; then
		check "$name: PyTorch DDP (torchrun)" SKIP "suite time budget (${BUDGET}s) spent"
		return
	fi
	local -a envs=()
	wrap='exec "$0" "$@"'
	if [ "$device" = cuda ]; then
		if [ "$NCCL_MODE" = multirank ]; then envs=(NCCL_MULTI_RANK_GPU_ENABLE=1)
		else envs=(NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1); wrap='NCCL_HOSTID=ddpgpu-host$RANK '$wrap; fi
	fi
	local port=$((20000 + (RANDOM * 7 + $$) % 40000)) t0
	t0=$(date +%s.%N)
	timeout "$(run_timeout)" env "${envs[@]}" "$TORCHRUN" --nproc_per_node 2 --master-port $port --no-python \
		sh -c "$wrap" "$PY" "$ROOT/samples/torch_train_ddp.py" --device "$device" --steps "$STEPS" \
		--batch "$batch" --save "$dir/torchddp.bin" "$@" >"$dir/torchddp.out" 2>"$dir/torchddp.err"
	rc=$?
	echo "wall $(echo "$(date +%s.%N) - $t0" | bc)" >>"$dir/torchddp.err"
	if [ $rc -ne 0 ] || [ ! -s "$dir/torchddp.bin" ]; then
		check "$name: PyTorch DDP (torchrun, 2 ranks)" FAIL "exit $rc: $(why "$dir/torchddp.err")"
		return
	fi
	out=$(relerr "$dir/torchddp.bin" "$dir/ref.bin" "$tol" 2>&1)
	if [ $? -eq 0 ]; then check "$name: PyTorch DDP (torchrun, 2 ranks) equals one process at 2x batch" PASS "$out <= $tol"
	else check "$name: PyTorch DDP (torchrun, 2 ranks) equals one process at 2x batch" FAIL "$out (tolerance $tol)"; fi
	t_ddp=$(secs_of "$dir/torchddp.err")
	for tag in nccl nccl_off; do
		[ -s "$dir/$tag.0.bin" ] || continue
		out=$(relerr "$dir/$tag.0.bin" "$dir/torchddp.bin" "$tol" 2>&1)
		check "$name: ddprun ($tag) vs PyTorch DDP, final parameters" "$([ $? -eq 0 ] && echo PASS || echo FAIL)" "$out (tolerance $tol)"
		t_lib=$(secs_of "$dir/$tag.r0.err")
		[ -n "$t_lib" ] && [ -n "$t_ddp" ] && check "$name: step time ddprun ($tag) / PyTorch DDP" INFO \
			"$(awk -v a="$t_lib" -v b="$t_ddp" -v n="$STEPS" 'BEGIN { printf "%.2f (%.3f vs %.3f ms/step)", (b > 0 ? a / b : 0), 1000 * a / n, 1000 * b / n }')"
		out=$($PY -c 'import json,sys; j=json.load(open(sys.argv[1])); ps=j.get("per_step", []); c=sum(p.get("comm_ms", 0) for p in ps); h=sum(p.get("comm_hidden_ms", 0) for p in ps); print("%.1f of %.1f ms of collectives not under backward (consumer waited %.1f ms) over %d steps" % (c - h, c, sum(p.get("grad_wait_ms", 0) for p in ps), len(ps)))' \
			"$dir/$tag.trace/rank0.sync.json" 2>/dev/null) && check "$name: exposed communication, ddprun ($tag)" INFO "$out"
	done
	out="DDP $(sed -n 's/.*start-up \([0-9.]*\) s$/\1/p' "$dir/torchddp.err") s to the first step, whole run $(sed -n 's/^wall //p' "$dir/torchddp.err") s"
	[ -s "$dir/nccl.wall" ] && out="$out; ddprun (nccl) whole run $(cat "$dir/nccl.wall") s, of which the loop $(secs_of "$dir/nccl.r0.err") s"
	check "$name: start-up, PyTorch DDP vs ddprun" INFO "$out"
}

torch_runs() {
	local variant tol name
	if [ $CPU -eq 1 ]; then
		check "torch_train under ddprun" SKIP "--cpu-device: ddprun with real PyTorch needs a GPU here (PyTorch on the CPU device is branch torch's work)"
		if [ "$TORCH_VER" = - ] || [ -z "$TORCHRUN" ]; then
			check "torch_train PyTorch DDP twin (gloo, CPU)" SKIP "no PyTorch with torchrun for $PY (set PYTHON to the torch venv's python)"
			return
		fi
		local dir=$RUNS/torch_train_twin_cpu
		mkdir -p "$dir"
		if ! timeout "$(run_timeout)" "$PY" samples/torch_train.py --device cpu --data "$MLP_DATA" --steps "$STEPS" \
			--batch 16 --save "$dir/ref.bin" >"$dir/ref.out" 2>"$dir/ref.err"; then
			check "torch_train reference (CPU, batch 16)" FAIL "$(why "$dir/ref.err")"
			return
		fi
		twin "torch_train default (CPU)" "$dir" 8 cpu --data "$MLP_DATA"
		return
	fi
	if [ "$TORCH_GPU" != True ]; then
		check torch_train FAIL "PyTorch with CUDA is not importable by $PY (torch: ${TORCH_VER})"
		return
	fi
	# the same init as samples/mlp: --steps 0 saves the same bytes
	if timeout 120 "$PY" samples/torch_train.py --data "$MLP_DATA" --steps 0 --save "$RUNS/torch_init.bin" \
		>/dev/null 2>"$RUNS/torch_init.err" &&
		"${PLAIN_ENV[@]}" "$B/samples/mlp" --data "$MLP_DATA" --steps 0 --save "$RUNS/mlp_init.bin" 2>/dev/null &&
		cmp -s "$RUNS/torch_init.bin" "$RUNS/mlp_init.bin"; then
		check "torch_train --steps 0 equals samples/mlp's initial parameters" PASS "bit-identical (64128 bytes)"
	else
		check "torch_train --steps 0 equals samples/mlp's initial parameters" FAIL "$(why "$RUNS/torch_init.err")"
	fi
	# PyTorch's caching allocator on (its default; ddprun no longer turns it
	# off), then the two other allocators PYTORCH_CUDA_ALLOC_CONF selects
	for variant in default foreach fused amp-bf16 $([ $QUICK -eq 1 ] || echo keep-grads); do
		tol=1e-5
		[ $variant = amp-bf16 ] && tol=1e-2
		SKIP_N1=0
		[ $QUICK -eq 1 ] && [ $variant != default ] && SKIP_N1=1
		local -a flags=()
		[ $variant = default ] || flags=(--$variant)
		program "torch_train $variant" $tol "$MLP_DATA" 8 "$([ $QUICK -eq 1 ] && echo 40 || echo 100)" \
			"$PY" "$ROOT/samples/torch_train.py" --data "$MLP_DATA" "${flags[@]}"
		# beside it: what its users would run instead
		[ $variant = keep-grads ] || twin "torch_train $variant" "$RUNS/torch_train_$variant" 8 cuda \
			--data "$MLP_DATA" "${flags[@]}"
	done
	local conf
	for conf in expandable_segments:True backend:cudaMallocAsync; do
		SKIP_N1=$QUICK
		PYTORCH_CUDA_ALLOC_CONF=$conf program "torch_train default $conf" 1e-5 "$MLP_DATA" 8 \
			"$([ $QUICK -eq 1 ] && echo 40 || echo 100)" "$PY" "$ROOT/samples/torch_train.py" --data "$MLP_DATA"
	done
	SKIP_N1=0
}
torch_runs

# ---- the report
REPORT=$OUT/report.md
{
	echo "# ddprun GPU suite report"
	echo
	[ $CPU -eq 1 ] && echo "**--cpu-device development run: no GPU was used; NCCL, cuBLAS and PyTorch rows are skipped.**" && echo
	echo "| | |"
	echo "|---|---|"
	echo "| date | $(date -u '+%Y-%m-%d %H:%M:%S UTC') |"
	echo "| host | $(uname -n) ($(uname -r)) |"
	echo "| GPU | $GPU_NAME (compute capability $CAP${GPU_MEM:+, $GPU_MEM}) |"
	echo "| driver | $DRIVER (CUDA ${CUDA_DRV:--}) |"
	echo "| CUDA toolkit | ${CUDA_TK:--} |"
	echo "| NCCL | $NCCL_VER ($NCCL_LIB); two ranks on one GPU via $([ "$NCCL_MODE" = multirank ] && echo NCCL_MULTI_RANK_GPU_ENABLE=1 || echo 'NCCL_HOSTID per rank') |"
	echo "| PyTorch | $TORCH_VER (CUDA $TORCH_CUDA, NCCL $TORCH_NCCL) |"
	echo "| ddprun | $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (+ local changes)'); build $B |"
	echo "| settings | steps $STEPS$([ $QUICK -eq 1 ] && echo ', --quick'); budget ${BUDGET}s; took $(elapsed)s |"
	echo
	echo "**$NPASS passed, $NFAIL failed, $NSKIP skipped**"
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
