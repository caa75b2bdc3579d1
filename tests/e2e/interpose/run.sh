#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/e2e/interpose/run.sh - libddp.so end to end on the CPU device.
# Prints one ok/not ok/skip line per case (tests/run_tests.sh counts them).
# Skips (exit 77) when the CPU device or the test programs are not built.
set -u
B=${BUILD:-build}
LIB=$B/lib/libddp.so
SIM=$B/cpudev/lib/libcuda.so.1
D=$B/tests/e2e/interpose
FAT=$D/progs/kernels.fatbin
for f in "$LIB" "$SIM" "$D/drv_direct" "$D/drv_loader" "$FAT" "$D/progs/kernels.kern.so"; do
	[ -e "$f" ] || { echo "not built: $f (make all)"; exit 77; }
done
export LD_LIBRARY_PATH=$B/cpudev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SIMCUDA_KERNELS=$D/progs/kernels.kern.so
unset DDP_LOG DDP_TRACE DDP_INSPECT RANK WORLD_SIZE
T=$(mktemp -d "${TMPDIR:-/tmp}/ddp-ip.XXXXXX")
trap 'rm -rf "$T"' EXIT
pre() { LD_PRELOAD=$LIB "$@"; }
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; shift; for l in "$@"; do echo "# $l"; done; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name" "failed: $*"; fi; }
calls_of() { # summary.json hook -> calls
	python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); print(sum(h["calls"] for h in d["hooks"] if h["name"]==sys.argv[2]))' "$1" "$2"
}

# ---- 1. samples: same stdout and bit-identical --save under LD_PRELOAD
for s in mlp charlm fused; do
	bin=$B/samples/$s; data=$B/data/$([ $s = charlm ] && echo charlm || echo mlp).rec
	if [ ! -x "$bin" ] || [ ! -e "$data" ]; then echo "skip - sample_$s: sample or data not built"; continue; fi
	"$bin" --data "$data" --steps 4 --save "$T/$s.a" >"$T/$s.aout" 2>/dev/null
	pre "$bin" --data "$data" --steps 4 --save "$T/$s.b" >"$T/$s.bout" 2>"$T/$s.berr"
	if cmp -s "$T/$s.aout" "$T/$s.bout" && cmp -s "$T/$s.a" "$T/$s.b" && [ -s "$T/$s.a" ]; then
		ok "sample_${s}_unchanged"
	else bad "sample_${s}_unchanged" "$(diff "$T/$s.aout" "$T/$s.bout" | head -3)" "$(tail -2 "$T/$s.berr")"; fi
done

# ---- 2. a program linked to libcuda: exported symbols, counters, decoder
"$D/drv_direct" run "$FAT" >"$T/d0" 2>&1
pre env DDP_TRACE="$T/tr" DDP_INSPECT="$T/insp" "$D/drv_direct" run "$FAT" >"$T/d1" 2>"$T/d1.err"
check direct_same_output cmp -s "$T/d0" "$T/d1"
check direct_result_right grep -q 'x\[10\]=10 y\[10\]=41 l3\[63\]=3' "$T/d1"
S=$T/tr/rank0.summary.json
if [ -s "$S" ]; then
	want="cuMemAlloc_v2=6 cuMemFree_v2=6 cuMemcpyHtoD_v2=2 cuMemcpyDtoH_v2=3 cuModuleLoadData=1 cuModuleGetFunction=3 cuLaunchKernel=4 cuInit=1"
	got=""; fail=""
	for w in $want; do n=${w%=*}; c=$(calls_of "$S" "$n"); [ "$c" = "${w#*=}" ] || fail="$fail $n=$c(want ${w#*=})"; done
	[ -z "$fail" ] && ok direct_hook_counters || bad direct_hook_counters "$fail"
	python3 - "$S" <<'PY' && ok direct_summary_bytes_kernels || bad direct_summary_bytes_kernels "see $S"
import json, sys
d = json.load(open(sys.argv[1]))
k = {x["name"]: x["launches"] for x in d["kernels"]}
assert d["copies"]["htod"]["bytes"] == 2048 and d["copies"]["dtoh"]["bytes"] == 2304, d["copies"]
assert d["alloc"]["count"] == 6 and d["alloc"]["bytes"] == 3072 and d["alloc"]["live"] == 0, d["alloc"]
assert k.get("c_scale") == 2 and k.get("void axpy<float>(float const*, float*, float, int)") == 1, k
assert k.get("list_fill(ptr_list, float)") == 1, k
PY
else bad direct_hook_counters "no summary $S"; fi
if python3 -m json.tool "$T/tr/rank0.trace.json" >/dev/null 2>&1 && grep -q 'axpy<float>' "$T/tr/rank0.trace.json" \
	&& grep -q '"grid":\[1,1,1\]' "$T/tr/rank0.trace.json"; then ok trace_json_parses_with_kernels
