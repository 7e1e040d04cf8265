/* kevo lineage (walk an annotated expert backward into skills) and kevo
 * skills (list, show, export, import, retire, match). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kevo/rejudge.h"
#include "kevo/preset.h"
#include "kevo/rules.h"
#include "kevo/skills.h"
#include "kevo/store.h"
#include "kevo/util.h"
#include "kevo/surface.h"

static void progress(void *ud, const char *line) {
  (void)ud;
  fprintf(stderr, "%s\n", line);
}

/* kevo lineage extract's options. */
struct extract_args {
  struct kv_gate_opts g;
  struct kv_lineage_opts o;
  struct kv_llm_flags f;
  int json, llm_flags, retries, max_steps, resume;
  const char *db, *outfile, *pos[2], *config, *checkpoint;
  int npos;
};

static int on_off(const char *opt, const char *v, int *out) {
  if (!strcmp(v, "on") || !strcmp(v, "off")) {
    *out = !strcmp(v, "on");
    return 0;
  }
  return cli_fail("%s %s: give on or off", opt, v);
}

/* The walk's own options (after the preset): 1 taken, 0 not one, -1 bad. */
static int extract_walk_option(struct extract_args *x, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  long long n;
  double v;
  if (*i + 1 >= argc)
    return 0;
  if (!strcmp(a, "--audit"))
    return on_off(a, argv[++*i], &x->o.audit) ? -1 : 1;
  if (!strcmp(a, "--roundtrip"))
    return on_off(a, argv[++*i], &x->o.roundtrip) ? -1 : 1;
  if (!strcmp(a, "--require-preconditions"))
    return on_off(a, argv[++*i], &x->o.require_preconditions) ? -1 : 1;
  if (!strcmp(a, "--roundtrip-rule")) {
    const char *r = argv[++*i];
    if (strcmp(r, "every") && strcmp(r, "interval"))
      return cli_fail("--roundtrip-rule %s: give every (KLineage: each trial) or interval "
                      "(kevo: the 95%% interval of the mean ratio)",
                      r),
             -1;
    x->o.roundtrip_every = !strcmp(r, "every");
    return 1;
  }
  if (!strcmp(a, "--roundtrip-ratio")) {
    if (cli_number(a, argv[++*i], &v))
      return -1;
    if (!(v > 0 && v <= 2))
      return cli_fail("--roundtrip-ratio %g: give a ratio in (0, 2] (KLineage: 0.99)", v), -1;
    x->o.roundtrip_ratio = v;
    return 1;
  }
  if (!strcmp(a, "--max-rejections")) {
    if (cli_integer(a, argv[++*i], 0, 1000, &n))
      return -1;
    x->o.max_rejections = (int)n;
    return 1;
  }
  if (!strcmp(a, "--retries")) {
    if (cli_integer("--retries", argv[++*i], 0, 20, &n))
      return -1;
    x->retries = (int)n;
    return 1;
  }
  if (!strcmp(a, "--max-steps")) {
    if (cli_integer("--max-steps", argv[++*i], 1, KV_MECH_MAX, &n))
      return -1;
    x->max_steps = (int)n;
    return 1;
  }
  return 0;
}

static int extract_option(struct extract_args *x, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  double v;
  long long n;
  int k = cli_llm_option(&x->f, &x->llm_flags, &x->config, argc, argv, i);
  if (k != 0)
    return k < 0 ? -1 : 0;
  if ((k = extract_walk_option(x, argc, argv, i)) != 0)
    return k < 0 ? -1 : 0;
  if (!strcmp(a, "--preset") && *i + 1 < argc)
    (*i)++; /* read before the others */
  else if (!strcmp(a, "--resume")) {
    x->resume = 1;
    if (*i + 1 < argc && strlen(argv[*i + 1]) > 5 &&
        !strcmp(argv[*i + 1] + strlen(argv[*i + 1]) - 5, ".json"))
      x->checkpoint = argv[++*i];
  } else if (!strcmp(a, "--json"))
    x->json = 1;
  else if (!strcmp(a, "--no-timing"))
    x->g.timing = 0;
  else if (!strcmp(a, "--surface") && *i + 1 < argc)
    x->g.surface = argv[++*i];
  else if (!strcmp(a, "--db") && *i + 1 < argc)
    x->db = argv[++*i];
  else if (!strcmp(a, "-o") && *i + 1 < argc)
    x->outfile = argv[++*i];
  else if (!strcmp(a, "--pairs") && *i + 1 < argc) {
    if (cli_integer("--pairs", argv[++*i], 0, KV_PAIRS_MAX, &n))
      return -1;
    if (n == 1)
      return cli_fail("--pairs 1: a paired test needs at least 2 pairs (0: none)"), -1;
    x->o.pairs = (int)n;
  } else if (!strcmp(a, "--seed") && *i + 1 < argc) {
    if (cli_integer("--seed", argv[++*i], 1, 1LL << 40, &n))
      return -1;
    x->o.seed = (uint64_t)n;
  } else if (!strcmp(a, "--budget") && *i + 1 < argc) {
    if (cli_number("--budget", argv[++*i], &v))
      return -1;
    x->g.time_budget_s = v;
  } else if (!strcmp(a, "--prompts") && *i + 1 < argc) {
    x->o.prompt_dir = argv[++*i];
    if (access(x->o.prompt_dir, R_OK | X_OK) != 0)
      return cli_fail("--prompts %s: not a readable directory", x->o.prompt_dir), -1;
  } else if (a[0] == '-' && a[1])
    return cli_fail("lineage: unknown or incomplete option '%s'", a), cli_usage("lineage"), -1;
  else if (x->npos < 2)
    x->pos[x->npos++] = a;
  else
    return cli_fail("lineage: unexpected argument '%s'", a), cli_usage("lineage"), -1;
  return 0;
}

