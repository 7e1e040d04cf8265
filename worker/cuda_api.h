/* The few CUDA driver API types and entry points kevo-worker uses, declared
 * here so that kevo builds where no CUDA toolkit is installed. The worker
 * loads libcuda.so.1 with dlopen at run time and looks each one up by name
 * (the _v2 names are what cuda.h maps the plain names to). */
#ifndef KEVO_CUDA_API_H
#define KEVO_CUDA_API_H

#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct {
  char bytes[16];
} CUuuid;

#define KV_CU_SUCCESS 0
#define KV_CU_STREAM_NON_BLOCKING 0x1
#define KV_CU_EVENT_DEFAULT 0x0
#define KV_CU_ATTR_CLOCK_RATE 13
#define KV_CU_ATTR_MULTIPROCESSOR_COUNT 16
#define KV_CU_ATTR_L2_CACHE_SIZE 38
#define KV_CU_ATTR_CC_MAJOR 75
#define KV_CU_ATTR_CC_MINOR 76
#define KV_CU_ATTR_SMEM_PER_BLOCK_OPTIN 97
#define KV_CU_ERROR_INVALID_VALUE 1
#define KV_CU_ERROR_NOT_INITIALIZED 3
#define KV_CU_JIT_ERROR_LOG_BUFFER 5
#define KV_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define KV_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define KV_CU_FUNC_ATTR_NUM_REGS 4

/* Looked up too but optional (kernel-only candidates): cuFuncGetParamInfo
 * (driver 12.4 and newer) lets kevo check a kernel's parameters against its
 * launch line; without it the check is skipped. */
typedef CUresult (*kv_cu_func_get_param_info)(CUfunction, size_t, size_t *, size_t *);

/* CUDA IPC (optional too: without it, or where the driver refuses it, the
 * gate says that the candidate's own process carried its results): the
 * clean worker allocates the buffers of the candidate's checked calls and
 * exports a handle to each (cuIpcGetMemHandle); the candidate's worker maps
 * them (cuIpcOpenMemHandle) and runs into them. Its timed calls run in its
 * own buffers (memory mapped from another process is slower to work in:
 * 1.8x for 256 MB on an H200, bench/ipc_cost.cu), whose handles it exports
 * once allocated; the clean worker maps those to read validated calls, and
 * checks their size (cuMemGetAddressRange). */
#define KV_CU_IPC_HANDLE_BYTES 64
typedef struct {
  char reserved[KV_CU_IPC_HANDLE_BYTES];
} CUipcMemHandle;
#define KV_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1
struct kv_cu_ipc {
  CUresult (*get)(CUipcMemHandle *, CUdeviceptr);
  CUresult (*open)(CUdeviceptr *, CUipcMemHandle, unsigned int);
  CUresult (*close)(CUdeviceptr);
  CUresult (*range)(CUdeviceptr *, size_t *, CUdeviceptr); /* optional within */
};

/* X(member, symbol, fallback symbol or "", return, parameters) */
#define KV_CU_FUNCS(X)                                                                             \
  X(Init, "cuInit", "", CUresult, (unsigned int))                                                  \
  X(DriverGetVersion, "cuDriverGetVersion", "", CUresult, (int *))                                 \
  X(DeviceGet, "cuDeviceGet", "", CUresult, (CUdevice *, int))                                     \
  X(DeviceGetCount, "cuDeviceGetCount", "", CUresult, (int *))                                     \
  X(DeviceGetName, "cuDeviceGetName", "", CUresult, (char *, int, CUdevice))                       \
  X(DeviceGetAttribute, "cuDeviceGetAttribute", "", CUresult, (int *, int, CUdevice))              \
  X(DeviceTotalMem, "cuDeviceTotalMem_v2", "", CUresult, (size_t *, CUdevice))                     \
  X(DeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid", CUresult, (CUuuid *, CUdevice))        \
  X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", "", CUresult, (CUcontext *, CUdevice))     \
  X(CtxSetCurrent, "cuCtxSetCurrent", "", CUresult, (CUcontext))                                   \
  X(CtxSynchronize, "cuCtxSynchronize", "", CUresult, (void))                                      \
  X(MemGetInfo, "cuMemGetInfo_v2", "", CUresult, (size_t *, size_t *))                             \
  X(StreamCreate, "cuStreamCreate", "", CUresult, (CUstream *, unsigned int))                      \
  X(StreamSynchronize, "cuStreamSynchronize", "", CUresult, (CUstream))                            \
  X(EventCreate, "cuEventCreate", "", CUresult, (CUevent *, unsigned int))                         \
  X(EventRecord, "cuEventRecord", "", CUresult, (CUevent, CUstream))                               \
  X(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime", CUresult,                     \
    (float *, CUevent, CUevent))                                                                   \
  X(MemAlloc, "cuMemAlloc_v2", "", CUresult, (CUdeviceptr *, size_t))                              \
  X(MemFree, "cuMemFree_v2", "", CUresult, (CUdeviceptr))                                          \
  X(MemcpyHtoD, "cuMemcpyHtoD_v2", "", CUresult, (CUdeviceptr, const void *, size_t))              \
  X(MemcpyDtoH, "cuMemcpyDtoH_v2", "", CUresult, (void *, CUdeviceptr, size_t))                    \
  X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", "", CUresult,                                         \
    (CUdeviceptr, const void *, size_t, CUstream))                                                 \
  X(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", "", CUresult,                                         \
    (CUdeviceptr, CUdeviceptr, size_t, CUstream))                                                  \
  X(MemsetD8Async, "cuMemsetD8Async", "", CUresult,                                                \
    (CUdeviceptr, unsigned char, size_t, CUstream))                                                \
  X(MemsetD16Async, "cuMemsetD16Async", "", CUresult,                                              \
    (CUdeviceptr, unsigned short, size_t, CUstream))                                               \
  X(MemsetD32Async, "cuMemsetD32Async", "", CUresult,                                              \
    (CUdeviceptr, unsigned int, size_t, CUstream))                                                 \
  X(MemsetD2D32Async, "cuMemsetD2D32Async", "", CUresult,                                          \
    (CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream))                                 \
  X(GetErrorName, "cuGetErrorName", "", CUresult, (CUresult, const char **))                       \
  X(GetErrorString, "cuGetErrorString", "", CUresult, (CUresult, const char **))                   \
  X(ModuleLoadData, "cuModuleLoadData", "", CUresult, (CUmodule *, const void *))                  \
  X(ModuleLoadDataEx, "cuModuleLoadDataEx", "", CUresult,                                          \
    (CUmodule *, const void *, unsigned int, int *, void **))                                      \
  X(ModuleGetFunction, "cuModuleGetFunction", "", CUresult,                                        \
    (CUfunction *, CUmodule, const char *))                                                        \
  X(LaunchKernel, "cuLaunchKernel", "", CUresult,                                                  \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,   \
     void **, void **))                                                                            \
  X(FuncSetAttribute, "cuFuncSetAttribute", "", CUresult, (CUfunction, int, int))                  \
  X(FuncGetAttribute, "cuFuncGetAttribute", "", CUresult, (int *, int, CUfunction))

#define KV_CU_MEMBER(m, sym, alt, ret, params) ret(*m) params;
struct kv_cu {
  KV_CU_FUNCS(KV_CU_MEMBER)
};
#undef KV_CU_MEMBER

#endif
