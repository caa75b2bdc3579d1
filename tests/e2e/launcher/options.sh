#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# options.sh - ddprun's command line and DDPRUN_* variables (launcher/
# options.def, options.c): every malformed option is exit 2 with one
# `ddprun:` line naming it; env options; --help covers the table; --version;
# --dry-run.
. "$(dirname "$0")/lib.sh"
out=$TMP/out err=$TMP/err
P="$PROG exit -1 0"

# env-assignments (may be empty) | arguments | expected message (extended regex, whole line)
while IFS='|' read -r envs args want; do
	[ -z "$args" ] && continue
	# shellcheck disable=SC2086
	env $envs "$DDPRUN" $args >"$out" 2>"$err"
	rc=$?
	lines=$(grep -vc 'ranks run on the CPU device' "$err")
	if [ $rc = 2 ] && [ "$lines" = 1 ] && grep -Eq "^ddprun: $want\$" "$err" && [ ! -s "$out" ]; then
		ok "bad option: ${envs:+$envs }$args"
	else
		notok "bad option: ${envs:+$envs }$args (rc $rc, $lines lines: $(head -c 300 "$err"))"
	fi
done <<EOT
|-n x $P|--nproc-per-node 'x' is not a positive integer
|-n 0 $P|--nproc-per-node '0' is not a positive integer
|--nproc-per-node=-1 $P|--nproc-per-node '-1' is not a positive integer
|-n 99999 $P|--nproc-per-node '99999' is out of range \(1\.\.1024\)
|-n 2x $P|--nproc-per-node '2x' is not a positive integer
|--nnodes abc $P|--nnodes 'abc' is not a positive integer
|--node-rank -1 $P|--node-rank '-1' is not a non-negative integer
|--nnodes 2 --node-rank 2 --master-addr h --master-port 5 $P|--node-rank 2 is not below --nnodes 2
|--master-port 70000 $P|--master-port '70000' is out of range \(0\.\.65535\)
|--master-port http $P|--master-port 'http' is not a non-negative integer
|--device tpu $P|--device 'tpu' is not one of auto,gpu,cpu
|--backend mpi $P|--backend 'mpi' is not one of auto,nccl,host
|--check -1 $P|--check '-1' is not a non-negative integer
|--timeout 1.5 $P|--timeout '1.5' is not a non-negative integer
|--ranks-filter 0,a $P|--ranks-filter '0,a' is not a list of ranks like 0 or 0,2-3
|--ranks-filter 3-1 $P|--ranks-filter '3-1' is not a list of ranks like 0 or 0,2-3
|--ranks-filter 0, $P|--ranks-filter '0,' is not a list of ranks like 0 or 0,2-3
|-n 2 --ranks-filter 5 $P|--ranks-filter '5' names rank 5 but the job has 2 ranks
DDPRUN_FAKE_GPUS=2|--gpus x $P|--gpus 'x' is not a GPU list like all, 0,1 or 0-3
DDPRUN_FAKE_GPUS=0|--gpus 0 $P|--gpus 0: no GPU was found .*
|--gpus 0 --device cpu $P|--gpus 0 and --device cpu do not go together
|--bogus $P|unknown option '--bogus'; see ddprun --help
|-x $P|unknown option '-x'; see ddprun --help
|--log-dir|--log-dir needs a value \(DIR\)
|-n|-n needs a value \(N\)
|--log-dir= $P|--log-dir '' is empty; give a value
||no program to run; usage: .*
|-n 2|no program to run; usage: .*
|--quiet=1 $P|--quiet takes no value
|--tee $P|--tee needs --log-dir DIR \(where the log files go\)
|--nnodes 2 --master-port 5 $P|--nnodes 2 needs --master-addr HOST \(the address of node 0\)
|--nnodes 2 --master-addr h $P|--nnodes 2 needs --master-port P \(not 0: every node must know it\)
|--nnodes 2 --master-addr h --master-port 5 $P|--nnodes 2 needs the job secret shared by every node: .*
DDPRUN_SECRET=short|--nnodes 2 --master-addr h --master-port 5 $P|the secret from DDPRUN_SECRET must be 16 to 64 characters long
|--nnodes 2 --master-addr h --master-port 5 --secret-file /nonexistent/x $P|--secret-file '/nonexistent/x': No such file or directory
DDPRUN_NPROC_PER_NODE=x|$P|DDPRUN_NPROC_PER_NODE='x' is not a positive integer
DDPRUN_QUIET=maybe|$P|DDPRUN_QUIET='maybe' is not a boolean; use 1/0, yes/no, true/false, on/off
DDPRUN_DEVICE=tpu|$P|DDPRUN_DEVICE='tpu' is not one of auto,gpu,cpu
DDPRUN_VERBOSE=9|$P|DDPRUN_VERBOSE='9' is not a number in 0\.\.3
DDPRUN_GRACE=soon|$P|DDPRUN_GRACE='soon' is not a number of seconds \(0\.\.600\)
|--shard /nonexistent/ddprun-x:record=4 $P|--shard /nonexistent/ddprun-x:record=4: .*
|--log-dir /proc/nope $P|--log-dir '/proc/nope': cannot create /proc/nope: .*
DDPRUN_SECRET=0123456789abcdef|--nnodes 2 --master-addr no-such-host.invalid --master-port 5 $P|--master-addr 'no-such-host.invalid' does not resolve \(.*\); give node 0's host name or address
|--signals-to-handle SIGTERM,SIGKILL $P|--signals-to-handle 'SIGTERM,SIGKILL': ddprun passes on SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2, not 'SIGKILL'
|--monitor-interval x $P|--monitor-interval 'x' is not a number of seconds \(above 0, at most 86400\)
|--rdzv-conf read_timeout=5 $P|--rdzv-conf 'read_timeout=5': ddprun knows only join_timeout=SEC \(the same as --rdzv-timeout SEC\); drop 'read_timeout'
|--rdzv-conf join_timeout=x $P|--rdzv-conf 'join_timeout=x': join_timeout='x' is not a number of seconds \(1\.\.604800\)
|--start-method thread $P|--start-method 'thread' is not one of spawn,fork,forkserver
|--max-restarts 2 --nnodes 2 --master-addr h --master-port 5 $P|--max-restarts restarts the ranks of one node; with --nnodes 2 restart the whole job from your scheduler \(e\.g\. srun --requeue\) instead
|--run-path --no-python $P|--run-path runs python3 PROGRAM; drop --no-python
|-t 7 $P|--tee '7' is out of range: torchrun's --tee takes 0\.\.3 .*
PET_MAX_RESTARTS=x|$P|PET_MAX_RESTARTS='x' is not a non-negative integer
EOT
# the empty-args rows above: "" args means plain `ddprun`
env "$DDPRUN" >"$out" 2>"$err"
check "no arguments: exit 2, usage line" [ $? = 2 ] && has "$err" '^ddprun: no program to run'

