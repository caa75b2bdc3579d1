#!/usr/bin/env bash
# docs/configuration.md must hold exactly the table runtime/base/params.def generates.
set -u
tool=${BUILD:-build}/bin/ddp-params
[ -x "$tool" ] || { echo "ddp-params not built"; exit 77; }
if tools/update_config_doc.sh "$tool" docs/configuration.md --check; then
	echo "ok - docs/configuration.md matches runtime/base/params.def"
else
	echo "not ok - docs/configuration.md is stale: run 'make docs-config'"
fi
if "$tool" --bogus 2>/dev/null; then
	echo "not ok - ddp-params accepts a bad argument"
else
	echo "ok - ddp-params rejects a bad argument"
fi
