/* libFuzzer target for task.json: parse, and for a task that parses, generate
 * both prototypes and shims and check every size set against the caps. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[512];
  struct kv_task *t = NULL;
  if (kv_task_parse((const char *)data, size, "fuzz.json", &t, err, sizeof err) != 0) {
    /* A failure always leaves a one-line message and no task. */
    if (t || err[0] == '\0' || strchr(err, '\n'))
      abort();
    return 0;
  }
  static char buf[1 << 16];
  for (int lang = KV_LANG_C; lang <= KV_LANG_CUDA; lang++) {
    if (kv_task_prototype(t, (enum kv_lang)lang, buf, sizeof buf) < 0)
      abort();
    if (kv_task_shim(t, (enum kv_lang)lang, buf, sizeof buf) < 0)
      abort();
    /* Small caps fail cleanly. */
    char small[16];
    if (kv_task_shim(t, (enum kv_lang)lang, small, sizeof small) >= 0)
      abort();
  }
  /* Every check and bench set passed validation, so it must pass again. */
  for (int i = 0; i < t->ncheck + t->nbench; i++) {
    const struct kv_sizeset *s = i < t->ncheck ? &t->check[i] : &t->bench[i - t->ncheck];
    int64_t total;
    if (kv_sizeset_bytes(t, s, &total, err, sizeof err) != 0 || total < 0 ||
        total > KV_MAX_TOTAL_BYTES)
      abort();
    kv_sizeset_format(t, s, buf, sizeof buf);
  }
  /* Scalars and a few elements of each buffer, as the gate would draw them. */
  for (int p = 0; p < t->nparams; p++) {
    unsigned char v[8 * 4];
    if (t->params[p].role == KV_ROLE_SCALAR)
      kv_gen_scalar(&t->params[p], 1, v);
    else if (t->params[p].role != KV_ROLE_SIZE)
      kv_gen_fill(t->params[p].dtype, &t->params[p].init, 1, (uint64_t)p, v, 4);
  }
  kv_task_free(t);
  return 0;
}
