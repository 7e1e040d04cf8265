/* Units of lib/report: HTML escaping, JSON for a script block, UTF-8
 * cleaning, and the line diff (exact hunks, and on random texts: the diff
 * rebuilds both sides and keeps a longest common subsequence). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "kevo/report.h"
#include "kevo/store.h"

static char *esc(const char *s, size_t n) {
  struct kv_buf b;
  kv_buf_init(&b, 1 << 20);
  assert_int_equal(kv_html_escape(&b, s, n), 0);
  return kv_buf_detach(&b);
}

static void test_html_escape_markup(void **state) {
  (void)state;
  const char *hostile = "</script><script>alert(1)</script> & \"q\" 'a' <img src=x onerror=f()>";
  char *e = esc(hostile, strlen(hostile));
  assert_string_equal(e, "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot; "
                         "&#39;a&#39; &lt;img src=x onerror=f()&gt;");
  assert_null(strchr(e, '<'));
  assert_null(strchr(e, '"'));
  free(e);
}

static void test_html_escape_bytes(void **state) {
  (void)state;
  /* kept: tab, newline, CR, é (2 bytes), € (3), U+1F600 (4) */
  const char ok[] = "a\tb\nc\rd \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80";
  char *e = esc(ok, sizeof ok - 1);
  assert_string_equal(e, ok);
  free(e);
  /* replaced: ESC, DEL, NUL, a lone continuation byte, an overlong '/', a
   * surrogate, a truncated sequence at the end, a code point past U+10FFFF */
  const char bad[] = "\x1b[31m|\x7f|\0|\x80|\xC0\xAF|\xED\xA0\x80|\xF4\x90\x80\x80|\xE2\x82";
  e = esc(bad, sizeof bad - 1);
  assert_string_equal(e,
                      "\xEF\xBF\xBD[31m|\xEF\xBF\xBD|\xEF\xBF\xBD|\xEF\xBF\xBD|"
                      "\xEF\xBF\xBD\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD|"
                      "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD");
  free(e);
}

static void test_html_escape_capped(void **state) {
  (void)state;
  struct kv_buf b;
  kv_buf_init(&b, 10);
  assert_int_equal(kv_html_escape(&b, "<<<<<<<<", 8), 0);
  assert_true(b.truncated);
  assert_int_equal(b.len, 10);
  kv_buf_release(&b);
}

static void test_json_for_script(void **state) {
  (void)state;
  const char *src = "</script><script>alert(1)</script><!-- & -->";
  json_t *o = json_pack("{s:s,s:[i,s]}", "src", src, "a", 1, "x<y");
  char *j = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
  struct kv_buf b;
  kv_buf_init(&b, 1 << 16);
  assert_int_equal(kv_json_for_script(&b, j, strlen(j)), 0);
  assert_null(strchr(b.data, '<'));
  assert_null(strchr(b.data, '>'));
  assert_null(strchr(b.data, '&'));
  assert_non_null(strstr(b.data, "\\u003c/script\\u003e"));
  /* JSON reads it back unchanged */
  json_error_t jerr;
  json_t *back = json_loads(b.data, 0, &jerr);
  assert_non_null(back);
  assert_string_equal(json_string_value(json_object_get(back, "src")), src);
  assert_true(json_equal(o, back));
  json_decref(back);
  json_decref(o);
  free(j);
  kv_buf_release(&b);
}

static void test_utf8_clean(void **state) {
  (void)state;
  struct kv_buf b;
  kv_buf_init(&b, 1 << 10);
  const char in[] = "a\0b\xff\xC3\xA9";
  assert_int_equal(kv_utf8_clean(&b, in, sizeof in - 1), 0);
  assert_int_equal(b.len, 1 + 3 + 1 + 3 + 2);
  assert_memory_equal(b.data,
                      "a\xEF\xBF\xBD"
                      "b\xEF\xBF\xBD\xC3\xA9",
                      b.len);
  /* jansson takes the result as a string */
  json_t *s = json_stringn(b.data, b.len);
  assert_non_null(s);
  json_decref(s);
  kv_buf_release(&b);
}

