#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# readme_nodes.sh - README's two-node and Slurm examples run as written
# (issue 31), one ddprun per "node": two network namespaces joined by a veth
# pair stand for two hosts, node0 and node1 (ip netns exec gives each its
# /etc/netns/NAME/hosts).  The lines are taken from README's "Everyday
# commands" block and run unchanged from a folder where build/ is this
# build; the Slurm one through stand-ins for srun (SLURM_NNODES,
# SLURM_NODEID, SLURM_JOB_NODELIST per node) and scontrol.  Checks: both
# nodes exit 0, 4 ranks, and every rank's losses (each its own --shard
# part) equal a one-node run of 4 ranks, not of 2 (the job spanned the
# nodes; gradients through NCCL's stand-in);
# negative control: the host backend cannot span the nodes; a node whose
# peer never comes fails in the time --rdzv-timeout says, with one line.
# Needs root and iproute2 (scripts/deps.sh installs it); skipped otherwise.
. "$(dirname "$0")/lib.sh"
unset DDPRUN_NO_PRELOAD
command -v ip >/dev/null || { echo "ip (iproute2) is not installed (scripts/deps.sh)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "network namespaces need root"; exit 77; }
for f in "$build_dir/lib/libddp.so" "$build_dir/samples/charlm" "$build_dir/data/charlm.rec" \
	"$build_dir/cpudev/lib/nccl/libnccl.so.2"; do
	[ -e "$f" ] || { echo "$f is not built (make all)"; exit 77; }
done
readme=$(dirname "$0")/../../../README.md
n=$(($$ % 200 + 20))
A=ddpnA$$ B=ddpnB$$ VA=ddpna$$ VB=ddpnb$$
cleanup() {
	ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null
	rm -rf "/etc/netns/$A" "/etc/netns/$B" "$TMP"
}
trap cleanup EXIT
if ! { ip netns add "$A" && ip netns add "$B" && ip link add "$VA" type veth peer name "$VB" &&
	ip link set "$VA" netns "$A" && ip link set "$VB" netns "$B" &&
	ip -n "$A" addr add 10.98.$n.1/24 dev "$VA" && ip -n "$B" addr add 10.98.$n.2/24 dev "$VB" &&
	ip -n "$A" link set "$VA" up && ip -n "$B" link set "$VB" up &&
	ip -n "$A" link set lo up && ip -n "$B" link set lo up; } 2>"$TMP/ip.err"; then
	echo "cannot create network namespaces here: $(head -n 1 "$TMP/ip.err")"
	exit 77
fi
for ns in "$A" "$B"; do
	mkdir -p "/etc/netns/$ns"
	printf '127.0.0.1 localhost\n10.98.%s.1 node0\n10.98.%s.2 node1\n' $n $n >"/etc/netns/$ns/hosts"
done

# the README block, continuation lines joined
block=$(sed -n '/^## Everyday commands/,/^## /p' "$readme" | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d' |
	sed -e ':a' -e '/\\$/N; s/\\\n */ /; ta')
secret_line=$(printf '%s\n' "$block" | grep -m1 '^export DDPRUN_SECRET=')
node0=$(printf '%s\n' "$block" | grep -m1 -- '--nnodes 2 --node-rank 0 ')
node1=$(printf '%s\n' "$block" | grep -m1 -- '--nnodes 2 --node-rank 1 ')
slurm=$(printf '%s\n' "$block" | grep -m1 '^srun ')
check "README has the secret, node0, node1 and srun lines" [ -n "$secret_line" -a -n "$node0" -a -n "$node1" -a -n "$slurm" ]
work=$TMP/work
mkdir -p "$work" && ln -s "$build_dir" "$work/build"
secret=$(bash -c "$secret_line"$'\n''printf %s "$DDPRUN_SECRET"')
check "README's secret line makes a secret (${#secret} characters)" [ ${#secret} -ge 16 ]

# the reference: one node, 4 ranks, the same program and arguments
ref_cmd=$(printf '%s\n' "$node0" | sed -e 's/--nnodes 2 --node-rank 0 --master-addr node0 --master-port 29500 -n 2/-n 4/' -e 's/ *#.*//')
(cd "$work" && bash -c "$ref_cmd") >"$TMP/ref" 2>"$TMP/ref.err"
check "reference (one node, -n 4) runs (rc $?)" [ "$(grep -c '\] step 20 loss' "$TMP/ref")" = 4 ]
# every rank's loss at every step (each rank's own shard: they differ by rank)
losses() { sed -n 's/^\[rank \([0-3]\)\] step \([0-9]*\) loss \(.*\)$/\1 \2 \3/p' "$@" | sort; }
losses "$TMP/ref" >"$TMP/ref.loss"
# negative control of the comparison: 2 ranks (another world) differ
(cd "$work" && bash -c "${ref_cmd/-n 4/-n 2}") >"$TMP/ref2" 2>"$TMP/ref2.err"
losses "$TMP/ref2" | grep '^[01] ' >"$TMP/ref2.loss"
grep '^[01] ' "$TMP/ref.loss" >"$TMP/ref.01.loss"
check "negative control: ranks 0 and 1 of a 2-rank job have other losses than of a 4-rank one" \
	[ -s "$TMP/ref2.loss" ] && ! cmp -s "$TMP/ref2.loss" "$TMP/ref.01.loss"

# two_nodes NAME CMD0 CMD1 [ENV...]: node 0 in A, node 1 in B, from $work
two_nodes() {
	local name=$1 c0=$2 c1=$3
	shift 3
	local t0=$(now_ms)
	(cd "$work" && env DDPRUN_SECRET="$secret" "$@" FAKE_NODEID=0 ip netns exec "$A" bash -c "$c0") >"$TMP/$name.0" 2>"$TMP/$name.0.err" &
	local p0=$!
	(cd "$work" && env DDPRUN_SECRET="$secret" "$@" FAKE_NODEID=1 ip netns exec "$B" bash -c "$c1") >"$TMP/$name.1" 2>"$TMP/$name.1.err" &
	local p1=$!
	wait $p0; r0=$?
	wait $p1; r1=$?
	took=$(($(now_ms) - t0))
}
# same_as_ref NAME LABEL: 4 ranks (0,1 on node 0; 2,3 on node 1), each with the reference's losses
same_as_ref() {
	local name=$1 label=$2
	check "$label: both nodes exit 0 (rc $r0, $r1; ${took} ms)" [ "$r0" = 0 -a "$r1" = 0 ]
	check "$label: ranks 0,1 on node0, 2,3 on node1, 20 steps each" \
		[ "$(grep -Ec '^\[rank [01]\] step 20 loss' "$TMP/$name.0")" = 2 -a "$(grep -Ec '^\[rank [23]\] step 20 loss' "$TMP/$name.1")" = 2 ]
	losses "$TMP/$name.0" "$TMP/$name.1" >"$TMP/$name.loss"
	check "$label: every rank's losses equal one node's 4 ranks (the job spanned the nodes)" \
		cmp -s "$TMP/$name.loss" "$TMP/ref.loss"
	[ "$r0" = 0 ] && [ "$r1" = 0 ] || tail -n 3 "$TMP/$name.0.err" "$TMP/$name.1.err" | sed 's/^/# /'
}

two_nodes readme "$node0" "$node1"
same_as_ref readme "README two nodes"

# Slurm: srun starts the command once per node with its SLURM_* (the
# stand-in: this node's), scontrol lists the allocation's hosts
mkdir -p "$TMP/bin"
cat >"$TMP/bin/srun" <<'EOS'
#!/bin/sh
while [ $# -gt 0 ]; do case $1 in --*) shift ;; *) break ;; esac; done
SLURM_NNODES=2 SLURM_NODEID=$FAKE_NODEID SLURM_JOB_NODELIST='node[0-1]' exec "$@"
EOS
cat >"$TMP/bin/scontrol" <<'EOS'
#!/bin/sh
[ "$1 $2" = "show hostnames" ] && [ "$3" = 'node[0-1]' ] && { echo node0; echo node1; exit 0; }
echo "scontrol stand-in: $*" >&2; exit 1
EOS
chmod +x "$TMP/bin/srun" "$TMP/bin/scontrol"
two_nodes slurm "$slurm" "$slurm" PATH="$TMP/bin:$PATH"
same_as_ref slurm "README under Slurm"

# negative control: the host backend stays within one node
two_nodes host "${node0/--backend nccl/--backend host}" "${node1/--backend nccl/--backend host}"
check "negative control: --backend host across the nodes fails (rc $r0, $r1)" [ "$r0" != 0 -o "$r1" != 0 ]
has "$TMP/host.0.err" 'works within one node' || has "$TMP/host.1.err" 'works within one node' ||
	notok "the host backend says why: $(grep -h -m1 libddp "$TMP"/host.*.err)"

# a node whose peer never comes: fails in the --rdzv-timeout, one line
for k in 0 1; do
	ns=$A; [ $k = 1 ] && ns=$B
	t0=$(now_ms)
	DDPRUN_SECRET=$secret timeout 30 ip netns exec "$ns" "$DDPRUN" --nnodes 2 --node-rank $k --master-addr node0 \
		--master-port 29500 --rdzv-timeout 3 -n 1 true >"$TMP/alone" 2>"$TMP/alone.err"
	rc=$? t=$(($(now_ms) - t0))
	check "node $k alone, --rdzv-timeout 3: fails after 3 s (rc $rc, ${t} ms)" [ $rc = 1 -a $t -ge 2900 -a $t -lt 6000 ]
	check "node $k alone: one line naming --rdzv-timeout" \
		[ "$(grep -vc 'CPU device' "$TMP/alone.err")" = 1 ] && has "$TMP/alone.err" "^ddprun: node $k: .*within 3 s \(--rdzv-timeout\)"
done
# ... and a stopping signal ends that wait at once
DDPRUN_SECRET=$secret ip netns exec "$B" "$DDPRUN" --nnodes 2 --node-rank 1 --master-addr node0 \
	--master-port 29500 --rdzv-timeout 30 -n 1 true >"$TMP/alone" 2>"$TMP/alone.err" &
pid=$!
sleep 1
t0=$(now_ms)
kill -TERM $pid
wait $pid
rc=$? t=$(($(now_ms) - t0))
check "SIGTERM while a node waits for its peer: exit 143 at once (rc $rc, ${t} ms)" [ $rc = 143 -a $t -lt 2500 ]
check "... saying so" has "$TMP/alone.err" '^ddprun: node 1: got SIGTERM while waiting for the other nodes; no rank started \(exit 143\)$'
finish
