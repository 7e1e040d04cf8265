/* The profiler (see kevo/ncu.h): Nsight Compute on one bench-size call of
 * an accepted CUDA candidate (and, cached, of the reference) inside kevo's
 * worker, and a parser of its CSV details page. */
#include "kevo/ncu.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cudakit.h"
#include "internal.h"
#include "kevo/util.h"
#include "toolcall.h"
#include "toolrun.h"

/* ---- CSV ------------------------------------------------------------------- */

#define NCU_MAX_COLS 48

/* One CSV record from *p (RFC 4180: quoted fields, "" inside quotes); fields
 * are written NUL-terminated into buf (cap bytes), their starts into f.
 * Returns the number of fields (0 at the end of the text). */
static int csv_record(const char **p, char *buf, size_t cap, char **f, int maxf) {
  const char *s = *p;
  if (!s || !*s)
    return 0;
  int nf = 0;
  size_t o = 0;
  for (;;) {
    if (nf < maxf)
      f[nf] = buf + (o < cap ? o : cap - 1);
    nf++;
    if (*s == '"') {
      s++;
      for (; *s; s++) {
        if (*s == '"') {
          if (s[1] == '"')
            s++;
          else {
            s++;
            break;
          }
        }
        if (o + 1 < cap)
          buf[o++] = *s;
      }
    }
    while (*s && *s != ',' && *s != '\n') {
      if (*s != '\r' && o + 1 < cap)
        buf[o++] = *s;
      s++;
    }
    if (o < cap)
      buf[o++] = 0;
    else
      buf[cap - 1] = 0;
    if (*s == ',') {
      s++;
      continue;
    }
    if (*s == '\n')
      s++;
    break;
  }
  *p = s;
  return nf < maxf ? nf : maxf;
}

static double num(const char *v) {
  char b[64];
  size_t o = 0;
  for (const char *c = v; *c && o + 1 < sizeof b; c++)
    if (*c != ',' && *c != ' ')
      b[o++] = *c;
  b[o] = 0;
  char *end;
  double x = strtod(b, &end);
  return end == b || !isfinite(x) ? 0 : x;
}

static double to_us(double v, const char *unit) {
  if (!strcmp(unit, "nsecond") || !strcmp(unit, "ns"))
    return v / 1000;
  if (!strcmp(unit, "msecond") || !strcmp(unit, "ms"))
    return v * 1000;
  if (!strcmp(unit, "second") || !strcmp(unit, "s"))
    return v * 1e6;
  return v; /* usecond */
}

static const char stall_prefix[] = "smsp__average_warps_issue_stalled_";
static const char stall_suffix[] = "_per_issue_active.ratio";

static void add_rule(struct kv_ncu_kernel *k, const char *name, const char *desc, double sp) {
  /* A rule given again (ncu prints CPIStall as a WRN note, then as the OPT
   * advice with the estimate): the one with the larger speedup stays, its
   * text with it, in its place by speedup. */
  for (int i = 0; i < k->nrules; i++)
    if (!strcmp(k->rules[i].name, name)) {
      if (sp <= k->rules[i].speedup)
        return;
      for (int j = i; j + 1 < k->nrules; j++)
        k->rules[j] = k->rules[j + 1];
      k->nrules--;
      break;
    }
  struct kv_ncu_rule r;
  memset(&r, 0, sizeof r);
  snprintf(r.name, sizeof r.name, "%s", name);
  r.speedup = sp;
  /* The message less its markup, whitespace folded. */
  size_t o = 0;
  int space = 0;
  for (const char *c = desc; *c && o + 1 < sizeof r.text; c++) {
    if (*c == '\n' || *c == '\t' || *c == ' ') {
      space = o > 0;
      continue;
    }
    if (space && o + 2 < sizeof r.text)
      r.text[o++] = ' ';
    space = 0;
    r.text[o++] = *c;
  }
  r.text[o] = 0;
  /* Kept by speedup, largest first; the smallest falls off. */
  int at = k->nrules;
  while (at > 0 && k->rules[at - 1].speedup < sp)
    at--;
  if (at >= KV_NCU_MAX_RULES)
    return;
  int n = k->nrules < KV_NCU_MAX_RULES ? k->nrules + 1 : KV_NCU_MAX_RULES;
  for (int i = n - 1; i > at; i--)
    k->rules[i] = k->rules[i - 1];
  k->rules[at] = r;
  k->nrules = n;
}

