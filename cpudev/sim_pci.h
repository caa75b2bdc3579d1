/* SPDX-License-Identifier: MIT
 *
 * sim_pci.h - the CPU device's PCI address, shared by the driver
 * (cuDeviceGetPCIBusId, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) and the NVML
 * stand-in (bus ids, nvmlDeviceGetPciInfo*), which must agree.
 *
 * Each process's CPU device is its own device, as each rank of a job on a
 * GPU machine sees its own GPU: NCCL refuses two ranks of one host on one
 * bus id ("Duplicate GPU detected").  So the bus is 0xc0 + LOCAL_RANK (set
 * by ddprun, torchrun and mpirun-style launchers; 0 when unset), modulo 64,
 * in domain 0, device 0: a bus number virtual machines and workstations
 * rarely populate, so a topology reader (NCCL's) finds no real sysfs
 * device of another kind at that address and takes the GPU's own answers.
 */
#ifndef SIM_PCI_H
#define SIM_PCI_H
#include <stdlib.h>

static inline int sim_pci_bus(void)
{
	const char *lr = getenv("LOCAL_RANK");
	int r = lr ? atoi(lr) : 0;
	return 0xc0 + (r < 0 ? 0 : r % 64);
}
#endif
