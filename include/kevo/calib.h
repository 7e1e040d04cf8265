/* Device ceilings, measured once and cached: the gate calls a candidate
 * `implausible` when its achieved bytes/s or flop/s clearly beats them.
 * Never prints, never exits. */
#ifndef KEVO_CALIB_H
#define KEVO_CALIB_H

#include <stddef.h>

struct kv_calib {
  char device[256];     /* "cpu:<model name> x<threads>", "cuda:<name> sm_90 x<SMs>" */
  double bandwidth_gbs; /* sustained memory bandwidth, GB/s (1e9 bytes), all threads */
  double fma_gflops;    /* FP32 FMA peak, GFLOP/s (an FMA counts 2 flops), all threads */
  double llc_bytes;     /* last-level cache size used for flushing (cuda: the L2) */
  int threads;          /* cpu: threads; cuda: multiprocessors */
  long long measured_unix;
};

/* Identifies this CPU (model name and thread count); used as the cache key. */
void kv_calib_cpu_device(char *out, size_t cap);
/* Measures bandwidth (multi-threaded copy/triad over buffers far beyond the
 * LLC, best of several runs) and FP32 FMA peak (multi-threaded, vectorised for
 * the widest ISA available at run time: AVX-512, AVX2+FMA, or portable).
 * Takes about a second. */
int kv_calib_cpu_measure(struct kv_calib *out, char *err, size_t errlen);
/* Cache as JSON at `path`: load returns -1 (no message) when absent or for
 * another device, so the caller measures and saves. */
int kv_calib_load(const char *path, const char *device, struct kv_calib *out, char *err,
                  size_t errlen);
int kv_calib_save(const char *path, const struct kv_calib *c, char *err, size_t errlen);
/* LLC size in bytes from sysconf/sysfs; 32 MiB when unknown. */
size_t kv_llc_bytes(void);
/* The same from a sysfs-like tree (`cpu_root`/cpuN/cache/indexK/{level,type,
 * shared_cpu_list,size}) of `ncpu` CPUs; 0 when nothing there parses. An
 * entry with a malformed field ("3x", "32X", "-1") is skipped, not guessed. */
size_t kv_llc_bytes_from(const char *cpu_root, long ncpu);

#endif
