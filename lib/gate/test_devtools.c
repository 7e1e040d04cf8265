/* The profiler's and the debugger's parsers (kevo/ncu.h, kevo/sanitize.h) on
 * tool outputs in the tools' layouts (tests/ncu/, tests/sanitize/), their
 * renderings and JSON, and the gate's "not available" path when a tool is
 * missing. No GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "kevo/gate.h"
#include "kevo/ncu.h"
#include "kevo/sanitize.h"
#include "kevo/util.h"
#include "toolcall.h"

static char *fixture(const char *dir, const char *name) {
  const char *src = getenv("KEVO_SOURCE_DIR");
  char path[4096], err[256];
  snprintf(path, sizeof path, "%s/tests/%s/%s", src ? src : ".", dir, name);
  char *text = NULL;
  size_t len = 0;
  if (kv_read_file(path, 16u << 20, &text, &len, err, sizeof err) < 0)
    fail_msg("%s", err);
  return text;
}

static struct kv_san_report *parse_san(const char *tool, const char *name) {
  struct kv_san_report *r = calloc(1, sizeof *r);
  char *t = fixture("sanitize", name);
  kv_san_parse(tool, t, r);
  free(t);
  return r;
}

/* memcheck: the planted out-of-bounds write, its line, kernel and access;
 * the repeat at the same line folds into one finding; the API error after it
 * is no finding. */
static void test_memcheck(void **state) {
  (void)state;
  struct kv_san_report *r = parse_san("memcheck", "memcheck-oob.txt");
  assert_int_equal(r->nfindings, 1);
  assert_int_equal(r->errors, 8);
  const struct kv_san_finding *f = &r->f[0];
  assert_string_equal(f->tool, "memcheck");
  assert_string_equal(f->kind, "Invalid __global__ write of size 4 bytes");
  assert_string_equal(f->kernel, "rowsum_oob");
  assert_string_equal(f->file, "/tmp/kc/dbg-Xq2b/candidate.cu");
  assert_int_equal(f->line, 13);
  assert_int_equal(f->count, 2);
  assert_non_null(strstr(f->access, "thread (6,0,0) in block (0,0,0)"));
  assert_non_null(strstr(f->access, "is out of bounds"));
  char line[2048];
  kv_san_summary(r, line, sizeof line);
  assert_non_null(strstr(line, "memcheck: Invalid __global__ write of size 4 bytes in rowsum_oob "
                               "at candidate.cu:13"));
  assert_non_null(strstr(line, "[x2]"));
  free(r);
}

/* racecheck: both lines of each race, one-line and wrapped layouts. */
static void test_racecheck(void **state) {
  (void)state;
  struct kv_san_report *r = parse_san("racecheck", "racecheck-race.txt");
  assert_int_equal(r->nfindings, 2);
  assert_int_equal(r->errors, 2); /* no ERROR SUMMARY: the findings count */
  assert_string_equal(r->f[0].kind, "Error: Race reported between Write access and Read access");
  assert_string_equal(r->f[0].kernel, "rowsum_race");
  assert_int_equal(r->f[0].line, 17);
  assert_int_equal(r->f[0].line2, 17);
  assert_non_null(strstr(r->f[0].access, "3072 hazards"));
  assert_int_equal(r->f[1].line2, 20);
  free(r);
  r = parse_san("racecheck", "racecheck-wrapped.txt");
  assert_int_equal(r->nfindings, 1);
  assert_string_equal(r->f[0].kind, "Error: Race reported between Write access and Read access");
  assert_string_equal(r->f[0].kernel, "race_condition");
  assert_string_equal(r->f[0].file, "debug_demo.cu");
  assert_int_equal(r->f[0].line, 28);
  assert_string_equal(r->f[0].file2, "debug_demo.cu");
  assert_int_equal(r->f[0].line2, 30);
  assert_non_null(strstr(r->f[0].access, "1024 hazards"));
  free(r);
}

