/* SPDX-License-Identifier: MIT
 *
 * nvtx3/nvToolsExt.h (CPU device shim) - the NVTX calls host code makes,
 * declared (and, as NVTX is header-only, defined as no-ops: ranges and marks
 * are annotations for profilers).
 *
 * Contract: header only.
 */
#ifndef SIM_NVTOOLSEXT_H
#define SIM_NVTOOLSEXT_H
#include <cstdint>
typedef struct nvtxDomainRegistration_st *nvtxDomainHandle_t;
typedef struct nvtxStringRegistration_st *nvtxStringHandle_t;
typedef uint64_t nvtxRangeId_t;
#define NVTX_VERSION 3
#define NVTX_EVENT_ATTRIB_STRUCT_SIZE ((uint16_t)sizeof(nvtxEventAttributes_t))
enum { NVTX_COLOR_UNKNOWN = 0, NVTX_COLOR_ARGB = 1 };
enum { NVTX_MESSAGE_UNKNOWN = 0, NVTX_MESSAGE_TYPE_ASCII = 1, NVTX_MESSAGE_TYPE_UNICODE = 2 };
typedef struct nvtxEventAttributes_v2 {
	uint16_t version, size;
	uint32_t category;
	int32_t colorType;
	uint32_t color;
	int32_t payloadType, reserved0;
	union { uint64_t ullValue; int64_t llValue; double dValue; uint32_t uiValue; int32_t iValue; float fValue; } payload;
	int32_t messageType;
	union { const char *ascii; const wchar_t *unicode; nvtxStringHandle_t registered; } message;
} nvtxEventAttributes_t;
static inline int nvtxRangePushA(const char *) { return 0; }
static inline int nvtxRangePushEx(const nvtxEventAttributes_t *) { return 0; }
static inline int nvtxRangePop(void) { return 0; }
static inline nvtxRangeId_t nvtxRangeStartA(const char *) { return 0; }
static inline nvtxRangeId_t nvtxRangeStartEx(const nvtxEventAttributes_t *) { return 0; }
static inline void nvtxRangeEnd(nvtxRangeId_t) {}
static inline void nvtxMarkA(const char *) {}
static inline void nvtxMarkEx(const nvtxEventAttributes_t *) {}
static inline void nvtxNameOsThreadA(uint32_t, const char *) {}
static inline nvtxDomainHandle_t nvtxDomainCreateA(const char *) { return nullptr; }
static inline void nvtxDomainDestroy(nvtxDomainHandle_t) {}
static inline int nvtxDomainRangePushEx(nvtxDomainHandle_t, const nvtxEventAttributes_t *) { return 0; }
static inline int nvtxDomainRangePop(nvtxDomainHandle_t) { return 0; }
#define nvtxRangePush nvtxRangePushA
#define nvtxMark nvtxMarkA
#define nvtxRangeStart nvtxRangeStartA
#endif /* SIM_NVTOOLSEXT_H */
