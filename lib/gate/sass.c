/* Static analysis of compiled CUDA code (see kevo/sass.h): cuobjdump -sass,
 * run sandboxed with a deadline and a capped output, and a parser of its
 * listing into an instruction mix per kernel. */
#include "kevo/sass.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cudakit.h"
#include "internal.h"
#include "kevo/sandbox.h"
#include "kevo/util.h"

/* ---- the parser ------------------------------------------------------------ */

static int is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The width class of a memory opcode's modifiers ("E.128.CONSTANT" -> 128):
 * a modifier that is exactly 64, 128 or 256. */
static int width_of(const char *mods, size_t n) {
  int w = KV_SASS_W32;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && mods[j] != '.')
      j++;
    size_t len = j - i;
    if (len == 2 && !strncmp(mods + i, "64", 2))
      w = KV_SASS_W64;
    else if (len == 3 && (!strncmp(mods + i, "128", 3) || !strncmp(mods + i, "256", 3)))
      w = KV_SASS_W128;
    i = j + 1;
  }
  return w;
}

static int base_is(const char *op, size_t n, const char *name) {
  size_t k = strlen(name);
  return n == k && !strncmp(op, name, k);
}

static int base_starts(const char *op, size_t n, const char *prefix) {
  size_t k = strlen(prefix);
  return n >= k && !strncmp(op, prefix, k);
}

static int base_ends(const char *op, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return n >= k && !strncmp(op + n - k, suffix, k);
}

/* Counts one instruction given its opcode (with modifiers, e.g.
 * "LDG.E.128.CONSTANT"), len bytes. */
static void count_op(struct kv_sass_mix *m, const char *op, size_t len) {
  size_t n = 0; /* the base: up to the first '.' */
  while (n < len && op[n] != '.')
    n++;
  if (n == 0 || base_is(op, n, "NOP"))
    return;
  m->total++;
  const char *mods = n < len ? op + n + 1 : op + len;
  size_t mn = n < len ? len - n - 1 : 0;
  int w = width_of(mods, mn);
  if (base_is(op, n, "LDG"))
    m->ldg[w]++;
  else if (base_is(op, n, "STG"))
    m->stg[w]++;
  else if (base_is(op, n, "LDS"))
    m->lds[w]++;
  else if (base_is(op, n, "STS"))
    m->sts[w]++;
  else if (base_is(op, n, "LDL"))
    m->ldl++;
  else if (base_is(op, n, "STL"))
    m->stl++;
  else if (base_is(op, n, "LDSM"))
    m->ldsm++;
  else if (base_is(op, n, "LDGSTS"))
    m->ldgsts++;
  else if (base_starts(op, n, "UTMA") || base_starts(op, n, "UBLKCP"))
    m->tma++;
  else if (base_is(op, n, "HMMA"))
    m->hmma++;
  else if (base_is(op, n, "IMMA") || base_is(op, n, "DMMA"))
    m->imma++;
  else if (base_ends(op, n, "GMMA") || (base_starts(op, n, "UTC") && base_ends(op, n, "MMA")))
    m->gmma++;
  else if (base_is(op, n, "BAR"))
    m->bar++;
  else if (base_is(op, n, "SHFL"))
    m->shfl++;
  else if (base_is(op, n, "ATOM") || base_is(op, n, "ATOMS") || base_is(op, n, "ATOMG") ||
           base_is(op, n, "RED") || base_is(op, n, "REDG") || base_is(op, n, "REDUX"))
    m->atom++;
  else if (base_is(op, n, "FFMA"))
    m->ffma++;
}

/* An instruction line: spaces, the address comment "/ *01a0* /", spaces, an
 * optional predicate ("@P0", "@!UPT"), the opcode, operands, ';'. Sets the
 * opcode's span; 0 when the line is not an instruction. */
static int opcode_of(const char *l, size_t n, const char **op, size_t *oplen) {
  size_t i = 0;
  while (i < n && (l[i] == ' ' || l[i] == '\t'))
    i++;
  if (i + 2 > n || l[i] != '/' || l[i + 1] != '*')
    return 0;
  i += 2;
  size_t h = i;
  while (i < n && is_hex(l[i]))
    i++;
  if (i == h || i + 2 > n || l[i] != '*' || l[i + 1] != '/')
    return 0; /* "/ * 0x...": an encoding, not an address */
  i += 2;
  while (i < n && (l[i] == ' ' || l[i] == '\t'))
    i++;
  if (i < n && l[i] == '@') {
    while (i < n && l[i] != ' ' && l[i] != '\t')
      i++;
    while (i < n && (l[i] == ' ' || l[i] == '\t'))
      i++;
  }
  size_t s = i;
  while (i < n && ((l[i] >= 'A' && l[i] <= 'Z') || (l[i] >= 'a' && l[i] <= 'z') ||
                   (l[i] >= '0' && l[i] <= '9') || l[i] == '.' || l[i] == '_'))
    i++;
  if (i == s || l[s] < 'A' || l[s] > 'Z')
    return 0;
  if (i < n && l[i] != ' ' && l[i] != '\t' && l[i] != ';')
    return 0;
  *op = l + s;
  *oplen = i - s;
  return 1;
}

