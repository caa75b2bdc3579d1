# SPDX-License-Identifier: MIT
#
# lib.bash - shared helpers of the samples tests (sourced, not run).
#
# Sets BUILD, LD_LIBRARY_PATH (the CPU device), TMP (removed at exit) and
# provides ok/not_ok/check, need_sample (exit 77 when something is missing),
# loss_ratio, param_relerr.
set -u
BUILD=${BUILD:-build}
export LD_LIBRARY_PATH="$BUILD/cpudev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ddp-samples.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
FAILED=0

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; FAILED=1; }
# check NAME COMMAND...: ok when COMMAND succeeds
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}

# need_sample NAME...: skip the whole test (exit 77) unless the CPU device,
# the samples, their kernel libraries and the data sets are built.
need_sample() {
	local f
	for f in "$BUILD/cpudev/lib/libcuda.so.1" "$BUILD/data/mlp.rec" "$BUILD/data/charlm.rec"; do
		[ -e "$f" ] || { echo "$f is not built (make $f)"; exit 77; }
	done
	for f in "$@"; do
		[ -x "$BUILD/samples/$f" ] || { echo "$BUILD/samples/$f is not built"; exit 77; }
		[ -e "$BUILD/samples/$f.kern.so" ] || { echo "$BUILD/samples/$f.kern.so is not built"; exit 77; }
	done
}

# losses FILE: the loss column of the `step K loss V` lines
losses() { awk '$1 == "step" && $3 == "loss" { print $4 }' "$1"; }

# loss_ratio FILE N: mean of the last N losses / mean of the first N
loss_ratio() {
	losses "$1" | awk -v n="$2" '{ l[NR] = $1 } END {
		if (NR < 2 * n) { print "nan"; exit }
		for (i = 1; i <= n; i++) { a += l[i]; b += l[NR - n + i] }
		printf "%.4f\n", b / a }'
}

# falls FILE: the mean loss of the last 20 steps is below 0.7x the first 20
falls() {
	local r
	r=$(loss_ratio "$1" 20)
	echo "# $1: last-20/first-20 loss ratio $r"
	awk -v r="$r" 'BEGIN { exit !(r == r + 0 && r < 0.7) }'
}

# steps_ok FILE N: exactly N well-formed step lines, numbered 1..N, nothing else
steps_ok() {
	awk -v n="$2" '
		$0 ~ /^step [0-9]+ loss -?[0-9]+\.[0-9][0-9][0-9][0-9][0-9][0-9]( skipped)?$/ && $2 == NR { good++; next }
		{ bad++ } END { exit !(good == n && bad == 0) }' "$1"
}

# param_relerr A B: relative L2 distance ||a - b|| / ||b|| of two float32 files
param_relerr() {
	python3 - "$1" "$2" <<'PY'
import math, struct, sys
a = open(sys.argv[1], "rb").read()
b = open(sys.argv[2], "rb").read()
if len(a) != len(b) or len(a) % 4:
    print("inf"); sys.exit(0)
n = len(a) // 4
x = struct.unpack("<%df" % n, a)
y = struct.unpack("<%df" % n, b)
d = sum((p - q) ** 2 for p, q in zip(x, y))
s = sum(q * q for q in y)
print("%.3e" % (math.sqrt(d / s) if s > 0 else math.inf))
PY
}

# le X Y: X <= Y as numbers
le() { awk -v x="$1" -v y="$2" 'BEGIN { exit !(x + 0 <= y + 0) }'; }

# size_is FILE BYTES
size_is() { [ -f "$1" ] && [ "$(stat -c %s "$1")" -eq "$2" ]; }

# one_line_error CODE PREFIX CMD...: CMD exits CODE with exactly one stderr
# line starting with PREFIX and nothing on stdout
one_line_error() {
	local code=$1 prefix=$2 rc
	shift 2
	"$@" >"$TMP/err.out" 2>"$TMP/err.txt"
	rc=$?
	if [ "$rc" -ne "$code" ] || [ -s "$TMP/err.out" ] || [ "$(wc -l <"$TMP/err.txt")" -ne 1 ] ||
		! grep -q "^$prefix" "$TMP/err.txt"; then
		echo "# exit $rc, stderr: $(cat "$TMP/err.txt")"
		return 1
	fi
	echo "# $(cat "$TMP/err.txt")"
}

finish() { exit "$FAILED"; }
