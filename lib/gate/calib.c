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
#include <limits.h>
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

#include "devlock.h"

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

/* A decimal number with nothing before it and only `tail` (or the end)
 * after it: 0 and the value, or -1 for anything else (empty, a sign, junk,
 * overflow). sysfs's fields come from the kernel, but a container can mount
 * anything there, and a misread cache size sizes every flush. */
static int parse_ull(const char *s, const char *tail, unsigned long long *v, const char **end) {
  if (!s || *s < '0' || *s > '9')
    return -1;
  char *e;
  errno = 0;
  *v = strtoull(s, &e, 10);
  if (errno == ERANGE)
    return -1;
  if (*e && !strchr(tail, *e))
    return -1;
  if (end)
    *end = e;
  return 0;
}

/* "32768K", "1M", "512" -> bytes; 0 when unparsable ("32X", "K", "-1", a
 * size that overflows). */
static size_t parse_size(const char *s) {
  unsigned long long v;
  const char *e;
  if (parse_ull(s, "KkMmGg", &v, &e) < 0)
    return 0;
  int shift = 0;
  if (*e == 'K' || *e == 'k')
    shift = 10;
  else if (*e == 'M' || *e == 'm')
    shift = 20;
  else if (*e == 'G' || *e == 'g')
    shift = 30;
  if (*e && e[1]) /* junk after the suffix */
    return 0;
  if (v > (SIZE_MAX >> shift))
    return 0;
  return (size_t)(v << shift);
}

/* The total size of the highest cache level: one instance per group of CPUs
 * sharing it (counted at the group's lowest CPU), summed over the groups,
 * since a multi-threaded flush or stream has every instance to get past.
 * An entry whose level, sharing list or size does not parse is skipped. */
