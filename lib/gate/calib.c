/* CPU ceilings: sustained memory bandwidth and FP32 FMA peak, measured with
 * every OpenMP thread, and a JSON cache keyed by the device string.
 *
 * Bandwidth is the best of read, copy (libc memcpy, which streams large
 * copies past the cache) and triad runs over buffers far beyond the last
 * level cache, counting bytes read plus bytes written. FMA peak runs
 * independent FMA chains, compiled for AVX-512, AVX2+FMA and the portable
 * baseline with GCC vector extensions and chosen at run time, and keeps the
 * best ISA (some CPUs clock AVX-512 down). Both are ceilings: the gate flags
 * candidates that beat them clearly, so erring high is the safe side.
 *
 * This file is compiled with -ffp-contract=fast (calib.cmake) so that
 * `acc * m + a` becomes one fused multiply-add where the ISA has it. */
#include "kevo/calib.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...) {
  if (err && errlen > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return rc;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- identification ---- */

void kv_calib_cpu_device(char *out, size_t cap) {
  if (!out || cap == 0)
    return;
  char model[200] = "unknown";
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "model name", 10) != 0)
        continue;
      const char *p = strchr(line, ':');
      if (!p)
        continue;
      p++;
      while (*p == ' ' || *p == '\t')
        p++;
      size_t n = strcspn(p, "\n");
      while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
      if (n > 0) {
        if (n >= sizeof model)
          n = sizeof model - 1;
        memcpy(model, p, n);
        model[n] = 0;
      }
      break;
    }
    fclose(f);
  }
  snprintf(out, cap, "cpu:%s x%d", model, omp_get_max_threads());
}

/* ---- last-level cache ---- */

static int read_small(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[n] = 0;
  buf[strcspn(buf, "\n")] = 0;
  return 0;
}

/* "32768K", "1M", "512" -> bytes; 0 when unparsable. */
static size_t parse_size(const char *s) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s)
    return 0;
  if (*end == 'K' || *end == 'k')
    v <<= 10;
  else if (*end == 'M' || *end == 'm')
    v <<= 20;
  else if (*end == 'G' || *end == 'g')
    v <<= 30;
  return (size_t)v;
}

/* The total size of the highest cache level: one instance per group of CPUs
 * sharing it (counted at the group's lowest CPU), summed over the groups,
 * since a multi-threaded flush or stream has every instance to get past. */
static size_t llc_from_sysfs(void) {
  long ncpu = sysconf(_SC_NPROCESSORS_CONF);
  if (ncpu <= 0)
    return 0;
  int top = 0;
  size_t total = 0;
  for (long cpu = 0; cpu < ncpu; cpu++) {
    for (int idx = 0; idx < 16; idx++) {
      char path[128], buf[256];
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cache/index%d/level", cpu, idx);
      if (read_small(path, buf, sizeof buf) != 0)
        break;
      int level = atoi(buf);
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cache/index%d/type", cpu, idx);
      if (read_small(path, buf, sizeof buf) == 0 && strcmp(buf, "Instruction") == 0)
        continue;
      if (level < top)
        continue;
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cache/index%d/shared_cpu_list",
               cpu, idx);
      long first = cpu;
      if (read_small(path, buf, sizeof buf) == 0 && buf[0] >= '0' && buf[0] <= '9')
        first = strtol(buf, NULL, 10);
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cache/index%d/size", cpu, idx);
      if (read_small(path, buf, sizeof buf) != 0)
        continue;
      size_t sz = parse_size(buf);
      if (level > top) {
        top = level;
        total = 0;
      }
      if (first == cpu)
        total += sz;
    }
  }
  return total;
}

size_t kv_llc_bytes(void) {
  size_t llc = llc_from_sysfs();
  if (llc > 0)
    return llc;
#ifdef _SC_LEVEL3_CACHE_SIZE
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0)
    return (size_t)l3;
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0)
    return (size_t)l2;
#endif
  return (size_t)32 << 20;
}

/* ---- bandwidth ---- */

typedef double v2d __attribute__((vector_size(16)));

/* A block is two cache lines; every loop splits blocks the same static way,
 * so each thread streams the pages it touched first (NUMA-local). */
