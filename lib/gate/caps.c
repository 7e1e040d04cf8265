/* The compilers' caps (issue 28 item 6, issue 30): every compiler kevo runs
 * on candidate text (cc, nvcc and what it starts: cicc, ptxas, the host
 * compiler; kevo-nvrtc) gets an address-space limit and a CPU limit, set in
 * the forked child before its exec (so kevo-sandbox and kevo-nvrtc, which
 * never raise a limit, inherit them), and a source that reaches for files
 * outside the compiler's include directories is refused before any compiler
 * runs. A compile bomb is then a compile_error whose detail names the cap. */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "internal.h"

static unsigned long long env_num(const char *name, unsigned long long def, unsigned long long lo,
                                  unsigned long long hi) {
  const char *e = getenv(name);
  if (!e || !*e)
    return def;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(e, &end, 10);
  if (errno || end == e || *end || e[0] == '-' || v < lo || v > hi)
    return def;
  return v;
}

void kv_compile_caps_get(struct kv_compile_caps *c) {
  c->mem_mb = env_num("KEVO_COMPILE_MEM_MB", KV_COMPILE_MEM_MB_DEFAULT, 256, 1ULL << 22);
  c->cpu_s = (int)env_num("KEVO_COMPILE_CPU_S", KV_COMPILE_CPU_S_DEFAULT, 1, 86400);
}

/* Lowers a limit (never raises one already lower). Async-signal-safe. */
static int lower(int res, rlim_t soft, rlim_t hard) {
  struct rlimit cur;
  if (getrlimit(res, &cur) != 0)
    return -1;
  if (cur.rlim_max != RLIM_INFINITY && hard > cur.rlim_max)
    hard = cur.rlim_max;
  if (soft > hard)
    soft = hard;
  if (cur.rlim_cur != RLIM_INFINITY && soft > cur.rlim_cur)
    soft = cur.rlim_cur;
  struct rlimit nl = {soft, hard};
  return setrlimit(res, &nl);
}

int kv_compile_caps_apply(void *arg) {
  const struct kv_compile_caps *c = arg;
  if (lower(RLIMIT_CPU, (rlim_t)c->cpu_s, (rlim_t)c->cpu_s + 2) != 0)
    return -1;
#if !(defined(KEVO_SANITIZED) && KEVO_SANITIZED)
  /* (A sanitizer build's helpers reserve terabytes of shadow: not there.) */
  rlim_t as = (rlim_t)c->mem_mb << 20;
  if (lower(RLIMIT_AS, as, as) != 0)
    return -1;
#endif
  return 0;
}

static const char *const oom_words[] = {
    "virtual memory exhausted",  "out of memory",  "Out of memory",
    "Cannot allocate memory",    "std::bad_alloc", "memory exhausted",
    "Memory allocation failure", "OUT_OF_MEMORY",  "Loop in catastrophic error processing",
};

static int log_says(const struct kv_buf *log, const char *const *words, size_t n) {
  for (size_t i = 0; log->data && i < n; i++)
    if (strstr(log->data, words[i]))
      return 1;
  return 0;
}

/* Puts line before the log's text (the gate's detail is the log's first line
 * that says "error"). */
static void prepend(struct kv_buf *log, const char *line) {
  char *old = kv_buf_detach(log);
  kv_buf_appendf(log, "%s\n", line);
  kv_buf_append(log, old, strlen(old));
  free(old);
}

int kv_compile_caps_explain(const struct kv_compile_caps *c, const char *tool,
                            const struct kv_proc_result *pr, struct kv_buf *log) {
  if (pr->exited && pr->status == 0)
    return 0;
  static const char *const cpu_words[] = {"CPU time limit exceeded", "SIGXCPU"};
  char line[512];
  if ((pr->signaled && pr->sig == SIGXCPU) || log_says(log, cpu_words, 2)) {
    snprintf(line, sizeof line,
             "kevo: error: %s hit the compilers' CPU cap (%d s of CPU time, "
             "KEVO_COMPILE_CPU_S): the source takes too long to compile",
             tool, c->cpu_s);
  } else if (log_says(log, oom_words, KV_ARRAY_LEN(oom_words)) ||
             (pr->signaled && (pr->sig == SIGKILL || pr->sig == SIGABRT) && !pr->timed_out)) {
    snprintf(line, sizeof line,
             "kevo: error: %s hit the compilers' memory cap (address space %llu MiB, "
             "KEVO_COMPILE_MEM_MB): the source needs too much memory to compile",
             tool, c->mem_mb);
  } else {
    return 0;
  }
  prepend(log, line);
  return 1;
}

void kv_compile_deadline_explain(const char *tool, double deadline_s, struct kv_buf *log) {
  char line[256];
  snprintf(line, sizeof line,
           "kevo: error: %s did not finish within the compile deadline (%.0f s wall clock, "
           "--compile-deadline) and was killed",
           tool, deadline_s);
  prepend(log, line);
}

/* ---- files a source may name ---- */

/* Why `path` (an operand of #include, #embed or .incbin) is refused, or NULL:
 * absolute paths (devices, /proc, any file of the system) and paths that
 * climb out with "..". Headers are named relative to the include
 * directories: <cuda_fp16.h>, "proto.h". */
static const char *bad_path(const char *p, size_t n) {
  if (n == 0)
    return NULL;
  if (p[0] == '/')
    return "an absolute path";
  for (size_t i = 0; i + 1 < n; i++)
    if (p[i] == '.' && p[i + 1] == '.' && (i == 0 || p[i - 1] == '/') &&
        (i + 2 == n || p[i + 2] == '/'))
      return "a path that climbs out with \"..\"";
  return NULL;
}