/* --preset NAME: the options its table sets for kevo lineage, parsed before
 * the user's (an explicit option wins). */
static int extract_preset(struct extract_args *x, const char *name) {
  if (!strcmp(name, "kevo"))
    return 0;
  const struct kv_preset *p = kv_preset_find(name);
  const char *args[64];
  int n = p ? kv_preset_args(p, "lineage", args, 62) : -1;
  if (n <= 0)
    return cli_fail("--preset %s: kevo lineage extract takes kevo or klineage", name);
  char *argv[66] = {"kevo", "extract"}, said[1024] = "";
  for (int i = 0; i < n; i++) {
    argv[2 + i] = (char *)args[i];
    size_t u = strlen(said);
    snprintf(said + u, sizeof said - u, " %s", args[i]);
  }
  fprintf(stderr, "kevo: --preset %s:%s (an option you give wins)\n", name, said);
  for (int i = 2; i < n + 2; i++)
    if (extract_option(x, n + 2, argv, &i) < 0)
      return 2;
  return 0;
}

static int extract_args_parse(struct extract_args *x, int argc, char **argv) {
  memset(x, 0, sizeof *x);
  cli_gate_opts_default(&x->g);
  x->o.pairs = 6;
  x->o.seed = 1;
  x->o.audit = x->o.roundtrip = 1;
  x->o.roundtrip_ratio = KV_ROUNDTRIP_MIN_RATIO;
  x->retries = 2;
  x->max_steps = 12;
  kv_llm_flags_init(&x->f);
  for (int i = 2; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--preset") && extract_preset(x, argv[i + 1]) != 0)
      return 2;
  for (int i = 2; i < argc; i++)
    if (extract_option(x, argc, argv, &i) < 0)
      return 2;
  if (x->resume ? x->npos > 2 : x->npos != 2) {
    cli_fail("lineage extract: needs a task directory and an expert kernel (or --resume)");
    return cli_usage("lineage");
  }
  return 0;
}

/* The latest checkpoint in dir (by modification time) into out. */
static int latest_checkpoint(const char *dir, char *out, size_t cap) {
  DIR *d = opendir(dir);
  time_t best = 0;
  out[0] = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    char path[PATH_MAX];
    struct stat sb;
    if (n < 6 || strcmp(e->d_name + n - 5, ".json"))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &sb) == 0 && sb.st_mtime >= best) {
      best = sb.st_mtime;
      snprintf(out, cap, "%s", path);
    }
  }
  if (d)
    closedir(d);
  return out[0] ? 0 : -1;
}

/* An interrupted walk: what it has goes to the store as a partial lineage
 * (no cards); the checkpoint continues it. */
static void extract_interrupted(struct kv_store *s, const struct kv_task *t,
                                const struct kv_lineage *L, const char *ckdir) {
  struct kv_lineage *P = malloc(sizeof *P);
  char err[2048];
  int64_t lid = 0;
  json_t *none = json_array();
  if (P) {
    memcpy(P, L, sizeof *P);
    snprintf(P->mode, sizeof P->mode, "llm-partial");
    snprintf(P->key, sizeof P->key, "%.26sp%05d", L->key, L->nsteps * 100 + L->rejections % 100);
    if (kv_lineage_save(s, t, P, none, &lid, err, sizeof err) != 0)
      fprintf(stderr, "kevo: warning: the partial lineage was not recorded: %s\n", err);
  }
  free(P);
  json_decref(none);
  fprintf(stderr,
          "kevo: the walk stopped: %s; %d proposals so far (%d steps taken) are kept: lineage %lld "
          "(llm-partial) and %s/%s.json; continue with: kevo lineage extract --resume %s/%s.json "
          "and the model's options\n",
          L->stop, L->nsteps, L->accepted_steps, (long long)lid, ckdir, L->key, ckdir, L->key);
}

