/* Buffers the clean reference worker owns and lends to the candidate's
 * worker (the cuda surface: CUDA IPC handles), so that no number a verdict
 * rests on is produced or carried by the candidate's process: the clean
 * worker fills a checked call's inputs, poisoned outputs and guard zones
 * (keyed by a secret the candidate never sees), the candidate's worker runs
 * the call into the lent buffers and may say only that it returned, kevo
 * stops it, and the clean worker, once the GPU runs nothing of another
 * process (its probe kernel runs promptly), copies outputs, inputs and guard
 * zones back in its own context. Timed calls run in the candidate's own
 * buffers (memory mapped from another process is slower to work in: 1.8x
 * for 256 MB on an H200, bench/ipc_cost.cu), whose handles its worker
 * exports once it has allocated them, before anything is timed: after each
 * candidate phase the clean worker settles the GPU (what that takes beyond
 * its probe's time alone is charged to the phase) and, the candidate's
 * process stopped, maps those buffers and reads the validated calls. A
 * handle the candidate's process forged buys nothing: the call's outputs
 * must be right for inputs drawn afresh for that phase, which is the work
 * itself, done inside kevo's clock or found running after it. The lender is the reference's
 * kevo-worker (rw), or for a reference.py task one of its own (lw). Where it cannot lend (no
 * CUDA IPC in the driver, the torch surface), the old path runs (the candidate's worker copies its
 * results back) and the verdict's detail says so. docs/verdict.md: which process produces each
 * number. */
#ifndef KEVO_GATE_LEND_H
#define KEVO_GATE_LEND_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define KV_LEND_MAX 96 /* leases a session holds at once: every size set, and the probe */
/* How long the clean worker waits for the GPU to run its probe promptly
 * before it reads (the candidate's process is stopped meanwhile). */
#define KV_LEND_SETTLE_S 3.0

struct kv_session;
struct kv_sizeset;
struct kv_task;

struct kv_lend {
  int tried, ipc;    /* the clean worker was asked to lend, and lends */
  int fell_back;     /* the old path ran: the candidate's process carried results */
  char why[300];     /* why it does not lend */
  double alone_ns;   /* the clean worker's probe alone */
  double charged_ns; /* GPU time after candidate phases charged to them, in all */
  double settle_max_ns;
  int n;
  struct {
    char id[16];
    json_t *handles; /* per call: a row of handle texts (null for non-buffers) */
  } l[KV_LEND_MAX];
  size_t offset; /* from an allocation to its buffer */
};

/* Whether this session would lend: a GPU surface, KEVO_LEND unset (a C/CUDA
 * reference) or 1 (a torch reference too), no KEVO_NO_LEND, and no earlier
 * refusal. A reference.py
 * task lends from a worker of its own (lw), which the caller starts first. */
int kv_lend_wanted(const struct kv_session *s);

/* Whether the session's checks and timed calls use lent buffers: asks the
 * clean worker once (a LEND of `calls` calls under id, at the check set
 * `index` or the drawn set, or the bench set `index`); then, with the
 * handles of the lease's first `calls` calls in *handles (borrowed: valid
 * until kv_lend_return), 1. 0: it cannot lend (s->lend.why says why, and
 * the old path runs). -1 with err: the clean worker failed. */
int kv_lend(struct kv_session *s, const char *id, const char *set, int index,
            const struct kv_sizeset *drawn, int calls, json_t **handles, char *err, size_t errlen);
/* Before the candidate is loaded into s->cw (its worker still clean): the
 * clean worker lends one call and s->cw maps it; s->cw exports a buffer of
 * its own and the clean worker maps that (the timed calls' way). Where either cannot, the
 * old path runs for the whole evaluation, said in the verdict (s->lend.why);
 * a failure after the candidate is loaded is the candidate's. 0, or -1 with
 * err when the clean worker failed. */
int kv_lend_probe(struct kv_session *s, char *err, size_t errlen);
/* A validated timed call of the candidate's phase at bench set `index`,
 * read by the clean worker from the candidate's own buffers (row: the
 * handles its worker exported, per param), the GPU settled: sample sseed of
 * the outputs, and with inputs of the inputs, `want` bytes into *blob. 0; 1
 * when those buffers cannot be read (the candidate's doing: why says what);
 * -1 with err when kevo failed. */
int kv_lend_peek(struct kv_session *s, int index, json_t *row, uint64_t sseed, int inputs,
                 size_t want, uint8_t **blob, char *why, size_t whylen, char *err, size_t errlen);
/* Call `call` of lease id: fresh inputs (seed), poisoned outputs, guard
 * zones keyed by seed ^ key. */
int kv_lend_fill(struct kv_session *s, const char *id, int call, uint64_t seed, int poison,
                 uint64_t key, char *err, size_t errlen);
/* Settles the GPU, then reads `calls` ([{call, sample?, guard?}], see
 * kevo/wire.h KV_MSG_LEND) of lease id: want bytes into *blob (NULL: none
 * wanted), the clean worker's report (settle_ns, first_ns, alone_ns, busy,
 * guard) into *rep. 0, or -1 with err. */
int kv_lend_read(struct kv_session *s, const char *id, json_t *calls, int inputs, size_t want,
                 uint8_t **blob, json_t **rep, char *err, size_t errlen);
/* After a candidate phase (its process stopped): settles the GPU; *charge_ns
 * is what that took beyond the probe's time alone, *busy whether the GPU
 * was still running another process's work at the limit. 0, or -1. */
int kv_lend_settle(struct kv_session *s, const char *id, double *charge_ns, int *busy, char *err,
                   size_t errlen);
/* Once no process of the candidate maps them: the clean worker frees every
 * lease. */
void kv_lend_return(struct kv_session *s);
/* Forgets the leases without telling the clean worker (it is being stopped). */
void kv_lend_drop(struct kv_session *s);
/* The verdict's detail says so where the old path ran. */
void kv_lend_note(const struct kv_session *s, char *detail, size_t cap);

#endif
