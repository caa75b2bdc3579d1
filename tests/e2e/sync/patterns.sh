#!/bin/bash
# SPDX-License-Identifier: MIT
#
# patterns.sh - gradient synchronisation on samples/patterns: six ways
# hand-written CUDA C trainers keep gradients and run their optimizer
# (docs/samples.md).  With NO setting, patterns 1-5 under `ddprun -n 2` and
# `-n 3` with batch B equal one process at N x B (fp32 1e-5, bf16 params
# 1e-2), every rank bit-identical, the step count right, and the bytes
# reduced per step (rank<k>.sync.json) exactly the gradient bytes: no
# activation, no padding, nothing else.  DDP_SYNC=off fails the comparison
# (negative control).  Pattern 6 (an optimizer no name pattern matches) is
# found from the data flow and trains correctly with no setting (and with
# DDP_OPT_KERNELS naming it); an update libddp cannot find
# (samples/generic --optimizer fused) stops at exit, or after DDP_OPT_WAIT
# seconds of launches, instead of exiting 0.  Pattern 7 (a 2-D block
# optimizer whose count argument covers one row) equals one process through
# measured extents, and fails with measuring off (negative control).
. "$(dirname "$0")/lib.sh"
need patterns
D=$BUILD/data/mlp.rec
S=30
NPARAM=16032     # E 96x16, W1 64x128, b1 64, W2 96x64, b2 96

for p in 1 2 3 4 5; do
	tol=1e-5
	[ $p = 4 ] || [ $p = 5 ] && tol=1e-2
	gb=$((NPARAM * 4))
	[ $p = 5 ] && gb=$((NPARAM * 2))
	for n in 2 3; do
		name=p$p.n$n
		ref $name patterns --pattern $p --data "$D" --steps $S --batch $((n * 8))
		DDPRUN_TRACE=$TMP/$name.trace DDPRUN_VERBOSE=1 ddp $name $n patterns "$D" --pattern $p --data "$D" \
			--steps $S --batch 8
		equiv $name $n $tol
		bytes_ok $name $n $gb
	done
	# negative control: the same comparison fails without synchronisation
	DDP_SYNC=off ddp p$p.off 2 patterns "$D" --pattern $p --data "$D" --steps $S --batch 8
	out=$(python3 "$HERE/relerr.py" "$TMP/p$p.off.0.bin" "$TMP/p$p.n2.ref.bin" $tol)
	if [ $? -eq 1 ] && ! identical p$p.off 2; then
		ok "p$p: DDP_SYNC=off fails the equivalence ($out > $tol) and the ranks differ"
	else not_ok "p$p: DDP_SYNC=off control did not fail ($out)"; fi
done

# pattern 7: the optimizer (sgd_block) updates a 2-D block while each of its
# integer arguments covers one row or a few; the extent is measured in the
# calibration steps (rows x cols, ddp_extent.c) and the gradient takes it.
# Negative controls: with measuring off (DDP_DEBUG_NO_MEASURE=1) the count
# guess bounds a row: the job exits 0 but differs from one process and the
# ranks differ; DDP_SYNC=off differs too.
ref p7.n2 patterns --pattern 7 --data "$D" --steps $S --batch 16
DDPRUN_TRACE=$TMP/p7.n2.trace DDPRUN_VERBOSE=1 ddp p7.n2 2 patterns "$D" --pattern 7 --data "$D" --steps $S --batch 8
equiv p7.n2 2 1e-5
bytes_ok p7.n2 2 $((NPARAM * 4))
if grep -q 'sgd_block argument 0: changed 1536 elements where its count argument says 96; its extent is' \
	"$TMP/p7.n2.ddp.err"; then ok "p7: E's extent measured (1536 elements, the count said 96), the rule bounds every tensor"
else not_ok "p7: no measured extent logged ($(grep -m1 sgd_block "$TMP/p7.n2.ddp.err"))"; fi
DDP_DEBUG_NO_MEASURE=1 ddp p7.nomeasure 2 patterns "$D" --pattern 7 --data "$D" --steps $S --batch 8
DDP_SYNC=off ddp p7.off 2 patterns "$D" --pattern 7 --data "$D" --steps $S --batch 8
for ctl in nomeasure off; do
	out=$(python3 "$HERE/relerr.py" "$TMP/p7.$ctl.0.bin" "$TMP/p7.n2.ref.bin" 1e-5)
	if [ $? -eq 1 ] && ! identical p7.$ctl 2; then ok "p7: control $ctl fails the equivalence ($out > 1e-5) and the ranks differ"
	else not_ok "p7: control $ctl did not fail ($out)"; fi
done

# negative control of the invariant check: one gradient range of every
# reduction left unaveraged (DDP_DEBUG_SKIP_AVG) must stop the job at step
# 1, 2 or 3 with the invariant's message -- for every pattern
for p in 1 2 3 4 5; do
	DDP_DEBUG_SKIP_AVG=0 ddp p$p.skip 2 patterns "$D" --pattern $p --data "$D" --steps $S --batch 8
	rc=$?
	line=$(grep -m1 -o 'an unaveraged gradient reached the optimizer at step [123]: .*' "$TMP/p$p.skip.ddp.err")
	if [ $rc -ne 0 ] && [ -n "$line" ]; then ok "p$p: an unaveraged range stops the job: ${line:0:170}"
	else not_ok "p$p: DDP_DEBUG_SKIP_AVG=0 gave rc $rc, no invariant message ($(grep -m1 libddp "$TMP/p$p.skip.ddp.err"))"; fi