static void test_sync_init_clean(void **state) {
  (void)state;
  struct kv_san_report *r = parse_san("synccheck", "synccheck-divergent.txt");
  assert_int_equal(r->nfindings, 1);
  assert_string_equal(r->f[0].kind, "Barrier error detected. Divergent thread(s) in warp");
  assert_int_equal(r->f[0].line, 31);
  /* initcheck into the same report: findings accumulate, errors add up. */
  char *t = fixture("sanitize", "initcheck-uninit.txt");
  kv_san_parse("initcheck", t, r);
  free(t);
  assert_int_equal(r->nfindings, 2);
  assert_int_equal(r->errors, 1 + 1024);
  assert_string_equal(r->f[1].tool, "initcheck");
  assert_string_equal(r->f[1].kernel, "uninit_read");
  assert_int_equal(r->f[1].line, 38);
  free(r);
  r = parse_san("memcheck", "memcheck-clean.txt");
  assert_int_equal(r->nfindings, 0);
  assert_int_equal(r->errors, 0);
  char line[256];
  snprintf(r->tools, sizeof r->tools, "memcheck");
  kv_san_summary(r, line, sizeof line);
  assert_string_equal(line, "no findings (memcheck)");
  free(r);
  r = parse_san("memcheck", "cudamemcheck-old.txt");
  assert_int_equal(r->nfindings, 1);
  assert_string_equal(r->f[0].file, "/home/u/src/helper.cuh");
  assert_int_equal(r->f[0].line, 75);
  assert_string_equal(r->f[0].kernel, "void vector_projection<double>(double*, int)");
  free(r);
}

/* Recorded on an H100 (compute-sanitizer 2025.3.1, tests/debug/standalone.cu,
 * tests/sanitize/README.md): memcheck's out-of-bounds write at line 12,
 * printed 20 times (--print-limit) of 513, byte counts with thousands
 * separators, and a second ERROR SUMMARY line for the errors not printed. */
static void test_h100_memcheck(void **state) {
  (void)state;
  struct kv_san_report *r = parse_san("memcheck", "h100-memcheck.txt");
  assert_int_equal(r->nfindings, 1);
  assert_int_equal(r->errors, 513); /* not the "493 errors were not printed" */
  const struct kv_san_finding *f = &r->f[0];
  assert_string_equal(f->tool, "memcheck");
  assert_non_null(strstr(f->kind, "write"));
  assert_string_equal(f->kind, "Invalid __global__ write of size 4 bytes");
  assert_string_equal(f->kernel, "oob_write");
  assert_string_equal(f->file, "standalone.cu");
  assert_int_equal(f->line, 12);
  assert_int_equal(f->count, 20); /* the printed repeats at line 12, folded */
  assert_non_null(strstr(f->access, "thread (64,0,0) in block (0,0,0)"));
  assert_non_null(strstr(f->access, "Access to 0x7f4f24000100 is out of bounds"));
  assert_non_null(strstr(f->access, "155,188,993 bytes after the nearest allocation"));
  char line[2048];
  kv_san_summary(r, line, sizeof line);
  assert_non_null(strstr(line, "memcheck: Invalid __global__ write of size 4 bytes in oob_write "
                               "at standalone.cu:12"));
  assert_non_null(strstr(line, "[x20]"));
  free(r);
}

/* racecheck, recorded: a write paired with two reads per report (two "and"
 * lines), errors and warnings, all at line 22. */
static void test_h100_racecheck(void **state) {
  (void)state;
  struct kv_san_report *r = parse_san("racecheck", "h100-racecheck.txt");
  assert_int_equal(r->nfindings, 3);
  assert_int_equal(r->errors, 7); /* "7 hazards displayed": no ERROR SUMMARY */
  const struct kv_san_finding *f = &r->f[0];
  assert_string_equal(f->kind, "Error: Race reported between Write access and Read access");
  assert_string_equal(f->kernel, "smem_race");
  assert_string_equal(f->file, "standalone.cu");
  assert_int_equal(f->line, 22);
  assert_string_equal(f->file2, "standalone.cu");
  assert_int_equal(f->line2, 22);
  assert_int_equal(f->count, 2);
  assert_non_null(strstr(f->access, "15488 hazards"));
  assert_non_null(strstr(f->access, "3584 hazards")); /* the second read's */
  assert_string_equal(r->f[1].kind, "Warning: Race reported between Write access and Read access");
  assert_int_equal(r->f[1].count, 4);
  assert_string_equal(r->f[2].kind, "Warning: Race reported between Read access and Write access");
  assert_int_equal(r->f[2].line, 22);
  assert_int_equal(r->f[2].line2, 22);
  assert_int_equal(r->f[0].count + r->f[1].count + r->f[2].count, 7);
  free(r);
}

