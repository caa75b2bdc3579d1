/* SPDX-License-Identifier: MIT
 *
 * own_mpi.c - two tiny libraries for tests/e2e/launcher/own_rdzv.sh,
 * built from this file:
 *  - with -DOWN_MPI_LIB, libfakempi.so: an MPI_Init that says it ran (the
 *    MPI library of an MPI program);
 *  - else libown_mpi.so, a shim whose constructor calls MPI_Init as an MPI
 *    program does first (found through the global scope: libddp.so's
 *    wrapper when it is preloaded before libfakempi.so).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef OWN_MPI_LIB
int MPI_Init(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "fakempi: MPI_Init\n");
	return 0;
}
#else
__attribute__((constructor)) static void own_mpi(void)
{
	int (*init)(int *, char ***) = (int (*)(int *, char ***))dlsym(RTLD_DEFAULT, "MPI_Init");
	if (getenv("RANK") && init && init(NULL, NULL) != 0)
		exit(1);
}
#endif
