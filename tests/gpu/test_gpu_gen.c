/* The GPU input generator (worker/cuda_gen.c) on a real GPU (CTest label
 * `gpu`; CI, with no GPU, skips it with -LE gpu).
 *
 * 1. For every dtype x init (default, uniform, normal and int, with default
 *    and unusual parameters: empty, reversed and NaN ranges, subnormal,
 *    overflowing and saturating values) and a set of (first, n, dst offset)
 *    ranges (n = 1, 7, 1e6+3, odd first elements, a first element past 2^33,
 *    destinations that are not 2-element aligned), the device's bytes equal
 *    the host's: kv_fill_param for ranges from 0, kv_gen_fill_at otherwise;
 *    and nothing outside the destination is written. Each difference is
 *    printed (dtype, init, range, first differing index, both values).
 * 3. The gather of a sampled validation (kv_cugen_gather): for elements of
 *    1, 2, 4 and 8 bytes, a buffer of more than KV_SAMPLE_ELEMS elements
 *    gathered on the device (indices computed there) gives the elements
 *    the host picks from its own copy (kv_pack_sample).
 * 2. Speed: GB/s of the device generator for a 256 MiB buffer of several
 *    dtypes and inits (f32 normal first), against the host's
 *    kv_fill_inputs_mt with every core for the f32 normal buffer (whose
 *    bytes must match too). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_api.h"
#include "cuda_gen.h"
#include "kevo/runtime.h"
#include "kevo/task.h"

static struct kv_cu cu;
static CUstream stream;
static int have_gpu;
static char why[512];
static double init_s;
static char devname[256];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *cu_msg(CUresult r) {
  static char buf[300];
  const char *name = NULL, *str = NULL;
  cu.GetErrorName(r, &name);
  cu.GetErrorString(r, &str);
  snprintf(buf, sizeof buf, "%s (%d): %s", name ? name : "?", r, str ? str : "?");
  return buf;
}

#define CK(call)                                                                                   \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != KV_CU_SUCCESS) {                                                                     \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cu_msg(r_));                   \
      fail();                                                                                      \
    }                                                                                              \
  } while (0)

/* The driver, a context and a stream, as the worker makes them. */
static int setup(void **state) {
  (void)state;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(why, sizeof why, "no CUDA driver: %s", dlerror());
    return 0;
  }
#define LOAD(m, sym, alt, ret, params)                                                             \
  {                                                                                                \
    void *f_ = dlsym(h, sym);                                                                      \
    if (!f_ && alt[0])                                                                             \
      f_ = dlsym(h, alt);                                                                          \
    if (!f_) {                                                                                     \
      snprintf(why, sizeof why, "libcuda.so.1 lacks %s", sym);                                     \
      return 0;                                                                                    \
    }                                                                                              \
    memcpy(&cu.m, &f_, sizeof f_);                                                                 \
  }
  KV_CU_FUNCS(LOAD)
#undef LOAD
  CUdevice dev;
  CUcontext ctx;
  int n = 0;
  if (cu.Init(0) != KV_CU_SUCCESS || cu.DeviceGetCount(&n) != KV_CU_SUCCESS || n < 1 ||
      cu.DeviceGet(&dev, 0) != KV_CU_SUCCESS ||
      cu.DeviceGetName(devname, sizeof devname - 1, dev) != KV_CU_SUCCESS ||
      cu.DevicePrimaryCtxRetain(&ctx, dev) != KV_CU_SUCCESS ||
      cu.CtxSetCurrent(ctx) != KV_CU_SUCCESS ||
      cu.StreamCreate(&stream, KV_CU_STREAM_NON_BLOCKING) != KV_CU_SUCCESS) {
    snprintf(why, sizeof why, "no usable CUDA device");
    return 0;
  }
  char err[4096];
  double t0 = now_s();
  if (kv_cugen_init(&cu, err, sizeof err) != 0) {
    snprintf(why, sizeof why, "%s", err);
    return 0;
  }
  init_s = now_s() - t0;
  have_gpu = 1;
  printf("[   INFO   ] %s; kv_cugen_init (PTX load and JIT) %.1f ms\n", devname, init_s * 1e3);
  return 0;
}

