# tests/e2e/valgrind.sh: memcheck over libddp in a sample, the CPU device and ddprun.
TESTS += tests/e2e/valgrind.sh