static int extract_output(const struct extract_args *x, const struct kv_task *t,
                          const struct kv_lineage *L, json_t *cards, int64_t lid) {
  char err[2048];
  if (x->outfile) {
    json_t *f = json_pack("{s:i,s:I,s:O}", "kevo_skills", KV_SKILLS_SCHEMA, "exported",
                          (json_int_t)kv_unix_time(), "skills", cards);
    char *text = json_dumps(f, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(f);
    int wrc = text ? kv_write_file(x->outfile, text, strlen(text), err, sizeof err) : -1;
    free(text);
    if (wrc != 0)
      return cli_fail("-o %s: %s", x->outfile, err);
  }
  int admitted = 0;
  for (size_t i = 0; i < json_array_size(cards); i++)
    admitted += json_is_true(json_object_get(json_array_get(cards, i), "admitted"));
  if (x->json) {
    json_t *r =
        json_pack("{s:I,s:s,s:O}", "lineage", (json_int_t)lid, "key", L->key, "skills", cards);
    char *text = json_dumps(r, JSON_INDENT(2) | JSON_SORT_KEYS);
    printf("%s\n", text ? text : "{}");
    free(text);
    json_decref(r);
    return 0;
  }
  int few = x->o.pairs >= 2 && x->o.pairs < kv_paired_min_pairs() && x->g.timing;
  printf("lineage %lld of %s (%s, %s, %s): %d steps, %zu accepted, %d admitted as skills%s%s%s\n",
         (long long)lid, t->name, L->mode, L->surface, L->device, L->nsteps, json_array_size(cards),
         admitted, few ? " (too few pairs to admit any)" : "", x->outfile ? "; cards in " : "",
         x->outfile ? x->outfile : "");
  if (L->termination[0])
    printf("termination: %s (%s)\n", L->termination, L->stop);
  return 0;
}

/* The walk itself: 0 recorded, 3 interrupted (resumable), 2 failed. */
static int extract_walk(struct extract_args *x, struct kv_task *t, struct kv_store *s,
                        struct kv_llm *llm, const char *ckdir) {
  char err[4096];
  struct kv_lineage *L = calloc(1, sizeof *L);
  json_t *cards = NULL;
  int code = 2, rc;
  if (!L)
    return cli_fail("out of memory");
  if (x->resume)
    rc = kv_lineage_resume_llm(t, x->checkpoint, &x->o, llm, x->retries, x->max_steps, L, err,
                               sizeof err);
  else if (llm)
    rc =
        kv_lineage_walk_llm(t, x->pos[1], &x->o, llm, x->retries, x->max_steps, L, err, sizeof err);
  else
    rc = kv_lineage_walk(t, x->pos[1], &x->o, L, err, sizeof err);
  if (rc < 0) {
    cli_fail("%s", err);
  } else if (rc == 1) {
    extract_interrupted(s, t, L, ckdir);
    code = 3;
  } else {
    cards = kv_lineage_cards(t, L);
    int64_t lid = 0;
    if (kv_lineage_save(s, t, L, cards, &lid, err, sizeof err) != 0)
      cli_fail("the lineage was not recorded: %s", err);
    else if (extract_output(x, t, L, cards, lid) == 0) {
      code = 0;
      if (!strcmp(L->mode, "llm")) {
        char ck[PATH_MAX];
        snprintf(ck, sizeof ck, "%s/%s.json", ckdir, L->key);
        unlink(ck); /* recorded: nothing left to resume */
      }
    }
  }
  json_decref(cards);
  if (rc >= 0)
    kv_lineage_release(L);
  free(L);
  return code;
}

static int lineage_extract(int argc, char **argv) {
  struct extract_args x;
  int prc = extract_args_parse(&x, argc, argv);
  if (prc)
    return prc;
  const struct kv_surface *sf = kv_surface_find(x.g.surface);
  if (!sf)
    return cli_fail("--surface %s: not a surface; use one of %s", x.g.surface, kv_surface_names());
  if (x.o.pairs >= 2 && x.o.pairs < kv_paired_min_pairs() && x.g.timing)
    fprintf(stderr,
            "kevo: warning: --pairs %d: a paired test on %d pairs can never be significant (its "
            "Wilcoxon p is %.3g at best, not below %.2g); the walk runs, but no step can be "
            "admitted as a skill: give --pairs %d or more\n",
            x.o.pairs, x.o.pairs, ldexp(2.0, -x.o.pairs), KV_SKILL_ALPHA, kv_paired_min_pairs());
  if (x.outfile && !cli_writable(x.outfile))
    return cli_fail("-o %s: cannot write there; give a writable path", x.outfile);
  char err[4096], cache[PATH_MAX], scratch[PATH_MAX], ckdir[PATH_MAX], ckpath[PATH_MAX],
      taskdir[PATH_MAX];
  if (cli_cache_dir(cache, sizeof cache) < 0)
    return cli_fail("cannot find a cache directory: set KEVO_CACHE_DIR");
  snprintf(ckdir, sizeof ckdir, "%s/lineage-walks", cache);
  if (kv_mkdirs(ckdir, 0700, err, sizeof err) < 0)
    return cli_fail("cannot make %s: %s", ckdir, err);
  if (x.resume && !x.checkpoint) {
    if (latest_checkpoint(ckdir, ckpath, sizeof ckpath) != 0)
      return cli_fail("--resume: no walk to continue in %s; give --resume FILE.json", ckdir);
    x.checkpoint = ckpath;
  }
  if (x.resume && x.npos == 0) {
    if (kv_lineage_checkpoint_task(x.checkpoint, taskdir, sizeof taskdir, err, sizeof err) != 0)
      return cli_fail("%s", err);
    x.pos[0] = taskdir;
  }
  if (x.resume && !x.llm_flags)
    return cli_fail("--resume: give the model's options (--provider/--base-url, --model) to go "
                    "on with");
  struct kv_task *t;
  if (kv_task_load(x.pos[0], &t, err, sizeof err) < 0)
    return cli_fail("%s", err);
  struct kv_calib cal;
  if (x.g.timing && !kv_surface_gpu(sf)) {
    if (cli_calib(&cal, 0, x.json) != 0) {
      kv_task_free(t);
      return 2;
    }
    x.g.calib = &cal;
  }
  struct kv_store *s;
  if (cli_open_store(x.db, &s) != 0) {
    kv_task_free(t);
    return 2;
  }
  if (kv_mkdtemp(cache, "lineage-", scratch, sizeof scratch, err, sizeof err) < 0) {
    kv_store_close(s);
    kv_task_free(t);
    return cli_fail("cannot make a scratch directory: %s", err[0] ? err : "set KEVO_CACHE_DIR");
  }
  x.o.gate = &x.g;
  x.o.scratch = scratch;
  x.o.checkpoint = ckdir;
  x.o.progress = x.json ? NULL : progress;
  struct kv_llm *llm = NULL;
  int code = 2;
  if (x.llm_flags && cli_make_llm(&x.f, x.config, 1, s, &llm, NULL, 0) != 0)
    goto out;
  code = extract_walk(&x, t, s, llm, ckdir);
out:
  kv_llm_free(llm);
  kv_rmtree(scratch);
  kv_store_close(s);
  kv_task_free(t);
  return code;
}

struct show_ctx {
  int n, markdown;
  int64_t id;
};

static int show_cb(void *ud, const char *task, const char *surface, const char *device, int64_t lid,
                   const struct kv_lineage_step_rec *st) {
  struct show_ctx *c = ud;
  if (c->n++ == 0) {
    c->id = lid;
    printf("lineage %lld: %s on %s (%s)\n\n", (long long)lid, task, surface, device ? device : "?");
    printf(c->markdown ? "| step | mechanism removed | verdict | simpler kernel, median us | "
                         "forward speedup [95%% CI], Wilcoxon p | admitted |\n"
                         "|---|---|---|---|---|---|\n"
                       : "step  %-22s %-16s %12s  %-26s %s\n",
           "mechanism", "verdict", "median us", "forward speedup [95% CI]", "admitted");
  }
  if (!st)
    return 0;
  char sp[96] = "-", med[32] = "-", adm[256];
  json_t *p = st->paired_json ? json_loads(st->paired_json, 0, NULL) : NULL;
  if (p)
    snprintf(sp, sizeof sp, "%.2fx [%.2f, %.2f] p=%.2g",
             json_number_value(json_object_get(p, "speedup")),
             json_number_value(json_object_get(p, "ci_lo")),
             json_number_value(json_object_get(p, "ci_hi")),
             json_number_value(json_object_get(p, "wilcoxon_p")));
  const char *why = p ? json_string_value(json_object_get(p, "why")) : NULL;
  if (why && !strncmp(why, "not admitted: ", 14) && !st->admitted)
    snprintf(adm, sizeof adm, "no (%s)", why + 14);
  else
    snprintf(adm, sizeof adm, "%s", !st->accepted ? "-" : st->admitted ? "yes" : "no");
  json_decref(p);
  if (st->median_us >= 0)
    snprintf(med, sizeof med, "%.1f", st->median_us);
  if (c->markdown)
    printf("| %d | %s | %s | %s | %s | %s |\n", st->ord, st->mechanism, st->verdict, med, sp, adm);
  else
    printf("%4d  %-22s %-16s %12s  %-26s %s\n", st->ord, st->mechanism, st->verdict, med, sp, adm);
  return 0;
}

static int cmd_lineage_show(int argc, char **argv) {
  const char *db = NULL;
  struct show_ctx c = {0};
  long long id = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc)
      db = argv[++i];
    else if (!strcmp(argv[i], "--markdown"))
      c.markdown = 1;
    else if (argv[i][0] != '-') {
      if (cli_integer("lineage show", argv[i], 1, 1LL << 50, &id))
        return 2;
    } else
      return cli_usage("lineage");
  }
  struct kv_store *s;
  if (cli_open_store(db, &s) != 0)
    return 2;
  char err[2048];
  int n = kv_store_lineage_steps(s, id, show_cb, &c, err, sizeof err);
  kv_store_close(s);
  if (n < 0)
    return cli_fail("%s", err);
  if (n == 0)
    return cli_fail(id ? "no lineage %lld in the store"
                       : "no lineage in the store%.0lld; run "
                         "kevo lineage extract TASK EXPERT",
                    id);
  return 0;
}

