/* SPDX-License-Identifier: MIT
 *
 * stub_preload.c - an empty shared library standing in for libddp.so in the
 * launcher tests (they copy ddprun next to it, as bin/ddprun + lib/libddp.so,
 * to test LD_PRELOAD without depending on the real library).
 */
int ddp_test_stub_preload_marker;
