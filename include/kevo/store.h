/* kevo's store: one SQLite database in WAL mode, versioned migrations.
 * The database is the log: every mutation runs in a transaction, so a crash at
 * any point loses nothing that was committed. Functions return 0 or a negative
 * value with a message in err (capacity errlen); they never print or exit. */
#ifndef KEVO_STORE_H
#define KEVO_STORE_H

#include <stddef.h>
#include <stdint.h>

struct kv_store;

/* The schema version this build writes. */
#define KV_STORE_SCHEMA_VERSION 9

/* Default path: $XDG_DATA_HOME/kevo/kevo.db, else
 * $HOME/.local/share/kevo/kevo.db. Does not create anything. (KEVO_DB is
 * the command line's, which opens that path instead.) */
int kv_store_default_path(char *out, size_t cap);

/* Opens (creating the file and its parent directories if needed) and migrates
 * to KV_STORE_SCHEMA_VERSION. A database from a newer kevo is refused with a
 * message that says so. Sets a busy timeout so concurrent kevo processes wait
 * instead of failing. */
int kv_store_open(const char *path, struct kv_store **out, char *err, size_t errlen);
void kv_store_close(struct kv_store *s);
int kv_store_schema_version(struct kv_store *s);

/* Tasks are keyed by the hash of their canonical spec; putting the same spec
 * twice returns the same id. */
int kv_store_put_task(struct kv_store *s, const char *name, const char *dir, const char *spec_hash,
                      const char *spec_json, int64_t *task_id, char *err, size_t errlen);

/* Candidate sources, keyed by content hash (hex sha256); idempotent. */
int kv_store_put_source(struct kv_store *s, const char *hash, const char *text, size_t len,
                        char *err, size_t errlen);

struct kv_eval_record {
  int64_t task_id;
  const char *source_hash;
  const char *candidate_path; /* as given by the user; may be NULL */
  const char *surface;        /* "cpu" | "cuda" */
  const char *device;         /* e.g. "cpu:AMD EPYC 7763" */
  const char *verdict;        /* "ok", "wrong_output", ... */
  const char *detail;
  double median_us;        /* < 0 when not timed */
  double speedup;          /* < 0 when not timed */
  const char *result_json; /* the whole verdict as JSON */
};

/* Records one evaluation; *id gets its row id (may be NULL). */
int kv_store_add_eval(struct kv_store *s, const struct kv_eval_record *r, int64_t *id, char *err,
                      size_t errlen);

/* Reads back evaluation `id` (for tests and tools). Strings in *out are
 * malloc'd; free them with kv_eval_row_release. */
struct kv_eval_row {
  int64_t id, task_id;
  char *task_name, *source_hash, *surface, *device, *verdict, *detail, *result_json;
  double median_us, speedup;
  int64_t created_unix;
};
int kv_store_get_eval(struct kv_store *s, int64_t id, struct kv_eval_row *out, char *err,
                      size_t errlen);
void kv_eval_row_release(struct kv_eval_row *r);
/* Number of rows in evaluations (tests). */
int64_t kv_store_count_evals(struct kv_store *s);
/* The text of a stored source, malloc'd (NULL if absent). */
char *kv_store_get_source(struct kv_store *s, const char *hash, size_t *len);

/* ---- LLM calls (schema v2) ---------------------------------------------- */

/* One call to a model, as the LLM layer saw it. The request is the JSON body
 * sent, never the headers: no credentials reach the store. run_id and node_id
 * <= 0 are stored as NULL; tokens < 0 and cost < 0 as NULL (unknown). */
struct kv_llm_call_record {
  const char *role;     /* "planner", "coder", "ask", ... */
  const char *provider; /* "openai" | "anthropic" | "replay" */
  const char *model;
  const char *base_url;  /* may be NULL */
  const char *cache_key; /* replay key (hex sha256) */
  int sample;
  const char *request_json;
  const char *response_body; /* as received (capped); may be NULL */
  const char *reply_text;    /* the extracted reply; NULL on failure */
  const char *status;        /* "ok" or an error name */
  const char *error;         /* one line; NULL when ok */
  int http_status;           /* 0: none */
  int attempts;
  double latency_s;
  int64_t input_tokens, output_tokens;
  double cost_usd;
  int64_t run_id, node_id;
};
int kv_store_add_llm_call(struct kv_store *s, const struct kv_llm_call_record *r, int64_t *id,
                          char *err, size_t errlen);

