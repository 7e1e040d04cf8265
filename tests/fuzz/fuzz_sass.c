/* libFuzzer target for the static analysis's parser (kevo/sass.h):
 * kv_sass_parse, kv_sass_mix_line and kv_sass_strip on any bytes, checking
 * what each promises: kernels within the cap, named, counted once, counts
 * that add up; renderings within their caps. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/sass.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  int max = size ? 1 + data[0] % 8 : 4;
  struct kv_sass_kernel k[8];
  int n = kv_sass_parse(text, k, max);
  if (n < 0 || n > max)
    abort();
  for (int i = 0; i < n; i++) {
    const char *z = memchr(k[i].name, '\0', sizeof k[i].name);
    if (!z || z == k[i].name)
      abort();
    for (int j = 0; j < i; j++)
      if (!strcmp(k[i].name, k[j].name))
        abort();
    const struct kv_sass_mix *m = &k[i].mix;
    long parts = (long)m->ldl + m->stl + m->ldsm + m->ldgsts + m->tma + m->hmma + m->imma +
                 m->gmma + m->bar + m->shfl + m->atom + m->ffma;
    for (int w = 0; w < KV_SASS_NW; w++)
      parts += (long)m->ldg[w] + m->stg[w] + m->lds[w] + m->sts[w];
    if (m->total < 0 || parts > m->total || (long)m->total > (long)size)
      abort();
    char line[64];
    kv_sass_mix_line(m, line, sizeof line);
    if (!memchr(line, '\0', sizeof line))
      abort();
  }
  size_t cap = size ? (size_t)data[size - 1] * 4 : 16;
  char *s = kv_sass_strip(text, cap);
  if (!s || strlen(s) > cap + 64 || strstr(s, "/* 0x"))
    abort();
  free(s);
  free(text);
  return 0;
}