/* synccheck and initcheck, recorded: the divergent barrier at line 30 (16
 * threads), the uninitialized read at line 37 (20 printed of 1024). */
static void test_h100_sync_init(void **state) {
  (void)state;
  struct kv_san_report *r = parse_san("synccheck", "h100-synccheck.txt");
  assert_int_equal(r->nfindings, 1);
  assert_int_equal(r->errors, 16);
  assert_string_equal(r->f[0].kind, "Barrier error detected. Divergent thread(s) in warp.");
  assert_non_null(strstr(r->f[0].kind, "Barrier"));
  assert_non_null(strstr(r->f[0].kind, "Divergent"));
  assert_string_equal(r->f[0].kernel, "divergent_barrier");
  assert_string_equal(r->f[0].file, "standalone.cu");
  assert_int_equal(r->f[0].line, 30);
  assert_int_equal(r->f[0].count, 16);
  free(r);
  r = parse_san("initcheck", "h100-initcheck.txt");
  assert_int_equal(r->nfindings, 1);
  assert_int_equal(r->errors, 1024); /* not the "1004 errors were not printed" */
  assert_string_equal(r->f[0].kind, "Uninitialized __global__ memory read of size 4 bytes");
  assert_non_null(strstr(r->f[0].kind, "Uninitialized"));
  assert_string_equal(r->f[0].kernel, "uninit_read");
  assert_string_equal(r->f[0].file, "standalone.cu");
  assert_int_equal(r->f[0].line, 37);
  assert_int_equal(r->f[0].count, 20);
  assert_non_null(strstr(r->f[0].access, "Address 0x7fb182000800"));
  free(r);
}

/* AddressSanitizer and UBSan (the cpu surface), recorded in kevo's worker:
 * the kind, the function and line of the first frame with a source line,
 * the access. */
static void test_asan_ubsan(void **state) {
  (void)state;
  struct kv_san_report *r = parse_san("asan", "asan-heap-overflow.txt");
  assert_int_equal(r->nfindings, 1);
  assert_int_equal(r->errors, 1);
  const struct kv_san_finding *f = &r->f[0];
  assert_string_equal(f->tool, "asan");
  assert_string_equal(f->kind, "AddressSanitizer: heap-buffer-overflow");
  assert_string_equal(f->kernel, "rowsum");
  assert_int_equal(f->line, 15);
  assert_non_null(strstr(f->file, "candidate.c"));
  assert_non_null(strstr(f->access, "WRITE of size 4"));
  assert_non_null(strstr(f->access, "0 bytes to the right of 4-byte region"));
  free(r);
  r = parse_san("asan", "ubsan-objsize.txt");
  assert_int_equal(r->nfindings, 1);
  f = &r->f[0];
  assert_string_equal(f->tool, "ubsan");
  assert_non_null(strstr(f->kind, "runtime error: load of address"));
  assert_string_equal(f->file, "candidate.c");
  assert_int_equal(f->line, 2);
  assert_string_equal(f->kernel, "add");
  free(r);
}

/* The raw text: prefixes and host backtraces gone, capped. */
static void test_san_raw_json(void **state) {
  (void)state;
  struct kv_san_report *r = parse_san("memcheck", "memcheck-oob.txt");
  char *t = fixture("sanitize", "memcheck-oob.txt");
  kv_san_append_raw(r, "memcheck", t);
  assert_non_null(r->raw);
  assert_null(strstr(r->raw, "========="));
  assert_null(strstr(r->raw, "Host Frame"));
  assert_non_null(strstr(r->raw, "== memcheck\nCOMPUTE-SANITIZER\nInvalid __global__ write"));
  /* Appending far past the cap stays within it. */
  for (int i = 0; i < 100; i++)
    kv_san_append_raw(r, "memcheck", t);
  assert_true(strlen(r->raw) <= KV_SAN_RAW_CAP);
  free(t);
  snprintf(r->tools, sizeof r->tools, "memcheck");
  json_t *j = kv_san_json(r);
  json_t *f0 = json_array_get(json_object_get(j, "findings"), 0);
  assert_string_equal(json_string_value(json_object_get(f0, "file")), "candidate.cu");
  assert_int_equal(json_integer_value(json_object_get(f0, "line")), 13);
  assert_int_equal(json_integer_value(json_object_get(j, "errors")), 8);
  json_decref(j);
  kv_san_report_free(r);
}