else bad trace_json_parses_with_kernels "$(head -c 300 "$T/tr/rank0.trace.json" 2>&1)"; fi
# inspector: axpy reads x (#1) and writes y (#2); list_fill's pointers sit in a struct
if grep -q '#1:r #2:w' "$T/insp" && grep -A1 '^list_fill' "$T/insp" | grep -q '#6:?(struct)'; then
	ok inspect_access_table
else bad inspect_access_table "$(grep -A1 'axpy\|list_fill' "$T/insp" 2>&1 | head -6)"; fi

# ---- 3. cudart-like loading: cuGetProcAddress_v2 with flags 0, 1, 2
"$D/drv_loader" table interpose/hooks.def >"$T/t0" 2>&1
pre "$D/drv_loader" table interpose/hooks.def >"$T/t1" 2>&1
if [ -s "$T/t0" ] && diff <(sed 's/ in .*//' "$T/t0") <(sed 's/ in .*//' "$T/t1") >/dev/null; then
	ok procaddr_same_abi_as_driver
else bad procaddr_same_abi_as_driver "$(diff <(sed 's/ in .*//' "$T/t0") <(sed 's/ in .*//' "$T/t1") | head -4)"; fi
# every answer naming a symbol of hooks.def must be a hook
syms=$(sed -n 's/^HOOK(\([A-Za-z0-9_]*\), *\([A-Za-z0-9_]*\),.*/\1\2/p' interpose/hooks.def)
miss=$(awk '$NF != "libddp" && $5 == 0 { print $(NF-2) }' "$T/t1" | sort -u | grep -xF "$syms" || true)
n_hooked=$(awk '$NF == "libddp"' "$T/t1" | wc -l)
if [ -z "$miss" ] && [ "$n_hooked" -gt 100 ]; then ok "procaddr_answers_are_hooks ($n_hooked)"
else bad procaddr_answers_are_hooks "not hooked: $miss" "hooked answers: $n_hooked"; fi
if grep -q '^cuLaunchKernel flags 2: .*-> cuLaunchKernel_ptsz in libddp' "$T/t1" &&
   grep -q '^cuLaunchKernel flags 1: .*-> cuLaunchKernel in libddp' "$T/t1" &&
   grep -q '^cuMemcpyHtoD flags 2: .*-> cuMemcpyHtoD_v2_ptds in libddp' "$T/t1"; then ok procaddr_ptsz_ptds_flags
else bad procaddr_ptsz_ptds_flags "$(grep '^cuLaunchKernel \|^cuMemcpyHtoD ' "$T/t1")"; fi
pre env DDP_TRACE="$T/tl" "$D/drv_loader" calls "$FAT" >"$T/c1" 2>"$T/c1.err"
if [ -s "$T/tl/rank0.summary.json" ]; then
	fail=""
	for s in $(grep '^call ' "$T/c1" | awk '{print $2}' | sort -u | grep -xF "$syms"); do
		want=$(grep -c "^call $s\$" "$T/c1"); got=$(calls_of "$T/tl/rank0.summary.json" "$s")
		[ "$want" = "$got" ] || fail="$fail $s=$got(want $want)"
	done
	ptsz=$(calls_of "$T/tl/rank0.summary.json" cuLaunchKernel_ptsz)
	[ -z "$fail" ] && [ "$ptsz" = 1 ] && [ "$(grep -c '^flags [012]: h\[5\] = 10$' "$T/c1")" = 3 ] && ok procaddr_calls_reach_hooks || bad procaddr_calls_reach_hooks "$fail ptsz=$ptsz $(grep 'h\[5\]' "$T/c1" | tr '\n' ' ')"
else bad procaddr_calls_reach_hooks "no summary" "$(tail -3 "$T/c1.err")"; fi

# ---- 4. dlsym from the program
pre "$D/drv_direct" dlsym >"$T/dl" 2>&1
exp='handle cuMemAlloc_v2: libddp
handle cuLaunchKernel_ptsz: libddp
default cuLaunchKernel: libddp
handle cuDeviceGetCount: libcuda
handle cuGetProcAddress_v2: libddp
default printf: other
default cudnnCreate: null
next malloc: other
alloc through dlsym: ok'
if [ "$(cat "$T/dl")" = "$exp" ]; then ok dlsym_redirects_only_hooked_cu_names
else bad dlsym_redirects_only_hooked_cu_names "$(diff <(echo "$exp") "$T/dl" | head -5)"; fi

# ---- 5. bad input reaches the driver unchanged
"$D/drv_direct" corrupt >"$T/k0" 2>/dev/null
pre "$D/drv_direct" corrupt >"$T/k1" 2>"$T/k1.err"
if cmp -s "$T/k0" "$T/k1" && grep -q 'still running' "$T/k1" && ! grep -q 'corrupt fatbin: 0,' "$T/k1"; then
	ok corrupt_image_driver_error_returned