int kv_sass_parse(const char *text, struct kv_sass_kernel *k, int max) {
  int nk = 0, cur = -1;
  static const char fn[] = "Function : ";
  for (const char *line = text; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    const char *f = memmem(line, n, fn, sizeof fn - 1);
    if (f) {
      const char *name = f + sizeof fn - 1;
      size_t len = n - (size_t)(name - line);
      while (len > 0 && (name[len - 1] == ' ' || name[len - 1] == '\r' || name[len - 1] == '\t'))
        len--;
      if (len >= sizeof k[0].name)
        len = sizeof k[0].name - 1;
      cur = -1;
      int seen = 0;
      for (int i = 0; i < nk; i++)
        if (strlen(k[i].name) == len && !strncmp(k[i].name, name, len))
          seen = 1;
      if (!seen && len > 0 && nk < max) {
        cur = nk++;
        memset(&k[cur], 0, sizeof k[cur]);
        memcpy(k[cur].name, name, len);
        k[cur].name[len] = 0;
      }
    } else if (cur >= 0) {
      const char *op;
      size_t oplen;
      if (opcode_of(line, n, &op, &oplen))
        count_op(&k[cur].mix, op, oplen);
    }
    line = nl ? nl + 1 : NULL;
  }
  return nk;
}

/* ---- renderings ---------------------------------------------------------- */

static void widths(struct kv_buf *b, const char *what, const int *w) {
  static const char *const names[KV_SASS_NW] = {"32b", "64b", "128b"};
  if (!w[0] && !w[1] && !w[2])
    return;
  kv_buf_appendf(b, " %s", what);
  for (int i = 0; i < KV_SASS_NW; i++)
    if (w[i])
      kv_buf_appendf(b, " %s:%d", names[i], w[i]);
}

void kv_sass_mix_line(const struct kv_sass_mix *m, char *out, size_t cap) {
  if (!cap)
    return;
  struct kv_buf b;
  kv_buf_init(&b, 1024);
  kv_buf_appendf(&b, "%d instr;", m->total);
  if (m->ldg[0] || m->ldg[1] || m->ldg[2] || m->stg[0] || m->stg[1] || m->stg[2]) {
    kv_buf_appendf(&b, " global");
    widths(&b, "ld", m->ldg);
    widths(&b, "st", m->stg);
    kv_buf_appendf(&b, ";");
  }
  if (m->lds[0] || m->lds[1] || m->lds[2] || m->sts[0] || m->sts[1] || m->sts[2] || m->ldsm) {
    kv_buf_appendf(&b, " shared");
    widths(&b, "ld", m->lds);
    widths(&b, "st", m->sts);
    if (m->ldsm)
      kv_buf_appendf(&b, " ldmatrix:%d", m->ldsm);
    kv_buf_appendf(&b, ";");
  }
  if (m->ldgsts || m->tma)
    kv_buf_appendf(&b, " async copy cp.async:%d tma:%d;", m->ldgsts, m->tma);
  kv_buf_appendf(&b, " local ld %d st %d;", m->ldl, m->stl);
  if (m->hmma || m->imma || m->gmma)
    kv_buf_appendf(&b, " tensor hmma:%d imma:%d gmma:%d;", m->hmma, m->imma, m->gmma);
  else
    kv_buf_appendf(&b, " tensor none;");
  kv_buf_appendf(&b, " bar %d; shfl %d; atom %d; ffma %d", m->bar, m->shfl, m->atom, m->ffma);
  snprintf(out, cap, "%s", b.data ? b.data : "");
  kv_buf_release(&b);
}

/* The JSON keys and their fields, in one table for both directions. */
#define MIX_FIELD(key, f)                                                                          \
  { key, offsetof(struct kv_sass_mix, f) }