static const struct kv_ncu_kernel *kernel(const struct kv_ncu_report *r, const char *name) {
  for (int i = 0; i < r->nkernels; i++)
    if (!strcmp(r->k[i].name, name))
      return &r->k[i];
  fail_msg("kernel %s not in the report", name);
  return NULL;
}

static void test_ncu(void **state) {
  (void)state;
  char *t = fixture("ncu", "rowsum.csv");
  struct kv_ncu_report *r = calloc(1, sizeof *r);
  assert_int_equal(kv_ncu_parse_csv(t, r), 2);
  const struct kv_ncu_kernel *g = kernel(r, "_Z11rowsum_rowsPKfPfii");
  assert_string_equal(g->grid, "(8192, 1, 1)");
  assert_string_equal(g->block, "(256, 1, 1)");
  assert_float_equal(g->duration_us, 95.328, 1e-9);
  assert_float_equal(g->mem_pct, 89.71, 1e-9); /* the %, not MWA's byte/second */
  assert_float_equal(g->dram_pct, 89.71, 1e-9);
  assert_float_equal(g->sm_pct, 31.56, 1e-9);
  assert_float_equal(g->achieved_occ, 91.37, 1e-9);
  assert_float_equal(g->theoretical_occ, 100, 1e-9);
  assert_float_equal(g->registers, 30, 1e-9);
  assert_float_equal(g->smem_bytes, 128, 1e-9);
  assert_float_equal(g->waves, 7.76, 1e-9);
  assert_float_equal(g->cpi, 44.21, 1e-9);
  assert_string_equal(g->top_stall, "long_scoreboard");
  assert_float_equal(g->top_stall_cycles, 38.9, 1e-9);
  /* Rules by estimated speedup; the informational one is left out. */
  assert_int_equal(g->nrules, 2);
  assert_string_equal(g->rules[0].name, "CPIStall");
  assert_float_equal(g->rules[0].speedup, 10.29, 1e-9);
  assert_string_equal(g->rules[1].name, "AchievedOccupancy");
  const struct kv_ncu_kernel *n = kernel(r, "_Z12rowsum_naivePKfPfii");
  assert_float_equal(n->duration_us, 1843.42, 1e-9); /* "us", with a thousands separator */
  assert_float_equal(n->achieved_occ, 6.23, 1e-9);
  assert_int_equal(n->nrules, KV_NCU_MAX_RULES); /* five given, four kept: the largest */
  assert_string_equal(n->rules[0].name, "CPIStall");
  assert_string_equal(n->rules[1].name, "AchievedOccupancy");
  assert_string_equal(n->rules[2].name, "UncoalescedGlobalAccess");
  assert_string_equal(n->rules[3].name, "LaunchConfiguration");
  assert_non_null(strstr(n->rules[2].text, "uncoalesced global accesses"));
  char line[8192];
  kv_ncu_summary(r, line, sizeof line);
  assert_non_null(strstr(line, "_Z11rowsum_rowsPKfPfii<<<(8192, 1, 1),(256, 1, 1)>>> 95.3 us; SOL "
                               "sm 32% mem 90% (dram 90%"));
  assert_non_null(strstr(line, "occupancy 91% of 100%"));
  assert_non_null(strstr(line, "top stall long_scoreboard (38.9 of 44.2 cycles/instr)"));
  assert_non_null(strstr(line, "rule CPIStall (est. +10%)"));
  json_t *j = kv_ncu_json(r);
  json_t *k0 = json_array_get(json_object_get(j, "kernels"), 0);
  assert_float_equal(json_real_value(json_object_get(k0, "achieved_occupancy_pct")), 91.37, 1e-9);
  assert_string_equal(json_string_value(json_object_get(k0, "top_stall")), "long_scoreboard");
  json_decref(j);
  free(t);
  kv_ncu_report_free(r);
}