/* A recorded call read back; strings malloc'd (release with
 * kv_llm_call_row_release); NULL columns are NULL strings, 0 ids, -1 numbers. */
struct kv_llm_call_row {
  int64_t id, run_id, node_id, created_unix;
  char *role, *provider, *model, *base_url, *cache_key, *request_json, *response_body, *reply_text,
      *status, *error;
  int sample, http_status, attempts;
  double latency_s, cost_usd;
  int64_t input_tokens, output_tokens;
};
void kv_llm_call_row_release(struct kv_llm_call_row *r);
int kv_store_get_llm_call(struct kv_store *s, int64_t id, struct kv_llm_call_row *out, char *err,
                          size_t errlen);
/* The latest successful, non-replayed call with this cache key: 1 found
 * (*out filled), 0 none, -1 error. */
int kv_store_find_llm_call(struct kv_store *s, const char *cache_key, struct kv_llm_call_row *out,
                           char *err, size_t errlen);
/* Calls with id > after_id in id order, at most limit (<= 0: all); cb returns
 * non-zero to stop. Returns the number visited, or -1. */
int kv_store_list_llm_calls(struct kv_store *s, int64_t after_id, int limit,
                            int (*cb)(void *arg, const struct kv_llm_call_row *row), void *arg,
                            char *err, size_t errlen);
int64_t kv_store_count_llm_calls(struct kv_store *s);
/* The node a call wrote (known only once the node exists): set where the
 * call has none yet. */
int kv_store_llm_call_set_node(struct kv_store *s, int64_t call_id, int64_t node_id, char *err,
                               size_t errlen);

/* ---- runs (kevo run) and their nodes: one evaluated candidate each ---- */
int kv_store_run_create(struct kv_store *s, int64_t task_id, const char *strategy,
                        const char *config_json, int64_t *run_id, char *err, size_t errlen);
/* "running", "done", "stopped" */
/* Ends a run ("stopped" or "done") with why (NULL: none), in runs.stop_reason
 * (schema 9). Where the database cannot take it (a full disk), the reason is
 * written into the run's lock file, kept, and the run reads back with that
 * status and reason instead of "killed"; -1 all the same. */
int kv_store_run_end(struct kv_store *s, int64_t run_id, const char *status, const char *reason,
                     char *err, size_t errlen);
/* 1 while this handle runs the run (holds its lock). */
int kv_store_run_is_mine(const struct kv_store *s, int64_t run_id);
int kv_store_run_set_status(struct kv_store *s, int64_t run_id, const char *status, char *err,
                            size_t errlen);

struct kv_node_record {
  int64_t run_id, parent_id; /* parent 0: none */
  int step;                  /* unique per run */
  const char *source_hash;
  int64_t eval_id;
  const char *action; /* "starter", "exhaustive", "random", "climb", ... */
  const char *params; /* "NACC=4 BLOCK=64" or NULL */
  const char *verdict;
  double speedup; /* < 0: not accepted or not timed */
  /* schema v4 (zero-initialised records store reward 0 and no plan) */
  double reward;    /* the search's value of the node; < 0: none (stored NULL) */
  const char *plan; /* the plan the candidate was written from, or NULL */
};
int kv_store_node_add(struct kv_store *s, const struct kv_node_record *n, int64_t *id, char *err,
                      size_t errlen);

struct kv_run_row {
  int64_t id, task_id;
  char *task_name, *spec_hash, *strategy, *status, *config_json;
  int64_t created_unix;
  int nnodes;
  double best_speedup; /* 0 when nothing was accepted */
  char *best_hash;     /* source of the fastest accepted node, or NULL */
  int64_t best_eval_id;
  char *stop_reason; /* why it ended (kv_store_run_end), or NULL */
};
/* run_id <= 0: the most recent run. */
int kv_store_run_get(struct kv_store *s, int64_t run_id, struct kv_run_row *out, char *err,
                     size_t errlen);
