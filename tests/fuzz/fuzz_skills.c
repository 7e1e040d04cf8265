/* libFuzzer target for the skills importer: any bytes in, either every card
 * valid (Markdown and search text made for each) or an error naming the
 * file and nothing returned. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/skills.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *cards = NULL;
  char err[1024] = "";
  if (kv_skills_parse((const char *)data, size, "fuzz.json", &cards, err, sizeof err) != 0) {
    if (cards || strncmp(err, "fuzz.json", 9) != 0)
      abort();
    return 0;
  }
  if (!json_is_array(cards))
    abort();
  for (size_t i = 0; i < json_array_size(cards); i++) {
    const json_t *c = json_array_get(cards, i);
    if (kv_skill_validate(c, "again", err, sizeof err) != 0)
      abort();
    char *md = kv_skill_markdown(c), *st = kv_skill_search_text(c);
    if (!md || !st)
      abort();
    free(md);
    free(st);
  }
  json_decref(cards);
  return 0;
}
