#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# cpu_quick.sh - the GPU suite's side-by-side (tests/gpu/run.sh, docs/gpu.md)
# on the CPU device, as `make test` can afford it:
#   - `run.sh --plan`: the full suite's estimate on one H100 fits 480 s (the
#     default budget) with every part kept; with --budget 300 parts are
#     dropped in the declared priority order (a later part kept only where
#     it still fits), --quick is a subset;
#   - `run.sh --cpu-device --quick --parts c_samples,gpt2,gpt --report-root
#     TMP` exits 0 and writes TMP/DATE-cpudev-COMMIT/report.md (never under
#     docs/gpu-validation): header rows, "N passed, 0 failed", the parts table
#     with estimates and wall times; the NCCL rows through the CPU device's
#     NCCL stand-in (charlm, fused, gpt: overlap auto and off equal one
#     process at 2x batch, the overlap mode that ran is the one asked); the
#     GPT-2 side by side (samples/gpt2_torch.py --size tiny: one process at
#     2B and its PyTorch DDP twin on the CPU, real values; ddprun -n 2 on the
#     CPU device in trace mode, structure only, its value rows SKIP with the
#     reason) where the PyTorch wheel is installed, else skipped with the
#     reason;
#   - negative controls: the stand-in leaving rank 1 out of every sum
#     (SIMNCCL_FAULT=drop:1) makes the suite's NCCL equivalence rows FAIL and
#     run.sh exit 1; the GPT-2 comparison (tests/gpu/paramdiff.py at the
#     suite's bf16 tolerance) fails one process at B against one at 2B.
# Values of PyTorch under trace mode mean nothing; the report says so.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
export BUILD
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ddp-gpuquick.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
FAILED=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; FAILED=1; }
for f in "$BUILD/bin/ddprun" "$BUILD/samples/gpt" "$BUILD/data/gpt.bin" "$BUILD/cpudev/lib/nccl/libnccl.so.2"; do
	[ -e "$f" ] || { echo "$f is not built (make build-all)"; exit 77; }
done
unset PYTHON GPU_SUITE_BUDGET SIMNCCL_FAULT

# ---- the plan: estimates and the budget
out=$(tests/gpu/run.sh --plan 2>&1)
tot=$(sed -n 's/^estimated \([0-9]*\)s on one H100.*/\1/p' <<<"$out")
if [ -n "$tot" ] && [ "$tot" -le 480 ] && ! grep -q dropped <<<"$out" && [ "$(grep -c ' run$' <<<"$out")" -eq 8 ]; then
	ok "--plan: the full suite's 8 parts are estimated at ${tot}s on one H100, within the default 480s"
else not_ok "--plan: $out"; fi
out=$(tests/gpu/run.sh --plan --budget 300 2>&1)
if [ "$(awk '$1 == "torch_train" { print $4 }' <<<"$out")" = dropped ] &&
	[ "$(awk '$1 == "c_samples" || $1 == "gpt2" || $1 == "gpt" { print $4 }' <<<"$out" | sort -u)" = run ] &&
	grep -q 'planned within the budget of 300s' <<<"$out"; then
	ok "--budget 300: torch_train (190s) dropped, the parts before it and smaller ones after it kept"
else not_ok "--budget 300: $out"; fi
out=$(tests/gpu/run.sh --plan --quick 2>&1)
if grep -q '^cublas_mlp .* not in --quick$' <<<"$out" && grep -q '^gpt2 .* run$' <<<"$out"; then
	ok "--quick: a subset (cublas_mlp and torch_alloc left out, gpt2 kept)"
else not_ok "--quick plan: $out"; fi

# ---- the CPU-device run
tests/gpu/run.sh --cpu-device --quick --no-build --parts c_samples,gpt2,gpt --report-root "$TMP/rep" \
	>"$TMP/suite.out" 2>&1
rc=$?
dirs=$(ls "$TMP/rep" 2>/dev/null)
R=$TMP/rep/$dirs/report.md
if [ $rc -eq 0 ] && [ "$(echo "$dirs" | wc -l)" -eq 1 ] &&
	grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}-cpudev-[0-9a-f]{7,}$' <<<"$dirs" && [ -s "$R" ]; then
	ok "--cpu-device --quick: exit 0, report in REPORT_ROOT/$dirs (date, device, commit)"
else
	not_ok "--cpu-device --quick: exit $rc, report folders '$dirs': $(tail -5 "$TMP/suite.out" | tr '\n' ' ')"
	grep -E '^FAIL' "$TMP/suite.out" | head -5 | sed 's/^/#   /'
	exit 1
fi
# row NAME-REGEX RESULT: a table row of the report
row() { grep -E "^\| $1 \| $2 \|" "$R"; }
bad=
for h in date GPU NCCL PyTorch ddprun settings; do grep -qE "^\| $h \| .+ \|$" "$R" || bad="$bad header:$h"; done
grep -qE '^\*\*[0-9]+ passed, 0 failed, [0-9]+ skipped\*\*$' "$R" || bad="$bad counts"
grep -q 'development run: no GPU was used' "$R" || bad="$bad cpu-banner"
grep -q 'values mean nothing' "$R" || bad="$bad trace-mode-note"
for p in c_samples gpt2 gpt; do row "$p" '[0-9]' | grep -qE '\| ran \| [0-9]+ \|$' || bad="$bad part:$p"; done
for p in torch_train coll_bench launch_rate cublas_mlp torch_alloc; do
	row "$p" '[0-9]' | grep -q 'not asked (--parts)' || bad="$bad part-not-asked:$p"
