/* libFuzzer target for LLM replies: kv_reply_parse with a few entry names,
 * kv_reply_plan, and kv_tunables_parse on the extracted code and on the raw
 * input, checking what each promises on success and on failure. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Length of a NUL-terminated string in a fixed array, or cap when unterminated. */
static size_t bounded_len(const char *s, size_t cap) {
  const char *z = memchr(s, '\0', cap);
  return z ? (size_t)(z - s) : cap;
}

static void check_err(const char *err) {
  if (err[0] == '\0' || strchr(err, '\n'))
    abort();
}

static void check_tunables(const char *code) {
  struct kv_tunable t[8];
  char err[256];
  int n = kv_tunables_parse(code, t, 8, err, sizeof err);
  if (n < 0) {
    check_err(err);
    return;
  }
  if (n > 8)
    abort();
  for (int i = 0; i < n; i++) {
    size_t nl = bounded_len(t[i].name, sizeof t[i].name);
    if (nl == 0 || nl >= sizeof t[i].name || t[i].nvalues < 1 || t[i].nvalues > KV_TUNE_MAX_VALUES)
      abort();
    for (int v = 0; v < t[i].nvalues; v++) {
      size_t vl = bounded_len(t[i].values[v], sizeof t[i].values[v]);
      if (vl == 0 || vl >= sizeof t[i].values[v] || strpbrk(t[i].values[v], " \t\r\n,"))
        abort();
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const entries[] = {"rowsum", "f", "kernel_entry", NULL};
  const char *entry = entries[size ? data[0] % 4 : 0];
  const char *text = (const char *)data;
  char err[256];
  struct kv_reply r;
  if (kv_reply_parse(text, size, entry, &r, err, sizeof err) == 0) {
    size_t cl = strlen(r.code), pl = strlen(r.plan);
    if (cl == 0 || r.code[cl - 1] != '\n' || cl > size + 1 || strchr(r.code, '\r'))
      abort();
    if (pl > KV_REPLY_PLAN_MAX || strchr(r.plan, '\r') || (r.plan_truncated && pl == 0))
      abort();
    if (r.nblocks < 0 || r.nblocks > KV_REPLY_MAX_BLOCKS || r.block >= r.nblocks ||
        (r.had_fence != (r.block >= 0)) || bounded_len(r.lang, sizeof r.lang) >= sizeof r.lang)
      abort();
    if (!entry && r.defines_entry)
      abort();
    check_tunables(r.code);
    kv_reply_release(&r);
    if (r.code || r.plan)
      abort();
  } else {
    check_err(err);
    if (r.code || r.plan || r.nblocks)
      abort();
  }
  char *plan = NULL;
  if (kv_reply_plan(text, size, &plan, err, sizeof err) == 0) {
    if (!plan || strlen(plan) > KV_REPLY_PLAN_MAX || strchr(plan, '\r'))
      abort();
    free(plan);
  } else {
    check_err(err);
    if (plan)
      abort();
  }
  /* The raw input as code (NUL-terminated copy). */
  char *copy = malloc(size + 1);
  if (!copy)
    return 0;
  memcpy(copy, data, size);
  copy[size] = '\0';
  check_tunables(copy);
  free(copy);
  return 0;
}
