/* The cross-check of kevo's times of the torch sides (issue 27 item 4): the
 * eager reference (rw slot 0) and the torch.compile baseline (rw slot 2) at
 * the first bench size, timed again in the torch worker by
 * triton.testing.do_bench, the field's tool. Until a side agrees within
 * KV_DO_BENCH_TOL, a speedup against it is printed with kv_side_note's
 * words. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/gate.h"
#include "kevo/surface.h"
#include "kevo/util.h"
#include "kevo/wire.h"

/* One side: its do_bench median (us), or 0 with why. */
static double side_do_bench(struct kv_session *s, int slot, char *why, size_t cap) {
  json_t *req = json_pack("{s:i,s:s,s:i,s:i,s:I,s:b,s:I}", "slot", slot, "set", "bench", "index", 0,
                          "calls", 1, "seed", (json_int_t)(kv_random_u64() >> 12), "do_bench", 1,
                          "shm_bytes", (json_int_t)0);
  json_t *rep = NULL;
  char d[512] = "";
  enum kv_call_status st =
      kv_worker_call(&s->rw, KV_MSG_TIME, req, KV_DO_BENCH_DEADLINE_S, &rep, NULL, 0, d, sizeof d);
  json_decref(req);
  double us = 0;
  if (st != KV_CALL_OK)
    snprintf(why, cap, "do_bench of slot %d: %s", slot, d[0] ? d : "no answer");
  else {
    us = json_number_value(json_object_get(rep, "do_bench_us"));
    const char *w = json_string_value(json_object_get(rep, "why"));
    if (!(us > 0))
      snprintf(why, cap, "%s", w ? w : "the torch worker gave no do_bench time");
  }
  json_decref(rep);
  return us > 0 ? us : 0;
}

/* KEVO_DO_BENCH_STANDIN=R[,B] (tests, any surface): no measurement; the
 * eager side's do_bench time is kevo's over R, the baseline's over B, so
 * that the marking of a side off do_bench can be shown without a GPU. 1 when
 * set. */
static int standin(struct kv_timing *t) {
  const char *e = getenv("KEVO_DO_BENCH_STANDIN");
  double rr = 0, bb = 0;
  if (!e || sscanf(e, "%lf,%lf", &rr, &bb) < 1 || !(rr > 0))
    return 0;
  t->ref_do_bench_us = t->ref.median_us / rr;
  if (t->has_baseline && bb > 0)
    t->base_do_bench_us = t->base.median_us / bb;
  snprintf(t->do_bench_why, sizeof t->do_bench_why,
           "stand-in values from KEVO_DO_BENCH_STANDIN=%.40s, not measured", e);
  return 1;
}

void kv_torch_do_bench(struct kv_session *s, struct kv_gate_result *r) {
  struct kv_timing *t = &r->timing;
  if (!s->torch || !r->timed || strcmp(t->method[0] ? t->method : "kevo", "kevo"))
    return;
  if (standin(t) || !s->rw_up || !kv_surface_gpu(s->sf))
    return;
  if (getenv("KEVO_NO_DO_BENCH")) {
    snprintf(t->do_bench_why, sizeof t->do_bench_why, "KEVO_NO_DO_BENCH is set");
    return;
  }
  t->ref_do_bench_us = side_do_bench(s, 0, t->do_bench_why, sizeof t->do_bench_why);
  if (t->has_baseline && t->ref_do_bench_us > 0)
    t->base_do_bench_us = side_do_bench(s, 2, t->do_bench_why, sizeof t->do_bench_why);
}