/* The most recent runs first, at most `limit`; free each with kv_run_row_release, then *rows. */
int kv_store_runs(struct kv_store *s, struct kv_run_row **rows, int *n, int limit, char *err,
                  size_t errlen);
void kv_run_row_release(struct kv_run_row *r);

struct kv_node_row {
  int64_t id, eval_id;
  int step;
  char *source_hash, *action, *params, *verdict;
  double speedup;    /* -1 when NULL */
  int64_t parent_id; /* 0: none */
  double reward;     /* -1 when NULL */
  char *plan;        /* NULL when none */
};
int kv_store_run_nodes(struct kv_store *s, int64_t run_id, struct kv_node_row **rows, int *n,
                       char *err, size_t errlen);
void kv_node_rows_free(struct kv_node_row *rows, int n);

/* ---- validity rules (schema v4): "You cannot ..." learnt from failures ---- */
/* A new rule seen `count` times (>= 1), linked to evaluation eval_id (<= 0: none). */
int kv_store_rule_add(struct kv_store *s, const char *text, const char *origin, int count,
                      int64_t eval_id, int64_t *id, char *err, size_t errlen);
/* Rule rule_id was seen `add` more times, once by evaluation eval_id (<= 0: none). */
int kv_store_rule_seen(struct kv_store *s, int64_t rule_id, int add, int64_t eval_id, char *err,
                       size_t errlen);
struct kv_rule_row {
  int64_t id;
  char *text, *origin; /* origin: "compiler", "llm", "import" */
  int count;
  int64_t created_unix, updated_unix;
  char *evals; /* "12 15 31": the first 64 evaluation ids behind it, or NULL */
};
/* Every rule in id order; free with kv_rule_rows_free. */
int kv_store_rules(struct kv_store *s, struct kv_rule_row **rows, int *n, char *err, size_t errlen);
void kv_rule_rows_free(struct kv_rule_row *rows, int n);

/* ---- benches (lib/store/bench.c) ---- */

/* A bench: one strategy over every task of a suite. */
struct kv_bench_row {
  int64_t id;
  char *suite_dir, *config_json, *status; /* status: "running" or "done" */
  int64_t created_unix;
};
/* One task of a bench. status: "pending", "running" (run_id set once its run
 * exists), "done" (correct, speedup set), "failed" or "skipped" (detail says
 * why). speedup: the best accepted kernel against the reference (for an
 * imported PyTorch module: eager PyTorch); speedup_baseline: against the
 * task's baseline, when it was timed; both 0 when nothing was accepted. */
struct kv_bench_task_row {
  int64_t id, bench_id, run_id;
  int ord, level, correct; /* level 0: none */
  char *dir, *name, *status, *detail;
  double speedup, speedup_baseline;
};
/* Creates a bench and its n tasks (status pending) in one transaction. */
int kv_store_bench_create(struct kv_store *s, const char *suite_dir, const char *config_json,
                          const char *const *dirs, const char *const *names, const int *levels,
                          int n, int64_t *id, char *err, size_t errlen);
/* The latest unfinished bench of this suite with this configuration: *id, or
 * 0 when there is none. */
int kv_store_bench_find(struct kv_store *s, const char *suite_dir, const char *config_json,
                        int64_t *id, char *err, size_t errlen);
/* id <= 0: the most recent bench. */
int kv_store_bench_get(struct kv_store *s, int64_t id, struct kv_bench_row *out, char *err,
                       size_t errlen);
/* The path the store was opened from (a bench's worker threads open their
 * own connections to it: a connection is not shared between threads). */
const char *kv_store_path(const struct kv_store *s);
void kv_bench_row_release(struct kv_bench_row *r);
int kv_store_bench_set_status(struct kv_store *s, int64_t id, const char *status, char *err,
                              size_t errlen);