int kv_ncu_parse_csv(const char *text, struct kv_ncu_report *rep) {
  rep->nkernels = 0;
  const char *p = text;
  size_t cap = 8192;
  char *buf = malloc(cap);
  if (!buf)
    return 0;
  char *f[NCU_MAX_COLS];
  int c_id = -1, c_name = -1, c_block = -1, c_grid = -1, c_metric = -1, c_unit = -1, c_value = -1,
      c_rule = -1, c_rdesc = -1, c_speed = -1, c_rtype = -1;
  /* The header: the first record that names "ID" and "Kernel Name" (ncu may
   * print its own lines before it). */
  while (c_id < 0) {
    const char *before = p;
    int n = csv_record(&p, buf, cap, f, NCU_MAX_COLS);
    if (n == 0 || p == before)
      break;
    for (int i = 0; i < n; i++) {
      if (!strcmp(f[i], "ID"))
        c_id = i;
      else if (!strcmp(f[i], "Kernel Name"))
        c_name = i;
      else if (!strcmp(f[i], "Block Size"))
        c_block = i;
      else if (!strcmp(f[i], "Grid Size"))
        c_grid = i;
      else if (!strcmp(f[i], "Metric Name"))
        c_metric = i;
      else if (!strcmp(f[i], "Metric Unit"))
        c_unit = i;
      else if (!strcmp(f[i], "Metric Value"))
        c_value = i;
      else if (!strcmp(f[i], "Rule Name"))
        c_rule = i;
      else if (!strcmp(f[i], "Rule Description"))
        c_rdesc = i;
      else if (!strcmp(f[i], "Rule Type"))
        c_rtype = i;
      else if (!strcmp(f[i], "Estimated Speedup"))
        c_speed = i;
    }
    if (c_id < 0 || c_name < 0)
      c_id = c_name = -1;
  }
  char cur_id[64] = "";
  struct kv_ncu_kernel *k = NULL;
  int ncol_need = c_name > c_id ? c_name : c_id;
  for (;;) {
    if (c_id < 0)
      break;
    const char *before = p;
    int n = csv_record(&p, buf, cap, f, NCU_MAX_COLS);
    if (n == 0 || p == before)
      break;
    if (n <= ncol_need)
      continue;
    if (strcmp(f[c_id], cur_id) != 0) {
      snprintf(cur_id, sizeof cur_id, "%s", f[c_id]);
      k = NULL;
      if (rep->nkernels < KV_NCU_MAX_KERNELS) {
        k = &rep->k[rep->nkernels++];
        memset(k, 0, sizeof *k);
        snprintf(k->name, sizeof k->name, "%s", f[c_name]);
        if (c_block >= 0 && c_block < n)
          snprintf(k->block, sizeof k->block, "%s", f[c_block]);
        if (c_grid >= 0 && c_grid < n)
          snprintf(k->grid, sizeof k->grid, "%s", f[c_grid]);
      }
    }
    if (!k)
      continue;
    const char *m = c_metric >= 0 && c_metric < n ? f[c_metric] : "";
    const char *u = c_unit >= 0 && c_unit < n ? f[c_unit] : "";
    const char *v = c_value >= 0 && c_value < n ? f[c_value] : "";
    if (*m && *v) {
      double x = num(v);
      if (!strcmp(m, "Duration"))
        k->duration_us = to_us(x, u);
      else if (!strcmp(m, "Compute (SM) Throughput"))
        k->sm_pct = x;
      else if (!strcmp(m, "Memory Throughput") && !strcmp(u, "%"))
        k->mem_pct = x;
      else if (!strcmp(m, "DRAM Throughput"))
        k->dram_pct = x;
      else if (!strcmp(m, "L1/TEX Cache Throughput"))
        k->l1_pct = x;
      else if (!strcmp(m, "L2 Cache Throughput"))
        k->l2_pct = x;
      else if (!strcmp(m, "Achieved Occupancy"))
        k->achieved_occ = x;
      else if (!strcmp(m, "Theoretical Occupancy"))
        k->theoretical_occ = x;
      else if (!strcmp(m, "Registers Per Thread"))
        k->registers = x;
      else if (!strcmp(m, "Static Shared Memory Per Block") ||
               !strcmp(m, "Dynamic Shared Memory Per Block"))
        k->smem_bytes += x * (!strncmp(u, "Kbyte", 5)   ? 1000
                              : !strncmp(u, "KiB", 3)   ? 1024
                              : !strncmp(u, "Mbyte", 5) ? 1e6
                                                        : 1);
      else if (!strcmp(m, "Waves Per SM"))
        k->waves = x;
      else if (!strcmp(m, "Warp Cycles Per Issued Instruction"))
        k->cpi = x;
      else if (!strncmp(m, stall_prefix, sizeof stall_prefix - 1)) {
        size_t ml = strlen(m), pl = sizeof stall_prefix - 1, sl = sizeof stall_suffix - 1;
        if (ml > pl + sl && !strcmp(m + ml - sl, stall_suffix)) {
          char reason[48];
          snprintf(reason, sizeof reason, "%.*s", (int)(ml - pl - sl), m + pl);
          /* "selected" is a warp issuing, not a stall. */
          if (strcmp(reason, "selected") != 0 && x > k->top_stall_cycles) {
            k->top_stall_cycles = x;
            snprintf(k->top_stall, sizeof k->top_stall, "%s", reason);
          }
        }
      }
    }
    const char *rn = c_rule >= 0 && c_rule < n ? f[c_rule] : "";
    if (*rn) {
      const char *rt = c_rtype >= 0 && c_rtype < n ? f[c_rtype] : "";
      /* Rules that only inform (no advice) are left out. */
      if ((strcmp(rt, "INFO") != 0 && strcmp(rt, "INF") != 0) ||
          (c_speed >= 0 && c_speed < n && num(f[c_speed]) > 0))
        add_rule(k, rn, c_rdesc >= 0 && c_rdesc < n ? f[c_rdesc] : "",
                 c_speed >= 0 && c_speed < n ? num(f[c_speed]) : 0);
    }
  }
  free(buf);
  return rep->nkernels;
}