done

# ddprun inspect runs the rules dry and shows every range's role and
# evidence: pattern 3's five gradient ranges, found by calibration (the
# optimizer passes them non-const), revealed by the norm reader
LD_LIBRARY_PATH="$BUILD/cpudev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 120 "$DDPRUN" inspect --steps 2 \
	"$BUILD/samples/patterns" --pattern 3 --data "$D" --steps 10 >"$TMP/inspect3.out" 2>"$TMP/inspect3.err"
n=$(sed -n '/^## Roles/,$p' "$TMP/inspect3.out" | grep -c '^gradient .* f32  unchanged by the calibration run; written by [a-z_]*; revealed by grad_norm; pairs with adamw_update:0+')
if [ "$n" = 5 ] && grep -q 'gradient bytes: 64128' "$TMP/inspect3.out"; then
	ok "inspect: roles and evidence of pattern 3 (5 gradient ranges, 64128 bytes, calibrated, revealed by grad_norm)"
else not_ok "inspect: $n gradient rows ($(sed -n '/^## Roles/,+3p' "$TMP/inspect3.out" | tr '\n' ' ' | cut -c1-200))"; fi

# pattern 6: an SGD kernel named like no optimizer (update_weights over the
# whole flat buffers) is found from the data flow (docs/gradient-sync.md,
# "Updates found from the data flow"): equivalent with no setting
ref p6 patterns --pattern 6 --data "$D" --steps $S --batch 16 --lr 0.1
DDPRUN_TRACE=$TMP/p6.trace ddp p6 2 patterns "$D" --pattern 6 --data "$D" --steps $S --batch 8 --lr 0.1
equiv p6 2 1e-5
bytes_ok p6 2 $((NPARAM * 4))
# an update libddp cannot find (samples/generic --optimizer fused: every
# tensor in one launch of apply_updates_kernel, pointers in a struct) stops
# the job within its first 3 steps (the launch stream's cycle: each step
# rewrites the weights it read), writing no file ...
if [ -x "$BUILD/samples/generic" ]; then
	ddp nofind 2 generic "$D" --data "$D" --steps $S --batch 8 --optimizer fused
	rc=$?
	line=$(grep -m1 -o 'libddp: no update of the parameters was found in the first 3 steps.*' "$TMP/nofind.ddp.err")
	last=$(grep -o 'step [0-9]* ' "$TMP/nofind.ddp.out" | awk '{print $2}' | sort -n | tail -1)
	if [ $rc -ne 0 ] && [ -n "$line" ] && [ "${last:-0}" -le 3 ]; then
		ok "unfindable update: stops within 3 steps (last step printed ${last:-none}, rc $rc): ${line:0:160}"
	else not_ok "unfindable update: rc $rc, last step ${last:-none}, message '${line:0:200}' ($(tail -2 "$TMP/nofind.ddp.err" | tr '\n' ' '))"; fi
	# ... negative control: without the cycles (a debug switch) it runs to
	# its end and only the exit status says so ...
	DDP_DEBUG_NO_CYCLES=1 ddp nofindlate 2 generic "$D" --data "$D" --steps $S --batch 8 --optimizer fused
	rc=$?
	line=$(grep -m1 -o 'libddp: this rank launched .*' "$TMP/nofindlate.ddp.err")
	if [ $rc -ne 0 ] && [ -n "$line" ] && grep -q "step $S " "$TMP/nofindlate.ddp.out"; then
		ok "negative control: with DDP_DEBUG_NO_CYCLES=1 it runs all $S steps and fails only at exit: ${line:0:120}"
	else not_ok "negative control: DDP_DEBUG_NO_CYCLES=1 rc $rc, message '${line:0:200}'"; fi
	# ... and where no cycle is seen, DDP_OPT_WAIT seconds of launches without
	# an update found (60 by default; 1 here) still stop a long run
	start=$(date +%s)
	DDP_DEBUG_NO_CYCLES=1 DDP_OPT_WAIT=1 ddp nofindwait 2 generic "$D" --data "$D" --steps 1000000 --batch 8 --optimizer fused
	rc=$?
	t=$(( $(date +%s) - start ))
	line=$(grep -m1 -o 'libddp: [0-9]* kernel launches in 1 s and none was recognised as an optimizer.*' \
		"$TMP/nofindwait.ddp.err")
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ -n "$line" ]; then ok "unfindable update: stops after ${t}s of launches: ${line:0:150}"
	else not_ok "unfindable update with DDP_OPT_WAIT=1: rc $rc after ${t}s ($(grep -m1 libddp "$TMP/nofindwait.ddp.err"))"; fi
else
	not_ok "samples/generic is not built (the unfindable-update cases need it)"
fi
# ... and naming the kernel (a hint) changes nothing
ref p6ok patterns --pattern 6 --data "$D" --steps $S --batch 16 --lr 0.1
DDP_OPT_KERNELS=+update_weights DDPRUN_TRACE=$TMP/p6ok.trace ddp p6ok 2 patterns "$D" --pattern 6 --data "$D" \
	--steps $S --batch 8 --lr 0.1
equiv p6ok 2 1e-5
bytes_ok p6ok 2 $((NPARAM * 4))
exit $FAILED
