/* Online attribution (kevo run --online-attribution SHARE): while an LLM run
 * searches, a share of its steps get a random feedback mask (each switchable
 * block, a *player*, on or off with probability 1/2, independently); their
 * outcomes (the step's reward, lib/agent/ada.c's kva_ada_reward) keep a
 * running estimate of each player's contribution, and a player whose
 * estimate stays below its cost is turned off for the rest of the run.
 *
 * The estimate: the game fitted to the randomised steps by least squares
 * with one term per player, y = b0 + sum_i b_i [i on]; the Shapley value of
 * that additive game is phi_i = b_i exactly (and the independent masks make
 * b_i unbiased for each player's average marginal contribution; interactions
 * are what `kevo analyze` measures). Its standard error comes from the
 * residuals. A player's cost is what its block adds to a prompt, in tokens
 * (bytes / 3, measured on every randomised step), priced at `price` reward
 * per 1,000 tokens. A player is turned off once, after at least
 * max(8, 2 (players + 1)) randomised steps, phi_i stayed below its cost on
 * `patience` randomised steps in a row (at most one player per step, the one
 * furthest below). Pure arithmetic: no store, no printing. */
#ifndef KEVO_ATTRIB_H
#define KEVO_ATTRIB_H

#include <stddef.h>
#include <stdint.h>

#define KV_ATTR_MAX 5     /* performance, profile, rules, history, static */
#define KV_ATTR_OBS 65536 /* randomised steps kept (a run has fewer) */

struct kv_attr_opts {
  double share; /* of steps randomised, (0, 1]; 0: off */
  double price; /* reward per 1,000 prompt tokens (default 0.05) */
  int patience; /* randomised steps in a row below the cost (default 3) */
};

struct kv_attr {
  struct kv_attr_opts o;
  int n;                      /* players */
  int block[KV_ATTR_MAX];     /* KV_PB_* */
  int off[KV_ATTR_MAX];       /* turned off */
  int below[KV_ATTR_MAX];     /* randomised steps in a row below the cost */
  double tokens[KV_ATTR_MAX]; /* summed over measures */
  int measures[KV_ATTR_MAX];
  unsigned *mask; /* per randomised step: bit i, player i on */
  double *y;
  int nobs, cap;
  uint64_t rng;
  int replay; /* resume: observations only; the decisions come from the record */
};

struct kv_attr_estimate {
  int ok; /* enough steps and a solvable fit */
  int nobs;
  double phi[KV_ATTR_MAX], se[KV_ATTR_MAX], cost[KV_ATTR_MAX], tokens[KV_ATTR_MAX];
};

/* The players: the switchable blocks of prompt_mask (1u << KV_PB_*). */
void kv_attr_init(struct kv_attr *a, unsigned prompt_mask, const struct kv_attr_opts *o,
                  uint64_t seed);
void kv_attr_free(struct kv_attr *a);
/* A recorded decision ("online attribution: NAME off from step ...", in a
 * node's params) applied again on resume: the player's index, else -1. */
int kv_attr_apply_note(struct kv_attr *a, const char *params);
const char *kv_attr_player_name(const struct kv_attr *a, int i);

/* A step's players: *randomised 1 (for a share of steps) with each player
 * not turned off on or off at random, else every player not turned off.
 * Returns bit i for player i. */
unsigned kv_attr_draw(struct kv_attr *a, int *randomised);
/* The prompt mask of a step: base less the players' blocks, plus those on. */
unsigned kv_attr_prompt_mask(const struct kv_attr *a, unsigned base, unsigned players);
/* What player i's block added to a prompt, in bytes. */
void kv_attr_cost_seen(struct kv_attr *a, int i, size_t bytes);

/* A randomised step's outcome. Returns the player it turned off (-1: none),
 * with the decision and the estimate behind it in note ("" when none). -1
 * and nothing recorded when memory runs out or KV_ATTR_OBS is reached. */
int kv_attr_observe(struct kv_attr *a, unsigned players, double y, int step, char *note,
                    size_t cap);
void kv_attr_estimate(const struct kv_attr *a, struct kv_attr_estimate *e);

/* A step's record in its node's params: "attr=performance:1:45,history:0:120"
 * (player, on, tokens its block adds) for a randomised step,
 * "off=performance" for another step with players turned off, "" else. */
void kv_attr_params(const struct kv_attr *a, unsigned players, int randomised, const size_t *bytes,
                    char *out, size_t cap);
/* Reads a randomised step back from its params (resume): 1 with *players set
 * and the tokens seen counted, 0 when it was not one. */
int kv_attr_params_read(struct kv_attr *a, const char *params, unsigned *players);

#endif
