/* What lineage.c and llmwalk.c share. Never included outside lib/skills. */
#ifndef KEVO_SKILLS_INTERNAL_H
#define KEVO_SKILLS_INTERNAL_H

#include "kevo/skills.h"

void skills_say(const struct kv_lineage_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *skills_ext_of(const char *path);
/* Writes text to o->scratch/name and judges it with seed (timing: when the
 * gate options time). 0 with a verdict in r (release it), -1 kevo failed. */
int skills_judge(const struct kv_task *t, const struct kv_lineage_opts *o, const char *name,
                 const char *text, size_t len, uint64_t seed, int timing, struct kv_gate_result *r,
                 char *err, size_t errlen);
void skills_resources(const struct kv_gate_result *r, int *regs, long *smem);
/* The paired test of st (rich vs simple): 0 done (st->paired), 1 a pair was
 * not accepted (st->detail says which), -1 kevo failed. */
int skills_paired(const struct kv_task *t, const struct kv_lineage_opts *o, const char *ext,
                  const char *rich, size_t rlen, const char *simple, size_t slen, const char *tag,
                  struct kv_lineage_step *st, struct kv_gate_result *r, char *err, size_t errlen);
/* n interleaved pairs of a and b (ABBA), one seed a pair: 0 timed, 1 a
 * kernel was not accepted (detail), -1 kevo failed. */
int skills_time_pairs(const struct kv_task *t, const struct kv_lineage_opts *o, const char *ext,
                      const char *a, size_t alen, const char *b, size_t blen, const char *tag,
                      int ord, int n, double *a_us, double *b_us, struct kv_gate_result *r,
                      char *detail, size_t dlen, char *err, size_t errlen);
/* Why st has no paired statistics: the paired test's own detail where it was
 * tried and did not conclude (which pair, which kernel, its verdict), else
 * "no paired test". */
const char *skills_unpaired_why(const struct kv_lineage_step *st);
void skills_lineage_key(struct kv_lineage *L, const struct kv_task *t);
/* The expert's first verdict, the walk's starting point (both modes): judged
 * at the task's own checks, refused with the way to fix it unless accepted,
 * else recorded in L (surface, device, arch, verdict JSON, time) with its
 * registers and shared memory in *regs and *smem. r is released. */
int skills_judge_expert(const struct kv_task *t, const struct kv_lineage_opts *o,
                        const char *expert_path, const char *src, size_t len, struct kv_lineage *L,
                        struct kv_gate_result *r, int *regs, long *smem, char *err, size_t errlen);

/* "Key: value" line of a reply into out (trimmed): 1 found. */
int skills_field(const char *text, const char *key, char *out, size_t cap);
/* src with its comments blanked, newlines kept (malloc'd; features.c). */
char *skills_strip_comments(const char *src, size_t len);
/* Blanks squashed to one space, trimmed (malloc'd). */
char *skills_squash(const char *in, size_t n);
/* A walk's state as JSON (llmwalk.c's checkpoints) and back. */
json_t *skills_walk_json(const struct kv_lineage *L);
int skills_walk_load(const json_t *j, struct kv_lineage *L, char *err, size_t errlen);

#endif