/* Not a details page: no kernels, no crash. */
static void test_ncu_junk(void **state) {
  (void)state;
  struct kv_ncu_report r;
  memset(&r, 0, sizeof r);
  assert_int_equal(kv_ncu_parse_csv("", &r), 0);
  assert_int_equal(kv_ncu_parse_csv("==ERROR== ERR_NVGPUCTRPERM - The user does not have "
                                    "permission to access NVIDIA GPU Performance Counters\n",
                                    &r),
                   0);
  assert_int_equal(kv_ncu_parse_csv("\"ID\",\"Kernel Name\"\n\"0\"\n\"\"\"\n,,,,\n", &r), 0);
  assert_int_equal(kv_ncu_parse_csv("\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\","
                                    "\"Metric Value\"\n\"0\",\"k\",\"Achieved Occupancy\",\"%\","
                                    "\"55\"\n\"1\",\"k\",\"Duration\",\"ms\",\"2\"\n",
                                    &r),
                   2);
  assert_float_equal(r.k[0].achieved_occ, 55, 1e-9);
  assert_float_equal(r.k[1].duration_us, 2000, 1e-9);
}

/* Recorded on an H100 (ncu 2025.3.1, `scale` of tests/debug/standalone.cu,
 * tests/ncu/README.md): demangled name, units in base (ns, with thousands
 * separators), CPIStall given first as a WRN note, then as the OPT advice
 * with its estimate. */
static void test_h100_ncu(void **state) {
  (void)state;
  char *t = fixture("ncu", "h100-scale.csv");
  struct kv_ncu_report *r = calloc(1, sizeof *r);
  assert_int_equal(kv_ncu_parse_csv(t, r), 1);
  const struct kv_ncu_kernel *k = &r->k[0];
  assert_string_equal(k->name, "scale(const float4 *, float4 *, int)");
  assert_string_equal(k->grid, "(1056, 1, 1)");
  assert_string_equal(k->block, "(256, 1, 1)");
  assert_float_equal(k->duration_us, 43.136, 1e-9); /* "43,136" ns */
  assert_true(k->duration_us > 0);
  assert_float_equal(k->sm_pct, 4.62, 1e-9);
  assert_float_equal(k->mem_pct, 79.45, 1e-9); /* the %, not MWA's byte/s */
  assert_float_equal(k->dram_pct, 79.45, 1e-9);
  assert_float_equal(k->l1_pct, 23.12, 1e-9);
  assert_float_equal(k->l2_pct, 78.50, 1e-9);
  assert_float_equal(k->achieved_occ, 92.58, 1e-9);
  assert_float_equal(k->theoretical_occ, 100, 1e-9);
  assert_float_equal(k->registers, 18, 1e-9);
  assert_float_equal(k->smem_bytes, 0, 1e-9); /* the driver's 1,024 bytes not counted */
  assert_float_equal(k->waves, 1, 1e-9);
  assert_float_equal(k->cpi, 378.65, 1e-9);
  assert_string_equal(k->top_stall, "long_scoreboard");
  assert_float_equal(k->top_stall_cycles, 380.82, 1e-9);
  /* CPIStall's advice and estimate first; SOLBottleneck (OPT, no estimate)
   * after; the INF ones left out. */
  assert_int_equal(k->nrules, 2);
  assert_string_equal(k->rules[0].name, "CPIStall");
  assert_float_equal(k->rules[0].speedup, 100.6, 1e-9);
  assert_non_null(strstr(k->rules[0].text, "spends 380.8 cycles being stalled"));
  assert_string_equal(k->rules[1].name, "SOLBottleneck");
  assert_float_equal(k->rules[1].speedup, 0, 1e-9);
  assert_non_null(strstr(k->rules[1].text, "Memory is more heavily utilized than Compute"));
  char line[8192];
  kv_ncu_summary(r, line, sizeof line);
  assert_non_null(strstr(line, "scale(const float4 *, float4 *, int)<<<(1056, 1, 1),(256, 1, 1)>>> "
                               "43.1 us; SOL sm 5% mem 79% (dram 79%"));
  assert_non_null(strstr(line, "top stall long_scoreboard (380.8 of 378.6 cycles/instr)"));
  assert_non_null(strstr(line, "rule CPIStall (est. +101%): On average"));
  free(t);
  kv_ncu_report_free(r);
}

/* A tool that is not there: the evaluation goes on, and the result says why
 * (the JSON carries the note). */
