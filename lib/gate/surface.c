/* The table of surfaces: what a candidate is written in, how it is built and
 * policed, and which runtime the worker runs it with. cpu comes first (the
 * default), cuda second. */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "nvrtc.h"

static int cpu_prepare(const struct kv_gate_opts *o, char *desc, size_t cap, char *err,
                       size_t errlen) {
  (void)o;
  const char *v = kv_cc_version();
  if (!v[0])
    return kv_error(err, errlen,
                    "cc: no C compiler found; install one (apt-get install gcc) or put cc on PATH");
  snprintf(desc, cap, "%s", v);
  return 0;
}

static int cpu_policy(const struct kv_build *b, const struct kv_task *t, char *out, size_t cap,
                      char *err, size_t errlen) {
  return kv_policy_check(b->so_path, t, out, cap, err, errlen);
}

static int cuda_prepare(const struct kv_gate_opts *o, char *desc, size_t cap, char *err,
                        size_t errlen) {
  const char *v = kv_nvcc_version(o);
  if (!v[0])
    return kv_error(err, errlen,
                    "--surface cuda: nvcc not found; install the CUDA toolkit, put nvcc on PATH "
                    "or set KEVO_NVCC to its path");
  char arch[32];
  if (kv_cuda_arch(o, arch, sizeof arch, err, errlen) < 0)
    return -1;
  snprintf(desc, cap, "nvcc %s for %s", v, arch);
  return 0;
}

static int cuda_policy(const struct kv_build *b, const struct kv_task *t, char *out, size_t cap,
                       char *err, size_t errlen) {
  if (b->kernel_only)
    return kv_policy_check_nvrtc(b->obj_path, out, cap, err, errlen);
  return kv_policy_check_cuda(b->obj_path, t, out, cap, err, errlen);
}

static const struct kv_surface surfaces[] = {
    {"cpu", KV_LANG_C, "reference.c", NULL, cpu_prepare, kv_build_c, cpu_policy, "cpu", 10, 0,
     NULL},
    {"cuda", KV_LANG_CUDA, "reference.cu", "baseline.cu", cuda_prepare, kv_build_cuda_code,
     cuda_policy, "cuda", 30, 1, kv_sass_analyze_build},
};

const struct kv_surface *kv_surface_find(const char *name) {
  if (!name || !*name)
    return &surfaces[0];
  for (size_t i = 0; i < KV_ARRAY_LEN(surfaces); i++)
    if (!strcmp(surfaces[i].name, name))
      return &surfaces[i];
  return NULL;
}

const char *kv_surface_names(void) {
  return "cpu, cuda";
}
