/* libFuzzer target for the annotation parser of KLineage's experts: any text
 * in, either an error that names the file, or mechanisms whose removal order
 * is a permutation with every dependent before what it requires, and
 * resolutions that keep no KV_MECH_ directive. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/skills.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct kv_annot a;
  char err[1024];
  const char *src = (const char *)data;
  if (kv_annot_parse(src, size, "fuzz.c", &a, err, sizeof err) != 0) {
    if (strncmp(err, "fuzz.c", 6) != 0 && strcmp(err, "out of memory") != 0)
      abort();
    return 0;
  }
  if (a.n < 1 || a.n > KV_MECH_MAX)
    abort();
  int pos[KV_MECH_MAX], seen[KV_MECH_MAX] = {0};
  for (int i = 0; i < a.n; i++) {
    if (a.order[i] < 0 || a.order[i] >= a.n || seen[a.order[i]]++)
      abort();
    pos[a.order[i]] = i;
  }
  for (int v = 0; v < a.n; v++)
    for (int k = 0; k < a.m[v].nreq; k++)
      if (pos[a.m[v].req[k]] < pos[v]) /* a requirement removed before its dependent */
        abort();
  uint32_t masks[3] = {0, 0xffffffffu, 0x55555555u};
  for (int i = 0; i < 3; i++) {
    char *out = NULL;
    size_t n = 0;
    if (kv_annot_resolve(src, size, "fuzz.c", &a, masks[i], &out, &n, err, sizeof err) != 0)
      abort(); /* parsed once, it always resolves */
    for (const char *p = out; (p = strstr(p, "KV_MECH_")); p++) {
      /* only inside kept comments or header lines of enabled mechanisms */
      const char *bol = p;
      while (bol > out && bol[-1] != '\n')
        bol--;
      while (*bol == ' ' || *bol == '\t')
        bol++;
      if (*bol == '#')
        abort();
    }
    free(out);
  }
  return 0;
}
