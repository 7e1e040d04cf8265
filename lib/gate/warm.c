/* Workers kept warm across evaluations (kevo/gate.h, kv_gate_warm).
 *
 * Where the line is: the reference's workers (rw and, for a torch task, ew)
 * never load candidate code, so one evaluation may hand them on to the next
 * of the same task, reference and settings, slots loaded. A candidate always
 * runs in a process no candidate ran in before: what is kept warm for it is a
 * fresh worker, spawned once the last evaluation ended, whose start (exec,
 * sandbox, cuInit and a context: 0.1-0.5 s on a GPU) is then off the next
 * evaluation's path; it gets the task and its candidate only then. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct kv_gate_warm {
  pthread_mutex_t mu;
  char ref_key[65];
  struct kv_worker rw, ew;
  int rw_up, ew_up;
  char slot0[KV_SLOT_KEY], slot2[KV_SLOT_KEY];
  char cand_key[65];
  struct kv_worker cw;
  int cw_up;
  int rw_reused, cw_reused;
};

struct kv_gate_warm *kv_gate_warm_new(void) {
  struct kv_gate_warm *w = calloc(1, sizeof *w);
  if (w && pthread_mutex_init(&w->mu, NULL) != 0) {
    free(w);
    return NULL;
  }
  return w;
}

static void drop_ref(struct kv_gate_warm *w) {
  if (w->rw_up)
    kv_worker_stop(&w->rw);
  if (w->ew_up)
    kv_worker_stop(&w->ew);
  w->rw_up = w->ew_up = 0;
  w->ref_key[0] = w->slot0[0] = w->slot2[0] = 0;
}

static void drop_cand(struct kv_gate_warm *w) {
  if (w->cw_up)
    kv_worker_stop(&w->cw);
  w->cw_up = 0;
  w->cand_key[0] = 0;
}

void kv_gate_warm_free(struct kv_gate_warm *w) {
  if (!w)
    return;
  drop_ref(w);
  drop_cand(w);
  pthread_mutex_destroy(&w->mu);
  free(w);
}

void kv_gate_warm_stats(const struct kv_gate_warm *w, int *rw_reused, int *cw_reused) {
  *rw_reused = w ? w->rw_reused : 0;
  *cw_reused = w ? w->cw_reused : 0;
}

int kv_warm_take_ref(struct kv_gate_warm *w, const char *key, struct kv_session *s) {
  int got = 0;
  pthread_mutex_lock(&w->mu);
  if (w->rw_up && w->rw.alive && !strcmp(w->ref_key, key) && (!w->ew_up || w->ew.alive)) {
    s->rw = w->rw;
    s->rw_up = 1;
    if (w->ew_up) {
      s->ew = w->ew;
      s->ew_up = 1;
    }
    memcpy(s->rw_slot0, w->slot0, sizeof s->rw_slot0);
    memcpy(s->rw_slot2, w->slot2, sizeof s->rw_slot2);
    w->rw_up = w->ew_up = 0;
    w->ref_key[0] = 0;
    w->rw_reused++;
    got = 1;
  } else {
    drop_ref(w); /* another task's, or dead: no use keeping it */
  }
  pthread_mutex_unlock(&w->mu);
  return got;
}

void kv_warm_put_ref(struct kv_gate_warm *w, const char *key, struct kv_session *s) {
  pthread_mutex_lock(&w->mu);
  drop_ref(w);
  if (s->rw_up && s->rw.alive && !s->rw.paused && (!s->ew_up || s->ew.alive)) {
    w->rw = s->rw;
    w->rw_up = 1;
    s->rw_up = 0;
    if (s->ew_up) {
      w->ew = s->ew;
      w->ew_up = 1;
      s->ew_up = 0;
    }
    snprintf(w->ref_key, sizeof w->ref_key, "%s", key);
    memcpy(w->slot0, s->rw_slot0, sizeof w->slot0);
    memcpy(w->slot2, s->rw_slot2, sizeof w->slot2);
  }
  pthread_mutex_unlock(&w->mu);
}

int kv_warm_take_cand(struct kv_gate_warm *w, const char *key, struct kv_worker *cw) {
  int got = 0;
  pthread_mutex_lock(&w->mu);
  if (w->cw_up && w->cw.alive && !strcmp(w->cand_key, key)) {
    *cw = w->cw;
    w->cw_up = 0;
    w->cand_key[0] = 0;
    w->cw_reused++;
    got = 1;
  } else {
    drop_cand(w);
  }
  pthread_mutex_unlock(&w->mu);
  return got;
}

void kv_warm_put_cand(struct kv_gate_warm *w, const char *key, struct kv_worker *cw) {
  pthread_mutex_lock(&w->mu);
  drop_cand(w);
  w->cw = *cw;
  w->cw_up = 1;
  snprintf(w->cand_key, sizeof w->cand_key, "%s", key);
  pthread_mutex_unlock(&w->mu);
}
