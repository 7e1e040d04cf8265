/* replay: answers from calls recorded in the store, never from the network.
 * A request is looked up by its cache key, computed as the provider that
 * recorded it would have (replay_of), or as each network provider in turn. */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "kevo/store.h"

const struct llm_provider llm_replay = {
    .name = "replay",
    .default_base_url = "",
    .default_key_env = "",
    .network = 0,
};

int llm_replay_lookup(struct kv_store *st, const struct kv_llm_model *m, const struct llm_req *r,
                      struct kv_llm_call_row *row, char key[65], const char **as, char *err,
                      size_t errlen) {
  char tried[128] = "";
  key[0] = '\0';
  *as = m->replay_of[0] ? m->replay_of : NULL;
  for (size_t i = 0; llm_providers[i]; i++) {
    const struct llm_provider *p = llm_providers[i];
    if (!p->network || (m->replay_of[0] && strcmp(m->replay_of, p->name)))
      continue;
    char k[65], serr[512];
    llm_key_of(p->name, m->model, r, k);
    if (!key[0])
      memcpy(key, k, sizeof k);
    int found = kv_store_find_llm_call(st, k, row, serr, sizeof serr);
    if (found < 0)
      return llm_fail(KV_LLM_ESTORE, err, errlen, "replay: %s", serr);
    if (found) {
      memcpy(key, k, sizeof k);
      *as = p->name;
      return 1;
    }
    size_t n = strlen(tried);
    snprintf(tried + n, sizeof tried - n, "%s%s", n ? " or " : "", p->name);
  }
  if (!tried[0])
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "replay: replay_of is '%s', not a provider that records calls; use openai or "
                    "anthropic",
                    m->replay_of);
  return llm_fail(KV_LLM_ENOTRECORDED, err, errlen,
                  "replay: this request was never recorded (model '%s', sample %d, key %.12s as "
                  "%s): record it first with a network provider, or make the prompt, model and "
                  "sampling parameters match the recorded run",
                  m->model, r->sample, key, tried);
}
