/* Internal to the gate: the CUDA toolkit and the device as the cuda
 * surface's compilers (nvcc.c, nvrtc.c) and tools (sass.c, ncu.c,
 * sanitize.c) find them (cudakit.c). Below all of them: it uses none. */
#ifndef KEVO_GATE_CUDAKIT_H
#define KEVO_GATE_CUDAKIT_H

#include <stddef.h>

struct kv_gate_opts;
struct kv_kernel_res;

/* nvcc's path: o->nvcc_path when it names an executable, else nvcc on PATH,
 * else /usr/local/cuda/bin/nvcc ("" when none). o may be NULL (the
 * defaults). */
const char *kv_nvcc_path(const struct kv_gate_opts *o);
/* A CUDA tool (cuobjdump, ncu, compute-sanitizer): $ENV when it names an
 * executable, else NAME beside o's nvcc, else ALT (a path relative to nvcc's
 * directory, or NULL), else NAME on PATH; into out ("" when none). */
void kv_cuda_tool_find(const char *env, const char *name, const char *alt,
                       const struct kv_gate_opts *o, char *out, size_t cap);
/* nvcc's flag for an architecture ("-arch=sm_90"; "-gencode=..." for
 * sm_90a, sm_100f). */
void kv_cuda_arch_flag(const char *arch, char *out, size_t cap);
/* The architecture to build for: o->cuda_arch (sm_90, 90 or 9.0), else the
 * GPU's compute capability ("sm_90"): kv_cuda_arch_at with the driver's
 * /proc/driver/nvidia and o's cache directory (asked once per process). o
 * may be NULL (the defaults). */
int kv_cuda_arch(const struct kv_gate_opts *o, char *out, size_t cap, char *err, size_t errlen);
/* The first visible GPU's compute capability from nvidia-smi, remembered in
 * cache_dir per device identity (the driver's information file of that GPU
 * under proc_root, UUID included, and its version) so that a later process
 * on the same device and driver does not ask again. */
int kv_cuda_arch_at(const char *proc_root, const char *cache_dir, char *out, size_t cap, char *err,
                    size_t errlen);
/* Parses ptxas -v lines into kernels[] (at most KV_MAX_KERNELS); returns the count. */
int kv_parse_ptxas(const char *log, struct kv_kernel_res *k, int max);

#endif