/* kevo lineage resolve EXPERT [--off A,B]: the kernel with those mechanisms off. */
static int lineage_resolve(int argc, char **argv) {
  const char *file = NULL, *off = "";
  int order = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--off") && i + 1 < argc)
      off = argv[++i];
    else if (!strcmp(argv[i], "--order"))
      order = 1;
    else if (argv[i][0] != '-' && !file)
      file = argv[i];
    else
      return cli_usage("lineage");
  }
  if (!file)
    return cli_usage("lineage");
  char err[2048], *src = NULL, *out = NULL;
  size_t len = 0, olen = 0;
  struct kv_annot *a = calloc(1, sizeof *a);
  if (!a)
    return cli_fail("out of memory");
  int code = 2;
  if (kv_read_file(file, KV_ANNOT_SRC_MAX, &src, &len, err, sizeof err) != 0 ||
      kv_annot_parse(src, len, file, a, err, sizeof err) != 0) {
    cli_fail("%s", err);
    goto out;
  }
  if (order) {
    for (int i = 0; i < a->n; i++)
      printf("%s\n", a->m[a->order[i]].name);
    code = 0;
    goto out;
  }
  uint32_t on = a->n >= 32 ? 0xffffffffu : ((1u << a->n) - 1u);
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", off);
  for (char *save = NULL, *tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int m = kv_annot_find(a, tok);
    if (m < 0) {
      cli_fail("--off %s: %s declares no mechanism %s", tok, file, tok);
      goto out;
    }
    on &= ~(1u << m);
  }
  if (kv_annot_resolve(src, len, file, a, on, &out, &olen, err, sizeof err) != 0) {
    cli_fail("%s", err);
    goto out;
  }
  fwrite(out, 1, olen, stdout);
  code = 0;
