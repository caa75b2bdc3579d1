#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# skip.sh - the GPU suite (tests/gpu/run.sh) on a machine without a GPU:
# with nvidia-smi missing, and with an nvidia-smi that lists no device (a
# stand-in that behaves like the real one on a machine without GPUs), it
# must print its reason as the last line, exit 77, and write nothing.
set -u
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ddp-gpuskip.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
FAILED=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; FAILED=1; }

# expect NAME REASON ENV...: run.sh under ENV skips with REASON
expect() {
	local name=$1 reason=$2 out rc
	shift 2
	out=$(env "$@" tests/gpu/run.sh "$TMP/report-$name" 2>&1)
	rc=$?
	if [ $rc -eq 77 ] && [ "$(printf '%s\n' "$out" | tail -n 1)" = "gpu suite skipped: no GPU ($reason)" ]; then
		ok "$name: exit 77, last line 'gpu suite skipped: no GPU ($reason)'"
	else
		not_ok "$name: exit $rc, output '$out'"
	fi
	if [ -e "$TMP/report-$name" ]; then not_ok "$name: wrote $TMP/report-$name"
	else ok "$name: wrote no report folder"; fi
}

expect missing "nvidia-smi not found" NVIDIA_SMI="$TMP/no-such-nvidia-smi"

printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' >"$TMP/nvidia-smi"
chmod +x "$TMP/nvidia-smi"
expect nodevice "nvidia-smi found no device" NVIDIA_SMI="$TMP/nvidia-smi"

# a listed device is not skipped: the suite gets past detection (bad
# option afterwards stops it with exit 2 before anything runs)
printf '#!/bin/sh\necho "GPU 0: Fake GPU (UUID: GPU-0)"\n' >"$TMP/nvidia-smi-one"
chmod +x "$TMP/nvidia-smi-one"
out=$(NVIDIA_SMI="$TMP/nvidia-smi-one" tests/gpu/run.sh --steps 0 "$TMP/r" 2>&1)
rc=$?
if [ $rc -eq 2 ] && printf '%s' "$out" | grep -q -- '--steps needs a positive integer'; then
	ok "bad --steps: exit 2 with one usage line"
else not_ok "bad --steps: exit $rc, output '$out'"; fi
# --cpu-device without REPORT_DIR or --report-root: refused (its report must
# not go to docs/gpu-validation, the default for GPU runs)
out=$(tests/gpu/run.sh --cpu-device 2>&1)
rc=$?
if [ $rc -eq 2 ] && printf '%s' "$out" | grep -q -- '--cpu-device needs REPORT_DIR or --report-root'; then
	ok "--cpu-device without REPORT_DIR: exit 2"
else not_ok "--cpu-device without REPORT_DIR: exit $rc, output '$out'"; fi
out=$(NVIDIA_SMI="$TMP/nvidia-smi-one" tests/gpu/run.sh --budget x "$TMP/r" 2>&1)
rc=$?
if [ $rc -eq 2 ] && printf '%s' "$out" | grep -q -- '--budget needs a positive number of seconds'; then ok "bad --budget: exit 2"
else not_ok "bad --budget: exit $rc, output '$out'"; fi
out=$(NVIDIA_SMI="$TMP/nvidia-smi-one" tests/gpu/run.sh --parts gpt2,nosuch "$TMP/r" 2>&1)
rc=$?
if [ $rc -eq 2 ] && printf '%s' "$out" | grep -q "unknown part 'nosuch'"; then ok "unknown part in --parts: exit 2"
else not_ok "unknown part in --parts: exit $rc, output '$out'"; fi
[ -e "$TMP/r" ] && not_ok "a bad command line wrote $TMP/r"
exit $FAILED
