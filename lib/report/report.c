/* The page: its head (a Content-Security-Policy that lets only this page's
 * own script and style run, by their hashes, and fetch nothing), one section
 * per item from the table of kinds, a footer whose status element the script
 * fills (what a test reads), and the script. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const char rep_asset_js[], rep_asset_css[];
extern const size_t rep_asset_js_len, rep_asset_css_len;

/* ---- the writer ----------------------------------------------------------- */

void rep_printf(struct rep_out *o, const char *fmt, ...) {
  char small[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    o->oom = 1;
    return;
  }
  if ((size_t)n < sizeof small) {
    if (kv_buf_append(&o->b, small, (size_t)n) < 0)
      o->oom = 1;
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    o->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  if (kv_buf_append(&o->b, big, (size_t)n) < 0)
    o->oom = 1;
  free(big);
}

void rep_puts(struct rep_out *o, const char *s) {
  if (kv_buf_append(&o->b, s, strlen(s)) < 0)
    o->oom = 1;
}

void rep_escn(struct rep_out *o, const char *s, size_t n) {
  if (s && kv_html_escape(&o->b, s, n) < 0)
    o->oom = 1;
}

void rep_esc(struct rep_out *o, const char *s) {
  if (s)
    rep_escn(o, s, strlen(s));
}

static int json_sink(const char *buf, size_t size, void *data) {
  struct rep_out *o = data;
  if (kv_json_for_script(&o->b, buf, size) < 0) {
    o->oom = 1;
    return -1;
  }
  return o->b.truncated ? -1 : 0;
}

void rep_json(struct rep_out *o, json_t *v) {
  if (json_dump_callback(v, json_sink, o,
                         JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6)) != 0 &&
      !o->b.truncated)
    o->oom = 1;
}

/* ---- the policy's hashes --------------------------------------------------- */

static void base64(const unsigned char *in, size_t n, char *out) {
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t k = 0;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                 (i + 2 < n ? in[i + 2] : 0);
    out[k++] = tab[v >> 18 & 63];
    out[k++] = tab[v >> 12 & 63];
    out[k++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
    out[k++] = i + 2 < n ? tab[v & 63] : '=';
  }
  out[k] = 0;
}

/* 'sha256-BASE64' of text, as a Content-Security-Policy source. */
static void csp_hash(const char *text, size_t n, char out[64]) {
  char hex[65];
  unsigned char raw[32];
  kv_sha256_hex(text, n, hex);
  for (int i = 0; i < 32; i++) {
    unsigned v;
    sscanf(hex + 2 * i, "%2x", &v);
    raw[i] = (unsigned char)v;
  }
  base64(raw, 32, out);
}

/* ---- kinds of section ----------------------------------------------------- */

struct section {
  enum kv_report_kind kind;
  struct rep_run run;
  struct rep_bench bench;
  struct rep_analysis an;
};

/* One entry per kind of section: how to read it from the store, write it,
 * name it (title and navigation) and count what it draws. A bench suite or
 * an analysis is a new entry here and a file that writes its section. */
struct kind {
  enum kv_report_kind kind;
  /* what the section takes besides its texts, before it is read */
  int (*estimate)(struct kv_store *s, int64_t id, size_t *bytes, char *err, size_t errlen);
  int (*load)(struct kv_store *s, int64_t id, struct rep_budget *b, struct section *sec, char *err,
              size_t errlen);
  void (*write)(struct rep_out *o, struct kv_store *s, struct section *sec);
  void (*name)(const struct section *sec, char *out, size_t cap);
  void (*anchor)(const struct section *sec, char *out, size_t cap); /* the section's id */
  void (*count)(const struct section *sec, struct kv_report_stats *st);
  void (*release)(struct section *sec);
};

static int run_estimate(struct kv_store *s, int64_t id, size_t *bytes, char *err, size_t errlen) {
  struct kv_run_row r;
  if (kv_store_run_get(s, id, &r, err, errlen) != 0)
    return -1;
  int n = r.nnodes < KV_REPORT_NODES_MAX ? r.nnodes : KV_REPORT_NODES_MAX;
  /* the nodes, the charts and tables, and the best kernel's texts (shown
   * whatever the budget: its source twice, its diff, plan and log) */
  *bytes = (size_t)n * KV_REPORT_NODE_BYTES + (256 << 10) + 6 * KV_REPORT_ITEM_CAP;
  kv_run_row_release(&r);
  return 0;
}