size_t kv_llc_bytes_from(const char *cpu_root, long ncpu) {
  if (!cpu_root || ncpu <= 0)
    return 0;
  int top = 0;
  size_t total = 0;
  for (long cpu = 0; cpu < ncpu; cpu++) {
    for (int idx = 0; idx < 16; idx++) {
      char path[4200], buf[256];
      snprintf(path, sizeof path, "%s/cpu%ld/cache/index%d/level", cpu_root, cpu, idx);
      if (read_small(path, buf, sizeof buf) != 0)
        break;
      unsigned long long lv;
      if (parse_ull(buf, "", &lv, NULL) < 0 || lv > 16)
        continue;
      int level = (int)lv;
      snprintf(path, sizeof path, "%s/cpu%ld/cache/index%d/type", cpu_root, cpu, idx);
      if (read_small(path, buf, sizeof buf) == 0 && strcmp(buf, "Instruction") == 0)
        continue;
      if (level < top)
        continue;
      /* "0-3,8-11": the group's lowest CPU comes first. */
      snprintf(path, sizeof path, "%s/cpu%ld/cache/index%d/shared_cpu_list", cpu_root, cpu, idx);
      long first = cpu;
      unsigned long long f;
      if (read_small(path, buf, sizeof buf) == 0) {
        if (parse_ull(buf, "-,", &f, NULL) < 0 || f > (unsigned long long)LONG_MAX)
          continue;
        first = (long)f;
      }
      snprintf(path, sizeof path, "%s/cpu%ld/cache/index%d/size", cpu_root, cpu, idx);
      if (read_small(path, buf, sizeof buf) != 0)
        continue;
      size_t sz = parse_size(buf);
      if (sz == 0)
        continue;
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
  size_t llc = kv_llc_bytes_from("/sys/devices/system/cpu", sysconf(_SC_NPROCESSORS_CONF));
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

/* ---- timing ---- */

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This thread's share of [0, n) under the static split every loop here
 * uses: contiguous, near-equal ranges in thread order. */
static void my_range(size_t n, size_t *lo, size_t *len) {
  size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
  size_t q = n / nt, r = n % nt;
  *lo = id * q + (id < r ? id : r);
  *len = q + (id < r ? 1 : 0);
}

/* One timed parallel run. `wall_rate` is the team's rate by the wall clock;
 * `cpu_rate` sums each thread's rate over its own CPU time, which a busy
 * machine cannot depress (it can only inflate it, when threads that should
 * share a resource ran one after another); `on_cpu` is the least CPU time a
 * thread got, as a fraction of the team's wall time: near 1 when the team
 * really ran together. */
struct run {
  double wall_rate, cpu_rate, on_cpu;
};

/* ---- bandwidth ---- */

typedef double v2d __attribute__((vector_size(16)));

/* A block is two cache lines; first touch and every kernel split blocks the
 * same way, so each thread streams the pages it touched first (NUMA). */
#define BLOCK_VECS 8
#define BLOCK_BYTES (BLOCK_VECS * sizeof(v2d))

enum bw_kind { BW_READ, BW_COPY, BW_TRIAD };

static volatile double bw_sink;

static void bw_touch(v2d *a, v2d *b, v2d *c, size_t nb) {
#pragma omp parallel
  {
    size_t lo, n;
    my_range(nb, &lo, &n);
    for (size_t j = lo * BLOCK_VECS; j < (lo + n) * BLOCK_VECS; j++) {
      a[j] = (v2d){1.0, 2.0};
      b[j] = (v2d){0.5, 0.25};
      c[j] = (v2d){0.0, 0.0};
    }
  }
}

/* Bytes read plus written per block. */
static double bw_bytes(enum bw_kind k) {
  return (k == BW_READ ? 1.0 : k == BW_COPY ? 2.0 : 3.0) * (double)BLOCK_BYTES;
}

static double bw_kernel(enum bw_kind kind, v2d *a, v2d *b, v2d *c, size_t lo, size_t n) {
  v2d *pa = a + lo * BLOCK_VECS, *pb = b + lo * BLOCK_VECS, *pc = c + lo * BLOCK_VECS;
  size_t nv = n * BLOCK_VECS;
  if (kind == BW_READ) {
    v2d s0 = {0, 0}, s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    for (size_t j = 0; j < nv; j += BLOCK_VECS) {
      s0 += pa[j];
      s1 += pa[j + 1];
      s2 += pa[j + 2];
      s3 += pa[j + 3];
      s4 += pa[j + 4];
      s5 += pa[j + 5];
      s6 += pa[j + 6];
      s7 += pa[j + 7];
    }
    v2d s = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    return s[0] + s[1];
  }
  if (kind == BW_COPY) {
    /* libc's memcpy streams large copies past the cache, as a candidate may. */
    memcpy(pc, pa, nv * sizeof(v2d));
    return nv ? pc[nv / 2][0] : 0;
  }
  v2d vs = {0.5, 0.5};
  for (size_t j = 0; j < nv; j++)
    pa[j] = pb[j] + vs * pc[j];
  return nv ? pa[nv / 3][1] : 0;
}

static struct run bw_run(enum bw_kind kind, v2d *a, v2d *b, v2d *c, size_t nb) {
  double cpu_rate = 0, cpu_min = 1e30, sink = 0;
  double t0 = now_s();
#pragma omp parallel reduction(+ : cpu_rate, sink) reduction(min : cpu_min)
  {
    size_t lo, n;
    my_range(nb, &lo, &n);
    double c0 = thread_cpu_s();
    sink += bw_kernel(kind, a, b, c, lo, n);
    double c1 = thread_cpu_s();
    cpu_min = c1 - c0;
    if (c1 > c0)
      cpu_rate += (double)n * bw_bytes(kind) / (c1 - c0);
  }
  double t = now_s() - t0;
  bw_sink = sink;
  /* Against the team's wall time: threads that ran one after another each
   * spent only part of it on a CPU. */
  return (struct run){(double)nb * bw_bytes(kind) / t, cpu_rate, cpu_min / t};
}

#define BW_GOOD_REPS 5
#define BW_MAX_REPS 25
#define BW_MAX_S 1.0
#define ON_CPU_OK 0.9

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
  /* Best of the runs in which the team really ran together; on a machine
   * too busy for any, the CPU-time rate (an overestimate: the safe side for
   * a ceiling). */
  double best_wall = 0, best_cpu = 0;
  int good = 0;
  double start = now_s();
  for (int rep = 0; rep < BW_MAX_REPS && good < BW_GOOD_REPS; rep++) {
    if (rep >= BW_GOOD_REPS && now_s() - start > BW_MAX_S)
      break;
    int all_ok = 1;
    for (int k = BW_READ; k <= BW_TRIAD; k++) {
      struct run r = bw_run((enum bw_kind)k, a, b, c, nb);
      if (r.cpu_rate > best_cpu)
        best_cpu = r.cpu_rate;
      if (r.on_cpu >= ON_CPU_OK) {
        if (r.wall_rate > best_wall)
          best_wall = r.wall_rate;
      } else {
        all_ok = 0;
      }
    }
    good += all_ok;
  }
  free(a);
  free(b);
  free(c);
  *out_gbs = (best_wall > 0 ? best_wall : best_cpu) / 1e9;
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

/* Flop/s of `iters` iterations on every thread. Compute does not contend
 * across cores, so the CPU-time rate is the one to trust: it holds on a busy
 * machine, where the wall clock would count other processes' time slices. */
static struct run fma_run(fma_fn fn, int lanes, long iters) {
  double cpu_rate = 0, cpu_min = 1e30;
  float sum = 0;
  int nthreads = 1;
  double t0 = now_s();
#pragma omp parallel reduction(+ : cpu_rate, sum) reduction(min : cpu_min)
  {
#pragma omp single nowait
    nthreads = omp_get_num_threads();
    double c0 = thread_cpu_s();
    sum += fn(iters, 1.0f + 0.001f * (float)omp_get_thread_num(), 0.9999f, 0.0001f);
    double c1 = thread_cpu_s();
    cpu_min = c1 - c0;
    if (c1 > c0)
      cpu_rate += 2.0 * FMA_CHAINS * lanes * (double)iters / (c1 - c0);
  }
  double t = now_s() - t0;
  fma_sink = sum;
  double flops = 2.0 * FMA_CHAINS * lanes * (double)iters * nthreads;
  return (struct run){flops / t, cpu_rate, cpu_min / t};
}

#define FMA_RUN_S 0.05
#define FMA_REPS 3

static double fma_best(fma_fn fn, int lanes) {
  /* Size the runs from a short trial so each lasts about FMA_RUN_S. */
  long iters = 1 << 15;
  struct run trial = fma_run(fn, lanes, iters);
  double per_thread = trial.cpu_rate / omp_get_max_threads();
  if (per_thread > 0) {
    double want = FMA_RUN_S * per_thread / (2.0 * FMA_CHAINS * lanes);
    iters = want < (double)iters ? iters : want > (double)(1L << 30) ? 1L << 30 : (long)want;
  }
  double best = 0;
  for (int rep = 0; rep < FMA_REPS; rep++) {
    struct run r = fma_run(fn, lanes, iters);
    double rate = r.cpu_rate > r.wall_rate ? r.cpu_rate : r.wall_rate;
    if (rate > best)
      best = rate;
  }
  return best;
}

static double measure_fma(void) {
  double best = 0;
  int wide = 0;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    best = fma_best(fma_avx2, 8);
    wide = 1;
  }
  if (__builtin_cpu_supports("avx512f")) {
    double r = fma_best(fma_avx512, 16);
    if (r > best)
      best = r;
    wide = 1;
  }
#endif
  /* Four lanes without FMA cannot beat the wider kernels. */
  if (!wide)
    best = fma_best(fma_portable, 4);
  return best / 1e9;
}

int kv_calib_cpu_measure(struct kv_calib *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  kv_calib_cpu_device(out->device, sizeof out->device);
  out->threads = omp_get_max_threads();
  size_t llc = kv_llc_bytes();
  out->llc_bytes = (double)llc;
  /* The ceilings are measured on these cores alone: an evaluation timing on
   * them meanwhile would lower them (and be disturbed). */
  struct kv_devlock lock;
  if (kv_devlock_cpus(&lock, "measuring this CPU's ceilings", KV_DEVLOCK_WAIT_S, err, errlen) < 0)
    return -1;
  int rc = measure_bandwidth(llc, &out->bandwidth_gbs, err, errlen);
  if (rc == 0)
    out->fma_gflops = measure_fma();
  kv_devlock_release(&lock);
  if (rc != 0)
    return -1;
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
