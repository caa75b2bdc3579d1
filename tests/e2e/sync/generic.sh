#!/bin/bash
# SPDX-License-Identifier: MIT
#
# generic.sh - gradient synchronisation on samples/generic, a trainer written
# the way a darknet-like C + CUDA framework writes updates: generic axpy /
# scal / mul / fill / copy kernels shared by forward, backward and the update.
#   sgd:  the update buffer dw is the gradient accumulator AND the momentum;
#         no kernel is named like an optimizer
#   adam: m and v are formed by scal/axpy/mul from dw before adam_kernel
# With no DDP_* setting, `ddprun -n 2 --shard` at half the batch equals one
# process at the full batch (fp32, 1e-5), the ranks are bit-identical, the
# steps counted are the program's steps and the bytes averaged per step are
# the gradient bytes.  Negative controls: DDP_SYNC=off differs;
# DDP_DEBUG_AVG_STATE=1 (average m and v, the rules before the data flow)
# differs.
. "$(dirname "$0")/lib.sh"
need generic
D=$BUILD/data/mlp.rec
S=30
# E 96x16, W1 64x128, b1 64, W2 96x64, b2 96: 16032 floats
GB=64128

for opt in sgd adam; do
	case $opt in
	sgd) lr=0.05 ;;
	adam) lr=0.005 ;;
	esac
	ref $opt generic --data "$D" --steps $S --batch 16 --optimizer $opt --lr $lr
	DDP_TRACE=$TMP/$opt.trace ddp $opt 2 generic "$D" --data "$D" --steps $S --batch 8 --optimizer $opt --lr $lr
	equiv $opt 2 1e-5
	bytes_ok $opt 2 $GB

	# negative control: without synchronisation the same comparison fails
	DDP_SYNC=off ddp $opt-off 2 generic "$D" --data "$D" --steps $S --batch 8 --optimizer $opt --lr $lr
	out=$(python3 "$HERE/relerr.py" "$TMP/$opt-off.0.bin" "$TMP/$opt.ref.bin" 1e-5)
	if [ $? -eq 1 ]; then ok "$opt negative control: DDP_SYNC=off fails the equivalence ($out > 1e-5)"
	else not_ok "$opt negative control: DDP_SYNC=off passed or broke the comparison ($out)"; fi
done

# negative control of the roles: averaging Adam's m and v (optimizer state)
# as if they were the gradient, as the rules before the data flow did, is
# wrong and the comparison must see it
DDP_DEBUG_AVG_STATE=1 ddp avgstate 2 generic "$D" --data "$D" --steps $S --batch 8 --optimizer adam --lr 0.005
if [ -s "$TMP/avgstate.0.bin" ]; then
	out=$(python3 "$HERE/relerr.py" "$TMP/avgstate.0.bin" "$TMP/adam.ref.bin" 1e-5)
	if [ $? -eq 1 ]; then ok "roles negative control: averaging m and v fails the equivalence ($out > 1e-5)"
	else not_ok "roles negative control: averaging m and v still passed ($out)"; fi
else
	ok "roles negative control: averaging m and v stopped the job ($(tail -1 "$TMP/avgstate.ddp.err"))"
fi
exit $FAILED
