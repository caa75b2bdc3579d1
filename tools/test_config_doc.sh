#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_config_doc.sh - docs/configuration.md, docs/ddprun.1 and
# docs/launcher.md hold exactly what the option table (launcher/options.def)
# and the settings tables (runtime/base/params.def, cpudev/sim_settings.def)
# generate (issue 31): no hand-written copy; a changed generated line is
# caught (negative control); the texts the issue found false say what the
# code does; `ddprun --help` is the same table.
set -u
bin=${BUILD:-build}/bin
for t in ddp-params ddprun; do
	[ -x "$bin/$t" ] || { echo "$bin/$t is not built"; exit 77; }
done
# built with them: its absence is a failure, not a skip
[ -x "$bin/ddprun-doc" ] || { echo "not ok - $bin/ddprun-doc (the option table's docs) is not built"; exit 1; }
if tools/update_config_doc.sh "$bin" --check; then
	echo "ok - docs/configuration.md, docs/ddprun.1, docs/launcher.md match the option and settings tables"
else
	echo "not ok - generated docs are stale: run 'make docs-config'"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/docs"
cp docs/configuration.md docs/ddprun.1 docs/launcher.md "$tmp/docs/"
sed -i 's/^| `--max-restarts N` |\(.*\)/| `--max-restarts N` | hand-edited |/' "$tmp/docs/launcher.md"
if DOC_TOP=$tmp tools/update_config_doc.sh "$bin" --check 2>/dev/null; then
	echo "not ok - a hand-edited generated line goes unnoticed"
else
	echo "ok - a hand-edited generated line is caught (negative control)"
fi
bad=
grep -q '((void \*)0)' docs/configuration.md && bad="$bad ((void *)0) in configuration.md;"
grep -q '| `--master-port P` |.*listens on P+1' docs/configuration.md || bad="$bad --master-port does not say the store is P+1;"
grep -q '| `--log-dir DIR` |.*DIR/<id>-<date>-<time>-<pid>' docs/configuration.md || bad="$bad --log-dir does not say it makes a run folder;"
grep -q '| `--check N` |.*0: only at steps 1, 2, 3, 10' docs/configuration.md || bad="$bad --check 0 is not what DDP_CHECK=0 does;"
grep -q '| `DDPRUN_GRACE` | string | `30` |' docs/configuration.md || bad="$bad DDPRUN_GRACE is not in the settings table;"
grep -q '^| `SIMCUDA_' docs/configuration.md || bad="$bad the CPU device's settings are missing;"
if [ -z "$bad" ]; then echo "ok - the docs say what the code does (store port, run folder, --check 0, defaults)"
else echo "not ok - the docs:$bad"; fi
"$bin/ddprun-doc" --help >"$tmp/doc.txt"
"$bin/ddprun" --help >"$tmp/help.txt"
if grep -qxFf "$tmp/doc.txt" "$tmp/help.txt" && [ "$(grep -cxFf "$tmp/doc.txt" "$tmp/help.txt")" = "$(wc -l <"$tmp/doc.txt")" ] &&
	grep -q '^Examples:$' "$tmp/help.txt"; then
	echo "ok - ddprun --help is the option table, with examples"
else
	echo "not ok - ddprun --help differs from the option table"
fi
if "$bin/ddp-params" --bogus 2>/dev/null; then
	echo "not ok - ddp-params accepts a bad argument"
else
	echo "ok - ddp-params rejects a bad argument"
fi