/* ---- renderings ------------------------------------------------------------ */

void kv_ncu_summary(const struct kv_ncu_report *r, char *out, size_t cap) {
  if (!cap)
    return;
  struct kv_buf b;
  kv_buf_init(&b, 16384);
  if (r->nkernels == 0)
    kv_buf_appendf(&b, "no kernel profiled");
  for (int i = 0; i < r->nkernels; i++) {
    const struct kv_ncu_kernel *k = &r->k[i];
    kv_buf_appendf(&b,
                   "%s%s<<<%s,%s>>> %.1f us; SOL sm %.0f%% mem %.0f%% (dram %.0f%%, L1 %.0f%%, "
                   "L2 %.0f%%); occupancy %.0f%% of %.0f%%; %.0f regs, %.0f B smem/block; "
                   "%.2f waves",
                   i ? "\n" : "", k->name, k->grid, k->block, k->duration_us, k->sm_pct, k->mem_pct,
                   k->dram_pct, k->l1_pct, k->l2_pct, k->achieved_occ, k->theoretical_occ,
                   k->registers, k->smem_bytes, k->waves);
    if (k->top_stall[0])
      kv_buf_appendf(&b, "; top stall %s (%.1f of %.1f cycles/instr)", k->top_stall,
                     k->top_stall_cycles, k->cpi);
    for (int j = 0; j < k->nrules && j < 2; j++)
      kv_buf_appendf(&b, "; rule %s (est. +%.0f%%): %.160s", k->rules[j].name, k->rules[j].speedup,
                     k->rules[j].text);
  }
  snprintf(out, cap, "%s", b.data ? b.data : "");
  kv_buf_release(&b);
}

json_t *kv_ncu_json(const struct kv_ncu_report *r) {
  json_t *ks = json_array();
  for (int i = 0; i < r->nkernels; i++) {
    const struct kv_ncu_kernel *k = &r->k[i];
    json_t *rules = json_array();
    for (int j = 0; j < k->nrules; j++)
      json_array_append_new(rules,
                            json_pack("{s:s,s:f,s:s}", "name", k->rules[j].name, "speedup_pct",
                                      k->rules[j].speedup, "text", k->rules[j].text));
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s,s:f,s:o}", "name",
        k->name, "grid", k->grid, "block", k->block, "duration_us", k->duration_us, "sm_pct",
        k->sm_pct, "mem_pct", k->mem_pct, "dram_pct", k->dram_pct, "l1_pct", k->l1_pct, "l2_pct",
        k->l2_pct, "achieved_occupancy_pct", k->achieved_occ, "theoretical_occupancy_pct",
        k->theoretical_occ, "registers", k->registers, "smem_bytes", k->smem_bytes, "waves",
        k->waves, "cycles_per_instr", k->cpi, "top_stall", k->top_stall, "top_stall_cycles",
        k->top_stall_cycles, "rules", rules);
    if (o)
      json_array_append_new(ks, o);
  }
  json_t *j = json_pack("{s:o,s:f,s:s,s:s}", "kernels", ks, "seconds", r->seconds, "note", r->note,
                        "sandbox_off", r->sandbox_off);
  if (j && r->raw) {
    json_t *raw = json_string(r->raw);
    json_object_set_new(j, "raw", raw ? raw : json_string(""));
  }
  return j;
}

