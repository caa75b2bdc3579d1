# SPDX-License-Identifier: MIT
#
# tests/arch/: the dependency rules of the code base (runtime/ depends on
# nothing above it; each component uses only what docs/README.md's table
# allows), checked over the sources and the built objects.
TESTS += tests/arch/check_layers.sh tests/arch/check_exports.sh tests/arch/check_deps.py