static void test_result_notes(void **state) {
  (void)state;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  r->verdict = KV_V_CRASH;
  r->debug = calloc(1, sizeof *r->debug);
  snprintf(r->debug->note, sizeof r->debug->note, "not available: compute-sanitizer not found");
  r->profile = calloc(1, sizeof *r->profile);
  snprintf(r->profile->note, sizeof r->profile->note, "not available: ERR_NVGPUCTRPERM");
  char *js = kv_gate_result_json(r);
  json_t *j = json_loads(js, 0, NULL);
  assert_non_null(j);
  assert_string_equal(json_string_value(json_object_get(json_object_get(j, "debug"), "note")),
                      "not available: compute-sanitizer not found");
  assert_string_equal(json_string_value(json_object_get(json_object_get(j, "profile"), "note")),
                      "not available: ERR_NVGPUCTRPERM");
  json_decref(j);
  free(js);
  kv_gate_result_release(r);
  assert_null(r->debug);
  free(r);
}

/* The result JSON back (kevo resume, kevo analyze, a gate server's reply):
 * the profile and the findings come back as they were. */
static void test_roundtrip(void **state) {
  (void)state;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  r->verdict = KV_V_OK;
  r->profile = calloc(1, sizeof *r->profile);
  char *t = fixture("ncu", "rowsum.csv");
  kv_ncu_parse_csv(t, r->profile);
  free(t);
  r->profile->raw = strdup("details page");
  r->debug = parse_san("racecheck", "racecheck-race.txt");
  snprintf(r->debug->tools, sizeof r->debug->tools, "racecheck");
  const char *ncu_off[] = {"netns", "seccomp", "lock", NULL}, *san_off[] = {NULL};
  kv_tool_layers_said(ncu_off, r->profile->sandbox_off, sizeof r->profile->sandbox_off);
  kv_tool_layers_said(san_off, r->debug->sandbox_off, sizeof r->debug->sandbox_off);
  char *js = kv_gate_result_json(r);
  struct kv_gate_result *b = calloc(1, sizeof *b);
  char err[512];
  assert_int_equal(kv_gate_result_from_json(js, b, err, sizeof err), 0);
  assert_non_null(b->profile);
  assert_null(b->profile_ref);
  assert_int_equal(b->profile->nkernels, 2);
  assert_string_equal(b->profile->k[0].top_stall, "long_scoreboard");
  assert_float_equal(b->profile->k[0].achieved_occ, 91.37, 1e-9);
  assert_int_equal(b->profile->k[1].nrules, KV_NCU_MAX_RULES);
  assert_string_equal(b->profile->k[1].rules[2].name, "UncoalescedGlobalAccess");
  assert_string_equal(b->profile->raw, "details page");
  assert_string_equal(b->profile->sandbox_off, "netns, seccomp, exec lockdown");
  assert_non_null(b->debug);
  assert_string_equal(b->debug->sandbox_off, "");
  assert_int_equal(b->debug->nfindings, 2);
  assert_string_equal(b->debug->f[0].file, "candidate.cu"); /* the JSON keeps the base name */
  assert_int_equal(b->debug->f[1].line2, 20);
  assert_string_equal(b->debug->tools, "racecheck");
  char *js2 = kv_gate_result_json(b);
  assert_string_equal(js, js2);
  free(js);
  free(js2);
  kv_gate_result_release(r);
  kv_gate_result_release(b);
  free(r);
  free(b);
  /* Junk in place of the objects: none. */
  assert_null(kv_ncu_from_json(NULL));
  json_t *junk = json_pack("{s:[i,s,{}]}", "kernels", 3, "x");
  struct kv_ncu_report *n = kv_ncu_from_json(junk);
  assert_non_null(n);
  assert_int_equal(n->nkernels, 3); /* entries of any kind, their fields empty */
  assert_string_equal(n->k[1].name, "");
  kv_ncu_report_free(n);
  json_decref(junk);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_memcheck),
      cmocka_unit_test(test_racecheck),
      cmocka_unit_test(test_sync_init_clean),
      cmocka_unit_test(test_san_raw_json),
      cmocka_unit_test(test_ncu),
      cmocka_unit_test(test_ncu_junk),
      cmocka_unit_test(test_result_notes),
      cmocka_unit_test(test_roundtrip),
      cmocka_unit_test(test_asan_ubsan),
      cmocka_unit_test(test_h100_memcheck),
      cmocka_unit_test(test_h100_racecheck),
      cmocka_unit_test(test_h100_sync_init),
      cmocka_unit_test(test_h100_ncu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
