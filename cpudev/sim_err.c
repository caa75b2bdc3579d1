/* SPDX-License-Identifier: MIT
 *
 * sim_err.c - cuGetErrorName and cuGetErrorString for every CUresult value
 * cuda.h defines.
 *
 * The list (names and the first sentence of each value's documentation) is
 * generated from the installed cuda.h by sim_gen.sh into sim_errors.inc; the
 * common codes get the short strings the real driver returns.  Unknown codes
 * give CUDA_ERROR_INVALID_VALUE and *pStr = NULL, as with the driver.
 *
 * Contract: pure lookups in constant tables; callable before cuInit, from any
 * thread.
 */
#include "sim_internal.h"

#include <stddef.h>

struct sim_err {
	CUresult code;
	const char *name;
	const char *doc;
};

static const struct sim_err sim_errs[] = {
#define SIM_ERR(name, doc) { name, #name, doc },
#include "sim_errors.inc"
#undef SIM_ERR
};

/* What the driver prints for the codes programs meet most. */
static const struct { CUresult code; const char *text; } sim_short[] = {
	{ CUDA_SUCCESS, "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "initialization error" },
	{ CUDA_ERROR_DEINITIALIZED, "driver shutting down" },
	{ CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected" },
	{ CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal" },
	{ CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid" },
	{ CUDA_ERROR_INVALID_CONTEXT, "invalid device context" },
	{ CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device" },
	{ CUDA_ERROR_INVALID_HANDLE, "invalid resource handle" },
	{ CUDA_ERROR_NOT_FOUND, "named symbol not found" },
	{ CUDA_ERROR_NOT_READY, "device not ready" },
	{ CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered" },
	{ CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch" },
	{ CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure" },
	{ CUDA_ERROR_NOT_SUPPORTED, "operation not supported" },
	{ CUDA_ERROR_UNKNOWN, "unknown error" },
};

static const struct sim_err *sim_err_find(CUresult code)
{
	for (size_t i = 0; i < sizeof(sim_errs) / sizeof(sim_errs[0]); i++)
		if (sim_errs[i].code == code)
			return &sim_errs[i];
	return NULL;
}

SIM_EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	const struct sim_err *e = sim_err_find(error);
	*pStr = e ? e->name : NULL;
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	const struct sim_err *e = sim_err_find(error);
	*pStr = NULL;
	if (!e)
		return CUDA_ERROR_INVALID_VALUE;
	*pStr = e->doc;
	for (size_t i = 0; i < sizeof(sim_short) / sizeof(sim_short[0]); i++)
		if (sim_short[i].code == error)
			*pStr = sim_short[i].text;
	return CUDA_SUCCESS;
}
