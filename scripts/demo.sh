#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# demo.sh - what `make demo` runs after building everything: builds the data
# sets, then trains samples/charlm (a small character language model) on the
# real GPU when `nvidia-smi -L` lists one, else on the CPU device
# (LD_LIBRARY_PATH=build/simcuda), printing every step's loss.
#
# Environment: BUILD (default build), STEPS (default 300).
set -euo pipefail
BUILD=${BUILD:-build}
STEPS=${STEPS:-300}
cd "$(dirname "$0")/.."

make --no-print-directory BUILD="$BUILD" "$BUILD/bin/ddp-mkdata" "$BUILD/data/charlm.rec" "$BUILD/samples/charlm" >/dev/null

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	where="the GPU ($(nvidia-smi -L | head -n 1))"
else
	if [ ! -e "$BUILD/simcuda/libcuda.so.1" ] || [ ! -e "$BUILD/samples/charlm.kern.so" ]; then
		echo "demo: no GPU and the CPU device is not built ($BUILD/simcuda/libcuda.so.1, $BUILD/samples/charlm.kern.so); run make first" >&2
		exit 1
	fi
	export LD_LIBRARY_PATH="$BUILD/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	where="the CPU device ($BUILD/simcuda/libcuda.so.1)"
fi

cmd=("$BUILD/samples/charlm" --data "$BUILD/data/charlm.rec" --steps "$STEPS" --save "$BUILD/demo-charlm.bin")
echo "demo: training samples/charlm (character LM, AdamW, global-norm clipping) on $where"
echo "demo: data $BUILD/data/charlm.rec (text of /usr/share/common-licenses, 33-token records)"
echo "demo: ${cmd[*]}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"${cmd[@]}" | tee "$log"
awk -v n="$STEPS" '$1 == "step" { l[$2] = $4 } END {
	printf "demo: loss curve:"
	for (k = 1; k <= n; k += (n > 10 ? int(n / 10) : 1)) if (k in l) printf " %d:%.3f", k, l[k]
	if (n in l) printf " %d:%.3f", n, l[n]
	printf "\n" }' "$log"
echo "demo: final parameters in $BUILD/demo-charlm.bin ($(stat -c %s "$BUILD/demo-charlm.bin") bytes); see docs/samples.md"