out:
  free(out);
  free(src);
  free(a);
  return code;
}

int cmd_lineage(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "resolve"))
    return lineage_resolve(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "extract"))
    return lineage_extract(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "show"))
    return cmd_lineage_show(argc, argv);
  return cli_usage("lineage");
}

/* ---- kevo skills ---------------------------------------------------------- */

static const json_t *find_card(const json_t *cards, const char *key) {
  for (size_t i = 0; i < json_array_size(cards); i++) {
    const json_t *c = json_array_get(cards, i);
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(c, "store_id")));
    if (!strcmp(json_string_value(json_object_get(c, "id")), key) || !strcmp(id, key))
      return c;
  }
  return NULL;
}

struct fts_map {
  int n;
  char uid[KV_MATCH_MAX][256];
  double rank[KV_MATCH_MAX];
  double max;
};

static int fts_cb(void *ud, const char *uid, double rank) {
  struct fts_map *m = ud;
  if (m->n >= KV_MATCH_MAX)
    return 1;
  snprintf(m->uid[m->n], sizeof m->uid[0], "%s", uid);
  m->rank[m->n++] = rank;
  if (rank > m->max)
    m->max = rank;
  return 0;
}

static double fts_lookup(void *ud, const char *id) {
  struct fts_map *m = ud;
  for (int i = 0; i < m->n; i++)
    if (!strcmp(m->uid[i], id))
      return m->max > 0 ? m->rank[i] / m->max : 0;
  return 0;
}