/* Who runs the bench of suite_dir with this configuration: an exclusive
 * flock(2) on "DB-bench-HASH.lock" beside the database (the owner's pid
 * inside), held by this handle until kv_store_close; the kernel drops it when
 * its process dies. While another process holds it, waits up to wait_s
 * seconds, then fails naming that process (two benches at once would run the
 * same tasks). */
int kv_store_bench_claim(struct kv_store *s, const char *suite_dir, const char *config_json,
                         double wait_s, char *err, size_t errlen);
/* A bench's tasks in suite order; free with kv_bench_task_rows_free. */
int kv_store_bench_tasks(struct kv_store *s, int64_t bench_id, struct kv_bench_task_row **rows,
                         int *n, char *err, size_t errlen);
void kv_bench_task_rows_free(struct kv_bench_task_row *rows, int n);
/* Records a task's state (row->id names it; every other field is written). */
int kv_store_bench_task_update(struct kv_store *s, const struct kv_bench_task_row *row, char *err,
                               size_t errlen);

/* ---- reports (lib/store/report.c) ---- */
/* Read-only queries for `kevo report` and `kevo runs show`. The iterating ones
 * hand each row to cb (its strings borrowed: valid during the call only; NULL
 * columns are NULL strings, 0 ids, -1 numbers); cb returns non-zero to stop.
 * They return the number of rows visited, or -1 (an unknown run included). */

/* A run's facts beyond kv_run_row. */
struct kv_run_facts {
  int64_t created_unix, updated_unix;
  int64_t last_unix; /* the latest of updated and its nodes' and calls' times */
  char *device;      /* its evaluations' most frequent device, or NULL */
  char *surface;     /* its evaluations' most frequent surface, or NULL */
  int64_t llm_calls, llm_failed, tokens_in, tokens_out;
  double cost_usd;
};
int kv_store_run_facts(struct kv_store *s, int64_t run_id, struct kv_run_facts *out, char *err,
                       size_t errlen);
void kv_run_facts_release(struct kv_run_facts *f);

/* A node joined with its evaluation, in step order. */
struct kv_node_detail {
  int64_t id, parent_id, eval_id, created_unix;
  int step;
  const char *action, *params, *verdict, *plan, *source_hash;
  double speedup, reward;
  int64_t source_bytes;
  /* with_results only (else NULL, -1): the evaluation's detail and verdict JSON */
  const char *detail, *result_json;
  double median_us;
};
int kv_store_run_node_details(struct kv_store *s, int64_t run_id, int with_results,
                              int (*cb)(void *arg, const struct kv_node_detail *d), void *arg,
                              char *err, size_t errlen);

/* A run's LLM calls in id order, without their request and response bodies. */
struct kv_llm_call_brief {
  int64_t id, node_id, created_unix, input_tokens, output_tokens;
  const char *role, *provider, *model, *status, *error;
  int http_status, attempts;
  double latency_s, cost_usd;
};
int kv_store_run_llm_calls(struct kv_store *s, int64_t run_id,
                           int (*cb)(void *arg, const struct kv_llm_call_brief *c), void *arg,
                           char *err, size_t errlen);

/* The rules that this run's evaluations gave rise to (or were seen again
 * by), in id order: count is the rule's count across every run; run_evals and
 * evals ("12 15 31", ascending) are this run's evaluations behind it. */
struct kv_run_rule {
  int64_t id, created_unix, updated_unix;
  const char *text, *origin, *evals;
  int count, run_evals;
};
int kv_store_run_rules(struct kv_store *s, int64_t run_id,
                       int (*cb)(void *arg, const struct kv_run_rule *r), void *arg, char *err,
                       size_t errlen);

/* ---- rules provenance (lib/store/rules_meta.c) ---- */
/* The memory of rules beyond schema v4's rows: scope, flags, evidence that
 * means the same in every store, merged phrasings and the judge's verdicts;
 * and the adaptation stage's records (kevo synthesize, kevo adapt). */