static void need_gpu(void) {
  if (!have_gpu) {
    fprintf(stderr, "test_gpu_gen needs a GPU and the generator: %s\n", why);
    fail();
  }
}

/* ---- bit-identical ------------------------------------------------------------- */

static const struct kv_init inits[] = {
    {KV_DIST_DEFAULT, 0, 0},
    {KV_DIST_UNIFORM, -1, 1},
    {KV_DIST_UNIFORM, 0.5, 3.25},
    {KV_DIST_UNIFORM, -1e5, 7e4},
    {KV_DIST_UNIFORM, 3, 3},            /* empty */
    {KV_DIST_UNIFORM, 5, 2},            /* reversed */
    {KV_DIST_UNIFORM, NAN, 1},          /* NaN bound */
    {KV_DIST_UNIFORM, 1e-40, 3e-38},    /* f32 subnormals */
    {KV_DIST_UNIFORM, -70000, 70000},   /* beyond f16 */
    {KV_DIST_UNIFORM, -3e38, 3e38},     /* near f32 max */
    {KV_DIST_UNIFORM, -1e300, 1e300},   /* beyond f32 */
    {KV_DIST_UNIFORM, -1e-310, 1e-310}, /* f64 subnormals */
    {KV_DIST_NORMAL, 0, 1},
    {KV_DIST_NORMAL, 10, 0.001},
    {KV_DIST_NORMAL, -3, 1e5},
    {KV_DIST_NORMAL, 0, 1e-42}, /* f32 subnormal results */
    {KV_DIST_NORMAL, 0, 1e20},  /* saturating integers, f16 inf */
    {KV_DIST_NORMAL, 100.5, 3}, /* rounding of halves to integers */
    {KV_DIST_INT, -100, 100},
    {KV_DIST_INT, 0, 255},
    {KV_DIST_INT, -5.5, 7.5},
    {KV_DIST_INT, -1e30, 1e30}, /* clamped */
    {KV_DIST_INT, 9, 3},        /* reversed */
    {KV_DIST_INT, NAN, 4},
    {KV_DIST_INT, -3e9, 3e9},
};
#define NINITS (sizeof inits / sizeof inits[0])

static const struct range {
  uint64_t first;
  size_t n;
  int dst_off; /* elements past an aligned address */
} ranges[] = {
    {0, 1, 0},
    {0, 7, 0},
    {0, 7, 1},
    {1, 7, 0},
    {1, 7, 1},
    {3, 1, 0},
    {0, 1000003, 0},
    {1, 1000003, 1},
    {12345, 4096, 0},
    {((uint64_t)1 << 33) + 1, 1001, 1},
    {((uint64_t)1 << 33) + 2, 1000, 0},
};
#define NRANGES (sizeof ranges / sizeof ranges[0])
#define NMAX 1000003
#define GUARD 256 /* bytes checked on each side of the destination */

static const char *dist_name(enum kv_dist d) {
  return d == KV_DIST_DEFAULT   ? "default"
         : d == KV_DIST_UNIFORM ? "uniform"
         : d == KV_DIST_NORMAL  ? "normal"
                                : "int";
}

static void init_name(const struct kv_init *in, char *out, size_t cap) {
  if (in->dist == KV_DIST_DEFAULT)
    snprintf(out, cap, "default");
  else
    snprintf(out, cap, "%s(%g,%g)", dist_name(in->dist), in->a, in->b);
}

static uint64_t elem_bits(enum kv_dtype d, const uint8_t *buf, size_t i) {
  size_t sz = kv_dtype_size(d);
  uint64_t v = 0;
  memcpy(&v, buf + i * sz, sz); /* little-endian */
  return v;
}