static const struct {
  const char *key;
  size_t off;
} mix_fields[] = {
    MIX_FIELD("instructions", total),
    MIX_FIELD("ldg_32", ldg[0]),
    MIX_FIELD("ldg_64", ldg[1]),
    MIX_FIELD("ldg_128", ldg[2]),
    MIX_FIELD("stg_32", stg[0]),
    MIX_FIELD("stg_64", stg[1]),
    MIX_FIELD("stg_128", stg[2]),
    MIX_FIELD("lds_32", lds[0]),
    MIX_FIELD("lds_64", lds[1]),
    MIX_FIELD("lds_128", lds[2]),
    MIX_FIELD("sts_32", sts[0]),
    MIX_FIELD("sts_64", sts[1]),
    MIX_FIELD("sts_128", sts[2]),
    MIX_FIELD("ldl", ldl),
    MIX_FIELD("stl", stl),
    MIX_FIELD("ldsm", ldsm),
    MIX_FIELD("ldgsts", ldgsts),
    MIX_FIELD("tma", tma),
    MIX_FIELD("hmma", hmma),
    MIX_FIELD("imma", imma),
    MIX_FIELD("gmma", gmma),
    MIX_FIELD("bar", bar),
    MIX_FIELD("shfl", shfl),
    MIX_FIELD("atom", atom),
    MIX_FIELD("ffma", ffma),
};

json_t *kv_sass_mix_json(const struct kv_sass_mix *m) {
  json_t *j = json_object();
  for (size_t i = 0; j && i < sizeof mix_fields / sizeof mix_fields[0]; i++) {
    int v;
    memcpy(&v, (const char *)m + mix_fields[i].off, sizeof v);
    json_object_set_new(j, mix_fields[i].key, json_integer(v));
  }
  return j;
}

int kv_sass_mix_from_json(const json_t *j, struct kv_sass_mix *m) {
  memset(m, 0, sizeof *m);
  if (!json_is_object(j))
    return -1;
  for (size_t i = 0; i < sizeof mix_fields / sizeof mix_fields[0]; i++) {
    json_int_t x = json_integer_value(json_object_get(j, mix_fields[i].key));
    int v = x < 0 ? 0 : x > INT_MAX ? INT_MAX : (int)x;
    memcpy((char *)m + mix_fields[i].off, &v, sizeof v);
  }
  return 0;
}

char *kv_sass_strip(const char *text, size_t cap) {
  struct kv_buf b;
  kv_buf_init(&b, cap + 64);
  for (const char *line = text; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    /* Cut at the first encoding comment "/ * 0x"; drop what is then blank. */
    const char *enc = NULL;
    for (size_t i = 0; i + 5 <= n; i++)
      if (line[i] == '/' && line[i + 1] == '*' && line[i + 2] == ' ' && line[i + 3] == '0' &&
          line[i + 4] == 'x') {
        enc = line + i;
        break;
      }
    size_t keep = enc ? (size_t)(enc - line) : n;
    while (keep > 0 && (line[keep - 1] == ' ' || line[keep - 1] == '\t' || line[keep - 1] == '\r'))
      keep--;
    if (keep > 0) {
      if (b.len + keep + 1 > cap) {
        kv_buf_appendf(&b, "[... cut at %zu bytes]\n", cap);
        break;
      }
      kv_buf_append(&b, line, keep);
      kv_buf_append(&b, "\n", 1);
    }
    line = nl ? nl + 1 : NULL;
  }
  if (!b.data)
    kv_buf_append(&b, "", 0);
  return kv_buf_detach(&b);
}

/* ---- cuobjdump ----------------------------------------------------------- */

void kv_cuobjdump_path(const struct kv_gate_opts *o, char *out, size_t cap) {
  kv_cuda_tool_find("KEVO_CUOBJDUMP", "cuobjdump", NULL, o, out, cap);
}

