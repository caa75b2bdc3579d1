#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# multinode.sh - two ddprun processes on loopback form one job of 4 ranks:
# global RANKs, one store on node 0 (bound to all interfaces) that every rank
# reaches with the shared secret (a 4-rank barrier through it).  Also: a
# single-node store listens on loopback only.
. "$(dirname "$0")/lib.sh"
export DDPRUN_SECRET=0123456789abcdef0123456789abcdef
o0=$TMP/n0 o1=$TMP/n1

# listening sockets in /proc/net/tcp: "ADDR:PORT" of state 0A, hex
listening() { awk '$4 == "0A" { print $2 }' /proc/net/tcp; }

done_ok=0
for attempt in 1 2 3; do
	port=$((20000 + (RANDOM * 7 + $$) % 40000))
	common="--nnodes 2 --master-addr 127.0.0.1 --master-port $port -n 2"
	# node 0's ranks stay up (and with them its store) until the test has
	# looked at the listening socket: no race with a fast job on a busy machine
	flag=$o0.seen; rm -f "$flag"
	"$DDPRUN" $common --node-rank 0 sh -c '"$0" env RANK WORLD_SIZE LOCAL_RANK GROUP_RANK MASTER_PORT MASTER_ADDR && "$0" barrier && for _ in $(seq 200); do [ -e "$1" ] && break; sleep 0.05; done' "$PROG" "$flag" >"$o0" 2>"$o0.err" &
	p0=$!
	"$DDPRUN" $common --node-rank 1 sh -c '"$0" env RANK WORLD_SIZE LOCAL_RANK GROUP_RANK MASTER_PORT MASTER_ADDR && "$0" barrier' "$PROG" >"$o1" 2>"$o1.err" &
	p1=$!
	# while node 0 runs: is its store on 0.0.0.0?  (--master-port + 1: the
	# port itself is the program's MASTER_PORT)
	hexport=$(printf '%04X' $((port + 1)))
	bound=""
	for _ in $(seq 200); do
		bound=$(listening | grep ":$hexport$" | head -1)
		[ -n "$bound" ] && break
		sleep 0.05
	done
	touch "$flag"
	wait $p0; r0=$?
	wait $p1; r1=$?
	if grep -q 'cannot start the rendezvous store' "$o0.err"; then
		continue # port taken: try another
	fi
	done_ok=1
	break
done
check "node 0 and node 1 exit 0 (rc $r0, $r1)" [ $done_ok = 1 -a "$r0" = 0 -a "$r1" = 0 ]
check "node 0 runs ranks 0,1; node 1 ranks 2,3" \
	[ "$(grep -h '\] RANK=' "$o0" | sort | tr '\n' ' ')$(grep -h '\] RANK=' "$o1" | sort | tr '\n' ' ')" = \
	  "[rank 0] RANK=0 [rank 1] RANK=1 [rank 2] RANK=2 [rank 3] RANK=3 " ]
check "WORLD_SIZE=4 everywhere" [ "$(cat "$o0" "$o1" | grep -c '\] WORLD_SIZE=4$')" = 4 ]
check "LOCAL_RANK 0,1 and GROUP_RANK per node" \
	[ "$(grep -c '^\[rank [23]\] GROUP_RANK=1$' "$o1")" = 2 -a "$(grep -c '^\[rank [01]\] GROUP_RANK=0$' "$o0")" = 2 -a \
	  "$(grep -h 'LOCAL_RANK=' "$o1" | sort | tr '\n' ' ')" = "[rank 2] LOCAL_RANK=0 [rank 3] LOCAL_RANK=1 " ]
check "every rank: MASTER_ADDR/MASTER_PORT of node 0" \
	[ "$(cat "$o0" "$o1" | grep -c "\] MASTER_PORT=$port\$")" = 4 -a "$(cat "$o0" "$o1" | grep -c '\] MASTER_ADDR=127.0.0.1$')" = 4 ]
check "all 4 ranks passed a barrier in node 0's store (shared secret)" [ "$(cat "$o0" "$o1" | grep -c '\] barrier ok$')" = 4 ]
check "multi-node store binds all interfaces" [ "${bound%%:*}" = 00000000 ]

# single node: loopback only
"$DDPRUN" -n 1 sh -c 'awk -v p=$(printf "%04X" $DDP_STORE_PORT) "\$4 == \"0A\" && \$2 ~ (\":\" p \"\$\") { print \$2 }" /proc/net/tcp' >"$o0" 2>"$o0.err"
check "single-node store binds 127.0.0.1 only" [ "$(sed 's/^\[rank 0\] //' "$o0")" = "$(printf '0100007F')$(sed -n 's/.*:\([0-9A-F]*\)$/:\1/p' "$o0")" ]
finish
