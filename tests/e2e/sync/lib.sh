# SPDX-License-Identifier: MIT
#
# lib.sh - shared helpers of the gradient-synchronisation equivalence tests
# (sourced).  Each test runs ONE process with batch N*B (the reference,
# plain, on the CPU device) and `ddprun -n N --shard DATA` with batch B, and
# compares the saved parameters with relerr.py (an independent python3
# reader), and the ranks' save files with cmp.
#
# Every rank saves to its own file (--all-ranks-write, --save DIR/out.$RANK.bin
# through sh -c), so the comparison does not depend on write redirection.
set -u
BUILD=${BUILD:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ddp-sync.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
FAILED=0
DDPRUN=$BUILD/bin/ddprun
unset DDP_SYNC DDP_CHECK DDP_OPT_KERNELS DDP_GRAD_READER_KERNELS DDP_GRAD_DTYPE DDP_LOG

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; FAILED=1; }

need() {
	local f
	for f in "$BUILD/cpudev/lib/libcuda.so.1" "$BUILD/lib/libddp.so" "$DDPRUN" "$BUILD/data/mlp.rec" \
		"$BUILD/data/charlm.rec"; do
		[ -e "$f" ] || { echo "$f is not built (make all)"; exit 77; }
	done
	for f in "$@"; do
		[ -x "$BUILD/samples/$f" ] && [ -e "$BUILD/samples/$f.kern.so" ] ||
			{ echo "$BUILD/samples/$f is not built (make samples)"; exit 77; }
	done
	command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
}

# ref NAME SAMPLE ARGS...: one plain process on the CPU device; stdout to
# $TMP/NAME.ref.out, parameters to $TMP/NAME.ref.bin
ref() {
	local name=$1 sample=$2
	shift 2
	LD_LIBRARY_PATH="$BUILD/cpudev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		timeout 120 "$BUILD/samples/$sample" "$@" --save "$TMP/$name.ref.bin" \
		>"$TMP/$name.ref.out" 2>"$TMP/$name.ref.err" ||
		{ not_ok "$name: reference run failed: $(tail -1 "$TMP/$name.ref.err")"; return 1; }
}

# ddp NAME N SAMPLE DATA ARGS...: ddprun -n N --shard DATA; rank k saves
# $TMP/NAME.k.bin; stdout (with [rank k] prefixes) to $TMP/NAME.ddp.out
ddp() {
	local name=$1 n=$2 sample=$3 data=$4
	shift 4
	mkdir -p "$TMP/$name.logs"
	timeout 180 "$DDPRUN" -n "$n" --all-ranks-write --log-dir "$TMP/$name.logs" --shard "$data" -- \
		sh -c 'exec "$0" "$@" --save "'"$TMP/$name"'.$RANK.bin"' "$BUILD/samples/$sample" "$@" \
		>"$TMP/$name.ddp.out" 2>"$TMP/$name.ddp.err"
}

# identical NAME N: every rank's save file equals rank 0's byte for byte
identical() {
	local name=$1 n=$2 r
	for r in $(seq 1 $((n - 1))); do
		cmp -s "$TMP/$name.0.bin" "$TMP/$name.$r.bin" || return 1
	done
	[ -s "$TMP/$name.0.bin" ]
}

# equiv NAME N TOL: rank 0 vs the reference within TOL, and all ranks identical
equiv() {
	local name=$1 n=$2 tol=$3 out
	if [ ! -s "$TMP/$name.0.bin" ]; then
		not_ok "$name: no parameters saved by rank 0; ddprun said: $(tail -3 "$TMP/$name.ddp.err" | tr '\n' ' ')"
		return
	fi
	out=$(python3 "$HERE/relerr.py" "$TMP/$name.0.bin" "$TMP/$name.ref.bin" "$tol")
	if [ $? -eq 0 ]; then ok "$name: -n $n equals one process at $n x batch ($out <= $tol)"
	else not_ok "$name: -n $n differs from one process at $n x batch ($out > $tol)"; fi
	if identical "$name" "$n"; then ok "$name: all $n ranks bit-identical"
	else not_ok "$name: ranks' parameters differ"; fi
}

# rank_lines NAME K: the step lines of rank K (prefix removed)
rank_lines() { sed -n "s/^\[rank $2\] \(step .*\)/\1/p" "$TMP/$1.ddp.out"; }

# syncq NAME RANK EXPR: evaluates the python expression EXPR over
# $TMP/NAME.trace/rank<RANK>.sync.json (j: the object, ps: per_step by
# step number) and prints the result (run ddp with DDP_TRACE=$TMP/NAME.trace)
syncq() {
	python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
ps = {p["step"]: p for p in j.get("per_step", [])}
print(eval(sys.argv[2]))' "$TMP/$1.trace/rank$2.sync.json" "$3" 2>&1
}

# sync_field NAME K FIELD: a field of rank K's sync summary
sync_field() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
		"$TMP/$1.trace/rank$2.sync.json" "$3" 2>/dev/null
}

# bytes_ok NAME N GRADBYTES: every one of the $S steps after the first
# reduced exactly GRADBYTES on every rank (step 1 may reduce a reader's
# candidates too); needs DDPRUN_TRACE=$TMP/NAME.trace on the ddp run
bytes_ok() {
	local name=$1 n=$2 gb=$3 r bad=
	for r in $(seq 0 $((n - 1))); do
		python3 - "$TMP/$name.trace/rank$r.sync.json" "$gb" "$S" <<-'EOF' || bad="$bad $r"
		import json, sys
		s = json.load(open(sys.argv[1]))
		gb, steps = int(sys.argv[2]), int(sys.argv[3])
		by = s["bytes_reduced_by_step"]
		sys.exit(0 if s["steps"] == steps and len(by) == steps and all(b == gb for b in by[1:])
			 and by[0] >= gb else 1)
		EOF
	done
	if [ -z "$bad" ]; then ok "$name: $S steps, $gb bytes reduced per step on every rank (the gradients, nothing else)"
	else not_ok "$name: steps/bytes wrong on rank(s)$bad: $(cat "$TMP/$name.trace/rank0.sync.json" 2>/dev/null | cut -c1-300)"; fi
}