/* This store's random id (32 hex digits, made by migration 6): evidence from
 * its evaluations is keyed "STORE_ID:EVAL_ID". */
int kv_store_id(struct kv_store *s, char out[33], char *err, size_t errlen);

/* A rule with its scope and flag. surface/arch NULL: any; flag NULL: it is
 * injected (else why not: "contradicted: ...", "noisy: ..."); aliases: the
 * phrasings merged into it, one per line, or NULL. */
struct kv_rule_meta {
  int64_t id;
  char *text, *origin, *surface, *arch, *flag, *flag_key, *aliases;
  int count, nevidence;
  int64_t created_unix, updated_unix;
};
/* Every rule in id order; free with kv_rule_metas_free. */
int kv_store_rules_meta(struct kv_store *s, struct kv_rule_meta **rows, int *n, char *err,
                        size_t errlen);
void kv_rule_metas_free(struct kv_rule_meta *rows, int n);

/* One item of a rule's evidence: an evaluation that produced or confirmed
 * it. key is global ("STORE_ID:EVAL_ID" for an evaluation of some store,
 * "legacy:..." for counts kept from before schema 6, "import:..." for a
 * count a file gave without evidence); weight is how many occurrences it
 * stands for. eval_id is this store's evaluation (0: none here). The other
 * fields describe it (NULL: unknown). */
struct kv_rule_evidence {
  const char *key;
  int weight;
  int64_t eval_id;
  const char *task, *spec_hash, *source_hash, *verdict, *surface, *arch, *model;
  int64_t created_unix;
};
/* A new rule (count 0 before its evidence) or an existing one (rule_id > 0)
 * gains evidence, in one transaction. With ev->eval_id > 0 and no key, the
 * key is STORE_ID:EVAL_ID and task, hashes, verdict, surface and the model of
 * the run come from the store. An item already held keeps the larger weight:
 * the count grows by what is new (*added), so the same evidence twice adds
 * nothing. The evaluation is linked in rule_evals. When the rule's arch
 * differs from the evidence's, the rule's arch becomes NULL (seen on
 * several). ev NULL: legacy_add occurrences with no evaluation, kept as one
 * item "legacy:STORE_ID:RULE_ID" whose weight grows. *id gets the rule. */
struct kv_rule_new {
  const char *text, *origin, *surface, *arch;
};
int kv_store_rule_note(struct kv_store *s, int64_t rule_id, const struct kv_rule_new *r,
                       const struct kv_rule_evidence *ev, int legacy_add, int64_t *id, int *added,
                       char *err, size_t errlen);
/* The rule that holds evidence `key`: 1 (*rule_id set), 0 none, -1 error. */
int kv_store_rule_by_evidence(struct kv_store *s, const char *key, int64_t *rule_id, char *err,
                              size_t errlen);
/* A rule's evidence, oldest first; cb returns non-zero to stop. Strings are
 * borrowed for the call. Returns the number visited or -1. */
int kv_store_rule_evidence(struct kv_store *s, int64_t rule_id,
                           int (*cb)(void *arg, const struct kv_rule_evidence *e), void *arg,
                           char *err, size_t errlen);
/* Sets (flag non-NULL) or clears a rule's flag; key: the global key of what
 * flagged it (an accepted evaluation), or NULL. */
int kv_store_rule_set_flag(struct kv_store *s, int64_t rule_id, const char *flag, const char *key,
                           char *err, size_t errlen);
/* Records `text` as a phrasing of rule_id (how: "words", "judge", "import";
 * call_id: the judge's call or 0). Idempotent. */
int kv_store_rule_alias(struct kv_store *s, int64_t rule_id, const char *text, const char *how,
                        int64_t call_id, char *err, size_t errlen);
/* Merges rule `from` into rule `into`: its evidence (an item both hold keeps
 * the larger weight), its evaluations and its phrasings move, its text
 * becomes a phrasing of `into`, the counts add up (less what both held), and
 * `from` is deleted; a flag on either stays on `into`. One transaction. */
