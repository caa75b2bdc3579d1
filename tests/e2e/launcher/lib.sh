# SPDX-License-Identifier: MIT
#
# lib.sh - shared helpers of the launcher tests (sourced, not run).
# Each test prints `ok - NAME` / `not ok - NAME` lines (tests/run_tests.sh)
# and ends with `finish`.
set -u
BUILD=${BUILD:-build}
case $BUILD in /*) build_dir=$BUILD ;; *) build_dir=$PWD/$BUILD ;; esac   # relative or absolute
DDPRUN=$build_dir/bin/ddprun
PROG=$build_dir/tests/e2e/progs/rankprog
STUB=$build_dir/tests/e2e/progs/libstub_preload.so
export DDPRUN_NO_PRELOAD=1
unset DDPRUN_FAKE_GPUS DDPRUN_GRACE DDPRUN_SECRET CUDA_VISIBLE_DEVICES
for v in $(env | sed -n 's/^\(DDPRUN_[A-Z_]*\)=.*/\1/p'); do
	[ "$v" = DDPRUN_NO_PRELOAD ] || unset "$v"
done
TMP=$(mktemp -d /tmp/ddprun-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
failures=0

ok() { echo "ok - $1"; }
notok() { echo "not ok - $1"; failures=$((failures + 1)); }
# check NAME COMMAND...: ok when the command succeeds
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else notok "$name"; fi
}
# has FILE REGEX: the file has a line matching the extended regex
has() { grep -Eq -- "$2" "$1"; }
hasnt() { ! grep -Eq -- "$2" "$1"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# wait_for FILE REGEX COUNT SECONDS: until COUNT lines match
wait_for() {
	local i
	for ((i = 0; i < $4 * 20; i++)); do
		[ "$(grep -Ec -- "$2" "$1" 2>/dev/null || true)" -ge "$3" ] 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
need_built() {
	for f in "$DDPRUN" "$PROG" "$STUB"; do
		if [ ! -x "$f" ] && [ ! -f "$f" ]; then
			echo "$f is not built; run make"
			exit 77
		fi
	done
}
finish() {
	[ "$failures" -eq 0 ]
	exit $?
}
# the tests driving tests/e2e/progs/steptrainer: sync on (no DDPRUN_NO_PRELOAD),
# T the trainer, NL the NCCL stand-in; skip (77) when they are not built
need_steptrainer() {
	unset DDPRUN_NO_PRELOAD
	T=$build_dir/tests/e2e/progs/steptrainer NL=$build_dir/cpudev/lib/nccl/libnccl.so.2
	for f in "$build_dir/lib/libddp.so" "$T" "$T.kern.so"; do
		[ -e "$f" ] || { echo "$f is not built"; exit 77; }
	done
}
need_built