static const char *skip_blank(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\f' || *p == '\v' || *p == '\r'))
    p++;
  return p;
}

static int word_at(const char *p, const char *end, const char *w) {
  size_t n = strlen(w);
  return (size_t)(end - p) >= n && !memcmp(p, w, n) &&
         (p + n == end || !(isalnum((unsigned char)p[n]) || p[n] == '_'));
}

/* The directive at p (just past '#'): 0 fine, 1 refused (why in out). */
static int check_directive(const char *p, const char *end, int line, char *out, size_t cap) {
  static const char *const names[] = {"include_next", "include", "embed", "import"};
  p = skip_blank(p, end);
  const char *d = NULL;
  for (size_t i = 0; i < KV_ARRAY_LEN(names) && !d; i++)
    if (word_at(p, end, names[i]))
      d = names[i];
  if (!d)
    return 0;
  p = skip_blank(p + strlen(d), end);
  if (p < end && (*p == '"' || *p == '<')) {
    char close = *p == '"' ? '"' : '>';
    const char *s = ++p;
    while (p < end && *p != close && *p != '\n')
      p++;
    const char *why = bad_path(s, (size_t)(p - s));
    if (!why)
      return 0;
    snprintf(out, cap,
             "line %d: #%s of %s (%.*s): a candidate may include only headers from the "
             "compiler's include directories, by a relative name",
             line, d, why, (int)(p - s > 200 ? 200 : p - s), s);
    return 1;
  }
  snprintf(out, cap,
           "line %d: #%s of a computed name (a macro): name the header itself, in \"\" or <>", line,
           d);
  return 1;
}

/* .incbin "FILE" in inline assembly: the assembler reads FILE into the object. */
static int check_incbin(const char *text, size_t len, char *out, size_t cap) {
  const char *end = text + len;
  for (const char *p = text; (p = memmem(p, (size_t)(end - p), ".incbin", 7)) != NULL; p += 7) {
    const char *q = p + 7;
    while (q < end && (*q == ' ' || *q == '\t' || *q == '\\'))
      q++;
    if (q < end && *q == '"')
      q++;
    const char *s = q;
    while (q < end && *q != '"' && *q != '\\' && *q != '\n' && *q != ',')
      q++;
    const char *why = bad_path(s, (size_t)(q - s));
    if (why) {
      snprintf(out, cap, ".incbin of %s (%.*s): a candidate's assembly may not read files", why,
               (int)(q - s > 200 ? 200 : q - s), s);
      return 1;
    }
  }
  return 0;
}

/* Translation phases 2 and 3, roughly: line splices removed, each comment
 * made one space (newlines inside kept, for line numbers), string and
 * character literals left as they are (ending at their line's end). A
 * source that fools this (C++ raw strings) still meets the memory cap. */
static char *normalize(const char *t, size_t n, size_t *out_len) {
  char *o = malloc(n + 1);
  size_t k = 0;
  char quote = 0;
  for (size_t i = 0; o && i < n; i++) {
    if (t[i] == '\\' && i + 1 < n && t[i + 1] == '\n') {
      i++;
      continue;
    }
    if (quote) {
      if (t[i] == '\\' && i + 1 < n && t[i + 1] != '\n') {
        o[k++] = t[i++];
      } else if (t[i] == quote || t[i] == '\n') {
        quote = 0;
      }
      o[k++] = t[i];
      continue;
    }
    if (t[i] == '"' || t[i] == '\'') {
      quote = t[i];
    } else if (t[i] == '/' && i + 1 < n && t[i + 1] == '*') {
      size_t j = i + 2;
      while (j + 1 < n && !(t[j] == '*' && t[j + 1] == '/'))
        j++;
      o[k++] = ' ';
      for (size_t m = i; m < j && m < n; m++)
        if (t[m] == '\n')
          o[k++] = '\n';
      i = j + 1 < n ? j + 1 : n;
      continue;
    } else if (t[i] == '/' && i + 1 < n && t[i + 1] == '/') {
      while (i + 1 < n && !(t[i + 1] == '\n' && t[i] != '\\'))
        i++;
      o[k++] = ' ';
      continue;
    }
    o[k++] = t[i];
  }
  if (o)
    o[k] = 0;
  *out_len = k;
  return o;
}

int kv_source_files_check(const char *src, size_t srclen, char *out, size_t cap) {
  size_t len;
  char *text = normalize(src, srclen, &len);
  if (!text) {
    snprintf(out, cap, "out of memory while reading the source");
    return 1;
  }
  const char *end = text + len;
  int line = 1, bol = 1, bad = 0;
  for (const char *p = text; p < end && !bad; p++) {
    if (*p == '\n') {
      line++;
      bol = 1;
      continue;
    }
    if (bol && (*p == ' ' || *p == '\t' || *p == '\f' || *p == '\v' || *p == '\r'))
      continue;
    if (bol && *p == '#')
      bad = check_directive(p + 1, end, line, out, cap);
    else if (bol && *p == '%' && p + 1 < end && p[1] == ':') /* the digraph of # */
      bad = check_directive(p + 2, end, line, out, cap);
    bol = 0;
  }
  if (!bad)
    bad = check_incbin(text, len, out, cap);
  free(text);
  return bad;
}

void kv_source_files_refusal(const char *why, char **log) {
  if (asprintf(log,
               "kevo: error: %s (refused before compiling: device files, /proc and files outside "
               "the include directories are not a candidate's to read)\n",
               why) < 0)
    *log = NULL;
}