static int run_load(struct kv_store *s, int64_t id, struct rep_budget *b, struct section *sec,
                    char *err, size_t errlen) {
  if (rep_run_load(s, id, b, &sec->run, err, errlen) != 0)
    return -1;
  rep_layout(&sec->run);
  return 0;
}

static void run_write(struct rep_out *o, struct kv_store *s, struct section *sec) {
  rep_run_section(o, s, &sec->run);
}

static void run_name(const struct section *sec, char *out, size_t cap) {
  snprintf(out, cap, "run %lld (%s)", (long long)sec->run.row.id,
           sec->run.row.task_name ? sec->run.row.task_name : "?");
}

static void run_anchor(const struct section *sec, char *out, size_t cap) {
  snprintf(out, cap, "run-%lld", (long long)sec->run.row.id);
}

static void run_count(const struct section *sec, struct kv_report_stats *st) {
  st->nodes += sec->run.n;
  st->points += sec->run.n;
  st->elided += sec->run.elided;
}

static void run_release(struct section *sec) {
  rep_run_release(&sec->run);
}

static int bench_estimate(struct kv_store *s, int64_t id, size_t *bytes, char *err, size_t errlen) {
  struct kv_bench_row r;
  if (kv_store_bench_get(s, id, &r, err, errlen) != 0)
    return -1;
  kv_bench_row_release(&r);
  *bytes = (size_t)KV_BENCH_MAX_TASKS * 1024 + (64 << 10); /* a row with its detail, the charts */
  return 0;
}

static int bench_load(struct kv_store *s, int64_t id, struct rep_budget *b, struct section *sec,
                      char *err, size_t errlen) {
  (void)b; /* a bench holds no long texts: its details are cut at 600 bytes */
  return rep_bench_load(s, id, &sec->bench, err, errlen);
}

static void bench_write(struct rep_out *o, struct kv_store *s, struct section *sec) {
  (void)s;
  rep_bench_section(o, &sec->bench);
}

static void bench_name(const struct section *sec, char *out, size_t cap) {
  const char *d = sec->bench.row.suite_dir ? sec->bench.row.suite_dir : "?";
  const char *base = strrchr(d, '/');
  snprintf(out, cap, "bench %lld (%s)", (long long)sec->bench.row.id,
           base && base[1] ? base + 1 : d);
}

static void bench_anchor(const struct section *sec, char *out, size_t cap) {
  snprintf(out, cap, "bench-%lld", (long long)sec->bench.row.id);
}

static void bench_count(const struct section *sec, struct kv_report_stats *st) {
  st->tasks += sec->bench.n;
}

static void bench_release(struct section *sec) {
  rep_bench_release(&sec->bench);
}

static int an_estimate(struct kv_store *s, int64_t id, size_t *bytes, char *err, size_t errlen) {
  struct kv_analysis_row r;
  if (kv_store_analysis_get(s, id, &r, err, errlen) != 0)
    return -1;
  kv_analysis_row_release(&r);
  /* 13 outcomes of at most 64 coalitions: bars, heat maps and tables */
  *bytes = (size_t)512 << 10;
  return 0;
}

static int an_load(struct kv_store *s, int64_t id, struct rep_budget *b, struct section *sec,
                   char *err, size_t errlen) {
  (void)b; /* an analysis holds no long texts: names of players and models */
  return rep_analysis_load(s, id, &sec->an, err, errlen);
}

static void an_write(struct rep_out *o, struct kv_store *s, struct section *sec) {
  (void)s;
  rep_analysis_section(o, &sec->an);
}

static void an_name(const struct section *sec, char *out, size_t cap) {
  snprintf(out, cap, "analysis %lld (run %lld, %s)", (long long)sec->an.r->analysis_id,
           (long long)sec->an.r->run_id, sec->an.r->experiment);
}

