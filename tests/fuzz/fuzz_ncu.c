/* libFuzzer target for the profiler's parser (kevo/ncu.h): kv_ncu_parse_csv,
 * kv_ncu_summary and kv_ncu_json on any bytes, checking what each promises:
 * kernels within the cap and named by what was read, rules within their cap
 * and sorted by estimated speedup, renderings within their caps. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kevo/ncu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  struct kv_ncu_report *r = calloc(1, sizeof *r);
  if (!text || !r) {
    free(text);
    free(r);
    return 0;
  }
  memcpy(text, data, size);
  text[size] = '\0';
  int n = kv_ncu_parse_csv(text, r);
  if (n < 0 || n > KV_NCU_MAX_KERNELS || n != r->nkernels)
    abort();
  for (int i = 0; i < n; i++) {
    const struct kv_ncu_kernel *k = &r->k[i];
    if (!memchr(k->name, '\0', sizeof k->name) || !memchr(k->top_stall, '\0', sizeof k->top_stall))
      abort();
    if (k->nrules < 0 || k->nrules > KV_NCU_MAX_RULES)
      abort();
    for (int j = 1; j < k->nrules; j++)
      if (k->rules[j].speedup > k->rules[j - 1].speedup)
        abort();
  }
  size_t cap = size ? 1 + data[0] * 8u : 64;
  char *line = malloc(cap);
  if (line) {
    kv_ncu_summary(r, line, cap);
    if (!memchr(line, '\0', cap))
      abort();
    free(line);
  }
  json_t *j = kv_ncu_json(r);
  if (!j)
    abort();
  json_decref(j);
  kv_ncu_report_free(r);
  free(text);
  return 0;
}
