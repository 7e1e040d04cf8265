/* A stand-in libcuda.so.1 for test_kernels_fakedrv: the driver API entry
 * points kevo-worker looks up, over host memory, so that the kernel-only
 * path (the gate's NVRTC build, the bundle, the worker's cubin load, launch
 * lines evaluated per call, arguments marshalled, launch errors reported
 * after the call) runs end to end on a machine without a GPU. Device
 * pointers are host pointers. cuModuleLoadData takes only ELF images (real
 * cubins from NVRTC; the worker's generator fatbin and calibration PTX are
 * refused, so the worker falls back to host inputs); each kernel runs as a
 * host function chosen by a fragment of its lowered name:
 *   kfake_rowsum(const float *x, float *y, int rows, int cols)  row sums
 *   kfake_nothing(float *y)                                     writes nothing
 *   kfake_three(const float *x, float *y, int rows)             3 parameters
 *   kfake_scribble(const float *x, float *y, int rows, int cols) sums, then x[0] = 0
 *   kfake_overrun(const float *x, float *y, int rows, int cols)  sums, then y[rows] = y[rows-1]
 * cuFuncGetParamInfo tells their parameters; cuFuncSetAttribute refuses
 * more than 227 KiB of dynamic shared memory, and cuLaunchKernel a launch
 * beyond what the function was opted in for. Not a GPU model: a test of
 * kevo's plumbing. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
#define OK 0
#define INVALID_VALUE 1
#define INVALID_IMAGE 200
#define NOT_FOUND 500

#define EXPORT __attribute__((visibility("default")))

struct fn {
  const char *frag;
  int nparams;
  size_t sizes[4];
  int smem_optin;
};
static struct fn fns[] = {
    {"kfake_rowsum", 4, {8, 8, 4, 4}, 0},
    {"kfake_nothing", 1, {8}, 0},
    {"kfake_three", 3, {8, 8, 4}, 0},
    {"kfake_scribble", 4, {8, 8, 4, 4}, 0},
    {"kfake_overrun", 4, {8, 8, 4, 4}, 0},
};
static int mod_token;

EXPORT CUresult cuInit(unsigned f) {
  (void)f;
  return OK;
}
EXPORT CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return OK;
}
EXPORT CUresult cuDeviceGet(int *d, int i) {
  *d = i;
  return OK;
}
EXPORT CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return OK;
}
EXPORT CUresult cuDeviceGetName(char *s, int len, int d) {
  (void)d;
  strncpy(s, "kevo fake GPU", (size_t)len);
  return OK;
}
EXPORT CUresult cuDeviceGetAttribute(int *v, int a, int d) {
  (void)d;
  switch (a) {
  case 75: /* cc major */
    *v = 9;
    break;
  case 76:
    *v = 0;
    break;
  case 16: /* SMs */
    *v = 4;
    break;
  case 38: /* L2 */
    *v = 1 << 20;
    break;
  case 97:
    *v = 232448;
    break;
  default:
    *v = 1000000;
  }
  return OK;
}
EXPORT CUresult cuDeviceTotalMem_v2(size_t *b, int d) {
  (void)d;
  *b = (size_t)1 << 30;
  return OK;
}
EXPORT CUresult cuDeviceGetUuid_v2(char *u, int d) {
  (void)d;
  memset(u, 0x5a, 16);
  return OK;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
  (void)d;
  *c = &mod_token;
  return OK;
}
EXPORT CUresult cuCtxSetCurrent(void *c) {
  (void)c;
  return OK;
}
EXPORT CUresult cuCtxSynchronize(void) {
  return OK;
}
EXPORT CUresult cuMemGetInfo_v2(size_t *f, size_t *t) {
  *f = *t = (size_t)1 << 30;
  return OK;
}
EXPORT CUresult cuStreamCreate(void **s, unsigned f) {
  (void)f;
  *s = &mod_token;
  return OK;
}
EXPORT CUresult cuStreamSynchronize(void *s) {
  (void)s;
  return OK;
}
static double ev_t[2];
EXPORT CUresult cuEventCreate(void **e, unsigned f) {
  (void)f;
  static int n;
  *e = &ev_t[n++ & 1];
  return OK;
}
EXPORT CUresult cuEventRecord(void *e, void *s) {
  (void)s;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *(double *)e = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  return OK;
}
EXPORT CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
  *ms = (float)((*(double *)b - *(double *)a) * 1e3);
  return OK;
}
EXPORT CUresult cuMemAlloc_v2(unsigned long long *p, size_t n) {
  void *m = calloc(1, n ? n : 1);
  if (!m)
    return 2;
  *p = (unsigned long long)(uintptr_t)m;
  return OK;
}
EXPORT CUresult cuMemFree_v2(unsigned long long p) {
  free((void *)(uintptr_t)p);
  return OK;
}
EXPORT CUresult cuMemcpyHtoD_v2(unsigned long long d, const void *h, size_t n) {
  memcpy((void *)(uintptr_t)d, h, n);
  return OK;
}
EXPORT CUresult cuMemcpyDtoH_v2(void *h, unsigned long long d, size_t n) {
  memcpy(h, (void *)(uintptr_t)d, n);
  return OK;
}
EXPORT CUresult cuMemcpyHtoDAsync_v2(unsigned long long d, const void *h, size_t n, void *s) {
  (void)s;
  return cuMemcpyHtoD_v2(d, h, n);
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(unsigned long long d, unsigned long long a, size_t n,
                                     void *s) {
  (void)s;
  memmove((void *)(uintptr_t)d, (void *)(uintptr_t)a, n);
  return OK;
}
EXPORT CUresult cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n, void *s) {
  (void)s;
  memset((void *)(uintptr_t)d, v, n);
  return OK;
}
EXPORT CUresult cuMemsetD16Async(unsigned long long d, unsigned short v, size_t n, void *s) {
  (void)s;
  for (size_t i = 0; i < n; i++)
    memcpy((char *)(uintptr_t)d + 2 * i, &v, 2);
  return OK;
}
EXPORT CUresult cuMemsetD32Async(unsigned long long d, unsigned v, size_t n, void *s) {
  (void)s;
  for (size_t i = 0; i < n; i++)
    memcpy((char *)(uintptr_t)d + 4 * i, &v, 4);
  return OK;
}
EXPORT CUresult cuMemsetD2D32Async(unsigned long long d, size_t pitch, unsigned v, size_t w,
                                   size_t h, void *s) {
  (void)s;
  for (size_t r = 0; r < h; r++)
    for (size_t i = 0; i < w; i++)
      memcpy((char *)(uintptr_t)d + r * pitch + 4 * i, &v, 4);
  return OK;
}
EXPORT CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == INVALID_VALUE   ? "CUDA_ERROR_INVALID_VALUE"
       : r == INVALID_IMAGE ? "CUDA_ERROR_INVALID_IMAGE"
       : r == NOT_FOUND     ? "CUDA_ERROR_NOT_FOUND"
                            : "CUDA_ERROR_UNKNOWN";
  return OK;
}
EXPORT CUresult cuGetErrorString(CUresult r, const char **s) {
  return cuGetErrorName(r, s);
}
EXPORT CUresult cuModuleLoadData(void **m, const void *img) {
  if (memcmp(img, "\177ELF", 4) != 0)
    return INVALID_IMAGE;
  *m = &mod_token;
  return OK;
}
EXPORT CUresult cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *o, void **v) {
  (void)n;
  (void)o;
  (void)v;
  return cuModuleLoadData(m, img);
}
EXPORT CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  (void)m;
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
    if (strstr(name, fns[i].frag)) {
      *f = &fns[i];
      return OK;
    }
  return NOT_FOUND;
}
EXPORT CUresult cuFuncGetParamInfo(void *f, size_t i, size_t *off, size_t *size) {
  struct fn *k = f;
  if (i >= (size_t)k->nparams)
    return INVALID_VALUE;
  *off = 8 * i;
  *size = k->sizes[i];
  return OK;
}
EXPORT CUresult cuFuncSetAttribute(void *f, int a, int v) {
  struct fn *k = f;
  if (a == 8) {
    if (v > 232448)
      return INVALID_VALUE;
    k->smem_optin = v;
  }
  return OK;
}
EXPORT CUresult cuFuncGetAttribute(int *v, int a, void *f) {
  (void)a;
  (void)f;
  *v = 0;
  return OK;
}
EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned smem, void *s, void **p,
                               void **extra) {
  (void)gy;
  (void)gz;
  (void)by;
  (void)bz;
  (void)s;
  (void)extra;
  struct fn *k = f;
  if (!gx || !bx || (smem > 48 * 1024 && (int)smem > k->smem_optin))
    return INVALID_VALUE;
  if (!strcmp(k->frag, "kfake_nothing"))
    return OK;
  const float *x = *(const float **)p[0];
  float *y = *(float **)p[1];
  int rows = *(int *)p[2], cols = k->nparams > 3 ? *(int *)p[3] : 0;
  for (int r = 0; r < rows; r++) {
    float acc = 0;
    for (int c = 0; c < cols; c++)
      acc += x[(size_t)r * (size_t)cols + c];
    y[r] = acc;
  }
  if (!strcmp(k->frag, "kfake_scribble") && rows > 0 && cols > 0)
    ((float *)x)[0] = 0;
  if (!strcmp(k->frag, "kfake_overrun") && rows > 0)
    y[rows] = y[rows - 1];
  return OK;
}
