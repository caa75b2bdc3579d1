#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_tests.sh - the test runner behind `make test`.
#
# Usage: tests/run_tests.sh [-j N] [-t SECONDS] TEST...
# Each TEST is an executable (C test binary or script), run from the
# repository root with BUILD set.  A test reports cases by printing lines
#     ok - NAME | not ok - NAME | skip - NAME: REASON
# and those are counted.  A test that prints none counts as one case by its
# exit status: 0 passed, 77 skipped (its last output line is the reason),
# anything else failed.  A test that prints cases but exits non-zero without a
# "not ok" line counts one extra failure (it crashed or lied).  Each test's
# output goes to $BUILD/test-logs/NAME.log; failures show its tail.
# Last line: "N passed, N failed" and ", N skipped" when any were skipped.
set -u
BUILD=${BUILD:-build}
export BUILD
jobs=1
limit=${TEST_TIMEOUT:-600}
while [ $# -gt 0 ]; do
	case "$1" in
	-j) jobs=$2; shift 2 ;;
	-t) limit=$2; shift 2 ;;
	*) break ;;
	esac
done
logdir=$BUILD/test-logs
rm -rf "$logdir"; mkdir -p "$logdir"

run_one() {
	local t=$1 name log start rc ms
	name=$(printf '%s' "$t" | sed 's|^\./||; s|^'"$BUILD"'/||; s|[/ ]|_|g')
	log=$logdir/$name.log
	start=$(date +%s%N)
	timeout --kill-after=10 "$limit" "$t" >"$log" 2>&1 </dev/null
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	printf '%s\t%s\t%s\t%d.%01d\n' "$t" "$rc" "$log" $((ms / 1000)) $((ms % 1000 / 100)) >"$log.rc"
}
export -f run_one
export logdir limit

printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {}

pass=0 fail=0 skip=0
for t in "$@"; do
	name=$(printf '%s' "$t" | sed 's|^\./||; s|^'"$BUILD"'/||; s|[/ ]|_|g')
	log=$logdir/$name.log
	IFS=$'\t' read -r _ rc _ secs <"$log.rc"
	p=$(grep -c '^ok - ' "$log"); f=$(grep -c '^not ok - ' "$log"); s=$(grep -c '^skip - ' "$log")
	if [ $((p + f + s)) -eq 0 ]; then
		case $rc in
		0) p=1; echo "PASS  $t (${secs}s)" ;;
		77) s=1; echo "SKIP  $t: $(tail -n 1 "$log")" ;;
		124|137) f=1; echo "FAIL  $t: timed out after ${limit}s" ;;
		*) f=1; echo "FAIL  $t (exit $rc)" ;;
		esac
	else
		grep '^not ok - ' "$log" | sed "s|^not ok - |FAIL  $t: |"
		grep '^skip - ' "$log" | sed "s|^skip - |SKIP  $t: |"
		if [ "$rc" != 0 ] && [ "$f" -eq 0 ]; then
			f=1; echo "FAIL  $t: exit $rc after its cases (crash?)"
		fi
		echo "$( [ "$f" -eq 0 ] && echo PASS || echo FAIL)  $t: $p ok, $f not ok, $s skipped (${secs}s)"
	fi
	if [ "$f" -gt 0 ]; then
		echo "----- last lines of $log -----"
		tail -n 25 "$log" | sed 's/^/  | /'
		echo "-----"
	fi
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
done
if [ "$skip" -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