static int skills_match(struct kv_store *s, int argc, char **argv, int start) {
  struct kv_match_opts mo = {0};
  mo.surface = "cpu";
  const char *pos[2] = {NULL, NULL}, *arch = NULL;
  int npos = 0, json = 0;
  for (int i = start; i < argc; i++) {
    long long n;
    if (!strcmp(argv[i], "--surface") && i + 1 < argc)
      mo.surface = argv[++i];
    else if (!strcmp(argv[i], "--arch") && i + 1 < argc)
      arch = argv[++i];
    else if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--smem") && i + 1 < argc) {
      if (cli_integer("--smem", argv[++i], 1, 1 << 30, &n))
        return 2;
      mo.smem_budget = (long)n;
    } else if (argv[i][0] == '-')
      return cli_usage("skills");
    else if (npos < 2)
      pos[npos++] = argv[i];
    else
      return cli_usage("skills");
  }
  if (npos < 1)
    return cli_usage("skills");
  char archbuf[64];
  int gpu = kv_surface_gpu(kv_surface_find(mo.surface));
  if (!arch && gpu)
    arch = cli_env.cuda_arch;
  if (!arch && gpu)
    return cli_fail("skills match --surface cuda: name the GPU's architecture with --arch sm_90 "
                    "(or KEVO_CUDA_ARCH)");
  if (!arch) {
    kv_rules_arch_of(mo.surface, NULL, archbuf, sizeof archbuf);
    arch = archbuf;
  }
  mo.arch = arch;
  char err[4096];
  struct kv_task *t;
  if (kv_task_load(pos[0], &t, err, sizeof err) < 0)
    return cli_fail("%s", err);
  char *cand = NULL, *ref = NULL;
  size_t len;
  if (pos[1] && kv_read_file(pos[1], KV_SOURCE_MAX, &cand, &len, err, sizeof err) != 0) {
    kv_task_free(t);
    return cli_fail("%s", err);
  }
  mo.candidate_src = cand;
  char rp[PATH_MAX];
  snprintf(rp, sizeof rp, "%s/reference.%s", t->dir, kv_surface_ext(kv_surface_find(mo.surface)));
  kv_read_file(rp, 64 * 1024, &ref, &len, err, sizeof err);
  /* feature contracts: the candidate's code, else the task's reference */
  mo.features_src = cand ? NULL : ref;
  struct kv_buf q;
  kv_buf_init(&q, 80 * 1024);
  kv_buf_appendf(&q, "%s %s %s", t->name, t->summary ? t->summary : "", ref ? ref : "");
  struct fts_map *fm = calloc(1, sizeof *fm);
  int have_fts = 0, code = 2;
  json_t *cards = NULL;
  struct kv_match *m = calloc(KV_MATCH_MAX, sizeof *m);
  if (!fm || !m) {
    cli_fail("out of memory");
    goto out;
  }
  if (kv_store_skills_rank(s, q.data ? q.data : "", fts_cb, fm, &have_fts, err, sizeof err) < 0 ||
      kv_skills_load(s, 1, &cards, err, sizeof err) != 0) {
    cli_fail("%s", err);
    goto out;
  }
  mo.fts = fts_lookup;
  mo.fts_ud = fm;
  int nout = 0;
  int nm = kv_skills_match(t, cards, &mo, m, KV_MATCH_MAX, &nout);
  if (json) {
    json_t *arr = json_array();
    for (int i = 0; i < nout; i++)
      json_array_append_new(arr, json_pack("{s:s,s:b,s:f,s:s}", "id",
                                           json_string_value(json_object_get(m[i].card, "id")),
                                           "matched", m[i].matched, "score", m[i].score, "why",
                                           m[i].why));
    char *text = json_dumps(arr, JSON_INDENT(2));
    printf("%s\n", text ? text : "[]");
    free(text);
    json_decref(arr);
  } else {
    printf("%s on %s/%s%s%s: %d of %d skills match (relevance: %s)\n", t->name, mo.surface, arch,
           pos[1] ? ", candidate " : "", pos[1] ? pos[1] : "", nm, nout,
           have_fts ? "FTS5 bm25" : "none: this SQLite has no FTS5");
    const char *fs = cand ? cand : ref;
    if (fs) {
      struct kv_features f;
      char shows[400];
      kv_features_scan(fs, strlen(fs), &f);
      kv_features_format(f.bits, shows, sizeof shows);
      printf("  (the %s's code shows: %s)\n", cand ? "candidate" : "reference", shows);
    }
    for (int i = 0; i < nout; i++)
      printf("  %-5s %-48s %s\n", m[i].matched ? "match" : "no",
             json_string_value(json_object_get(m[i].card, "id")), m[i].why);
  }
  code = 0;
out:
  json_decref(cards);
  free(m);
  free(fm);
  kv_buf_release(&q);
  free(ref);
  free(cand);
  kv_task_free(t);
  return code;
}

/* kevo skills export: each card's two kernels (carrier.before_src and
 * after_src, from the store by their hashes) ride along, so that an
 * importing host judges them itself (kevo skills import --task). */
static void export_kernels(struct kv_store *s, json_t *card) {
  json_t *carrier = json_object_get(card, "carrier");
  static const char *const keys[][2] = {{"before_hash", "before_src"}, {"after_hash", "after_src"}};
  for (int k = 0; k < 2 && json_is_object(carrier); k++) {
    const char *h = json_string_value(json_object_get(carrier, keys[k][0]));
    size_t len = 0;
    char *src = h && !json_object_get(carrier, keys[k][1]) ? kv_store_get_source(s, h, &len) : NULL;
    if (src)
      json_object_set_new(carrier, keys[k][1], json_stringn(src, len));
    free(src);
  }
}

/* kevo skills import: a card's verdicts are the exporting host's word
 * (issue 30). With --task DIR each admitted card of that task is judged here
 * first (lib/exec/rejudge.c): one this host rejects is stored as rejected,
 * and said. 0, or -1 (said) when the task does not load. */
static int import_rejudge(json_t *cards, const char *file, const char *task_dir) {
  struct kv_task *t = NULL;
  char err[1024];
  if (task_dir && kv_task_load(task_dir, &t, err, sizeof err) < 0) {
    cli_fail("skills import --task %s: %s (nothing was imported)", task_dir, err);
    return -1;
  }
  struct kv_gate_opts g;
  cli_gate_opts_default(&g);
  struct kv_cards_rejudged n;
  struct kv_buf rep;
  kv_buf_init(&rep, 1 << 20);
  kv_rejudge_cards(cards, t, &g, "skills file", &n, &rep);
  if (rep.data && rep.len)
    fputs(rep.data, stderr);
  if (n.judged || n.cannot)
    fprintf(stderr,
            "kevo: %s: %d admitted cards judged again here (%d agree, %d rejected here), %d "
            "not judged here%s\n",
            file, n.judged, n.agreed, n.disagreed, n.cannot,
            n.cannot && !t ? " (kevo skills import FILE --task DIR judges a task's cards)" : "");
  kv_buf_release(&rep);
  kv_task_free(t);
  return 0;
}