static void test_identical(void **state) {
  (void)state;
  need_gpu();
  size_t cap = (size_t)NMAX * 8 + 2 * GUARD + 16;
  CUdeviceptr dbuf;
  CK(cu.MemAlloc(&dbuf, cap));
  uint8_t *dev = malloc(cap), *host = malloc((size_t)NMAX * 8);
  struct kv_task *t = calloc(1, sizeof *t);
  assert_non_null(dev);
  assert_non_null(host);
  assert_non_null(t);
  const int p = 3; /* kv_fill_param's stream is the param index */
  t->nparams = 4;
  t->params[p].role = KV_ROLE_IN;
  int cases = 0, failed = 0, printed = 0;
  for (int d = 0; d < KV_DTYPE_COUNT; d++) {
    size_t sz = kv_dtype_size((enum kv_dtype)d);
    char row[400];
    int rlen = snprintf(row, sizeof row, "%-5s", kv_dtype_name((enum kv_dtype)d));
    int dist_ok[4] = {0}, dist_n[4] = {0};
    for (size_t ii = 0; ii < NINITS; ii++) {
      t->params[p].dtype = (enum kv_dtype)d;
      t->params[p].init = inits[ii];
      uint64_t seed = 0x5eed0000u + ii * 7 + (uint64_t)d;
      for (size_t ri = 0; ri < NRANGES; ri++) {
        const struct range *r = &ranges[ri];
        size_t off = GUARD + (size_t)r->dst_off * sz, bytes = r->n * sz;
        CUdeviceptr dst = dbuf + off;
        CK(cu.MemsetD8Async(dbuf, 0xa5, cap, stream));
        if (r->first == 0)
          CK(kv_cugen_fill_param(&cu, stream, t, p, (int64_t)r->n, dst, seed));
        else
          CK(kv_cugen_fill_at(&cu, stream, (enum kv_dtype)d, &inits[ii], seed, (uint64_t)p,
                              r->first, dst, r->n));
        CK(cu.StreamSynchronize(stream));
        CK(cu.MemcpyDtoH(dev, dbuf, off + bytes + GUARD));
        memset(host, 0x5a, bytes);
        if (r->first == 0)
          kv_fill_param(t, p, (int64_t)r->n, host, seed);
        else
          kv_gen_fill_at((enum kv_dtype)d, &inits[ii], seed, (uint64_t)p, r->first, host, r->n);
        cases++;
        dist_n[inits[ii].dist]++;
        const uint8_t *got = dev + off;
        size_t guard_bad = (size_t)-1;
        for (size_t b = 0; b < off; b++)
          if (dev[b] != 0xa5) {
            guard_bad = b;
            break;
          }
        for (size_t b = 0; guard_bad == (size_t)-1 && b < GUARD; b++)
          if (got[bytes + b] != 0xa5)
            guard_bad = off + bytes + b;
        int same = memcmp(got, host, bytes) == 0;
        if (same && guard_bad == (size_t)-1) {
          dist_ok[inits[ii].dist]++;
          continue;
        }
        failed++;
        if (printed++ >= 40)
          continue;
        char nm[96];
        init_name(&inits[ii], nm, sizeof nm);
        if (!same) {
          size_t i = 0;
          while (memcmp(got + i * sz, host + i * sz, sz) == 0)
            i++;
          size_t ndiff = 0;
          for (size_t k = i; k < r->n; k++)
            ndiff += memcmp(got + k * sz, host + k * sz, sz) != 0;
          printf("FAIL %s %s first=%llu n=%zu dst+%d: %zu elements differ, the first at [%zu]: "
                 "host 0x%0*llx (%.17g) device 0x%0*llx (%.17g)\n",
                 kv_dtype_name((enum kv_dtype)d), nm, (unsigned long long)r->first, r->n,
                 r->dst_off, ndiff, i, (int)(2 * sz),
                 (unsigned long long)elem_bits((enum kv_dtype)d, host, i),
                 kv_elem_as_double((enum kv_dtype)d, host, i), (int)(2 * sz),
                 (unsigned long long)elem_bits((enum kv_dtype)d, got, i),
                 kv_elem_as_double((enum kv_dtype)d, got, i));
        }
        if (guard_bad != (size_t)-1)
          printf("FAIL %s %s first=%llu n=%zu dst+%d: byte %zu outside the destination was "
                 "written (destination at byte %zu, %zu bytes)\n",
                 kv_dtype_name((enum kv_dtype)d), nm, (unsigned long long)r->first, r->n,
                 r->dst_off, guard_bad, off, bytes);
      }
    }
    for (int k = 0; k < 4; k++)
      rlen += snprintf(row + rlen, sizeof row - (size_t)rlen, "  %s %3d/%-3d", dist_name(k),
                       dist_ok[k], dist_n[k]);
    printf("[   INFO   ] identical: %s\n", row);
  }
  printf("[   INFO   ] %d cases (%zu inits x %zu ranges x %d dtypes): %d identical, %d failed\n",
         cases, NINITS, NRANGES, KV_DTYPE_COUNT, cases - failed, failed);
  CK(cu.MemFree(dbuf));
  free(dev);
  free(host);
  free(t);
  assert_int_equal(failed, 0);
}