static void jstr(const json_t *o, const char *k, char *out, size_t cap) {
  const char *s = json_string_value(json_object_get(o, k));
  snprintf(out, cap, "%s", s ? s : "");
}

static double jnum(const json_t *o, const char *k) {
  double v = json_number_value(json_object_get(o, k));
  return isfinite(v) ? v : 0;
}

struct kv_ncu_report *kv_ncu_from_json(const json_t *j) {
  if (!json_is_object(j))
    return NULL;
  struct kv_ncu_report *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  size_t i;
  json_t *k;
  json_array_foreach(json_object_get(j, "kernels"), i, k) {
    if (r->nkernels >= KV_NCU_MAX_KERNELS)
      break;
    struct kv_ncu_kernel *x = &r->k[r->nkernels++];
    jstr(k, "name", x->name, sizeof x->name);
    jstr(k, "grid", x->grid, sizeof x->grid);
    jstr(k, "block", x->block, sizeof x->block);
    x->duration_us = jnum(k, "duration_us");
    x->sm_pct = jnum(k, "sm_pct");
    x->mem_pct = jnum(k, "mem_pct");
    x->dram_pct = jnum(k, "dram_pct");
    x->l1_pct = jnum(k, "l1_pct");
    x->l2_pct = jnum(k, "l2_pct");
    x->achieved_occ = jnum(k, "achieved_occupancy_pct");
    x->theoretical_occ = jnum(k, "theoretical_occupancy_pct");
    x->registers = jnum(k, "registers");
    x->smem_bytes = jnum(k, "smem_bytes");
    x->waves = jnum(k, "waves");
    x->cpi = jnum(k, "cycles_per_instr");
    jstr(k, "top_stall", x->top_stall, sizeof x->top_stall);
    x->top_stall_cycles = jnum(k, "top_stall_cycles");
    size_t q;
    json_t *ru;
    json_array_foreach(json_object_get(k, "rules"), q, ru) {
      if (x->nrules >= KV_NCU_MAX_RULES)
        break;
      struct kv_ncu_rule *y = &x->rules[x->nrules++];
      jstr(ru, "name", y->name, sizeof y->name);
      jstr(ru, "text", y->text, sizeof y->text);
      y->speedup = jnum(ru, "speedup_pct");
    }
  }
  r->seconds = jnum(j, "seconds");
  jstr(j, "note", r->note, sizeof r->note);
  jstr(j, "sandbox_off", r->sandbox_off, sizeof r->sandbox_off);
  const char *raw = json_string_value(json_object_get(j, "raw"));
  if (raw && *raw)
    r->raw = strndup(raw, KV_NCU_RAW_CAP);
  return r;
}

void kv_ncu_report_free(struct kv_ncu_report *r) {
  if (!r)
    return;
  free(r->raw);
  free(r);
}

/* ---- the tool -------------------------------------------------------------- */

void kv_ncu_path(const struct kv_gate_opts *o, char *out, size_t cap) {
  kv_cuda_tool_find("KEVO_NCU", "ncu", NULL, o, out, cap);
}

const char *kv_ncu_version(const struct kv_gate_opts *o) {
  char path[PATH_MAX];
  kv_ncu_path(o, path, sizeof path);
  return kv_tool_version_cached(path);
}

/* `ncu --import rep ... --page details --print-units base` (csv: with --csv)
 * into *text; 0, or -1 with the reason in err. */
