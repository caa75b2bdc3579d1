/* SPDX-License-Identifier: MIT
 *
 * nvtx3/nvToolsExt.h (CPU device shim) - the NVTX calls host code makes,
 * declared (and, as NVTX is header-only, defined as no-ops: ranges and marks
 * are annotations for profilers).
 *
 * nvToolsExtCudaRt.h, nvToolsExtCuda.h, nvToolsExtSync.h and nvtx3.hpp here
 * (and their top-level forms) are no-ops in the same way.
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
enum { NVTX_MESSAGE_UNKNOWN = 0, NVTX_MESSAGE_TYPE_ASCII = 1, NVTX_MESSAGE_TYPE_UNICODE = 2, NVTX_MESSAGE_TYPE_REGISTERED = 3 };
enum { NVTX_PAYLOAD_UNKNOWN = 0, NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 = 1, NVTX_PAYLOAD_TYPE_INT64 = 2, NVTX_PAYLOAD_TYPE_DOUBLE = 3,
       NVTX_PAYLOAD_TYPE_UNSIGNED_INT32 = 4, NVTX_PAYLOAD_TYPE_INT32 = 5, NVTX_PAYLOAD_TYPE_FLOAT = 6 };
#define NVTX_SUCCESS 0
#define NVTX_FAIL 1
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
static inline void nvtxInitialize(const void *) {}
static inline int nvtxRangePushW(const wchar_t *) { return 0; }
static inline nvtxRangeId_t nvtxRangeStartW(const wchar_t *) { return 0; }
static inline void nvtxMarkW(const wchar_t *) {}
static inline void nvtxNameOsThreadW(uint32_t, const wchar_t *) {}
static inline void nvtxNameCategoryA(uint32_t, const char *) {}
static inline void nvtxNameCategoryW(uint32_t, const wchar_t *) {}
static inline nvtxDomainHandle_t nvtxDomainCreateW(const wchar_t *) { return nullptr; }
static inline void nvtxDomainMarkEx(nvtxDomainHandle_t, const nvtxEventAttributes_t *) {}
static inline nvtxRangeId_t nvtxDomainRangeStartEx(nvtxDomainHandle_t, const nvtxEventAttributes_t *) { return 0; }
static inline void nvtxDomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t) {}
static inline void nvtxDomainNameCategoryA(nvtxDomainHandle_t, uint32_t, const char *) {}
static inline void nvtxDomainNameCategoryW(nvtxDomainHandle_t, uint32_t, const wchar_t *) {}
static inline nvtxStringHandle_t nvtxDomainRegisterStringA(nvtxDomainHandle_t, const char *) { return nullptr; }
static inline nvtxStringHandle_t nvtxDomainRegisterStringW(nvtxDomainHandle_t, const wchar_t *) { return nullptr; }
#define nvtxRangePush nvtxRangePushA
#define nvtxNameOsThread nvtxNameOsThreadA
#define nvtxNameCategory nvtxNameCategoryA
#define nvtxDomainCreate nvtxDomainCreateA
#define nvtxDomainRegisterString nvtxDomainRegisterStringA
#define nvtxDomainNameCategory nvtxDomainNameCategoryA
#define nvtxMark nvtxMarkA
#define nvtxRangeStart nvtxRangeStartA
#endif /* SIM_NVTOOLSEXT_H */
