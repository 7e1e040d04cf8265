/* The kernel-only contract on the cuda surface (kevo/launch.h): a candidate
 * of __global__ kernels and `// kevo:launch` lines, no host entry, compiled by
 * NVRTC (in kevo-nvrtc, a sandboxed child) to a cubin for the GPU's
 * architecture and launched by kevo-worker per the launch lines. Internal to
 * the gate. */
#ifndef KEVO_GATE_NVRTC_H
#define KEVO_GATE_NVRTC_H

#include <stddef.h>

#include "internal.h"

/* Which contract a cuda source follows: 1 kernel-only (it has launch lines
 * and does not define the task's entry), 0 host entry (nvcc). */
int kv_cuda_is_kernel_only(const struct kv_task *t, const char *text, size_t len);

/* The kernel-only build of `src` when it is one: 0 (b filled: built, or a
 * compile error whose log names the line and field), -1 when kevo could not
 * compile at all (err says why), 1 when src follows the host-entry contract
 * (nothing done; build it with nvcc). The build is a bundle (b->so_path,
 * KEY.kvk: the launch plan and the cubin) that kevo-worker loads, and the
 * cubin alone (b->obj_path, for the policy and the static analysis); cached
 * like kv_build_cuda's by a hash of source, task, options, architecture and
 * libnvrtc. */
int kv_build_cuda_kernels(const struct kv_task *t, const struct kv_gate_opts *o, const char *src,
                          const char *cache_dir, double deadline_s, struct kv_build *b, char *err,
                          size_t errlen);

/* The kernel-only policy on a built cubin: device code may call printf,
 * malloc, free and assert (the device runtime's own) and nothing else (it is
 * linked with nothing: no device runtime, so no dynamic parallelism, no
 * library). Same return as kv_policy_check. */
int kv_policy_check_nvrtc(const char *cubin_path, char *out, size_t cap, char *err, size_t errlen);

/* libnvrtc's absolute path ($KEVO_NVRTC, else beside o's nvcc, else
 * /usr/local/cuda) into path: 0, or -1 with "" when none; kevo-nvrtc's
 * ($KEVO_NVRTC_HELPER, else beside o's worker, else beside this executable).
 * o may be NULL (the defaults). */
int kv_nvrtc_lib(const struct kv_gate_opts *o, char *path, size_t cap);
int kv_nvrtc_helper(const struct kv_gate_opts *o, char *out, size_t cap);

#endif