int kv_sass_dump(const struct kv_gate_opts *o, const char *obj, const char *tmp_parent,
                 double deadline_s, char **text, int *truncated, char *note, size_t notecap) {
  *text = NULL;
  *truncated = 0;
  char tool[PATH_MAX];
  kv_cuobjdump_path(o, tool, sizeof tool);
  if (!tool[0])
    return kv_error(note, notecap,
                    "not available: cuobjdump not found (not beside nvcc, not on PATH); install "
                    "the CUDA toolkit's cuobjdump or set KEVO_CUOBJDUMP to its path");
  char tooldir[PATH_MAX], dir[PATH_MAX], err[512];
  snprintf(tooldir, sizeof tooldir, "%s", tool);
  char *sl = strrchr(tooldir, '/');
  if (sl)
    *sl = 0;
  if (kv_mkdtemp(tmp_parent, "sass", dir, sizeof dir, err, sizeof err) < 0)
    return kv_error(note, notecap, "not available: %s", err);
  struct kv_jail jail = {.dir = dir,
                         .reads = {obj, tooldir},
                         .nreads = 2,
                         .cpu_s = 60,
                         .fsize = 16u << 20,
                         .worker_path = o ? o->worker_path : NULL};
  char *argv[] = {tool, "-sass", (char *)obj, NULL};
  char home[PATH_MAX + 8], tmp[PATH_MAX + 8];
  snprintf(home, sizeof home, "HOME=%s", dir);
  snprintf(tmp, sizeof tmp, "TMPDIR=%s", dir);
  char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C", home, tmp, NULL};
  struct kv_buf out;
  kv_buf_init(&out, KV_SASS_TEXT_CAP);
  struct kv_proc_result r;
  int rc = kv_run_jailed(&jail, argv, envp, dir, deadline_s, &out, &r, err, sizeof err);
  kv_rmtree(dir);
  if (rc < 0) {
    kv_buf_release(&out);
    return kv_error(note, notecap, "not available: %s", err);
  }
  if (!r.exited || r.status != 0) {
    char how[128];
    kv_proc_describe(&r, how, sizeof how);
    char tail[300];
    snprintf(tail, sizeof tail, "%.200s", out.data ? out.data : "");
    tail[strcspn(tail, "\n")] = 0;
    kv_buf_release(&out);
    return kv_error(note, notecap, "not available: %s -sass %s %s: %s", tool, obj, how, tail);
  }
  *truncated = out.truncated;
  if (!out.data)
    kv_buf_append(&out, "", 0);
  *text = kv_buf_detach(&out);
  return *text ? 0 : kv_error(note, notecap, "not available: out of memory");
}

/* ---- the gate's use ------------------------------------------------------ */

void kv_sass_analyze_build(struct kv_build *b, const struct kv_gate_opts *o, const char *tmp_parent,
                           double deadline_s) {
  double t0 = kv_now_s();
  char *text = NULL;
  int truncated = 0;
  b->static_done = 0;
  b->static_note[0] = 0;
  /* The stripped listing is kept beside the object (<key>.sass): a cached
   * build (the reference, a candidate judged again) is not dumped again. */
  char cached[sizeof b->obj_path + 8];
  size_t ol = strlen(b->obj_path);
  snprintf(cached, sizeof cached, "%.*s.sass",
           (int)(ol > 2 && !strcmp(b->obj_path + ol - 2, ".o") ? ol - 2 : ol), b->obj_path);
  size_t len = 0;
  int got = kv_read_file(cached, KV_SASS_TEXT_CAP, &text, &len, NULL, 0) == 0 ? 0 : -1;
  if (got < 0 && kv_sass_dump(o, b->obj_path, tmp_parent, deadline_s, &text, &truncated,
                              b->static_note, sizeof b->static_note) == 0) {
    char *stripped = kv_sass_strip(text, KV_SASS_TEXT_CAP);
    if (stripped) {
      free(text);
      text = stripped;
      if (!truncated)
        kv_write_file(cached, text, strlen(text), NULL, 0);
    }
    got = 0;
  }
  if (got == 0) {
    struct kv_sass_kernel *ks = calloc(KV_SASS_MAX_KERNELS, sizeof *ks);
    if (!ks) {
      snprintf(b->static_note, sizeof b->static_note, "not available: out of memory");
    } else {
      int n = kv_sass_parse(text, ks, KV_SASS_MAX_KERNELS);
      /* Each entry ptxas reported gets its mix; with no ptxas report (an
       * empty log), the listing's functions make the list. */
      int from_ptxas = b->nkernels > 0;
      for (int i = 0; i < n; i++) {
        int at = -1;
        for (int j = 0; j < b->nkernels; j++)
          if (!strcmp(b->kernels[j].name, ks[i].name))
            at = j;
        if (at < 0 && !from_ptxas && b->nkernels < KV_MAX_KERNELS) {
          at = b->nkernels++;
          memset(&b->kernels[at], 0, sizeof b->kernels[at]);
          snprintf(b->kernels[at].name, sizeof b->kernels[at].name, "%s", ks[i].name);
        }
        if (at >= 0) {
          b->kernels[at].has_sass = 1;
          b->kernels[at].sass = ks[i].mix;
        }
      }
      free(ks);
      b->sass = kv_sass_strip(text, KV_SASS_RAW_CAP);
      b->static_done = 1;
      if (truncated)
        snprintf(b->static_note, sizeof b->static_note,
                 "partial: cuobjdump's listing was cut at %u bytes; the mix counts what came",
                 KV_SASS_TEXT_CAP);
    }
    free(text);
  }
  b->static_s = kv_now_s() - t0;
}