static char *diff(const char *a, const char *b, int ctx, int *rc) {
  struct kv_buf out;
  kv_buf_init(&out, 1 << 24);
  *rc = kv_line_diff(a, strlen(a), b, strlen(b), ctx, &out);
  return kv_buf_detach(&out);
}

static void test_diff_exact(void **state) {
  (void)state;
  int rc;
  char *d = diff("a\nb\nc\n", "a\nb\nc\n", 3, &rc);
  assert_int_equal(rc, 0);
  assert_string_equal(d, "");
  free(d);
  /* a missing newline at the end is not a change */
  d = diff("a\nb\nc\n", "a\nb\nc", 3, &rc);
  assert_string_equal(d, "");
  free(d);
  d = diff("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n", 3, &rc);
  assert_int_equal(rc, 0);
  assert_string_equal(d, "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n");
  free(d);
  /* an insertion at the start, a deletion at the end, no context */
  d = diff("b\nc\nd\n", "a\nb\nc\n", 0, &rc);
  assert_string_equal(d, "@@ -0,0 +1,1 @@\n+a\n@@ -3,1 +3,0 @@\n-d\n");
  free(d);
  /* from nothing, and to nothing */
  d = diff("", "x\ny\n", 3, &rc);
  assert_string_equal(d, "@@ -0,0 +1,2 @@\n+x\n+y\n");
  free(d);
  d = diff("x\ny\n", "", 3, &rc);
  assert_string_equal(d, "@@ -1,2 +0,0 @@\n-x\n-y\n");
  free(d);
}

static void test_diff_hunks_merge_and_split(void **state) {
  (void)state;
  int rc;
  /* changes 2 lines apart share a hunk (gap <= 2 * context) */
  char *d = diff("1\n2\n3\n4\n5\n", "1\nX\n3\nY\n5\n", 1, &rc);
  assert_string_equal(d, "@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n-4\n+Y\n 5\n");
  free(d);
  /* changes far apart: two hunks */
  struct kv_buf a, b;
  kv_buf_init(&a, 1 << 16);
  kv_buf_init(&b, 1 << 16);
  for (int i = 0; i < 30; i++) {
    kv_buf_appendf(&a, "line %d\n", i);
    kv_buf_appendf(&b, "line %d%s\n", i, i == 3 || i == 25 ? " changed" : "");
  }
  d = diff(a.data, b.data, 3, &rc);
  assert_string_equal(d, "@@ -1,7 +1,7 @@\n line 0\n line 1\n line 2\n-line 3\n+line 3 changed\n"
                         " line 4\n line 5\n line 6\n@@ -23,7 +23,7 @@\n line 22\n line 23\n"
                         " line 24\n-line 25\n+line 25 changed\n line 26\n line 27\n line 28\n");
  free(d);
  kv_buf_release(&a);
  kv_buf_release(&b);
}

static void test_diff_too_large(void **state) {
  (void)state;
  struct kv_buf a, out;
  kv_buf_init(&a, 1 << 20);
  kv_buf_init(&out, 1 << 20);
  for (int i = 0; i < 20001; i++)
    kv_buf_append(&a, "x\n", 2);
  assert_int_equal(kv_line_diff(a.data, a.len, "y\n", 2, 3, &out), 1);
  assert_int_equal(out.len, 0);
  /* 3,000 different lines each side: 9 million pairs */
  kv_buf_reset(&a);
  struct kv_buf b;
  kv_buf_init(&b, 1 << 20);
  for (int i = 0; i < 3000; i++) {
    kv_buf_appendf(&a, "a%d\n", i);
    kv_buf_appendf(&b, "b%d\n", i);
  }
  assert_int_equal(kv_line_diff(a.data, a.len, b.data, b.len, 3, &out), 1);
  /* the same lines with a common start and end of 2,500 lines diff fine */
  kv_buf_reset(&a);
  kv_buf_reset(&b);
  for (int i = 0; i < 5000; i++) {
    kv_buf_appendf(&a, "%d\n", i);
    kv_buf_appendf(&b, "%d%s\n", i, i == 2500 ? "!" : "");
  }
  assert_int_equal(kv_line_diff(a.data, a.len, b.data, b.len, 3, &out), 0);
  assert_non_null(strstr(out.data, "-2500\n+2500!\n"));
  kv_buf_release(&a);
  kv_buf_release(&b);
  kv_buf_release(&out);
}