static void an_anchor(const struct section *sec, char *out, size_t cap) {
  snprintf(out, cap, "analysis-%lld", (long long)sec->an.r->analysis_id);
}

static void an_count(const struct section *sec, struct kv_report_stats *st) {
  rep_analysis_count(&sec->an, &st->bars, &st->cells);
}

static void an_release(struct section *sec) {
  rep_analysis_release(&sec->an);
}

static const struct kind kinds[] = {
    {KV_REPORT_RUN, run_estimate, run_load, run_write, run_name, run_anchor, run_count,
     run_release},
    {KV_REPORT_BENCH, bench_estimate, bench_load, bench_write, bench_name, bench_anchor,
     bench_count, bench_release},
    {KV_REPORT_ANALYSIS, an_estimate, an_load, an_write, an_name, an_anchor, an_count, an_release},
};

static const struct kind *kind_of(enum kv_report_kind k) {
  for (size_t i = 0; i < KV_ARRAY_LEN(kinds); i++)
    if (kinds[i].kind == k)
      return &kinds[i];
  return NULL;
}

/* ---- the page -------------------------------------------------------------- */

static void write_page(struct rep_out *o, struct kv_store *s, struct section *secs, int n,
                       const struct kv_report_opts *opt) {
  /* The style: the file, then the verdict colours from the palette. */
  struct rep_out css = {0};
  kv_buf_init(&css.b, 1 << 20);
  rep_puts(&css, rep_asset_css);
  for (int v = 0; v < rep_nverdicts; v++) {
    const char *c = rep_verdicts[v].color;
    unsigned r = 0, g = 0, bl = 0;
    sscanf(c, "#%2x%2x%2x", &r, &g, &bl);
    int light = 0.299 * r + 0.587 * g + 0.114 * bl > 170;
    rep_printf(&css, ".v%d{fill:%s;background:%s%s}\n", v, c, c, light ? ";color:#1f2328" : "");
  }
  if (css.oom)
    o->oom = 1;
  char sh[64], ch[64];
  csp_hash(rep_asset_js, rep_asset_js_len, sh);
  csp_hash(css.b.data ? css.b.data : "", css.b.len, ch);

  char title[256] = "kevo report", a[160];
  if (n == 1) {
    kind_of(secs[0].kind)->name(&secs[0], a, sizeof a);
    snprintf(title, sizeof title, "kevo report: %s", a);
  } else if (n > 1) {
    snprintf(title, sizeof title, "kevo report: %d sections", n);
  }
  rep_printf(o,
             "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
             "script-src 'sha256-%s'; style-src 'sha256-%s'; base-uri 'none'; form-action "
             "'none'\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
             "<meta name=\"generator\" content=\"kevo %s\">\n<title>",
             sh, ch, KEVO_VERSION);
  rep_esc(o, title);
  rep_puts(o, "</title>\n<style>");
  kv_buf_append(&o->b, css.b.data ? css.b.data : "", css.b.len);
  kv_buf_release(&css.b);
  rep_puts(o, "</style>\n</head>\n<body>\n<header class=\"page\"><h1>kevo report</h1>");
  char date[64];
  rep_date(opt->now_unix ? opt->now_unix : (int64_t)time(NULL), date, sizeof date);
  rep_printf(o, "<span class=\"muted\">generated %s by kevo %s", date, KEVO_VERSION);
  if (opt->store_path) {
    rep_puts(o, " from <code>");
    rep_esc(o, opt->store_path);
    rep_puts(o, "</code>");
  }
  rep_puts(o, "</span>");
  if (n > 1) {
    rep_puts(o, "<nav>");
    for (int i = 0; i < n; i++) {
      const struct kind *k = kind_of(secs[i].kind);
      char id[64];
      k->name(&secs[i], a, sizeof a);
      k->anchor(&secs[i], id, sizeof id);
      rep_printf(o, "<a href=\"#%s\">", id);
      rep_esc(o, a);
      rep_puts(o, "</a>");
    }
    rep_puts(o, "</nav>");
  }
  rep_puts(o, "</header>\n<main>\n");
  for (int i = 0; i < n; i++)
    kind_of(secs[i].kind)->write(o, s, &secs[i]);
  rep_puts(o, "</main>\n<footer>Every text from a candidate, a compiler or a model is shown as "
              "text; long ones are cut, and say where the whole is in the store. "
              "<output id=\"kevo-status\" data-ready=\"0\" data-errors=\"0\">The interactive "
              "parts need JavaScript.</output></footer>\n");
  /* The verdicts' order, for the script's badges. */
  rep_puts(o, "<script type=\"application/json\" id=\"kevo-verdicts\">[");
  for (int v = 0; v < rep_nverdicts; v++)
    rep_printf(o, "%s\"%s\"", v ? "," : "", rep_verdicts[v].name);
  rep_puts(o, "]</script>\n<script>");
  kv_buf_append(&o->b, rep_asset_js, rep_asset_js_len);
  rep_puts(o, "</script>\n</body>\n</html>\n");
}