#define BLOCK_VECS 8
#define BLOCK_BYTES (BLOCK_VECS * sizeof(v2d))

static volatile double bw_sink;

static void bw_touch(v2d *a, v2d *b, v2d *c, size_t nb) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < nb; i++) {
    for (size_t k = 0; k < BLOCK_VECS; k++) {
      size_t j = i * BLOCK_VECS + k;
      a[j] = (v2d){1.0, 2.0};
      b[j] = (v2d){0.5, 0.25};
      c[j] = (v2d){0.0, 0.0};
    }
  }
}

static double bw_read(const v2d *a, size_t nb) {
  double total = 0;
  double t0 = now_s();
#pragma omp parallel reduction(+ : total)
  {
    v2d s0 = {0, 0}, s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
#pragma omp for schedule(static)
    for (size_t i = 0; i < nb; i++) {
      const v2d *p = a + i * BLOCK_VECS;
      s0 += p[0];
      s1 += p[1];
      s2 += p[2];
      s3 += p[3];
      s4 += p[4];
      s5 += p[5];
      s6 += p[6];
      s7 += p[7];
    }
    v2d s = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    total += s[0] + s[1];
  }
  double t = now_s() - t0;
  bw_sink = total;
  return (double)(nb * BLOCK_BYTES) / t;
}

static double bw_copy(v2d *dst, const v2d *src, size_t nb) {
  double t0 = now_s();
#pragma omp parallel
  {
    /* The same split as schedule(static) without a chunk: contiguous,
     * near-equal ranges in thread order. */
    size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
    size_t q = nb / nt, r = nb % nt;
    size_t lo = id * q + (id < r ? id : r);
    size_t n = q + (id < r ? 1 : 0);
    memcpy(dst + lo * BLOCK_VECS, src + lo * BLOCK_VECS, n * BLOCK_BYTES);
  }
  double t = now_s() - t0;
  bw_sink = dst[nb * BLOCK_VECS / 2][0];
  return 2.0 * (double)(nb * BLOCK_BYTES) / t;
}

static double bw_triad(v2d *a, const v2d *b, const v2d *c, double s, size_t nb) {
  v2d vs = {s, s};
  double t0 = now_s();
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < nb; i++) {
    for (size_t k = 0; k < BLOCK_VECS; k++) {
      size_t j = i * BLOCK_VECS + k;
      a[j] = b[j] + vs * c[j];
    }
  }
  double t = now_s() - t0;
  bw_sink = a[nb * BLOCK_VECS / 3][1];
  return 3.0 * (double)(nb * BLOCK_BYTES) / t;
}

#define BW_REPS 5

static int measure_bandwidth(size_t llc, double *out_gbs, char *err, size_t errlen) {
  size_t total = 8 * llc;
  if (total < ((size_t)256 << 20))
    total = (size_t)256 << 20;
  if (total > ((size_t)4 << 30))
    total = (size_t)4 << 30;
  long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  if (pages > 0 && psz > 0) {
    size_t avail = (size_t)pages * (size_t)psz;
    if (total > avail / 2)
      total = avail / 2;
  }
  size_t nb = total / 3 / BLOCK_BYTES;
  if (nb * BLOCK_BYTES < ((size_t)16 << 20))
    return fail(err, errlen, -1, "calib: too little free memory for a bandwidth run");
  size_t bytes = nb * BLOCK_BYTES;
  v2d *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes), *c = aligned_alloc(64, bytes);
  if (!a || !b || !c) {
    free(a);
    free(b);
    free(c);
    return fail(err, errlen, -1, "calib: cannot allocate %zu MiB for the bandwidth run",
                3 * bytes >> 20);
  }
  bw_touch(a, b, c, nb);
  double best = 0;
  for (int rep = 0; rep < BW_REPS; rep++) {
    double r = bw_read(a, nb);
    double cp = bw_copy(c, a, nb);
    double tr = bw_triad(a, b, c, 0.5 + rep, nb);
    if (r > best)
      best = r;
    if (cp > best)
      best = cp;
    if (tr > best)
      best = tr;
  }
  free(a);
  free(b);
  free(c);
  *out_gbs = best / 1e9;
  return 0;
}

/* ---- FMA peak ---- */