/* The longest common subsequence of two line lists, the slow way. */
static int lcs(char **a, int na, char **b, int nb) {
  int *t = calloc((size_t)(na + 1) * (size_t)(nb + 1), sizeof *t);
  for (int i = na - 1; i >= 0; i--)
    for (int j = nb - 1; j >= 0; j--)
      t[i * (nb + 1) + j] =
          !strcmp(a[i], b[j])
              ? t[(i + 1) * (nb + 1) + j + 1] + 1
              : (t[(i + 1) * (nb + 1) + j] > t[i * (nb + 1) + j + 1] ? t[(i + 1) * (nb + 1) + j]
                                                                     : t[i * (nb + 1) + j + 1]);
  int r = t[0];
  free(t);
  return r;
}

static void test_diff_random(void **state) {
  (void)state;
  static const char *words[] = {"x", "y", "z", "{", "}", "for", "int a;"};
  srand(7);
  for (int round = 0; round < 300; round++) {
    int na = rand() % 25, nb = rand() % 25;
    char *la[32], *lb[32];
    struct kv_buf a, b, out, ra, rb;
    kv_buf_init(&a, 1 << 12);
    kv_buf_init(&b, 1 << 12);
    kv_buf_init(&out, 1 << 16);
    kv_buf_init(&ra, 1 << 12);
    kv_buf_init(&rb, 1 << 12);
    for (int i = 0; i < na; i++) {
      la[i] = (char *)words[rand() % 7];
      kv_buf_appendf(&a, "%s\n", la[i]);
    }
    for (int i = 0; i < nb; i++) {
      lb[i] = (char *)words[rand() % 7];
      kv_buf_appendf(&b, "%s\n", lb[i]);
    }
    /* with all the context there is, one hunk holds both texts */
    assert_int_equal(
        kv_line_diff(a.data ? a.data : "", a.len, b.data ? b.data : "", b.len, 1000, &out), 0);
    int common = 0;
    const char *p = out.data ? out.data : "";
    while (*p) {
      const char *nl = strchr(p, '\n');
      assert_non_null(nl);
      if (*p == ' ' || *p == '-')
        kv_buf_append(&ra, p + 1, (size_t)(nl - p));
      if (*p == ' ' || *p == '+')
        kv_buf_append(&rb, p + 1, (size_t)(nl - p));
      common += *p == ' ';
      p = nl + 1;
    }
    if (!out.len) { /* nothing to say: the texts are equal */
      kv_buf_append(&ra, a.data ? a.data : "", a.len);
      kv_buf_append(&rb, a.data ? a.data : "", a.len);
    }
    assert_int_equal(ra.len, a.len);
    assert_int_equal(rb.len, b.len);
    if (a.len)
      assert_memory_equal(ra.data, a.data, a.len);
    if (b.len)
      assert_memory_equal(rb.data, b.data, b.len);
    if (out.len)
      assert_int_equal(common, lcs(la, na, lb, nb));
    kv_buf_release(&a);
    kv_buf_release(&b);
    kv_buf_release(&out);
    kv_buf_release(&ra);
    kv_buf_release(&rb);
  }
}

/* A store of one run: a root with a 100 KiB source, a child whose source
 * holds invalid UTF-8 and a NUL, and a grandchild. */