printf 'abcdefabcdefabcdefabcdef\n' >"$TMP/secret"
chmod 644 "$TMP/secret"
"$DDPRUN" --nnodes 2 --master-addr h --master-port 5 --secret-file "$TMP/secret" $P >"$out" 2>"$err"
check "secret file readable by others: exit 2" [ $? = 2 ] && has "$err" "^ddprun: --secret-file '$TMP/secret' is readable by others \(mode 0644\); chmod 600 it$"

# the environment sets options; the command line wins
DDPRUN_NPROC_PER_NODE=3 "$DDPRUN" "$PROG" env RANK >"$out" 2>"$err"
check "DDPRUN_NPROC_PER_NODE=3 starts 3 ranks" [ "$(grep -c '\] RANK=' "$out")" = 3 ]
DDPRUN_NPROC_PER_NODE=3 "$DDPRUN" -n 2 "$PROG" env RANK >"$out" 2>"$err"
check "-n 2 wins over DDPRUN_NPROC_PER_NODE=3" [ "$(grep -c '\] RANK=' "$out")" = 2 ]
printf '0123456789abcdef' >"$TMP/x"
printf '0123456789abcdef' >"$TMP/y"
DDPRUN_VERBOSE=1 DDPRUN_BACKEND=nccl DDPRUN_SHARD="$(printf '%s\n%s' "$TMP/x:record=4:header=0" "$TMP/y:record=8:header=0")" DDPRUN_DRY_RUN=1 \
	"$DDPRUN" -n 1 "$PROG" env >"$out" 2>"$err"
check "DDPRUN_VERBOSE, DDPRUN_BACKEND, DDPRUN_SHARD (newline list), DDPRUN_DRY_RUN" \
	[ "$(grep -cE "^  (DDP_LOG=info|DDP_BACKEND=nccl|DDP_SHARD=$TMP/x:record=4:header=0)\$" "$out")" = 3 ]