/* Twelve independent chains cover FMA latency (4-5 cycles) times the FMA
 * ports (2) with room to spare. The chains start from different values,
 * which arrive at run time, so the compiler can neither merge them nor
 * compute the loop in closed form; m < 1 keeps them finite and normal. */
#define FMA_CHAINS 12
#define FMA_KERNEL(name, attr, lanes)                                                              \
  attr static float name(long iters, float seed, float m, float add) {                             \
    typedef float vf __attribute__((vector_size(lanes * 4)));                                      \
    vf z = {0};                                                                                    \
    vf vm = z + m, va = z + add;                                                                   \
    vf a0 = z + seed, a1 = z + seed * 2, a2 = z + seed * 3, a3 = z + seed * 4;                     \
    vf a4 = z + seed * 5, a5 = z + seed * 6, a6 = z + seed * 7, a7 = z + seed * 8;                 \
    vf a8 = z + seed * 9, a9 = z + seed * 10, a10 = z + seed * 11, a11 = z + seed * 12;            \
    for (long i = 0; i < iters; i++) {                                                             \
      a0 = a0 * vm + va;                                                                           \
      a1 = a1 * vm + va;                                                                           \
      a2 = a2 * vm + va;                                                                           \
      a3 = a3 * vm + va;                                                                           \
      a4 = a4 * vm + va;                                                                           \
      a5 = a5 * vm + va;                                                                           \
      a6 = a6 * vm + va;                                                                           \
      a7 = a7 * vm + va;                                                                           \
      a8 = a8 * vm + va;                                                                           \
      a9 = a9 * vm + va;                                                                           \
      a10 = a10 * vm + va;                                                                         \
      a11 = a11 * vm + va;                                                                         \
    }                                                                                              \
    vf s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));          \
    float r = 0;                                                                                   \
    for (int k = 0; k < lanes; k++)                                                                \
      r += s[k];                                                                                   \
    return r;                                                                                      \
  }

typedef float (*fma_fn)(long iters, float seed, float m, float add);

FMA_KERNEL(fma_portable, , 4)
#if defined(__x86_64__) || defined(__i386__)
FMA_KERNEL(fma_avx2, __attribute__((target("avx2,fma"))), 8)
FMA_KERNEL(fma_avx512, __attribute__((target("avx512f"))), 16)
#endif

static volatile float fma_sink;

/* GFLOP/s of one timed run of `iters` iterations on every thread. */
static double fma_run(fma_fn fn, int lanes, long iters) {
  int nthreads = 1;
  float sum = 0;
  double t0 = now_s();
#pragma omp parallel reduction(+ : sum)
  {
#pragma omp single
    nthreads = omp_get_num_threads();
    sum += fn(iters, 1.0f + 0.001f * (float)omp_get_thread_num(), 0.9999f, 0.0001f);
  }
  double t = now_s() - t0;
  fma_sink = sum;
  double flops = 2.0 * FMA_CHAINS * lanes * (double)iters * nthreads;
  return flops / t / 1e9;
}

#define FMA_RUN_S 0.06
#define FMA_REPS 3

static double fma_best(fma_fn fn, int lanes) {
  /* Size the run from a short trial so each timed run lasts ~FMA_RUN_S. */
  long iters = 1 << 16;
  double g = fma_run(fn, lanes, iters);
  double per_thread_iter_s = 2.0 * FMA_CHAINS * lanes / (g * 1e9) * omp_get_max_threads();
  long want = (long)(FMA_RUN_S / per_thread_iter_s);
  if (want < iters)
    want = iters;
  if (want > (1L << 30))
    want = 1L << 30;
  double best = 0;
  for (int rep = 0; rep < FMA_REPS; rep++) {
    double r = fma_run(fn, lanes, want);
    if (r > best)
      best = r;
  }
  return best;
}

static double measure_fma(void) {
  double best = fma_best(fma_portable, 4);
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    double r = fma_best(fma_avx2, 8);
    if (r > best)
      best = r;
  }
  if (__builtin_cpu_supports("avx512f")) {
    double r = fma_best(fma_avx512, 16);
    if (r > best)
      best = r;
  }
#endif
  return best;
}