static struct kv_store *small_store(void) {
  struct kv_store *s;
  char err[1024];
  assert_int_equal(kv_store_open(":memory:", &s, err, sizeof err), 0);
  int64_t task, run, ids[3] = {0};
  assert_int_equal(kv_store_put_task(s, "t", "d", "h", "{}", &task, err, sizeof err), 0);
  assert_int_equal(kv_store_run_create(s, task, "greedy", "{\"steps\":3}", &run, err, sizeof err),
                   0);
  struct kv_buf big;
  kv_buf_init(&big, 1 << 20);
  for (int i = 0; i < 2000; i++)
    kv_buf_appendf(&big, "/* line %04d of a long generated kernel, fifty bytes */\n", i);
  const char bad[] = "void f(void) { /* \xff\xfe \0 */ }\n";
  const char *srcs[3] = {big.data, bad, "void f(void) {}\n"};
  size_t lens[3] = {big.len, sizeof bad - 1, 16};
  for (int i = 0; i < 3; i++) {
    char hash[65];
    kv_sha256_hex(srcs[i], lens[i], hash);
    assert_int_equal(kv_store_put_source(s, hash, srcs[i], lens[i], err, sizeof err), 0);
    struct kv_node_record nr = {0};
    nr.run_id = run;
    nr.parent_id = i ? ids[i - 1] : 0;
    nr.step = i;
    nr.source_hash = hash;
    nr.action = i ? "refine" : "sample";
    nr.verdict = i == 1 ? "wrong_output" : "ok";
    nr.speedup = i == 1 ? -1 : 1.5 + i;
    nr.reward = -1;
    assert_int_equal(kv_store_node_add(s, &nr, &ids[i], err, sizeof err), 0);
  }
  kv_buf_release(&big);
  return s;
}

static char *page(struct kv_store *s, struct kv_report_opts *o, struct kv_report_stats *st, int *rc,
                  char *err, size_t errlen) {
  char *html = NULL;
  size_t len = 0;
  *rc = kv_report_html(s, NULL, 0, o, &html, &len, st, err, errlen);
  if (*rc == 0)
    assert_int_equal(strlen(html), len);
  return html;
}

static void test_report_caps(void **state) {
  (void)state;
  struct kv_store *s = small_store();
  struct kv_report_stats st;
  char err[1024];
  int rc;
  /* defaults: the 100 KiB source is cut at 64 KiB, with a note */
  char *h = page(s, NULL, &st, &rc, err, sizeof err);
  assert_int_equal(rc, 0);
  assert_int_equal(st.nodes, 3);
  assert_int_equal(st.sections, 1);
  assert_true(st.elided >= 1);
  assert_non_null(strstr(h, "[cut at 65536 of 112000 bytes; the whole text is in the store"));
  assert_null(strstr(h, "\xff")); /* invalid UTF-8 never reaches the page */
  assert_non_null(strstr(h, "/* \\uFFFD\\uFFFD \\uFFFD */")); /* U+FFFD, escaped in JSON */
  free(h);
  /* a smaller cap per text */
  struct kv_report_opts o = {.item_cap = 1000};
  h = page(s, &o, &st, &rc, err, sizeof err);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(h, "[cut at 1000 of 112000 bytes"));
  free(h);
  /* a spent budget: texts left out, their lengths kept */
  struct kv_report_opts o2 = {.text_budget = 100};
  h = page(s, &o2, &st, &rc, err, sizeof err);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(h, "\"src!\":112000")); /* the script says where it is */
  assert_null(strstr(h, "line 0000 of a long")); /* and it is not in the page */
  free(h);
  /* a page over its cap is an error that names the fix, never a cut page */
  struct kv_report_opts o3 = {.file_max = 20000};
  h = page(s, &o3, &st, &rc, err, sizeof err);
  assert_int_equal(rc, -1);
  assert_null(h);
  assert_non_null(strstr(err, "report fewer runs"));
  /* an unknown run */
  struct kv_report_item it = {KV_REPORT_RUN, 99};
  size_t len;
  assert_int_equal(kv_report_html(s, &it, 1, NULL, &h, &len, NULL, err, sizeof err), -1);
  assert_non_null(strstr(err, "run 99 is not in"));
  /* the terminal summary */
  char *t;
  assert_int_equal(kv_report_run_text(s, 0, &t, &len, err, sizeof err), 0);
  assert_non_null(strstr(t, "\n  0 sample: ok 1.50x\n    1 refine: wrong_output\n"
                            "      2 refine: ok 3.50x  * best\n"));
  free(t);
  kv_store_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_html_escape_markup),
      cmocka_unit_test(test_html_escape_bytes),
      cmocka_unit_test(test_html_escape_capped),
      cmocka_unit_test(test_json_for_script),
      cmocka_unit_test(test_utf8_clean),
      cmocka_unit_test(test_diff_exact),
      cmocka_unit_test(test_diff_hunks_merge_and_split),
      cmocka_unit_test(test_diff_too_large),
      cmocka_unit_test(test_diff_random),
      cmocka_unit_test(test_report_caps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
