/* Remote verdicts re-judged on this host (issue 30): what a gate server
 * reached through ssh or Slurm answers is evidence, not a verdict. Before a
 * run's best kernel is reported or written out, kevo judges it again here
 * when this host can (the same surface available); where it cannot, it says
 * the verdict is the remote host's word. Never prints, never exits. */
#ifndef KEVO_REJUDGE_H
#define KEVO_REJUDGE_H

#include <stddef.h>

#include <jansson.h>

#include "kevo/gate.h"
#include "kevo/task.h"

enum kv_rejudge_state {
  KV_REJUDGE_NOT_REMOTE = 0, /* judged by kevo on this host (or a local gate server) */
  KV_REJUDGE_AGREES,         /* judged again here: accepted here too */
  KV_REJUDGE_DISAGREES,      /* judged again here: rejected here (verdict, why) */
  KV_REJUDGE_CANNOT,         /* this host cannot judge it (why): the remote's word only */
};

struct kv_rejudge {
  enum kv_rejudge_state state;
  char executor[32]; /* "ssh", "slurm" */
  char host[256];    /* the host the remote server said it ran on */
  char verdict[32];  /* this host's verdict (AGREES, DISAGREES) */
  char why[1200];    /* DISAGREES: this host's detail; CANNOT: why it was not judged here */
};

/* 1 when the result JSON (an evaluation's, with the executor's "executor"
 * object) was answered by a remote executor (ssh, slurm), with its name and
 * host in r; else 0. */
int kv_rejudge_is_remote(const char *result_json, struct kv_rejudge *r);

/* Judges src (len bytes, a candidate of the surface) on task t here, with
 * o's settings (timing off: correctness is what is re-judged), when
 * result_json is a remote executor's; fills r. NOT_REMOTE leaves the
 * candidate unjudged. Returns 0; -1 with err only when the candidate cannot
 * be written to a temporary file. */
int kv_rejudge_local(const char *result_json, const struct kv_task *t, const char *src, size_t len,
                     const char *surface, const struct kv_gate_opts *o, struct kv_rejudge *r,
                     char *err, size_t errlen);

/* Judges src here whatever judged it before (`from`, e.g. "skills file", and
 * `host`, the word of which it is, go into r->executor and r->host): AGREES,
 * DISAGREES or CANNOT, as kv_rejudge_local. kevo skills import --task judges
 * each card's richer kernel so before storing it as admitted. */
int kv_rejudge_source(const char *from, const char *host, const struct kv_task *t, const char *src,
                      size_t len, const char *surface, const struct kv_gate_opts *o,
                      struct kv_rejudge *r, char *err, size_t errlen);

/* Skill cards (kevo skills import): each admitted card of task t (its
 * scope.task) that carries its richer kernel (carrier.after_src, which kevo
 * skills export writes) is judged here before it is stored. Agreeing: a
 * verification_log entry {"what": "rejudge", ...}. Disagreeing: the card is
 * stored as rejected (status, admitted false, a risk and the log entry
 * saying both verdicts). The others (no t, another task, no kernel, a
 * surface this host cannot judge) stay as they are, counted as `cannot`.
 * One line per admitted card into report. `from` names whose word the file
 * is ("skills file"). */
struct kv_cards_rejudged {
  int judged, agreed, disagreed, cannot;
};
struct kv_buf;
void kv_rejudge_cards(json_t *cards, const struct kv_task *t, const struct kv_gate_opts *o,
                      const char *from, struct kv_cards_rejudged *n, struct kv_buf *report);

#endif