int cmd_skills(int argc, char **argv) {
  if (argc < 2)
    return cli_usage("skills");
  const char *sub = argv[1], *db = NULL, *arg = NULL, *reason = NULL, *task_dir = NULL;
  int all = 0;
  /* --db anywhere */
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], "--db") && i + 1 < argc) {
      db = argv[i + 1];
      memmove(&argv[i], &argv[i + 2], (size_t)(argc - i - 2) * sizeof *argv);
      argc -= 2;
      i--;
    }
  int is_match = !strcmp(sub, "match");
  if (!is_match)
    for (int i = 2; i < argc; i++) {
      if (!strcmp(argv[i], "--all"))
        all = 1;
      else if (!strcmp(argv[i], "--reason") && i + 1 < argc)
        reason = argv[++i];
      else if (!strcmp(argv[i], "--task") && i + 1 < argc)
        task_dir = argv[++i];
      else if (argv[i][0] == '-')
        return cli_usage("skills");
      else if (!arg)
        arg = argv[i];
      else
        return cli_usage("skills");
    }
  struct kv_store *s;
  if (cli_open_store(db, &s) != 0)
    return 2;
  char err[4096];
  int code = 2;
  json_t *cards = NULL;
  if (is_match) {
    code = skills_match(s, argc, argv, 2);
    goto out;
  }
  if (!strcmp(sub, "import")) {
    if (!arg) {
      code = cli_usage("skills");
      goto out;
    }
    char *text = NULL;
    size_t len = 0;
    if (kv_read_file(arg, KV_SKILLS_JSON_MAX, &text, &len, err, sizeof err) != 0 ||
        kv_skills_parse(text, len, arg, &cards, err, sizeof err) != 0) {
      free(text);
      cli_fail("%s (nothing was imported)", err);
      goto out;
    }
    free(text);
    if (import_rejudge(cards, arg, task_dir) != 0)
      goto out;
    int added = 0, updated = 0;
    if (kv_skills_store(s, cards, &added, &updated, err, sizeof err) != 0) {
      cli_fail("%s (nothing was imported)", err);
      goto out;
    }
    printf("%s: %zu cards: %d new, %d updated, %zu already held\n", arg, json_array_size(cards),
           added, updated, json_array_size(cards) - (size_t)added - (size_t)updated);
    code = 0;
    goto out;
  }
  if (kv_skills_load(
          s, all || !strcmp(sub, "show") || !strcmp(sub, "retire") || !strcmp(sub, "export"),
          &cards, err, sizeof err) != 0) {
    cli_fail("%s", err);
    goto out;
  }
  if (!strcmp(sub, "list")) {
    printf("%-4s %-46s %-10s %-22s %s\n", "id", "skill", "status", "effect [95% CI]", "uses");
    for (size_t i = 0; i < json_array_size(cards); i++) {
      const json_t *c = json_array_get(cards, i), *e = json_object_get(c, "effect");
      const json_t *ci = json_object_get(e, "ci"), *rec = json_object_get(c, "record");
      char eff[64] = "-";
      if (json_is_array(ci))
        snprintf(
            eff, sizeof eff, "%.2fx [%.2f, %.2f]", json_number_value(json_object_get(e, "speedup")),
            json_number_value(json_array_get(ci, 0)), json_number_value(json_array_get(ci, 1)));
      const char *flag = json_string_value(json_object_get(rec, "flag"));
      printf("%-4lld %-46s %-10s %-22s %lld (%lld failed)%s%s\n",
             (long long)json_integer_value(json_object_get(c, "store_id")),
             json_string_value(json_object_get(c, "id")),
             json_string_value(json_object_get(c, "status")), eff,
             (long long)json_integer_value(json_object_get(rec, "uses")),
             (long long)json_integer_value(json_object_get(rec, "failures")),
             flag ? "  FLAGGED: " : "", flag ? flag : "");
    }
    code = 0;
  } else if (!strcmp(sub, "show") && arg) {
    const json_t *c = find_card(cards, arg);
    if (!c) {
      cli_fail("skills show %s: no such skill; kevo skills list --all shows their ids", arg);
      goto out;
    }
    char *md = kv_skill_markdown(c);
    fputs(md ? md : "", stdout);
    const json_t *rec = json_object_get(c, "record");
    printf("\n**Record**: %lld uses, %lld failed%s%s\n",
           (long long)json_integer_value(json_object_get(rec, "uses")),
           (long long)json_integer_value(json_object_get(rec, "failures")),
           json_object_get(rec, "flag") ? "; flagged: " : "",
           json_object_get(rec, "flag") ? json_string_value(json_object_get(rec, "flag")) : "");
    free(md);
    code = 0;
  } else if (!strcmp(sub, "export") && arg) {
    json_t *keep = json_array();
    for (size_t i = 0; i < json_array_size(cards); i++) {
      json_t *c = json_deep_copy(json_array_get(cards, i));
      json_object_del(c, "store_id");
      json_object_del(c, "record");
      export_kernels(s, c);
      if (all || strcmp(json_string_value(json_object_get(c, "status")), "retired"))
        json_array_append_new(keep, c);
      else
        json_decref(c);
    }
    json_t *f = json_pack("{s:i,s:I,s:o}", "kevo_skills", KV_SKILLS_SCHEMA, "exported",
                          (json_int_t)kv_unix_time(), "skills", keep);
    char *text = json_dumps(f, JSON_INDENT(2) | JSON_SORT_KEYS);
    size_t n = json_array_size(keep);
    json_decref(f);
    if (!text || kv_write_file(arg, text, strlen(text), err, sizeof err) != 0) {
      free(text);
      cli_fail("export %s: %s", arg, err);
      goto out;
    }
    free(text);
    printf("%s: %zu cards\n", arg, n);
    code = 0;
  } else if (!strcmp(sub, "retire") && arg) {
    int rc = kv_store_skill_retire(s, arg, reason ? reason : "retired by hand", err, sizeof err);
    if (rc < 0)
      cli_fail("%s", err);
    else if (rc == 1)
      cli_fail("skills retire %s: no such skill; kevo skills list --all shows their ids", arg);
    else {
      printf("retired %s\n", arg);
      code = 0;
    }
  } else {
    code = cli_usage("skills");
  }