/* ---- speed ---------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#define BENCH_BYTES ((size_t)256 << 20)
#define REPS 20

/* Median seconds of one device fill of BENCH_BYTES. */
static double device_fill_s(CUdeviceptr dst, enum kv_dtype d, const struct kv_init *in) {
  size_t n = BENCH_BYTES / kv_dtype_size(d);
  CUevent e0, e1;
  CK(cu.EventCreate(&e0, KV_CU_EVENT_DEFAULT));
  CK(cu.EventCreate(&e1, KV_CU_EVENT_DEFAULT));
  double ts[REPS];
  for (int i = -2; i < REPS; i++) { /* two warm-ups */
    CK(cu.EventRecord(e0, stream));
    CK(kv_cugen_fill_at(&cu, stream, d, in, 1000 + (uint64_t)i, 0, 0, dst, n));
    CK(cu.EventRecord(e1, stream));
    CK(cu.StreamSynchronize(stream));
    float ms = 0;
    CK(cu.EventElapsedTime(&ms, e0, e1));
    if (i >= 0)
      ts[i] = ms * 1e-3;
  }
  qsort(ts, REPS, sizeof ts[0], cmp_double);
  return ts[REPS / 2];
}

static void test_speed(void **state) {
  (void)state;
  need_gpu();
  CUdeviceptr dbuf;
  CK(cu.MemAlloc(&dbuf, BENCH_BYTES));
  static const struct {
    enum kv_dtype d;
    struct kv_init in;
    const char *name;
  } cases[] = {
      {KV_F32, {KV_DIST_NORMAL, 0, 1}, "f32 normal(0,1)"},
      {KV_F32, {KV_DIST_UNIFORM, -1, 1}, "f32 uniform(-1,1)"},
      {KV_F64, {KV_DIST_NORMAL, 0, 1}, "f64 normal(0,1)"},
      {KV_F64, {KV_DIST_UNIFORM, -1, 1}, "f64 uniform(-1,1)"},
      {KV_F16, {KV_DIST_NORMAL, 0, 1}, "f16 normal(0,1)"},
      {KV_BF16, {KV_DIST_UNIFORM, -1, 1}, "bf16 uniform(-1,1)"},
      {KV_I32, {KV_DIST_INT, -100, 100}, "i32 int(-100,100)"},
      {KV_I64, {KV_DIST_INT, -100, 100}, "i64 int(-100,100)"},
      {KV_U8, {KV_DIST_INT, 0, 255}, "u8 int(0,255)"},
  };
  double gpu_f32_normal = 0;
  printf("[   INFO   ] device generator, %zu MiB per fill, median of %d:\n", BENCH_BYTES >> 20,
         REPS);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double s = device_fill_s(dbuf, cases[i].d, &cases[i].in);
    double gbs = (double)BENCH_BYTES / s / 1e9;
    if (i == 0)
      gpu_f32_normal = gbs;
    printf("[   INFO   ]   %-20s %8.3f ms  %7.1f GB/s  %7.2f Gelem/s\n", cases[i].name, s * 1e3,
           gbs, (double)(BENCH_BYTES / kv_dtype_size(cases[i].d)) / s / 1e9);
  }

  /* The host: kv_fill_inputs_mt with every core, one f32 normal input. */
  struct kv_task *t = calloc(1, sizeof *t);
  assert_non_null(t);
  t->nparams = 1;
  t->params[0].role = KV_ROLE_IN;
  t->params[0].dtype = KV_F32;
  t->params[0].init = (struct kv_init){KV_DIST_NORMAL, 0, 1};
  int64_t nelem[KV_MAX_PARAMS] = {(int64_t)(BENCH_BYTES / 4)};
  void *bufs[KV_MAX_PARAMS] = {0};
  uint8_t *host = malloc(BENCH_BYTES), *back = malloc(BENCH_BYTES);
  assert_non_null(host);
  assert_non_null(back);
  bufs[0] = host;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = ncpu > 0 ? (int)ncpu : 1;
  double hs[3];
  for (int i = 0; i < 3; i++) {
    double t0 = now_s();
    kv_fill_inputs_mt(t, nelem, bufs, 77, threads);
    hs[i] = now_s() - t0;
  }
  qsort(hs, 3, sizeof hs[0], cmp_double);
  double host_gbs = (double)BENCH_BYTES / hs[1] / 1e9;
  /* What the host path adds on top: the copy to the device (pageable memory). */
  double t0 = now_s();
  CK(cu.MemcpyHtoD(dbuf, host, BENCH_BYTES));
  double copy_s = now_s() - t0;
  /* The same bytes from the device. */
  CK(kv_cugen_fill_param(&cu, stream, t, 0, nelem[0], dbuf, 77));
  CK(cu.StreamSynchronize(stream));
  CK(cu.MemcpyDtoH(back, dbuf, BENCH_BYTES));
  int same = memcmp(host, back, BENCH_BYTES) == 0;
  printf("[   INFO   ] host kv_fill_inputs_mt, %d threads, f32 normal(0,1) 256 MiB: %.1f ms "
         "(median of 3), %.2f GB/s; copy to the device %.1f ms (%.2f GB/s)\n",
         threads, hs[1] * 1e3, host_gbs, copy_s * 1e3, (double)BENCH_BYTES / copy_s / 1e9);
  printf("[   INFO   ] f32 normal 256 MiB: device %.1f GB/s vs host %.2f GB/s: %.0fx; bytes %s\n",
         gpu_f32_normal, host_gbs, gpu_f32_normal / host_gbs, same ? "identical" : "DIFFER");
  free(host);
  free(back);
  free(t);
  CK(cu.MemFree(dbuf));
  assert_true(same);
}

