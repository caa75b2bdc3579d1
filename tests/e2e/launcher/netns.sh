#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# netns.sh - multi-node across a real network link: two network namespaces
# joined by a veth pair stand for two hosts (10.99.<n>.1 and .2).  ddprun
# node 0 runs in the first, node 1 in the second; node 1's ranks reach node
# 0's store only through the link (loopback is private to each namespace).
# Checks global ranks, a 4-rank barrier through the store with the shared
# secret, and that a wrong secret on node 1 is refused.  Needs root and
# `ip netns` (iproute2); skipped with the reason otherwise.
. "$(dirname "$0")/lib.sh"
command -v ip >/dev/null || { echo "ip (iproute2) is not installed"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "network namespaces need root"; exit 77; }
n=$(($$ % 200 + 20))
A=ddpA$$ B=ddpB$$ VA=ddpva$$ VB=ddpvb$$
cleanup() { ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
if ! { ip netns add "$A" && ip netns add "$B" && ip link add "$VA" type veth peer name "$VB" &&
	ip link set "$VA" netns "$A" && ip link set "$VB" netns "$B" &&
	ip -n "$A" addr add 10.99.$n.1/24 dev "$VA" && ip -n "$B" addr add 10.99.$n.2/24 dev "$VB" &&
	ip -n "$A" link set "$VA" up && ip -n "$B" link set "$VB" up &&
	ip -n "$A" link set lo up && ip -n "$B" link set lo up; } 2>"$TMP/ip.err"; then
	echo "cannot create network namespaces here: $(head -n 1 "$TMP/ip.err")"
	exit 77
fi
export DDPRUN_SECRET=0123456789abcdef0123456789abcdef
port=29$((RANDOM % 400 + 100))
common=(--nnodes 2 --master-addr 10.99.$n.1 --master-port "$port" -n 2)
body='"$0" env RANK WORLD_SIZE MASTER_ADDR && "$0" barrier'
ip netns exec "$A" "$DDPRUN" "${common[@]}" --node-rank 0 sh -c "$body" "$PROG" >"$TMP/a" 2>"$TMP/a.err" &
pa=$!
ip netns exec "$B" "$DDPRUN" "${common[@]}" --node-rank 1 sh -c "$body" "$PROG" >"$TMP/b" 2>"$TMP/b.err" &
pb=$!
wait $pa; ra=$?
wait $pb; rb=$?
check "both nodes exit 0 (rc $ra, $rb)" [ "$ra" = 0 -a "$rb" = 0 ]
check "node 1's ranks are 2 and 3 of 4, with node 0's address" \
	[ "$(grep -c '\] RANK=[23]$' "$TMP/b")" = 2 -a "$(grep -c '\] WORLD_SIZE=4$' "$TMP/b")" = 2 -a \
	  "$(grep -c "\] MASTER_ADDR=10.99.$n.1\$" "$TMP/b")" = 2 ]
check "all 4 ranks passed a barrier through the store across the link" \
	[ "$(cat "$TMP/a" "$TMP/b" | grep -c '\] barrier ok$')" = 4 ]
[ "$ra" = 0 ] && [ "$rb" = 0 ] || sed 's/^/# /' "$TMP/a.err" "$TMP/b.err" | tail -n 20

# a node with the wrong secret is refused: its ranks fail, node 0 reports it
port=$((port + 1))
common=(--nnodes 2 --master-addr 10.99.$n.1 --master-port "$port" -n 1)
DDPRUN_TIMEOUT=0 timeout 30 ip netns exec "$A" "$DDPRUN" "${common[@]}" --rdzv-timeout 5 --node-rank 0 sh -c 'sleep 3' >"$TMP/a2" 2>"$TMP/a2.err" &
pa=$!
sleep 0.5
DDPRUN_SECRET=ffffffffffffffffffffffffffffffff timeout 30 ip netns exec "$B" "$DDPRUN" "${common[@]}" \
	--node-rank 1 sh -c '"$0" barrier' "$PROG" >"$TMP/b2" 2>"$TMP/b2.err"
rb=$?
wait $pa
check "a node with a wrong secret fails (rc $rb)" [ "$rb" != 0 ]
check "node 0's store logs the refused connection from the other host" has "$TMP/a2.err" "refused.*10\.99\.$n\.2.*secret"
finish
