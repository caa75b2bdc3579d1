/* SPDX-License-Identifier: MIT
 *
 * nvtx3/nvToolsExtSync.h (CPU device shim) - user-defined synchronisation objects: no-ops, as in
 * nvtx3/nvToolsExt.h here (NVTX is annotation for profilers).
 *
 * Contract: header only.
 */
#ifndef SIM_NVTOOLSEXTSYNC_H
#define SIM_NVTOOLSEXTSYNC_H
#include "nvToolsExt.h"
typedef struct nvtxSyncUser *nvtxSyncUser_t;
typedef struct nvtxSyncUserAttributes_v0 {
	uint16_t version, size;
	int32_t messageType;
	union { const char *ascii; const wchar_t *unicode; nvtxStringHandle_t registered; } message;
} nvtxSyncUserAttributes_t;
static inline nvtxSyncUser_t nvtxDomainSyncUserCreate(nvtxDomainHandle_t, const nvtxSyncUserAttributes_t *) { return nullptr; }
static inline void nvtxDomainSyncUserDestroy(nvtxSyncUser_t) {}
static inline void nvtxDomainSyncUserAcquireStart(nvtxSyncUser_t) {}
static inline void nvtxDomainSyncUserAcquireFailed(nvtxSyncUser_t) {}
static inline void nvtxDomainSyncUserAcquireSuccess(nvtxSyncUser_t) {}
static inline void nvtxDomainSyncUserReleasing(nvtxSyncUser_t) {}
#endif /* SIM_NVTOOLSEXTSYNC_H */