static void test_gather(void **state) {
  (void)state;
  need_gpu();
  const int64_t n = 3 * (int64_t)KV_SAMPLE_ELEMS + 4321, k = KV_SAMPLE_ELEMS;
  uint8_t *host = malloc((size_t)n * 8), *want = malloc((size_t)k * 8),
          *got = malloc((size_t)k * 8);
  assert_true(host && want && got);
  CUdeviceptr dsrc, dout;
  CK(cu.MemAlloc(&dsrc, (size_t)n * 8));
  CK(cu.MemAlloc(&dout, (size_t)k * 8));
  for (size_t i = 0; i < (size_t)n * 8; i++)
    host[i] = (uint8_t)(i * 2654435761u >> 13);
  CK(cu.MemcpyHtoD(dsrc, host, (size_t)n * 8));
  /* One task of one output param per element size. */
  static const enum kv_dtype dts[] = {KV_U8, KV_F16, KV_F32, KV_F64};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    struct kv_task *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->nparams = 1;
    t->params[0].role = KV_ROLE_OUT;
    t->params[0].dtype = dts[d];
    unsigned sz = (unsigned)kv_dtype_size(dts[d]);
    int64_t nelem[KV_MAX_PARAMS] = {n};
    void *bufs[KV_MAX_PARAMS] = {host};
    uint64_t seed = 0x5eed0000 + d;
    assert_int_equal(kv_pack_sample(t, nelem, bufs, 0, seed, want), 0);
    memset(got, 0, (size_t)k * 8);
    CK(kv_cugen_gather(&cu, stream, dsrc, seed, 0, (uint64_t)n, sz, dout));
    CK(cu.StreamSynchronize(stream));
    CK(cu.MemcpyDtoH(got, dout, (size_t)k * sz));
    int same = memcmp(want, got, (size_t)k * sz) == 0;
    printf("[   INFO   ] gather of %lld of %lld elements of %u bytes: %s\n", (long long)k,
           (long long)n, sz, same ? "the host's" : "DIFFERENT from the host's");
    free(t);
    assert_true(same);
  }
  CK(cu.MemFree(dsrc));
  CK(cu.MemFree(dout));
  free(host);
  free(want);
  free(got);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identical),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_speed),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