int kv_calib_cpu_measure(struct kv_calib *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  kv_calib_cpu_device(out->device, sizeof out->device);
  out->threads = omp_get_max_threads();
  size_t llc = kv_llc_bytes();
  out->llc_bytes = (double)llc;
  if (measure_bandwidth(llc, &out->bandwidth_gbs, err, errlen) != 0)
    return -1;
  out->fma_gflops = measure_fma();
  if (!(out->bandwidth_gbs > 0) || !isfinite(out->bandwidth_gbs) || !(out->fma_gflops > 0) ||
      !isfinite(out->fma_gflops))
    return fail(err, errlen, -1, "calib: implausible measurement (%.3g GB/s, %.3g GFLOP/s)",
                out->bandwidth_gbs, out->fma_gflops);
  out->measured_unix = (long long)time(NULL);
  return 0;
}

/* ---- cache ---- */

static int get_num(json_t *o, const char *key, double *v) {
  json_t *j = json_object_get(o, key);
  if (!json_is_number(j))
    return -1;
  *v = json_number_value(j);
  return 0;
}

/* Returns 0 on a hit, -1 (err untouched) when the file is absent or was made
 * for another device, -2 with a message when it exists but is unreadable or
 * malformed. */
int kv_calib_load(const char *path, const char *device, struct kv_calib *out, char *err,
                  size_t errlen) {
  struct stat sb;
  if (stat(path, &sb) != 0 && errno == ENOENT)
    return -1;
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  if (!root)
    return fail(err, errlen, -2, "calib: %s:%d: %s", path, je.line, je.text);
  int rc = 0;
  struct kv_calib c;
  memset(&c, 0, sizeof c);
  const char *dev = json_string_value(json_object_get(root, "device"));
  double threads = 0, when = 0;
  if (!json_is_object(root) || !dev) {
    rc = fail(err, errlen, -2, "calib: %s: no device", path);
  } else if (!device || strcmp(dev, device) != 0) {
    rc = -1;
  } else if (get_num(root, "bandwidth_gbs", &c.bandwidth_gbs) != 0 ||
             get_num(root, "fma_gflops", &c.fma_gflops) != 0 ||
             get_num(root, "llc_bytes", &c.llc_bytes) != 0 ||
             get_num(root, "threads", &threads) != 0 ||
             get_num(root, "measured_unix", &when) != 0) {
    rc = fail(err, errlen, -2, "calib: %s: missing or non-numeric field", path);
  } else if (!(c.bandwidth_gbs > 0) || !isfinite(c.bandwidth_gbs) || !(c.fma_gflops > 0) ||
             !isfinite(c.fma_gflops) || !(c.llc_bytes >= 0) || threads < 1) {
    rc = fail(err, errlen, -2, "calib: %s: values out of range", path);
  } else {
    snprintf(c.device, sizeof c.device, "%s", dev);
    c.threads = (int)threads;
    c.measured_unix = (long long)when;
    *out = c;
  }
  json_decref(root);
  return rc;
}

int kv_calib_save(const char *path, const struct kv_calib *c, char *err, size_t errlen) {
  json_t *root = json_pack("{s:s, s:f, s:f, s:f, s:i, s:I}", "device", c->device, "bandwidth_gbs",
                           c->bandwidth_gbs, "fma_gflops", c->fma_gflops, "llc_bytes", c->llc_bytes,
                           "threads", c->threads, "measured_unix", (json_int_t)c->measured_unix);
  if (!root)
    return fail(err, errlen, -1, "calib: cannot build JSON (non-UTF-8 device name?)");
  /* Write a sibling and rename it over, so readers never see half a file. */
  char tmp[4096];
  int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof tmp) {
    json_decref(root);
    return fail(err, errlen, -1, "calib: path too long: %s", path);
  }
  int rc = json_dump_file(root, tmp, JSON_INDENT(2) | JSON_SORT_KEYS);
  json_decref(root);
  if (rc != 0) {
    int e = errno;
    unlink(tmp);
    return fail(err, errlen, -1, "calib: cannot write %s: %s", tmp, strerror(e));
  }
  if (rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return fail(err, errlen, -1, "calib: cannot rename to %s: %s", path, strerror(e));
  }
  return 0;
}