DDPRUN_QUIET=yes DDPRUN_RANKS_FILTER=1 "$DDPRUN" -n 2 --nproc_per_node 2 "$PROG" env RANK >"$out" 2>"$err"
check "DDPRUN_QUIET=yes hides rank output; torchrun's --nproc_per_node accepted" [ $? = 0 -a ! -s "$out" ]
"$DDPRUN" -vv -n 1 --dry-run "$PROG" >"$out" 2>"$err"
check "-vv gives DDP_LOG=debug" has "$out" '^  DDP_LOG=debug$'
"$DDPRUN" -- "$PROG" env RANK >"$out" 2>"$err"
check "-- ends the options" has "$out" '^\[rank 0\] RANK=0$'
"$DDPRUN" -n 1 "$PROG" env -n --help >"$out" 2>"$err"
check "options after PROGRAM belong to the program" has "$out" '^\[rank 0\] --help<unset>$'

# --help: every option of the table, its variable, and the docs
"$DDPRUN" --help >"$out" 2>"$err"
check "--help exits 0 and prints to stdout" [ $? = 0 -a -s "$out" ]
missing=""
MANWIDTH=200 man -l docs/ddprun.1 >"$TMP/man.txt" 2>/dev/null </dev/null
for name in $(sed -n 's/^LAUNCH_OPT([a-z_]*, "\([a-z-]*\)".*/\1/p' launcher/options.def); do
	env=DDPRUN_$(echo "$name" | tr 'a-z-' 'A-Z_')
	grep -q -- "--$name\b" "$out" || missing="$missing --$name(help)"
	case $name in help|version) ;; *) grep -q "\[$env\]" "$out" || missing="$missing $env(help)" ;; esac
	grep -q -- "--$name" docs/launcher.md 2>/dev/null || missing="$missing --$name(launcher.md)"
	grep -q -- "--$name\b" "$TMP/man.txt" || missing="$missing --$name(ddprun.1)"
done
check "--help and the docs mention every option${missing:+:$missing}" [ -z "$missing" ]
check "options.def has the options the brief asks for" [ "$(sed -n 's/^LAUNCH_OPT([a-z_]*, "\([a-z-]*\)".*/\1/p' launcher/options.def | wc -l)" -ge 22 ]
"$DDPRUN" -h >"$out" 2>&1
check "-h is --help" has "$out" '^usage: ddprun'
"$DDPRUN" --version >"$out" 2>"$err"
check "--version" [ $? = 0 ] && grep -Eq '^ddprun [0-9]+\.[0-9]+\.[0-9]+$' "$out"
if command -v man >/dev/null && [ -f docs/ddprun.1 ]; then
	MANWIDTH=80 man -l docs/ddprun.1 >"$out" 2>"$err" </dev/null
	check "man -l docs/ddprun.1 renders without warnings" [ $? = 0 -a ! -s "$err" ] && has "$out" 'nproc-per-node'
fi

# --dry-run: the plan, nothing started, the secret hidden
(cd "$TMP" && "$DDPRUN" -n 2 --dry-run sh -c 'touch ran' >"$out" 2>"$err")
check "--dry-run exits 0" [ $? = 0 ]
check "--dry-run starts nothing" [ ! -e "$TMP/ran" ]
check "--dry-run: a line per rank" [ "$(grep -Ec '^rank [01]: local rank [01], device cpu' "$out")" = 2 ]
check "--dry-run: the variables" [ "$(grep -Ec '^  (RANK=[01]|WORLD_SIZE=2|MASTER_PORT=<picked at start>)$' "$out")" = 6 ]
check "--dry-run: the secret is <hidden>" [ "$(grep -c '^  DDP_STORE_SECRET=<hidden>$' "$out")" = 2 ]
check "--dry-run: no 64-hex-digit string anywhere" hasnt "$out" '[0-9a-f]{64}'
DDPRUN_FAKE_GPUS=2 "$DDPRUN" -n 2 --dry-run --master-port 29555 "$PROG" >"$out" 2>"$err"
check "--dry-run with GPUs" [ "$(grep -Ec '^rank ([01]): local rank \1, device GPU \1$' "$out")" = 2 ] && has "$out" '^  MASTER_PORT=29555$'
finish
