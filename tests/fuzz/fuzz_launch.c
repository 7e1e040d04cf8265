/* libFuzzer target for the kernel-only contract's launch lines
 * (kevo/launch.h): any candidate source either parses into a plan whose
 * every launch gives valid dimensions at every size set of the task, or fails
 * with one line naming where; the host-entry scan never reads out of bounds. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/launch.h"
#include "kevo/task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char TASK[] =
    "{\"name\": \"rowsum\", \"entry\": \"rowsum\", \"params\": ["
    "{\"name\": \"x\", \"role\": \"in\", \"dtype\": \"f32\", \"shape\": [\"rows\", \"cols\"]},"
    "{\"name\": \"y\", \"role\": \"out\", \"dtype\": \"f32\", \"shape\": [\"rows\"]},"
    "{\"name\": \"alpha\", \"role\": \"scalar\", \"dtype\": \"f32\", \"value\": 1},"
    "{\"name\": \"rows\", \"role\": \"size\"}, {\"name\": \"cols\", \"role\": \"size\"}],"
    "\"check\": [{\"rows\": 1, \"cols\": 1}, {\"rows\": 7, \"cols\": 1001}],"
    "\"bench\": [{\"rows\": 8192, \"cols\": 8192}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct kv_task *t;
  static struct kv_launch_plan plan;
  char err[1024];
  if (!t && kv_task_parse(TASK, strlen(TASK), "task.json", &t, err, sizeof err) != 0)
    abort();
  /* Unterminated on purpose: the parser must stay within size bytes. */
  char *src = malloc(size ? size : 1);
  if (!src)
    return 0;
  memcpy(src, data, size);
  err[0] = 0;
  int n = kv_launch_parse(t, src, size, "fuzz.cu", &plan, err, sizeof err);
  if (n < 0) {
    if (!err[0] || strchr(err, '\n') || strncmp(err, "fuzz.cu", 7) != 0)
      abort();
  } else {
    if (n != plan.n || n > KV_LAUNCH_MAX)
      abort();
    for (int i = 0; i < n; i++) {
      const struct kv_launch *l = &plan.l[i];
      if (l->ngrid < 1 || l->ngrid > 3 || l->nblock < 1 || l->nblock > 3 || l->nargs < 0 ||
          l->nargs > KV_LAUNCH_ARGS_MAX || !l->kernel[0])
        abort();
      for (int a = 0; a < l->nargs; a++)
        if (l->args[a] < 0 || l->args[a] >= t->nparams)
          abort();
      for (int k = 0; k < t->ncheck + t->nbench; k++) {
        const struct kv_sizeset *s = k < t->ncheck ? &t->check[k] : &t->bench[k - t->ncheck];
        unsigned g[3], b[3], sm;
        if (kv_launch_dims(t, l, s, g, b, &sm, err, sizeof err) != 0)
          abort();
        if (!g[0] || !b[0] || (uint64_t)b[0] * b[1] * b[2] > 1024 || sm > KV_LAUNCH_SMEM_MAX)
          abort();
      }
    }
  }
  (void)kv_launch_has_entry(t, src, size);
  free(src);
  return 0;
}
