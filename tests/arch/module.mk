# SPDX-License-Identifier: MIT
#
# tests/arch/: the dependency rule of the code base (runtime/ depends on
# nothing above it), checked over the sources and the built objects.
TESTS += tests/arch/check_layers.sh tests/arch/check_exports.sh
