/* The table of surfaces: what a candidate is written in, how it is built and
 * policed, and which runtime the worker runs it with. cpu comes first (the
 * default), cuda second. */
#include <stdio.h>
#include <string.h>

#include "cudakit.h"
#include "internal.h"
#include "nvrtc.h"
#include "torchbuild.h"

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
    {.name = "cpu",
     .lang = KV_LANG_C,
     .ext = "c",
     .reference = "reference.c",
     .baseline = NULL,
     .prepare = cpu_prepare,
     .build = kv_build_c,
     .policy = cpu_policy,
     .worker_runtime = "cpu",
     .worker_start_s = 10,
     .device_in_worker = 0,
     .analyze = NULL},
    {.name = "cuda",
     .lang = KV_LANG_CUDA,
     .ext = "cu",
     .reference = "reference.cu",
     .baseline = "baseline.cu",
     .prepare = cuda_prepare,
     .build = kv_build_cuda_code,
     .policy = cuda_policy,
     .worker_runtime = "cuda",
     .worker_start_s = 30,
     .device_in_worker = 1,
     .analyze = kv_sass_analyze_build},
    /* A KernelBench-style ModelNew against the task's reference.py, both in
     * torch workers (docs/torch-surface.md); on the CPU for now (its GPU
     * timing waits for clean-worker-owned CUDA IPC buffers, issue 28). */
    {.name = "torch",
     .lang = KV_LANG_PYTHON,
     .ext = "py",
     .reference = "reference.py",
     .baseline = NULL,
     .prepare = kv_torch_prepare,
     .build = kv_build_torch,
     .policy = kv_torch_policy,
     .worker_runtime = "cpu",
     .worker_start_s = 20,
     .device_in_worker = 0,
     .analyze = NULL},
};

const struct kv_surface *kv_surface_find(const char *name) {
  if (!name)
    return &surfaces[0];
  for (size_t i = 0; i < KV_ARRAY_LEN(surfaces); i++)
    if (!strcmp(surfaces[i].name, name))
      return &surfaces[i];
  return NULL;
}

const struct kv_surface *kv_surface_at(size_t i) {
  return i < KV_ARRAY_LEN(surfaces) ? &surfaces[i] : NULL;
}

/* test_gate checks that it lists the table's names, in its order. */
const char *kv_surface_names(void) {
  return "cpu, cuda, torch";
}

const char *kv_surface_name(const struct kv_surface *sf) {
  return (sf ? sf : surfaces)->name;
}

enum kv_lang kv_surface_lang(const struct kv_surface *sf) {
  return (sf ? sf : surfaces)->lang;
}

const char *kv_surface_lang_name(const struct kv_surface *sf) {
  enum kv_lang l = kv_surface_lang(sf);
  return l == KV_LANG_CUDA ? "cuda" : l == KV_LANG_PYTHON ? "python" : "c";
}

const char *kv_surface_ext(const struct kv_surface *sf) {
  return (sf ? sf : surfaces)->ext;
}

const char *kv_surface_entry(const struct kv_surface *sf, const struct kv_task *t) {
  if (kv_surface_lang(sf) == KV_LANG_PYTHON)
    return "ModelNew";
  return t ? t->entry : NULL;
}

int kv_surface_gpu(const struct kv_surface *sf) {
  return (sf ? sf : surfaces)->device_in_worker; /* a GPU's worker measures it */
}

int kv_surface_analyzed(const struct kv_surface *sf) {
  return (sf ? sf : surfaces)->analyze != NULL;
}
