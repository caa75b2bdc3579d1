/* SPDX-License-Identifier: MIT
 *
 * sim_logs.c - the driver's error-log callbacks (CUDA 12.9+):
 * cuLogsRegisterCallback / cuLogsUnregisterCallback.
 *
 * PyTorch 2.15 (through cudart 13.2) registers a callback at start-up so
 * that the driver's own error descriptions reach its exceptions; it treats a
 * refusal as fatal on the way to the first allocation.  The CPU device keeps
 * the registrations as the driver does (a handle per registration, removed
 * by unregistering it; NULL callback or handle is CUDA_ERROR_INVALID_VALUE,
 * an unknown or already removed handle CUDA_ERROR_INVALID_VALUE) and never
 * calls them: its messages go to stderr with the "simcuda:" prefix
 * (sim_msg).  cuLogsCurrent / cuLogsDumpTo* stay unimplemented.
 *
 * Contract: any thread; the registration list has its own lock; callbacks
 * are never called, so no lock is held across user code.
 */
#include "sim_internal.h"

#include <stdlib.h>

struct CUlogsCallbackEntry_st {
	struct CUlogsCallbackEntry_st *next;
	CUlogsCallback fn;
	void *user;
};

static pthread_mutex_t sim_logs_mu = PTHREAD_MUTEX_INITIALIZER; /* sim_logs_head */
static struct CUlogsCallbackEntry_st *sim_logs_head;

SIM_EXPORT CUresult cuLogsRegisterCallback(CUlogsCallback callbackFunc, void *userData,
					   CUlogsCallbackHandle *callback_out)
{
	if (!callbackFunc)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUlogsCallbackEntry_st *e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->fn = callbackFunc;
	e->user = userData;
	pthread_mutex_lock(&sim_logs_mu);
	e->next = sim_logs_head;
	sim_logs_head = e;
	pthread_mutex_unlock(&sim_logs_mu);
	if (callback_out)
		*callback_out = e;
	SIM_VERBOSE("cuLogsRegisterCallback: %p registered (never called: messages go to stderr)", (void *)e);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLogsUnregisterCallback(CUlogsCallbackHandle callback)
{
	if (!callback)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_logs_mu);
	for (struct CUlogsCallbackEntry_st **p = &sim_logs_head; *p; p = &(*p)->next) {
		if (*p == callback) {
			*p = callback->next;
			free(callback);
			rc = CUDA_SUCCESS;
			break;
		}
	}
	pthread_mutex_unlock(&sim_logs_mu);
	return rc;
}
