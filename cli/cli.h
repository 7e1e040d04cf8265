/* kevo's command line: one file per command, registered in main.c's table. */
#ifndef KEVO_CLI_H
#define KEVO_CLI_H

#include "kevo/calib.h"
#include "kevo/gate.h"
#include "kevo/llm.h"
#include "kevo/run.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>

struct kv_command {
  const char *name;
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
  const char *usage;
  const char *summary;
};

int cmd_eval(int argc, char **argv);
int cmd_task(int argc, char **argv);
/* The entry a candidate of t on `surface` defines, each line indented
 * (malloc'd; cmd_task.c). */
struct kv_task;
char *cli_entry_declaration(const struct kv_task *t, const char *surface);
int cmd_doctor(int argc, char **argv);
int cmd_device(int argc, char **argv);
int cmd_llm(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_best(int argc, char **argv);
int cmd_rules(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_runs_show(int argc, char **argv);  /* kevo runs show (cmd_report.c) */
int cmd_synthesize(int argc, char **argv); /* cmd_adapt.c */
int cmd_adapt(int argc, char **argv);
int cmd_analyze(int argc, char **argv); /* cmd_analyze.c */
int cmd_lineage(int argc, char **argv); /* cmd_skills.c */
int cmd_skills(int argc, char **argv);
int cmd_profile(int argc, char **argv);  /* cmd_profile.c */
int cmd_sanitize(int argc, char **argv); /* cmd_profile.c */
int cmd_presets(int argc, char **argv);  /* preset.c */
/* --preset NAME (preset.c): the preset's options put before the user's;
 * *own, when set, is the new argv for the caller to free. 0, or 2. */
int cli_preset_expand(int *argc, char ***argv, char ***own);

/* kevo's settings from the environment (README, "Settings": KEVO_WORKER, KEVO_NVCC,
 * KEVO_CUDA_ARCH, KEVO_DB, KEVO_CACHE_DIR), read once by main before any
 * command runs and passed down to the library as options; NULL where unset
 * or empty (the library's default). */
struct cli_env {
  const char *worker;    /* KEVO_WORKER: kv_gate_opts.worker_path */
  const char *nvcc;      /* KEVO_NVCC: kv_gate_opts.nvcc_path */
  const char *cuda_arch; /* KEVO_CUDA_ARCH: kv_gate_opts.cuda_arch */
  const char *db;        /* KEVO_DB: the store, unless --db names one */
  const char *cache_dir; /* KEVO_CACHE_DIR: kv_gate_opts.cache_dir and kevo's own files */
};
extern struct cli_env cli_env;
void cli_env_read(void);
/* kv_gate_opts_default with the environment's settings (cli_env). */
void cli_gate_opts_default(struct kv_gate_opts *o);
/* The cache directory: KEVO_CACHE_DIR, else kv_cache_dir's default. 0, or -1. */
int cli_cache_dir(char *out, size_t cap);
/* The store's path: KEVO_DB, else kv_store_default_path's. 0, or -1. */
int cli_store_path(char *out, size_t cap);

/* "kevo: ..." on stderr; returns 2 (kevo could not judge / bad usage). */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A message from below, as kevo prints it: a leading "kevo: " (and one
 * after ": ", "; " or "(", a child kevo's words) dropped, in place. */
void cli_tidy(char *msg);
/* Where msg says a reference or baseline does not compile, its compiler log
 * with that file's name for kevo's copy (candidate.c); malloc'd, else NULL. */
char *cli_own_names(const char *msg);
/* kevo help CMD's option lines (cli/help.c): 1 when CMD has them. */
int cli_help_options(FILE *f, const char *cmd);
/* Usage error naming the command's usage line. */
int cli_usage(const char *cmd);
/* Loads the CPU calibration from the cache or measures it (and says so on
 * stderr). 0 on success. */
int cli_calib(struct kv_calib *c, int force, int quiet);
struct kv_store;
/* Opens the store at db (NULL: $KEVO_DB or the default path); 0, or 2 after
 * saying why on stderr. */
int cli_open_store(const char *db, struct kv_store **s);
/* For commands that only read: an existing store, opened read-only (a
 * missing one is an error, never created). */
int cli_open_store_readonly(const char *db, struct kv_store **s);
/* Parses a positive number for a flag or fails with a message. */
int cli_number(const char *flag, const char *text, double *out);
/* --timing-ci X: adaptive timing's target, 0 or "off" for a fixed budget. */
int cli_timing_ci(const char *text, double *out);
/* --timing kevo|kernelbench (cmd_run.c): kv_gate_opts.timing_method. */
int cli_timing_method(const char *text, int *out);
/* Parses a whole number in [lo, hi] for a flag (or a run number) or fails
 * with a message. */
int cli_integer(const char *flag, const char *text, long long lo, long long hi, long long *out);
/* 1 when path can be written (an existing file, or a new one in a writable
 * directory): checked before long work whose result goes there. */
int cli_writable(const char *path);
/* 0 when mode is a torch.compile mode kevo can time as a baseline, else 2
 * after saying which are. */
int cli_torch_compile_mode(const char *mode);

/* What `kevo run` and `kevo bench` share: the options of a search. */
struct kv_llm;
struct kv_run_progress;
struct cli_run_args {
  struct kv_gate_opts g;
  struct kv_run_config c;
  struct kv_llm_flags f;
  const char *db, *config;
  int llm_flags;       /* a provider, base URL or model was named */
  struct kv_llm *llm;  /* after cli_run_prepare: the client, or NULL (tune) */
  struct kv_calib cal; /* cpu: the ceilings g.calib points to */
  int skills;          /* --skills on: the skill step (cmd_skills.c's hooks) */
};
void cli_run_args_init(struct cli_run_args *r);
/* --skills on: the hooks of the search's skill step (cmd_skills.c); ctx
 * lives as long as the run. */
struct cli_skill_ctx {
  struct kv_store *s;
  const struct kv_task *t;
  const char *surface;
};
int cli_skill_pick(void *ud, const char *parent_code, const char *device, const int64_t *path,
                   int npath, char **card, char uid[256]);
void cli_skill_used(void *ud, const char *uid, int64_t run_id, int64_t node_id, int64_t eval_id,
                    const char *verdict, double speedup, double parent_speedup);
/* Opens an executor (--executor, --gpus, --executor-config) and says how
 * many servers came up: 0, or the exit code after saying why. */
struct kv_exec;
int cli_exec_open(const char *name, const char *gpus, const char *config_path, const char *surface,
                  int concurrency, struct kv_exec **out);
/* One line on stderr: the executor's jobs, its compile pool and how busy its
 * servers were (nothing for NULL). */
void cli_exec_summary(struct kv_exec *x);
/* Consumes argv[*i] (and its value) when it is a search option: 1; 0 when it
 * is not one; -1 after saying why it is bad. */
int cli_run_option(struct cli_run_args *r, int argc, char **argv, int *i);
/* Checks the options, makes the LLM client (model_json: what a resumed run
 * needs to find it again), picks the default strategy and calibrates the cpu
 * surface: 0, or the exit code after saying why. */
int cli_run_prepare(struct cli_run_args *r, struct kv_store *s, char *model_json, size_t mj_cap);
/* The options that name a model and its spending, shared by every command
 * that talks to one: --provider, --base-url, --model (each sets *named),
 * --api-key-env, --budget-usd and --config. Consumes argv[*i] and its value
 * when it is one: 1; 0 when not; -1 after saying why it is bad. */
int cli_llm_option(struct kv_llm_flags *f, int *named, const char **config, int argc, char **argv,
                   int *i);
/* The model a run was recorded with (its configuration's "model", found
 * again by entry name, or by provider, id and URL), into f unless the command
 * line named one. */
void cli_llm_flags_of_run(struct kv_llm_flags *f, int named, json_t *run_config);
/* The LLM client the flags and config files name: 0 with *out set, 0 with
 * *out NULL when nothing names a model and flags_given is 0, or the exit code
 * after saying why. model_json (may be NULL): what a resumed run needs to find
 * the model again. */
int cli_make_llm(const struct kv_llm_flags *f, const char *config, int flags_given,
                 struct kv_store *s, struct kv_llm **out, char *model_json, size_t mj_cap);
/* The progress line of a run, on stderr. */
void cli_run_progress(void *ud, const struct kv_run_progress *p);
/* SIGINT: the first ends the search after the current step, a second leaves. */
extern volatile sig_atomic_t cli_stop_flag;
void cli_on_sigint(int sig);

#endif