out:
  json_decref(cards);
  kv_store_close(s);
  return code;
}

/* ---- the search's skill step (--skills on) ------------------------------- */

struct applied_ctx {
  const int64_t *path;
  int npath, hit;
};

static int applied_cb(void *ud, const char *entry, int64_t created) {
  (void)created;
  struct applied_ctx *c = ud;
  json_t *e = json_loads(entry, 0, NULL);
  json_int_t node = json_integer_value(json_object_get(e, "node_id"));
  for (int i = 0; i < c->npath && node > 0; i++)
    if (c->path[i] == node)
      c->hit = 1;
  json_decref(e);
  return c->hit;
}

int cli_skill_pick(void *ud, const char *parent_code, const char *device, const int64_t *path,
                   int npath, char **card, char uid[256]) {
  struct cli_skill_ctx *x = ud;
  char err[1024], arch[64];
  kv_rules_arch_of(x->surface, device, arch, sizeof arch);
  if (kv_surface_gpu(kv_surface_find(x->surface)) && !arch[0] && cli_env.cuda_arch)
    snprintf(arch, sizeof arch, "%s", cli_env.cuda_arch);
  json_t *cards = NULL;
  if (kv_skills_load(x->s, 0, &cards, err, sizeof err) != 0)
    return 0;
  struct fts_map *fm = calloc(1, sizeof *fm);
  struct kv_match *m = calloc(KV_MATCH_MAX, sizeof *m);
  int found = 0, have_fts = 0;
  if (fm && m) {
    char q[8192];
    snprintf(q, sizeof q, "%s %s", x->t->name, x->t->summary ? x->t->summary : "");
    kv_store_skills_rank(x->s, q, fts_cb, fm, &have_fts, err, sizeof err);
    struct kv_match_opts mo = {0};
    mo.surface = x->surface;
    mo.arch = arch;
    mo.candidate_src = parent_code;
    mo.fts = fts_lookup;
    mo.fts_ud = fm;
    int n = 0, nm = kv_skills_match(x->t, cards, &mo, m, KV_MATCH_MAX, &n);
    for (int i = 0; i < nm && !found; i++) {
      const char *id = json_string_value(json_object_get(m[i].card, "id"));
      struct applied_ctx ac = {path, npath, 0};
      kv_store_skill_log(x->s, id, applied_cb, &ac, err, sizeof err);
      if (ac.hit)
        continue; /* applied on this path already */
      *card = kv_skill_markdown(m[i].card);
      snprintf(uid, 256, "%s", id);
      found = *card != NULL;
    }
  }
  free(m);
  free(fm);
  json_decref(cards);
  return found;
}

void cli_skill_used(void *ud, const char *uid, int64_t run_id, int64_t node_id, int64_t eval_id,
                    const char *verdict, double speedup, double parent_speedup) {
  struct cli_skill_ctx *x = ud;
  json_t *e =
      json_pack("{s:s,s:I,s:I,s:I,s:s,s:s,s:I}", "what", "search", "run", (json_int_t)run_id,
                "node_id", (json_int_t)node_id, "eval_id", (json_int_t)eval_id, "task", x->t->name,
                "verdict", verdict, "when", (json_int_t)kv_unix_time());
  if (speedup > 0)
    json_object_set_new(e, "speedup", json_real(speedup));
  if (speedup > 0 && parent_speedup > 0)
    json_object_set_new(e, "gain_over_parent", json_real(speedup / parent_speedup));
  char *text = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
  char err[1024];
  if (!text || kv_store_skill_log_add(x->s, uid, text, verdict, err, sizeof err) != 0)
    fprintf(stderr, "kevo: warning: skill %s: the use was not logged: %s\n", uid,
            text ? err : "out of memory");
  free(text);
  json_decref(e);
}