static int ncu_import(const char *tool, const char *report, int csv, const char *dir, char **text,
                      char *err, size_t errlen) {
  char *argv[] = {(char *)tool,    "--import", (char *)report,       "--page", "details",
                  "--print-units", "base",     csv ? "--csv" : NULL, NULL};
  char home[PATH_MAX + 8], tmp[PATH_MAX + 8];
  snprintf(home, sizeof home, "HOME=%s", dir);
  snprintf(tmp, sizeof tmp, "TMPDIR=%s", dir);
  char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C", home, tmp, NULL};
  struct kv_buf b;
  kv_buf_init(&b, KV_NCU_TEXT_CAP);
  struct kv_proc_result pr;
  if (kv_run(argv, envp, dir, 60, NULL, NULL, &b, &pr, err, errlen) < 0) {
    kv_buf_release(&b);
    return -1;
  }
  if (!pr.exited || pr.status != 0) {
    char how[128];
    kv_proc_describe(&pr, how, sizeof how);
    kv_error(err, errlen, "ncu --import %s: %.200s", how, b.data ? b.data : "");
    kv_buf_release(&b);
    return -1;
  }
  *text = kv_buf_detach(&b);
  return 0;
}

/* "regex:^(k1|k2)$" from the kernels ptxas named (mangled), regex characters
 * escaped; "" when there are none (then every kernel is profiled). */
static void kernel_filter(const struct kv_build *b, char *out, size_t cap) {
  struct kv_buf f;
  kv_buf_init(&f, cap);
  for (int i = 0; i < b->nkernels; i++) {
    kv_buf_appendf(&f, "%s", i ? "|" : "regex:^(");
    for (const char *c = b->kernels[i].name; *c; c++) {
      if (strchr("\\^$.|?*+()[]{}", *c))
        kv_buf_append(&f, "\\", 1);
      kv_buf_append(&f, c, 1);
    }
  }
  if (b->nkernels)
    kv_buf_appendf(&f, ")$");
  snprintf(out, cap, "%s", f.truncated || !f.data ? "" : f.data);
  kv_buf_release(&f);
}

/* One profiled call of `so` at bench[0] into rep (kernels, raw, note). */
static void profile_one(const struct kv_session *s, const struct kv_build *b, const char *so,
                        int candidate, struct kv_ncu_report *rep, char **csv_out) {
  char tool[PATH_MAX];
  kv_ncu_path(s->o, tool, sizeof tool);
  char err[1024] = "";
  if (!tool[0]) {
    snprintf(rep->note, sizeof rep->note,
             "not available: ncu not found (not beside nvcc, not on PATH); install Nsight "
             "Compute or set KEVO_NCU to its path");
    return;
  }
  if (s->t->nbench < 1) {
    snprintf(rep->note, sizeof rep->note, "not available: the task has no bench size");
    return;
  }
  char dir[PATH_MAX], report[PATH_MAX + 32], tooldir[PATH_MAX], filter[8192], store[256];
  if (kv_mkdtemp(s->cache, "ncu", dir, sizeof dir, err, sizeof err) < 0) {
    snprintf(rep->note, sizeof rep->note, "not available: %.480s", err);
    return;
  }
  snprintf(report, sizeof report, "%s/profile", dir);
  kv_tool_dir(tool, tooldir, sizeof tooldir);
  kernel_filter(b, filter, sizeof filter);
  const char *wrap[40];
  int a = 0;
  wrap[a++] = tool;
  wrap[a++] = "--clock-control";
  wrap[a++] = "none";
  wrap[a++] = "--kernel-name-base";
  wrap[a++] = "mangled";
  if (filter[0]) {
    wrap[a++] = "--kernel-name";
    wrap[a++] = filter;
  }
  wrap[a++] = "--launch-count";
  wrap[a++] = "8";
  static const char *const sections[] = {"SpeedOfLight", "LaunchStats", "Occupancy",
                                         "MemoryWorkloadAnalysis", "WarpStateStats"};
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
    wrap[a++] = "--section";
    wrap[a++] = sections[i];
  }
  wrap[a++] = "--metrics";
  wrap[a++] = "regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio$";
  wrap[a++] = "--export";
  wrap[a++] = report;
  wrap[a++] = "--force-overwrite";
  wrap[a] = NULL;
  const char *without[8];
  kv_tool_layers_off("ncu", without, 8, store, sizeof store);
  kv_tool_layers_said(without, rep->sandbox_off, sizeof rep->sandbox_off);
  double budget = s->o->profile_deadline_s > 0 ? s->o->profile_deadline_s : 120;
  struct kv_tool_run tr = {
      .wrap = wrap, .without = without, .start_s = 60, .deadline_s = budget, .exit_s = 60};
  tr.reads[tr.nreads++] = tooldir;
  struct kv_tool_outcome oc;
  int rc =
      kv_tool_call(s, so, candidate, "bench", 0, kv_random_u64() >> 8, &tr, &oc, err, sizeof err);
  char rpt[PATH_MAX + 48];
  snprintf(rpt, sizeof rpt, "%s.ncu-rep", report);
  char *csv = NULL, *txt = NULL;
  if (rc < 0) {
    snprintf(rep->note, sizeof rep->note,
             "not available: %.300s (the worker runs under ncu with every sandbox layer on "
             "unless $KEVO_NCU_WITHOUT names some; 'kevo doctor' shows which it needs here)",
             err);
  } else if (!kv_path_exists(rpt)) {
    snprintf(rep->note, sizeof rep->note,
             "not available: ncu wrote no report (%s; %.200s; 'kevo doctor' shows whether it "
             "needs sandbox layers off here, $KEVO_NCU_WITHOUT)",
             oc.tool_exited ? "it exited" : "it was killed", oc.detail);
  } else if (ncu_import(tool, rpt, 1, dir, &csv, err, sizeof err) < 0) {
    snprintf(rep->note, sizeof rep->note, "not available: %.480s", err);
  } else {
    kv_ncu_parse_csv(csv, rep);
    if (ncu_import(tool, rpt, 0, dir, &txt, err, sizeof err) == 0) {
      size_t n = strlen(txt);
      if (n > KV_NCU_RAW_CAP) {
        size_t cut = KV_NCU_RAW_CAP;
        while (cut > 0 && txt[cut - 1] != '\n')
          cut--;
        snprintf(txt + cut, n - cut + 1, "[... cut at %u bytes]\n", KV_NCU_RAW_CAP);
      }
      rep->raw = txt;
      txt = NULL;
    }
    if (rep->nkernels == 0)
      snprintf(rep->note, sizeof rep->note,
               "not available: ncu profiled no kernel of it (%s): %.300s", oc.detail,
               csv[0] ? csv : "empty report");
    if (csv_out) {
      *csv_out = csv;
      csv = NULL;
    }
  }
  free(csv);
  free(txt);
  kv_rmtree(dir);
}