int kv_store_rule_merge(struct kv_store *s, int64_t into, int64_t from, const char *how,
                        int64_t call_id, char *err, size_t errlen);
/* The judge's verdict on two phrasings (order does not matter): 1 found
 * (*same: 1, 0, or -1 unclear), 0 never asked, -1 error. */
int kv_store_rule_judgement(struct kv_store *s, const char *a, const char *b, int *same, char *err,
                            size_t errlen);
int kv_store_rule_judgement_put(struct kv_store *s, const char *a, const char *b, int same,
                                int64_t call_id, char *err, size_t errlen);
/* Accepted evaluations (verdict ok) with id > after_id, with their source
 * text and task name (surface NULL: any); cb returns non-zero to stop. */
int kv_store_accepted_sources(struct kv_store *s, const char *surface, int64_t after_id,
                              int (*cb)(void *arg, int64_t eval_id, const char *task,
                                        const char *surface, const char *source),
                              void *arg, char *err, size_t errlen);
/* The entry names of every task in the store (rules naming one are
 * task-specific); cb as above. */
int kv_store_task_entries(struct kv_store *s, int (*cb)(void *arg, const char *entry), void *arg,
                          char *err, size_t errlen);
/* Evidence from the evaluations of a bench's runs: per item, the rule, the
 * task and step of the node, the verdict. In rule, then evaluation order. */
struct kv_bench_rule_item {
  int64_t rule_id, eval_id;
  const char *task, *verdict;
  int step;
};
int kv_store_bench_rule_items(struct kv_store *s, int64_t bench_id,
                              int (*cb)(void *arg, const struct kv_bench_rule_item *it), void *arg,
                              char *err, size_t errlen);
/* A bench's candidates: evaluated nodes, accepted ones, failures. */
int kv_store_bench_node_counts(struct kv_store *s, int64_t bench_id, int *nodes, int *accepted,
                               char *err, size_t errlen);

/* kevo synthesize: a synthesis (attempts at new practice tasks into out_dir)
 * and its attempts. status: synthesis "running" | "done"; attempt "pending"
 * (no reply yet), "replied" (reply_hash: the module, in sources), "accepted"
 * (task_dir), "refused" (cause, detail). */
struct kv_synth_attempt_row {
  int64_t id, synthesis_id, llm_call_id;
  int ord;
  char *status, *asked, *reply_hash, *name, *cause, *detail, *module_key, *graph_key, *task_dir;
  double seconds;
};
/* The latest synthesis of out_dir with this configuration, finished or not
 * (unless fresh), else a new one with n pending attempts (*created 1). */
int kv_store_synthesis_open(struct kv_store *s, const char *out_dir, const char *config_json, int n,
                            int fresh, int64_t *id, int *created, char *err, size_t errlen);
int kv_store_synthesis_set_status(struct kv_store *s, int64_t id, const char *status, char *err,
                                  size_t errlen);
int kv_store_synth_attempts(struct kv_store *s, int64_t synthesis_id,
                            struct kv_synth_attempt_row **rows, int *n, char *err, size_t errlen);
void kv_synth_attempt_rows_free(struct kv_synth_attempt_row *rows, int n);
/* Writes every field of row (row->id names it). */
int kv_store_synth_attempt_update(struct kv_store *s, const struct kv_synth_attempt_row *row,
                                  char *err, size_t errlen);

/* kevo adapt: the latest adaptation of a suite (*id 0: none; *bench_id 0:
 * not yet known; status malloc'd), a new one, and its progress. */
int kv_store_adaptation_latest(struct kv_store *s, const char *suite_dir, int64_t *id,
                               int64_t *bench_id, char **status, char **summary_json, char *err,
                               size_t errlen);
int kv_store_adaptation_new(struct kv_store *s, const char *suite_dir, int64_t *id, char *err,
                            size_t errlen);
int kv_store_adaptation_update(struct kv_store *s, int64_t id, int64_t bench_id, const char *status,
                               const char *summary_json, char *err, size_t errlen);

