/* kevo lineage (walk an annotated expert backward into skills) and kevo
 * skills (list, show, export, import, retire, match). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int lineage_extract(int argc, char **argv) {
  struct kv_gate_opts g;
  cli_gate_opts_default(&g);
  struct kv_lineage_opts o = {0};
  o.pairs = 6;
  o.seed = 1;
  int json = 0, llm_flags = 0, retries = 2, max_steps = 12;
  const char *db = NULL, *outfile = NULL, *pos[2] = {NULL, NULL}, *config = NULL;
  struct kv_llm_flags f;
  kv_llm_flags_init(&f);
  int npos = 0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    double v;
    long long n;
    int k = cli_llm_option(&f, &llm_flags, &config, argc, argv, &i);
    if (k < 0)
      return 2;
    if (k > 0)
      continue;
    if (!strcmp(a, "--retries") && i + 1 < argc) {
      if (cli_integer("--retries", argv[++i], 0, 20, &n))
        return 2;
      retries = (int)n;
    } else if (!strcmp(a, "--max-steps") && i + 1 < argc) {
      if (cli_integer("--max-steps", argv[++i], 1, KV_MECH_MAX, &n))
        return 2;
      max_steps = (int)n;
    } else if (!strcmp(a, "--json"))
      json = 1;
    else if (!strcmp(a, "--no-timing"))
      g.timing = 0;
    else if (!strcmp(a, "--surface") && i + 1 < argc)
      g.surface = argv[++i];
    else if (!strcmp(a, "--db") && i + 1 < argc)
      db = argv[++i];
    else if (!strcmp(a, "-o") && i + 1 < argc)
      outfile = argv[++i];
    else if (!strcmp(a, "--pairs") && i + 1 < argc) {
      if (cli_integer("--pairs", argv[++i], 0, KV_PAIRS_MAX, &n))
        return 2;
      if (n == 1)
        return cli_fail("--pairs 1: a paired test needs at least 2 pairs (0: none)");
      o.pairs = (int)n;
    } else if (!strcmp(a, "--seed") && i + 1 < argc) {
      if (cli_integer("--seed", argv[++i], 1, 1LL << 40, &n))
        return 2;
      o.seed = (uint64_t)n;
    } else if (!strcmp(a, "--budget") && i + 1 < argc) {
      if (cli_number("--budget", argv[++i], &v))
        return 2;
      g.time_budget_s = v;
    } else if (!strcmp(a, "--prompts") && i + 1 < argc) {
      o.prompt_dir = argv[++i];
      if (access(o.prompt_dir, R_OK | X_OK) != 0)
        return cli_fail("--prompts %s: not a readable directory", o.prompt_dir);
    } else if (a[0] == '-' && a[1]) {
      cli_fail("lineage: unknown or incomplete option '%s'", a);
      return cli_usage("lineage");
    } else if (npos < 2)
      pos[npos++] = a;
    else {
      cli_fail("lineage: unexpected argument '%s'", a);
      return cli_usage("lineage");
    }
  }
  if (npos != 2) {
    cli_fail("lineage extract: needs a task directory and an annotated expert kernel");
    return cli_usage("lineage");
  }
  const struct kv_surface *sf = kv_surface_find(g.surface);
  if (!sf)
    return cli_fail("--surface %s: not a surface; use one of %s", g.surface, kv_surface_names());
  int cuda = kv_surface_gpu(sf);
  if (o.pairs >= 2 && o.pairs < kv_paired_min_pairs() && g.timing)
    fprintf(stderr,
            "kevo: warning: --pairs %d: a paired test on %d pairs can never be significant (its "
            "Wilcoxon p is %.3g at best, not below %.2g); the walk runs, but no step can be "
            "admitted as a skill: give --pairs %d or more\n",
            o.pairs, o.pairs, ldexp(2.0, -o.pairs), KV_SKILL_ALPHA, kv_paired_min_pairs());
  if (outfile && !cli_writable(outfile))
    return cli_fail("-o %s: cannot write there; give a writable path", outfile);
  char err[4096];
  struct kv_task *t;
  if (kv_task_load(pos[0], &t, err, sizeof err) < 0)
    return cli_fail("%s", err);
  struct kv_calib cal;
  if (g.timing && !cuda) {
    if (cli_calib(&cal, 0, json) != 0) {
      kv_task_free(t);
      return 2;
    }
    g.calib = &cal;
  }
  struct kv_store *s;
  if (cli_open_store(db, &s) != 0) {
    kv_task_free(t);
    return 2;
  }
  char cache[PATH_MAX], scratch[PATH_MAX];
  if (cli_cache_dir(cache, sizeof cache) < 0 || kv_mkdirs(cache, 0700, err, sizeof err) < 0 ||
      kv_mkdtemp(cache, "lineage-", scratch, sizeof scratch, err, sizeof err) < 0) {
    kv_store_close(s);
    kv_task_free(t);
    return cli_fail("cannot make a scratch directory: %s", err[0] ? err : "set KEVO_CACHE_DIR");
  }
  o.gate = &g;
  o.scratch = scratch;
  o.progress = json ? NULL : progress;
  struct kv_lineage *L = calloc(1, sizeof *L);
  struct kv_llm *llm = NULL;
  int code = 2;
  json_t *cards = NULL;
  if (!L) {
    cli_fail("out of memory");
    goto out;
  }
  if (llm_flags && cli_make_llm(&f, config, 1, s, &llm, NULL, 0) != 0)
    goto out;
  if ((llm ? kv_lineage_walk_llm(t, pos[1], &o, llm, retries, max_steps, L, err, sizeof err)
           : kv_lineage_walk(t, pos[1], &o, L, err, sizeof err)) != 0) {
    cli_fail("%s", err);
    goto out;
  }
  cards = kv_lineage_cards(t, L);
  int64_t lid = 0;
  if (kv_lineage_save(s, t, L, cards, &lid, err, sizeof err) != 0) {
    cli_fail("the lineage was not recorded: %s", err);
    goto out;
  }
  if (outfile) {
    json_t *f = json_pack("{s:i,s:I,s:O}", "kevo_skills", KV_SKILLS_SCHEMA, "exported",
                          (json_int_t)kv_unix_time(), "skills", cards);
    char *text = json_dumps(f, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(f);
    int wrc = text ? kv_write_file(outfile, text, strlen(text), err, sizeof err) : -1;
    free(text);
    if (wrc != 0) {
      cli_fail("-o %s: %s", outfile, err);
      goto out;
    }
  }
  int admitted = 0;
  for (size_t i = 0; i < json_array_size(cards); i++)
    admitted += json_is_true(json_object_get(json_array_get(cards, i), "admitted"));
  if (json) {
    json_t *r =
        json_pack("{s:I,s:s,s:O}", "lineage", (json_int_t)lid, "key", L->key, "skills", cards);
    char *text = json_dumps(r, JSON_INDENT(2) | JSON_SORT_KEYS);
    printf("%s\n", text ? text : "{}");
    free(text);
    json_decref(r);
  } else {
    printf("lineage %lld of %s (%s, %s, %s): %d steps, %zu accepted, %d admitted as skills%s%s%s\n",
           (long long)lid, t->name, L->mode, L->surface, L->device, L->nsteps,
           json_array_size(cards), admitted,
           o.pairs >= 2 && o.pairs < kv_paired_min_pairs() && g.timing
               ? " (too few pairs to admit any)"
               : "",
           outfile ? "; cards in " : "", outfile ? outfile : "");
  }
  code = 0;
out:
  json_decref(cards);
  if (L)
    kv_lineage_release(L);
  free(L);
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
