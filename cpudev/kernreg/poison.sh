#!/bin/sh
# SPDX-License-Identifier: MIT
# poison.sh CUDA_INC OUTDIR: for every header of the CUDA toolkit (CUDA_INC
# and its cccl/ folder, as nvcc searches them), a file of the same name
# under OUTDIR that fails with one #error naming it.  ddp-cpu-kernels
# searches OUTDIR after the CPU device's own headers (cpudev/include)
# and the user's folders, and before the system folders: a toolkit header
# the CPU device has no version of stops the build there, instead of the
# real one being found (a system folder can hold CUDA's headers).
set -e
inc=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
for base in "$inc" "$inc/cccl"; do
	[ -d "$base" ] || continue
	(cd "$base" && find -L . -type f ! -name '*.txt' ! -name '*.md' 2>/dev/null) | sed 's|^\./||'
done | grep -v '^cccl/' | sort -u | awk -v out="$out" '
{
	path = out "/" $0
	dir = path; sub(/\/[^\/]*$/, "", dir)
	if (!(dir in made)) { made[dir] = 1; system("mkdir -p \"" dir "\"") }
	printf "#error \"<%s> is a CUDA toolkit header with no CPU-device version (docs/cpu-device-kernels.md lists what the CPU device supports)\"\n", $0 > path
	close(path)
}'