/* ---- analyses (lib/store/analysis.c) ---- */
/* kevo analyze (schema v7): an analysis of a recorded run, its samples (one
 * row per (node, condition, sample), written as each completes, so a killed
 * analysis resumes), and gate results by source hash. */

/* The latest analysis of run_id with this experiment and config, finished
 * or not (unless fresh), else a new one (*created 1). */
int kv_store_analysis_open(struct kv_store *s, int64_t run_id, const char *experiment,
                           const char *config_json, int fresh, int64_t *id, int *created, char *err,
                           size_t errlen);
int kv_store_analysis_set_status(struct kv_store *s, int64_t id, const char *status, char *err,
                                 size_t errlen);
/* An analysis as recorded (no LLM needed to read it back). */
struct kv_analysis_row {
  int64_t id, run_id;
  char *experiment, *config_json, *status; /* status: "running" or "done" */
  int64_t created_unix, updated_unix;
};
/* Reads analysis id (<= 0: the most recent); free with kv_analysis_row_release. */
int kv_store_analysis_get(struct kv_store *s, int64_t id, struct kv_analysis_row *out, char *err,
                          size_t errlen);
void kv_analysis_row_release(struct kv_analysis_row *r);
struct kv_analysis_sample {
  int64_t analysis_id, node_id;
  int cond, sample;
  const char *prompt_hash;
  int64_t call_id, plan_call_id; /* <= 0: none */
  const char *source_hash;       /* NULL: no code */
  const char *verdict;           /* a gate verdict, or "no_code" */
  double speedup;                /* < 0: not accepted or not timed */
  unsigned plan_tags;
  int gate_cached;
};
/* Inserts one sample (an existing one is kept: idempotent). */
int kv_store_analysis_sample_put(struct kv_store *s, const struct kv_analysis_sample *r, char *err,
                                 size_t errlen);
/* Every sample of an analysis in (node, cond, sample) order; strings
 * borrowed for the call; cb returns non-zero to stop. Returns the number
 * visited or -1. */
int kv_store_analysis_samples(struct kv_store *s, int64_t analysis_id,
                              int (*cb)(void *arg, const struct kv_analysis_sample *r), void *arg,
                              char *err, size_t errlen);
/* A sample of this analysis at node_id with the same prompt and sample
 * index (a coalition whose players have no data there asks the same): 1
 * found (*out filled; its verdict and source hash copied into the buffers
 * given), 0 none, -1 error. */
int kv_store_analysis_same_prompt(struct kv_store *s, int64_t analysis_id, int64_t node_id,
                                  const char *prompt_hash, int sample,
                                  struct kv_analysis_sample *out, char verdict[32],
                                  char source_hash[65], char *err, size_t errlen);
/* Gate results by source: 1 found (verdict copied, *speedup), 0 none, -1 error. */
int kv_store_analysis_gate_get(struct kv_store *s, int64_t task_id, const char *surface, int timed,
                               const char *source_hash, char *verdict, size_t vcap, double *speedup,
                               char *err, size_t errlen);
/* Online attribution (kevo run --online-attribution): appends " | note" to
 * a node's params, the decision its outcome caused with the estimate behind
 * it (shown wherever params are: kevo runs show, kevo report). */
int kv_store_node_note(struct kv_store *s, int64_t node_id, const char *note, char *err,
                       size_t errlen);
int kv_store_analysis_gate_put(struct kv_store *s, int64_t task_id, const char *surface, int timed,
                               const char *source_hash, const char *verdict, double speedup,
                               int64_t eval_id, char *err, size_t errlen);

/* ---- KLineage (lib/store/skills.c, schema v8) ---- */
/* A lineage (an expert kernel walked backward) with its steps and the skill
 * cards it produced, written in one transaction: all of it or nothing. */
