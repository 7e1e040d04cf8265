/* libFuzzer target for the debugger's parser (kevo/sanitize.h):
 * kv_san_parse, kv_san_append_raw, kv_san_summary and kv_san_json on any
 * bytes, checking what each promises: findings within the cap, counted at
 * least once, strings terminated, the raw text within its cap. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kevo/sanitize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  struct kv_san_report *r = calloc(1, sizeof *r);
  if (!text || !r) {
    free(text);
    free(r);
    return 0;
  }
  memcpy(text, data, size);
  text[size] = '\0';
  int n = kv_san_parse("memcheck", text, r);
  n += kv_san_parse("racecheck", text, r); /* a second report accumulates */
  if (n < 0 || r->nfindings < 0 || r->nfindings > KV_SAN_MAX_FINDINGS || r->nfindings > n ||
      r->errors < 0)
    abort();
  for (int i = 0; i < r->nfindings; i++) {
    const struct kv_san_finding *f = &r->f[i];
    if (f->count < 1 || f->line < 0 || f->line2 < 0 || !memchr(f->kind, '\0', sizeof f->kind) ||
        !memchr(f->kernel, '\0', sizeof f->kernel) || !memchr(f->file, '\0', sizeof f->file) ||
        !memchr(f->access, '\0', sizeof f->access))
      abort();
  }
  kv_san_append_raw(r, "memcheck", text);
  kv_san_append_raw(r, "racecheck", text);
  if (!r->raw || strlen(r->raw) > KV_SAN_RAW_CAP)
    abort();
  size_t cap = size ? 1 + data[0] * 8u : 64;
  char *line = malloc(cap);
  if (line) {
    kv_san_summary(r, line, cap);
    if (!memchr(line, '\0', cap))
      abort();
    free(line);
  }
  json_t *j = kv_san_json(r);
  if (!j)
    abort();
  json_decref(j);
  kv_san_report_free(r);
  free(text);
  return 0;
}
