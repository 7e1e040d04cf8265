/* The GPU tests' gate options from the test environment (KEVO_WORKER,
 * KEVO_NVCC, KEVO_CUDA_ARCH, KEVO_CACHE_DIR): the library reads none of them
 * itself; the kevo command line reads them the same way (cli/common.c). */
#ifndef KEVO_TESTS_GPU_ENV_OPTS_H
#define KEVO_TESTS_GPU_ENV_OPTS_H

#include <stdlib.h>

#include "kevo/gate.h"

/* kv_gate_opts_default, then the environment's settings. */
static inline void env_opts_fill(struct kv_gate_opts *o) {
  kv_gate_opts_default(o);
  o->worker_path = getenv("KEVO_WORKER");
  o->nvcc_path = getenv("KEVO_NVCC");
  o->cuda_arch = getenv("KEVO_CUDA_ARCH");
  o->cache_dir = getenv("KEVO_CACHE_DIR");
}

/* The same, filled once: for calls that only read options. */
static inline const struct kv_gate_opts *env_opts(void) {
  static struct kv_gate_opts o;
  static int filled;
  if (!filled) {
    env_opts_fill(&o);
    filled = 1;
  }
  return &o;
}

#endif