struct kv_lineage_step_rec {
  int ord;
  const char *mechanism, *verdict, *detail, *parent_hash, *child_hash, *child_source, *forward_diff,
      *result_json, *paired_json, *skill_uid;
  double median_us, speedup; /* < 0: not timed */
  int accepted, admitted;
};
struct kv_lineage_rec {
  const char *key, *mode, *surface, *arch, *device, *expert_path, *expert_hash, *expert_source,
      *expert_json;
  int64_t task_id;
  double expert_us;
  int nsteps;
  const struct kv_lineage_step_rec *steps;
};
/* A card: uid names it in every store; card_json is the whole card. */
struct kv_skill_rec {
  const char *uid, *name, *intent, *surface, *arch, *status, *card_json, *search_text;
  double speedup;
  const char *log_json; /* a new card's verification log: one JSON entry per line, or NULL */
};
int kv_store_lineage_put(struct kv_store *s, const struct kv_lineage_rec *L,
                         const struct kv_skill_rec *skills, int nskills, int64_t *id, char *err,
                         size_t errlen);
/* Cards in one transaction: a new uid is added (*added), a known one has
 * its card replaced (*updated) unless the card is the same; its log stays. */
int kv_store_skills_put(struct kv_store *s, const struct kv_skill_rec *skills, int n, int *added,
                        int *updated, char *err, size_t errlen);
struct kv_skill_row {
  int64_t id, created_unix, updated_unix;
  const char *uid, *name, *status, *card_json, *retired; /* retired: why, or NULL */
  double speedup;
  int uses, failures; /* verification-log entries after admission; failed ones */
};
/* Every card in id order (retired ones only with with_retired); strings
 * borrowed for the call; cb returns non-zero to stop. Returns the count or -1. */
int kv_store_skills_each(struct kv_store *s, int with_retired,
                         int (*cb)(void *ud, const struct kv_skill_row *r), void *ud, char *err,
                         size_t errlen);
/* Retires (reason non-NULL) or restores a card by uid or id: 0, 1 when there
 * is no such card, -1 error. */
int kv_store_skill_retire(struct kv_store *s, const char *uid_or_id, const char *reason, char *err,
                          size_t errlen);
/* Appends one entry to a card's verification log (verdict: the gate's). */
int kv_store_skill_log_add(struct kv_store *s, const char *uid, const char *entry_json,
                           const char *verdict, char *err, size_t errlen);
int kv_store_skill_log(struct kv_store *s, const char *uid,
                       int (*cb)(void *ud, const char *entry_json, int64_t created), void *ud,
                       char *err, size_t errlen);
/* FTS5 relevance of every card to the words of `text` (bm25, higher is
 * better): cb per card that matches. *fts 1 when SQLite has FTS5, else 0
 * (and no ranks). Returns the count or -1. */
int kv_store_skills_rank(struct kv_store *s, const char *text,
                         int (*cb)(void *ud, const char *uid, double rank), void *ud, int *fts,
                         char *err, size_t errlen);
/* A lineage's facts and steps (id <= 0: the latest); strings borrowed. */
int kv_store_lineage_steps(struct kv_store *s, int64_t id,
                           int (*cb)(void *ud, const char *task, const char *surface,
                                     const char *device, int64_t lineage_id,
                                     const struct kv_lineage_step_rec *st),
                           void *ud, char *err, size_t errlen);

/* Opens an existing store for reading only (kevo runs, best, report ...):
 * never creates a file or a directory, never writes; a missing path, a file
 * that is not a kevo store or a damaged header is an error naming the path
 * and the fix. An older schema is upgraded first (as kv_store_open does). */
int kv_store_open_readonly(const char *path, struct kv_store **out, char *err, size_t errlen);
/* Who runs a run: kv_store_run_create and kv_store_run_set_status(...,
 * "running") take an exclusive lock on "DB-run<ID>.lock" for this handle (the
 * latter fails, naming the owner's pid, while another process holds it);
 * any other status, or kv_store_close, lets go. A run whose status is
 * "running" but whose lock nobody holds (its process was killed) reads back
 * from kv_store_run_get and kv_store_runs with status "killed". */

/* Replaces a run's configuration (kevo resume --steps: the new total). */
int kv_store_run_set_config(struct kv_store *s, int64_t run_id, const char *config_json, char *err,
                            size_t errlen);

#endif