void kv_ncu_profile(const struct kv_session *s, const struct kv_build *ref,
                    const struct kv_build *cand, const char *ref_src, struct kv_gate_result *r) {
  (void)ref_src;
  double t0 = kv_now_s();
  struct kv_ncu_report *rep = calloc(1, sizeof *rep);
  if (!rep)
    return;
  kv_ncu_report_free(r->profile);
  r->profile = rep;
  profile_one(s, cand, cand->so_path, 1, rep, NULL);
  rep->seconds = kv_now_s() - t0;
  /* The reference's profile: once per reference build, device and bench
   * size, from the cache (its CSV beside the object). */
  if (s->torch || !ref || !ref->ok || rep->note[0])
    return;
  double t1 = kv_now_s();
  struct kv_ncu_report *rr = calloc(1, sizeof *rr);
  if (!rr)
    return;
  kv_ncu_report_free(r->profile_ref);
  r->profile_ref = rr;
  char dev[65], cached[PATH_MAX + 128], bench[256];
  kv_sizeset_format(s->t, &s->t->bench[0], bench, sizeof bench);
  char keytext[1024];
  snprintf(keytext, sizeof keytext, "%s|%s|%s", r->device, bench, kv_ncu_version(s->o));
  kv_sha256_hex(keytext, strlen(keytext), dev);
  snprintf(cached, sizeof cached, "%s/%s-ncu-%.16s.csv", s->objdir, ref->key, dev);
  char *csv = NULL;
  size_t len;
  if (kv_read_file(cached, KV_NCU_TEXT_CAP, &csv, &len, NULL, 0) == 0) {
    kv_ncu_parse_csv(csv, rr);
  } else {
    profile_one(s, ref, ref->so_path, 0, rr, &csv);
    if (csv && rr->nkernels > 0)
      kv_write_file(cached, csv, strlen(csv), NULL, 0);
  }
  free(csv);
  free(rr->raw); /* the reference's text is not shown to anyone */
  rr->raw = NULL;
  rr->seconds = kv_now_s() - t1;
}