else bad corrupt_image_driver_error_returned "$(cat "$T/k1" "$T/k1.err" | head -4)"; fi
"$D/drv_direct" nullargs "$FAT" >"$T/n0" 2>/dev/null
pre "$D/drv_direct" nullargs "$FAT" >"$T/n1" 2>"$T/n1.err"
if cmp -s "$T/n0" "$T/n1" && grep -q 'still running' "$T/n1" && grep -q 'libddp WARN.*c_scale' "$T/n1.err"; then
	ok null_launch_args_warned_and_passed
else bad null_launch_args_warned_and_passed "$(cat "$T/n1" "$T/n1.err" | head -5)"; fi
pre env DDP_TRACE_BUFFER=lots "$D/drv_direct" corrupt >"$T/b1" 2>"$T/b1.err"
if grep -q "DDP_TRACE_BUFFER='lots' is not an integer" "$T/b1.err" && grep -q 'still running' "$T/b1"; then
	ok bad_setting_one_clear_line
else bad bad_setting_one_clear_line "$(head -3 "$T/b1.err")"; fi

# ---- 6. logs: one line per hooked call at trace level
pre env DDP_LOG=trace "$D/drv_direct" run "$FAT" >/dev/null 2>"$T/lg"
if grep -q 'TRACE .*cuLaunchKernel(f=0x[0-9a-f]*, gridDimX=0x1.*) kernel c_scale = 0 (' "$T/lg" &&
   [ "$(grep -c 'TRACE .* cuMemAlloc_v2(' "$T/lg")" = 6 ]; then ok trace_log_lines
else bad trace_log_lines "$(grep TRACE "$T/lg" | head -3)"; fi

# ---- 7. two ranks and ddprun report
pre env RANK=0 WORLD_SIZE=2 DDP_TRACE="$T/r2" "$D/drv_direct" run "$FAT" >/dev/null 2>&1
pre env RANK=1 WORLD_SIZE=2 DDP_TRACE="$T/r2" "$D/drv_direct" run "$FAT" >/dev/null 2>&1
if [ -s "$T/r2/rank0.summary.json" ] && [ -s "$T/r2/rank1.summary.json" ] && [ -s "$T/r2/rank1.trace.json" ]; then
	ok two_ranks_write_own_files
else bad two_ranks_write_own_files "$(ls "$T/r2" 2>&1)"; fi
if [ -x "$B/bin/ddprun" ] && "$B/bin/ddprun" report --help >/dev/null 2>&1; then
	"$B/bin/ddprun" report "$T/r2" >"$T/rep" 2>&1
	if python3 - "$T/r2/combined.trace.json" <<'PY' && grep -q 'cuLaunchKernel' "$T/rep" && grep -q 'rank 1' "$T/rep"
import json, sys
d = json.load(open(sys.argv[1]))
pids = {e.get("pid") for e in d["traceEvents"]}
assert {0, 1} <= pids, pids
PY
	then ok report_merges_two_ranks; else bad report_merges_two_ranks "$(head -5 "$T/rep")"; fi
	"$B/bin/ddprun" report "$T/nonexistent" >"$T/rep2" 2>&1; rc=$?
	if [ $rc -ne 0 ] && grep -q 'ddprun' "$T/rep2" && [ "$(wc -l <"$T/rep2")" -le 2 ]; then ok report_missing_dir_clear_error
	else bad report_missing_dir_clear_error "$(cat "$T/rep2")"; fi
	echo '{"version":1,"rank":0,' >"$T/r2/rank0.summary.json"
	"$B/bin/ddprun" report "$T/r2" >"$T/rep3" 2>&1; rc=$?
	if [ $rc -ne 0 ] && grep -q 'rank0.summary.json' "$T/rep3"; then ok report_corrupt_file_clear_error
	else bad report_corrupt_file_clear_error "$(cat "$T/rep3" | head -3)"; fi
	# ddprun inspect on the mlp sample: gradients are the 5 buffers sgd reads
	if [ -x "$B/samples/mlp" ] && [ -e "$B/data/mlp.rec" ]; then
		"$B/bin/ddprun" inspect --steps 2 "$B/samples/mlp" --data "$B/data/mlp.rec" --steps 50 >"$T/ins" 2>"$T/ins.err"
		ng=$(sed -n '/^## Gradients/,/^$/p' "$T/ins" | grep -c '^  #')
		np=$(sed -n '/^## Parameters/,/^$/p' "$T/ins" | grep -c '^  #')
		if grep -q 'optimizer steps seen: 2' "$T/ins" && [ "$ng" = 5 ] && [ "$np" = 10 ]; then
			ok inspect_finds_optimizer_params_grads
		else bad inspect_finds_optimizer_params_grads "grads $ng params $np" "$(head -3 "$T/ins" "$T/ins.err")"; fi
	else echo "skip - inspect_finds_optimizer_params_grads: mlp sample not built"; fi
else
	echo "skip - report_merges_two_ranks: build/bin/ddprun with the report command not built"
fi
exit 0
