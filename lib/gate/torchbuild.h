/* Internal to the gate: the torch surface's entries in the table of
 * surfaces, its device and the task's reference.py (torchbuild.c,
 * docs/torch-surface.md). Below surface.c and torchcand.c: it uses neither. */
#ifndef KEVO_GATE_TORCHBUILD_H
#define KEVO_GATE_TORCHBUILD_H

#include <stddef.h>

struct kv_build;
struct kv_gate_opts;
struct kv_task;

/* The task's reference.py (absolute, in path) for the torch surface, which
 * judges against it whatever else the task holds: 1, or 0 when it has none. */
int kv_torch_surface_reference(const struct kv_task *t, char *path, size_t cap);
/* The surface's table entries: Python and the candidate worker are there;
 * "building" a candidate stores its text in the object cache under its hash
 * (what the worker reads, by that one name); no policy yet (strict/fusion:
 * issue 29 item 3). */
int kv_torch_prepare(const struct kv_gate_opts *o, char *desc, size_t cap, char *err,
                     size_t errlen);
/* The torch surface's device: "cuda" when KEVO_TORCH_DEVICE=cuda (checks
 * only: the workers' --surface cuda), else "cpu". */
const char *kv_torch_device(void);
int kv_build_torch(const struct kv_task *t, const struct kv_gate_opts *o, const char *src,
                   const char *cache_dir, double deadline_s, struct kv_build *b, char *err,
                   size_t errlen);
int kv_torch_policy(const struct kv_build *b, const struct kv_task *t, char *out, size_t cap,
                    char *err, size_t errlen);

#endif