done
if [ -z "$bad" ]; then ok "report: header, counts, the CPU-device banner, the parts table (3 ran with wall times, 5 not asked)"
else not_ok "report shape:$bad"; fi
bad=
for p in charlm fused gpt; do
	for t in nccl nccl_off; do
		row "$p: -n 2 --backend $t equals one process at 2x batch" PASS >/dev/null || bad="$bad $p/$t"
	done
	row "$p: -n 2 --backend nccl overlap auto" PASS | grep -q 'overlap on' || bad="$bad $p/auto-on"
	row "$p: -n 2 --backend nccl_off overlap off" PASS >/dev/null || bad="$bad $p/off"
done
row 'mlp: ddprun -n 2 --backend nccl refused \(own CUDA context\)' PASS >/dev/null || bad="$bad mlp-refused"
row 'gpt: step time, plain vs ddprun -n 2 \(nccl\)' INFO >/dev/null || bad="$bad gpt-steptime"
if [ -z "$bad" ]; then ok "NCCL rows through the stand-in: charlm, fused, gpt equal one process at 2x batch with overlap auto (on) and off; mlp refused; gpt step time vs plain"
else not_ok "NCCL rows:$bad"; fi
if grep -qE '^\| gpt2: SKIP|^\| gpt2 \| SKIP' "$R"; then
	echo "skip - gpt2 side by side: $(row gpt2 SKIP | cut -d'|' -f4)"
else
	bad=
	row 'gpt2 tiny: one process at batch 8 \(cpu\)' PASS >/dev/null || bad="$bad ref"
	row 'gpt2 tiny: PyTorch DDP \(torchrun, 2 ranks\) equals one process at 2x batch' PASS | grep -q 'rel_update' || bad="$bad ddp=ref"
	for ov in auto off; do
		row "gpt2 tiny: ddprun -n 2 \\(overlap $ov\\) ran, used NCCL \\(stand-in\\)" PASS >/dev/null || bad="$bad ran-$ov"
		row "gpt2 tiny: ddprun overlap $ov" PASS >/dev/null || bad="$bad overlap-$ov"
	done
	[ "$(row 'gpt2 tiny: ddprun \(nccl(_off)?\) parameters vs[^|]*' SKIP | grep -c 'trace mode')" -eq 2 ] || bad="$bad value-rows-not-skipped"
	row 'gpt2 tiny: start-up, PyTorch DDP vs ddprun' INFO | grep -q 'to the first step' || bad="$bad start-up"
	row 'gpt2 tiny: exposed communication, ddprun \(nccl\)' INFO >/dev/null || bad="$bad exposed"
	if [ -z "$bad" ]; then ok "gpt2 (tiny): one process at 2B and PyTorch DDP equal on the CPU; ddprun overlap auto/off ran on the stand-in; value rows SKIP (trace mode); start-up, exposed communication"
	else not_ok "gpt2 rows:$bad"; fi
	# negative control of the GPT-2 comparison: one process at B is not one at 2B
	D=$(ls -d "$TMP"/rep/*/runs/gpt2_tiny) G=$(ls "$TMP"/rep/*/runs/gpt2/data.bin)
	PY=${DDPRUN_CACHE:-$HOME/.cache/ddprun}/torch-2.15.0/bin/python
	tol=$(sed -n 's/^GPT2_TOL=//p' tests/gpu/run.sh)
	if "$PY" samples/gpt2_torch.py --device cpu --size tiny --data "$G" --steps 12 --batch 4 --save "$TMP/half.bin" \
		>/dev/null 2>&1; then
		out=$("$PY" tests/gpu/paramdiff.py "$TMP/half.bin" "$D/ref.bin" "$D/init.bin" "$tol" 2>&1)
		if [ $? -eq 1 ]; then ok "negative control: one process at batch 4 vs at 8 fails the gpt2 tolerance $tol ($out)"
		else not_ok "negative control: one process at batch 4 passed the gpt2 comparison ($out)"; fi
	else not_ok "negative control: the batch-4 run failed"; fi
fi
# must not write under docs/gpu-validation
[ -z "$(git status --porcelain docs/gpu-validation 2>/dev/null)" ] && ok "nothing written under docs/gpu-validation" ||
	not_ok "the CPU-device run wrote under docs/gpu-validation"

# ---- negative control: the stand-in drops rank 1's contribution
SIMNCCL_FAULT=drop:1 tests/gpu/run.sh --cpu-device --quick --no-build --parts c_samples --report-root "$TMP/neg" \
	>"$TMP/neg.out" 2>&1
rc=$?
n=$(grep -cE '^FAIL +(charlm|fused): -n 2 --backend nccl(_off)? equals one process' "$TMP/neg.out")
if [ $rc -eq 1 ] && [ "$n" -eq 4 ] && grep -qE '^PASS +charlm: -n 2 --backend host equals' "$TMP/neg.out"; then
	ok "negative control: SIMNCCL_FAULT=drop:1 fails the 4 NCCL equivalence rows (host rows pass), exit 1"
else not_ok "negative control: exit $rc, $n NCCL equivalence rows failed (want 4)"; fi
exit $FAILED
