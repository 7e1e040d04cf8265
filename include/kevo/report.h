/* kevo's reports, read from the store: one self-contained HTML page (inline
 * CSS, inline SVG and a little JavaScript of kevo's own; nothing is fetched,
 * so it works from disk with the network off) and a plain-text summary for
 * the terminal. Whatever came from a candidate, a compiler or a model is
 * text: HTML-escaped in the page, and escaped so that it cannot end the
 * script block holding the page's data. Never prints, never exits. */
#ifndef KEVO_REPORT_H
#define KEVO_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "kevo/util.h"

struct kv_store;

/* The page never exceeds this; a report that would is an error naming the fix. */
#define KV_REPORT_FILE_MAX ((size_t)20 << 20)
/* Each source, diff, compile log or plan in the page is cut at this length,
 * with a note that the whole text is in the store. */
#define KV_REPORT_ITEM_CAP ((size_t)64 << 10)
/* All of them together, over every section of a page. */
#define KV_REPORT_TEXT_BUDGET ((size_t)11 << 20)
/* A run's nodes beyond this many are left out of its section (it says so):
 * drawn and described, 20,000 nodes take about 18 MB of a page. */
#define KV_REPORT_NODES_MAX 20000
/* What a node takes in a page besides its texts (its circles, edge, tooltips
 * and the fields of its JSON), a little over what was measured: the texts'
 * budget is what the cap leaves after this. */
#define KV_REPORT_NODE_BYTES 900

/* What a page is made of, one section each: a run, a bench (kevo bench:
 * its score, fast_p curve and tasks) or an analysis (kevo analyze: Shapley
 * values, interactions, the planning and transfer experiments). A kind of
 * section is one entry in lib/report/report.c's table of kinds. */
enum kv_report_kind { KV_REPORT_RUN, KV_REPORT_BENCH, KV_REPORT_ANALYSIS };
struct kv_report_item {
  enum kv_report_kind kind;
  int64_t id; /* <= 0: the most recent */
};

struct kv_report_opts {
  size_t item_cap;        /* 0: KV_REPORT_ITEM_CAP */
  size_t text_budget;     /* 0: KV_REPORT_TEXT_BUDGET */
  size_t file_max;        /* 0: KV_REPORT_FILE_MAX */
  const char *store_path; /* named in the page's footer; may be NULL */
  int64_t now_unix;       /* "generated at"; 0: now */
};

struct kv_report_stats {
  int sections, nodes, points, tasks;
  int bars, cells; /* an analysis's: bars with intervals, heat-map and 2x2 cells */
  int elided;      /* texts cut or left out (a cap or the budget) */
  size_t bytes;
};

/* Writes the page into *html (malloc'd, NUL-terminated, *len bytes). */
int kv_report_html(struct kv_store *s, const struct kv_report_item *items, int nitems,
                   const struct kv_report_opts *o, char **html, size_t *len,
                   struct kv_report_stats *stats, char *err, size_t errlen);

/* `kevo runs show`: the run's header and its tree as indented lines with
 * verdicts and speedups (run_id <= 0: the most recent), malloc'd in *text. */
int kv_report_run_text(struct kv_store *s, int64_t run_id, char **text, size_t *len, char *err,
                       size_t errlen);

/* ---- building blocks (tested on their own) ---- */

/* Appends s[0..n) as HTML text, valid in element content and in quoted
 * attribute values: & < > " ' become entities; invalid UTF-8 and control
 * characters other than tab, newline and carriage return become U+FFFD.
 * -1 only when memory runs out. */
int kv_html_escape(struct kv_buf *b, const char *s, size_t n);
/* Appends JSON text for a <script type="application/json"> block: < > &
 * become \u003c \u003e \u0026, which JSON reads back unchanged and which
 * cannot close the block or open a comment. The input must be JSON (where
 * those characters can only be inside strings). */
int kv_json_for_script(struct kv_buf *b, const char *json, size_t n);
/* Appends s[0..n) with invalid UTF-8 and NUL bytes replaced by U+FFFD, so
 * that any bytes can become a JSON string. */
int kv_utf8_clean(struct kv_buf *b, const char *s, size_t n);
/* A line diff of a into b, unified style ("@@ -1,3 +1,4 @@" hunks with
 * `context` lines around each change, lines prefixed ' ', '-' or '+'),
 * appended to out; nothing when they are equal. 0 done, 1 too large to diff
 * (more than 20,000 lines a side, or more than 4 million line pairs left
 * after their common start and end; nothing appended), -1 out of memory. */
int kv_line_diff(const char *a, size_t alen, const char *b, size_t blen, int context,
                 struct kv_buf *out);

#endif
