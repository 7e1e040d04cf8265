/* Fuzz target: the executors' parsers of outside input never crash, never
 * read out of bounds, and never accept what they must refuse: the
 * configuration file (a host that reads as an option, a variable that is not
 * KEVO_*), and what a gate server sends back (its hello, a verdict frame, a
 * verdict's result). Input: a byte choosing the parser, then its text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/exec/internal.h"
#include "kevo/exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  char *text = malloc(size);
  if (!text)
    return 0;
  memcpy(text, data + 1, size - 1);
  text[size - 1] = 0;
  char err[1024];
  switch (data[0] % 4) {
  case 0: {
    struct kv_exec_config *c = malloc(sizeof *c);
    if (c && kv_exec_config_parse(text, size - 1, "fuzz.json", c, err, sizeof err) == 0) {
      for (int i = 0; i < c->nhosts; i++)
        if (c->hosts[i].host[0] == '-' || !c->hosts[i].host[0] || c->hosts[i].servers < 1)
          abort();
      for (int i = 0; i < c->nhosts; i++)
        for (int e = 0; e < c->hosts[i].nenv; e++)
          if (strncmp(c->hosts[i].env[e].name, "KEVO_", 5) ||
              strstr(c->hosts[i].env[e].name, "KEY"))
            abort();
      if (c->partition[0] == '-' || c->gres[0] == '-' || c->time_limit[0] == '-')
        abort();
    }
    free(c);
    break;
  }
  case 1: {
    struct kvx_hello h;
    if (kvx_hello_parse(text, &h, err, sizeof err) == 0 && h.protocol != 1)
      abort();
    break;
  }
  case 2: {
    json_t *res = NULL;
    int need = 0;
    int v = kvx_verdict_parse(text, "j1", &res, &need, err, sizeof err);
    if ((v == 0) != (res != NULL))
      abort();
    json_decref(res);
    break;
  }
  default: {
    struct kv_gate_result *r = malloc(sizeof *r);
    if (r && kv_gate_result_from_json(text, r, err, sizeof err) == 0) {
      if ((int)r->verdict < 0 || r->verdict >= KV_V_COUNT || r->nchecks > KV_GATE_MAX_CHECKS ||
          r->nkernels > KV_MAX_KERNELS)
        abort();
      kv_gate_result_release(r);
    }
    free(r);
  }
  }
  free(text);
  return 0;
}