int kv_report_html(struct kv_store *s, const struct kv_report_item *items, int nitems,
                   const struct kv_report_opts *o, char **html, size_t *len,
                   struct kv_report_stats *stats, char *err, size_t errlen) {
  struct kv_report_opts defaults = {0};
  if (!o)
    o = &defaults;
  *html = NULL;
  *len = 0;
  if (stats)
    memset(stats, 0, sizeof *stats);
  struct kv_report_item latest = {KV_REPORT_RUN, 0};
  if (nitems <= 0) {
    items = &latest;
    nitems = 1;
  }
  if (nitems > 64)
    return kv_error(err, errlen,
                    "report: %d sections asked for, at most 64 fit in one page; make several "
                    "reports",
                    nitems);
  struct section *secs = calloc((size_t)nitems, sizeof *secs);
  if (!secs)
    return kv_error(err, errlen, "report: out of memory");
  /* The texts get what the cap leaves after the drawing and the page. */
  size_t max = o->file_max ? o->file_max : KV_REPORT_FILE_MAX;
  size_t fixed = 64 << 10;
  int rc = 0, loaded = 0;
  for (int i = 0; i < nitems && rc == 0; i++) {
    const struct kind *k = kind_of(items[i].kind);
    size_t bytes = 0;
    if (!k)
      rc = kv_error(err, errlen, "report: item %d is of no kind this kevo knows (a bug)", i);
    else if ((rc = k->estimate(s, items[i].id, &bytes, err, errlen)) == 0)
      fixed += bytes;
  }
  struct rep_budget budget = {.item_cap = o->item_cap ? o->item_cap : KV_REPORT_ITEM_CAP,
                              .left = o->text_budget ? o->text_budget : KV_REPORT_TEXT_BUDGET};
  if (budget.left > (max > fixed ? max - fixed : 0))
    budget.left = max > fixed ? max - fixed : 0;
  for (int i = 0; i < nitems && rc == 0; i++) {
    const struct kind *k = kind_of(items[i].kind);
    secs[i].kind = items[i].kind;
    rc = k->load(s, items[i].id, &budget, &secs[i], err, errlen);
    if (rc == 0)
      loaded++;
    else
      k->release(&secs[i]);
  }
  if (rc == 0) {
    struct rep_out out = {0};
    kv_buf_init(&out.b, max);
    write_page(&out, s, secs, nitems, o);
    if (out.oom) {
      rc = kv_error(err, errlen, "report: out of memory writing the page");
    } else if (out.b.truncated) {
      rc = kv_error(err, errlen,
                    "report: the page would be larger than its cap of %zu MiB; report fewer runs "
                    "at once",
                    max >> 20);
    } else {
      *len = out.b.len;
      *html = kv_buf_detach(&out.b);
      if (stats) {
        stats->sections = nitems;
        stats->bytes = *len;
        for (int i = 0; i < nitems; i++)
          kind_of(secs[i].kind)->count(&secs[i], stats);
      }
    }
    kv_buf_release(&out.b);
  }
  for (int i = 0; i < loaded; i++)
    kind_of(secs[i].kind)->release(&secs[i]);
  free(secs);
  return rc;
}
