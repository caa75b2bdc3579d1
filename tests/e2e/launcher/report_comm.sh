#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# report_comm.sh - `ddprun report DIR` prints the gradient communication of
# rank<k>.sync.json (launcher/report.c): per step over steps 3+ (steps 1
# and 2, which learn, are left out), collectives, comm_ms, comm_hidden_ms,
# the hidden percentage and grad_wait_ms, one column per rank; where every
# step 3+ has peer_wait_ms, the part of comm spent waiting for the other
# ranks and the hidden percentage of the rest (else "-"); the gradients
# that waited for the optimizer per rank and step, by last writer; a rank
# without the file shows "-", a malformed file is one error line and exit 1,
# and a directory without any sync.json prints no such section.
. "$(dirname "$0")/lib.sh"
D=$TMP/trace
mkdir -p "$D"
for k in 0 1 2; do
	echo '{"hooks":[],"kernels":[],"alloc":{"count":0},"copies":{}}' >"$D/rank$k.summary.json"
done
"$DDPRUN" report "$D" >"$TMP/out" 2>"$TMP/err"
check "no sync.json: exit 0" [ $? = 0 ]
check "no sync.json: no communication section" hasnt "$TMP/out" 'Gradient communication'
# rank 0: steps 1-2 are huge (must be left out); steps 3-4: 2 collectives,
# comm 4 ms of which 3 hidden -> 75%; rank 1: no overlap, nothing hidden
cat >"$D/rank0.sync.json" <<'J'
{"rank":0,"overlap":"on","waited_steps":2,"waited_other":0,"waited":[
 {"writer":"sm90_xmma_gemm_f32f32","extent":"unbounded","ranges":8,"bytes":4096,"example":"k:0.3+512"},
 {"writer":"","extent":"unseen","ranges":2,"bytes":128,"example":"k:0.5+64"}],"per_step":[
 {"step":1,"collectives":50,"comm_ms":900,"comm_hidden_ms":0,"grad_wait_ms":900},
 {"step":2,"collectives":9,"comm_ms":90,"comm_hidden_ms":0,"grad_wait_ms":80},
 {"step":3,"collectives":2,"comm_ms":4.0,"comm_hidden_ms":3.0,"grad_wait_ms":0.5,"peer_wait_ms":3.0,"peer_wait_hidden_ms":2.5},
 {"step":4,"collectives":2,"comm_ms":4.0,"comm_hidden_ms":3.0,"grad_wait_ms":0.25,"peer_wait_ms":2.0,"peer_wait_hidden_ms":2.0}]}
J
cat >"$D/rank1.sync.json" <<'J'
{"rank":1,"overlap":"off","per_step":[
 {"step":3,"collectives":5,"comm_ms":2.0,"comm_hidden_ms":0,"grad_wait_ms":2.0}]}
J
"$DDPRUN" report "$D" >"$TMP/out" 2>"$TMP/err"
check "sync.json: exit 0" [ $? = 0 ]
check "section title names steps 3+" has "$TMP/out" '^Gradient communication, per step over steps 3\+'
check "overlap on/off per rank, - for a rank without the file" has "$TMP/out" '^overlap +on +off +-$'
check "steps counted from 3" has "$TMP/out" '^steps +2 +1 +-$'
check "collectives per step" has "$TMP/out" '^collectives +2\.0 +5\.0 +-$'
check "comm ms per step" has "$TMP/out" '^comm ms \(collectives running\) +4\.000 +2\.000 +-$'
check "hidden ms per step" has "$TMP/out" '^comm hidden ms \(producer still busy\) +3\.000 +0\.000 +-$'
check "hidden percentage" has "$TMP/out" '^hidden % +75\.0% +0\.0% +-$'
check "grad wait per step" has "$TMP/out" '^grad wait ms \(consumer waiting\) +0\.375 +2\.000 +-$'
# rank 0: 2.5 ms of 4 waiting for rank 1; of the other 3 ms (6 - 4.5 hidden) 1.5 hidden -> 50%
check "peer wait per step (- without it)" has "$TMP/out" '^of comm: ms waiting for other ranks +2\.500 +- +-$'
check "hidden % after all ranks arrived" has "$TMP/out" '^hidden % after all ranks arrived +50\.0% +- +-$'
# the gradients that waited for the optimizer, per step, by last writer
# (rank 1 has no list: nothing printed for it)
check "waited: per rank, per step" has "$TMP/out" '^rank 0: 5\.0 gradients \(2112 bytes\) waited per step$'
check "waited: by last writer and why" has "$TMP/out" '^  4\.0 gradients waited for the optimizer: last writer sm90_xmma_gemm_f32f32 \(its extent is not known: taken to its allocation.s end\), e\.g\. k:0\.3\+512$'
check "waited: a gradient whose writes were not seen at its address" has "$TMP/out" '^  1\.0 gradients waited for the optimizer: last writer none seen \(no write seen while the bytes were this gradient'
check "waited: no line for a rank without the list" hasnt "$TMP/out" '^rank 1: .*waited'
echo '{"rank":1,"per_step":{"step":3}}' >"$D/rank1.sync.json"
"$DDPRUN" report "$D" >"$TMP/out" 2>"$TMP/err"
check "malformed per_step: exit 1" [ $? = 1 ]
check "malformed per_step: one line naming the file" has "$TMP/err" 'rank1\.sync\.json: "per_step" is not an array'
echo '{"rank":1,' >"$D/rank1.sync.json"
"$DDPRUN" report "$D" >"$TMP/out" 2>"$TMP/err"
rc=$?
check "truncated sync.json: exit 1" [ $rc = 1 ]
check "truncated sync.json: the line names it" has "$TMP/err" 'rank1\.sync\.json is not valid JSON'
finish
