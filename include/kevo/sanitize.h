/* The debugger: compute-sanitizer (memcheck, racecheck, synccheck,
 * initcheck) on one check-size call of a CUDA candidate that the gate
 * rejected as wrong, run inside kevo's worker, and a parser of its text
 * report into a few findings with their source lines (the candidate is
 * rebuilt with -lineinfo for it). Never prints, never exits. */
#ifndef KEVO_SANITIZE_H
#define KEVO_SANITIZE_H

#include <stddef.h>

#define KV_SAN_MAX_FINDINGS 8
#define KV_SAN_TEXT_CAP (1u << 20) /* a tool's report read, bytes */
#define KV_SAN_RAW_CAP (16u << 10) /* the reports kept with a result, bytes */

struct kv_san_finding {
  char tool[16];    /* memcheck, racecheck, synccheck, initcheck */
  char kind[128];   /* "Invalid __global__ write of size 4 bytes", "Race reported between
                       Write access and Read access" */
  char kernel[160]; /* the function as the tool names it, arguments left out */
  char file[160];   /* source file of the access (-lineinfo), "" when unknown */
  int line;         /* its line, 0 when unknown */
  char file2[160];  /* racecheck: the other access of the pair */
  int line2;
  char access[256]; /* "thread (31,0,0) block (3,0,0); address 0x7f.. is out of bounds" */
  int count;        /* the same kind at the same line, reported this many times */
};

struct kv_san_report {
  char tools[64]; /* the tools that ran, "memcheck,racecheck" */
  int errors;     /* the tools' own counts ("ERROR SUMMARY: 3 errors"), summed */
  int nfindings;
  struct kv_san_finding f[KV_SAN_MAX_FINDINGS];
  double seconds;       /* what it cost: the -lineinfo build and every tool's run */
  char note[512];       /* "" or "not available: why" (also: a tool that did not finish) */
  char sandbox_off[96]; /* the worker's layers left off under the tools ("" none) */
  char *raw; /* the tools' reports less their "=========" prefixes, capped at KV_SAN_RAW_CAP */
};

/* Parses one tool's text report (NUL-terminated; any bytes) into rep:
 * findings are appended (a repeat of a kind at the same line counts in the
 * earlier one; at most KV_SAN_MAX_FINDINGS), and the "ERROR SUMMARY" count
 * is added to rep->errors. `tool` names the tool for the findings. Returns
 * the number of findings the text held (repeats included); never fails. */
int kv_san_parse(const char *tool, const char *text, struct kv_san_report *rep);

/* One line per finding, kevo's compact rendering:
 * "memcheck: Invalid __global__ write of size 4 bytes in oob_kernel at oob.cu:12 (thread
 * (31,0,0) block (3,0,0); ...)"; "no findings (memcheck, racecheck)" when none. */
void kv_san_summary(const struct kv_san_report *r, char *out, size_t cap);

/* The report as JSON ({tools, errors, findings: [{tool, kind, kernel, file, line, ...}],
 * seconds, note, raw}). */
struct json_t;
struct json_t *kv_san_json(const struct kv_san_report *r);

/* The report's text less its prefixes, appended to rep->raw within the cap. */
void kv_san_append_raw(struct kv_san_report *rep, const char *tool, const char *text);

/* That JSON back (a recorded result), likewise: NULL when j is not an object. */
struct kv_san_report *kv_san_from_json(const struct json_t *j);

void kv_san_report_free(struct kv_san_report *r);

/* compute-sanitizer, into out: $KEVO_COMPUTE_SANITIZER, else beside o's
 * nvcc (bin/ or ../compute-sanitizer/; kv_gate_opts.nvcc_path, o NULL: the
 * default nvcc), else on PATH. "" when there is none. */
struct kv_gate_opts;
void kv_san_path(const struct kv_gate_opts *o, char *out, size_t cap);
/* "2025.3.0" or "" (the tool missing or not answering). Cached per tool. */
const char *kv_san_version(const struct kv_gate_opts *o);

#endif
