/* Reply parsing: real-looking replies in the styles of OpenAI and Anthropic
 * models, every fence form, block choice, unfenced code, plans, limits, and
 * kevo:tune declarations. Plans and code are compared byte for byte. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/reply.h"

#define ROWSUM_C                                                                                   \
  "#include <omp.h>\n"                                                                             \
  "\n"                                                                                             \
  "void rowsum(const float *x, float *y, int rows, int cols) {\n"                                  \
  "#pragma omp parallel for schedule(static)\n"                                                    \
  "  for (int r = 0; r < rows; r++) {\n"                                                           \
  "    const float *row = x + (size_t)r * cols;\n"                                                 \
  "    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;\n"                                                    \
  "    int c = 0;\n"                                                                               \
  "    for (; c + 4 <= cols; c += 4) {\n"                                                          \
  "      s0 += row[c]; s1 += row[c + 1]; s2 += row[c + 2]; s3 += row[c + 3];\n"                    \
  "    }\n"                                                                                        \
  "    for (; c < cols; c++)\n"                                                                    \
  "      s0 += row[c];\n"                                                                          \
  "    y[r] = (s0 + s1) + (s2 + s3);\n"                                                            \
  "  }\n"                                                                                          \
  "}\n"

#define ROWSUM_CU                                                                                  \
  "#include <cuda_runtime.h>\n"                                                                    \
  "\n"                                                                                             \
  "__global__ void rowsum_kernel(const float *__restrict__ x, float *__restrict__ y, int cols) "   \
  "{\n"                                                                                            \
  "  const float *row = x + (size_t)blockIdx.x * cols;\n"                                          \
  "  float s = 0.f;\n"                                                                             \
  "  for (int c = threadIdx.x; c < cols; c += blockDim.x)\n"                                       \
  "    s += row[c];\n"                                                                             \
  "  for (int o = 16; o > 0; o >>= 1)\n"                                                           \
  "    s += __shfl_down_sync(0xffffffffu, s, o);\n"                                                \
  "  __shared__ float part[8];\n"                                                                  \
  "  if ((threadIdx.x & 31) == 0)\n"                                                               \
  "    part[threadIdx.x >> 5] = s;\n"                                                              \
  "  __syncthreads();\n"                                                                           \
  "  if (threadIdx.x == 0) {\n"                                                                    \
  "    float t = 0.f;\n"                                                                           \
  "    for (int w = 0; w < 8; w++)\n"                                                              \
  "      t += part[w];\n"                                                                          \
  "    y[blockIdx.x] = t;\n"                                                                       \
  "  }\n"                                                                                          \
  "}\n"                                                                                            \
  "\n"                                                                                             \
  "extern \"C\" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) "   \
  "{\n"                                                                                            \
  "  rowsum_kernel<<<rows, 256, 0, stream>>>(x, y, cols);\n"                                       \
  "}\n"

#define SMALL_F "void f(int *a) {\n  a[0] = 1;\n}\n"

static struct kv_reply r;

static int teardown_each(void **state) {
  (void)state;
  kv_reply_release(&r);
  return 0;
}

static void parse_ok_(const char *text, size_t len, const char *entry, int line) {
  char err[256] = "";
  kv_reply_release(&r);
  if (kv_reply_parse(text, len, entry, &r, err, sizeof err) != 0)
    fail_msg("line %d: parse failed: %s", line, err);
  assert_non_null(r.code);
  assert_non_null(r.plan);
}
#define parse_ok(text, entry) parse_ok_(text, strlen(text), entry, __LINE__)

/* Must fail with a one-line message containing want, leaving r empty. */
static void parse_bad_(const char *text, size_t len, const char *entry, const char *want,
                       int line) {
  char err[256] = "";
  kv_reply_release(&r);
  r.code = (char *)"garbage";
  r.nblocks = 77;
  if (kv_reply_parse(text, len, entry, &r, err, sizeof err) == 0)
    fail_msg("line %d: parse succeeded, expected \"%s\"; code: %s", line, want, r.code);
  if (!strstr(err, want))
    fail_msg("line %d: message \"%s\" lacks \"%s\"", line, err, want);
  assert_null(strchr(err, '\n'));
  assert_null(r.code);
  assert_null(r.plan);
  assert_int_equal(r.nblocks, 0);
}
#define parse_bad(text, entry, want) parse_bad_(text, strlen(text), entry, want, __LINE__)

/* ---- whole replies -------------------------------------------------------- */

static const char OPENAI[] =
    "Here's an optimized version of `rowsum` that parallelizes over rows with OpenMP and\n"
    "keeps four independent accumulators so the FMA latency is hidden.\n"
    "\n"
    "```c\n" ROWSUM_C "```\n"
    "\n"
    "**Why it's faster:**\n"
    "- Rows are independent, so `omp parallel for` scales with cores.  \n"
    "- Four accumulators break the dependency chain.\n";
static const char OPENAI_PLAN[] =
    "Here's an optimized version of `rowsum` that parallelizes over rows with OpenMP and\n"
    "keeps four independent accumulators so the FMA latency is hidden.\n"
    "\n"
    "**Why it's faster:**\n"
    "- Rows are independent, so `omp parallel for` scales with cores.\n"
    "- Four accumulators break the dependency chain.";

static void test_openai_style(void **state) {
  (void)state;
  parse_ok(OPENAI, "rowsum");
  assert_string_equal(r.code, ROWSUM_C);
  assert_string_equal(r.plan, OPENAI_PLAN);
  assert_string_equal(r.lang, "c");
  assert_int_equal(r.nblocks, 1);
  assert_int_equal(r.had_fence, 1);
  assert_int_equal(r.block, 0);
  assert_int_equal(r.defines_entry, 1);
  assert_int_equal(r.unterminated, 0);
  assert_int_equal(r.plan_explicit, 0);
  assert_int_equal(r.plan_truncated, 0);
}

static const char ANTHROPIC[] =
    "I'll write a CUDA kernel where each block reduces one row.\n"
    "\n"
    "## Plan\n"
    "\n"
    "1. One block of 256 threads per row; each thread strides over the columns.\n"
    "2. Warp-level reduction with `__shfl_down_sync`, then one shared-memory pass.\n"
    "3. Launch on the given stream.\n"
    "\n"
    "## Implementation\n"
    "\n"
    "```cuda\n" ROWSUM_CU "```\n"
    "\n"
    "## Notes\n"
    "\n"
    "The launch uses `stream`, so the timing sees all of the work.\n";

static void test_anthropic_style(void **state) {
  (void)state;
  parse_ok(ANTHROPIC, "rowsum");
  assert_string_equal(r.code, ROWSUM_CU);
  assert_string_equal(
      r.plan, "1. One block of 256 threads per row; each thread strides over the columns.\n"
              "2. Warp-level reduction with `__shfl_down_sync`, then one shared-memory pass.\n"
              "3. Launch on the given stream.");
  assert_string_equal(r.lang, "cuda");
  assert_int_equal(r.plan_explicit, 1);
  assert_int_equal(r.defines_entry, 1);
}

static void test_crlf(void **state) {
  (void)state;
  size_t n = strlen(OPENAI);
  char *crlf = malloc(2 * n + 1), *p = crlf;
  for (size_t i = 0; i < n; i++) {
    if (OPENAI[i] == '\n')
      *p++ = '\r';
    *p++ = OPENAI[i];
  }
  parse_ok_(crlf, (size_t)(p - crlf), "rowsum", __LINE__);
  assert_string_equal(r.code, ROWSUM_C);
  assert_string_equal(r.plan, OPENAI_PLAN);
  assert_null(strchr(r.code, '\r'));
  free(crlf);
  /* Lone CRs (old Mac endings) end lines too. */
  parse_ok("Done.\r```c\rvoid f(int *a) {\r  a[0] = 1;\r}\r```\r", "f");
  assert_string_equal(r.code, SMALL_F);
  assert_string_equal(r.plan, "Done.");
}

/* ---- fences ----------------------------------------------------------------- */

static void test_info_strings(void **state) {
  (void)state;
  static const struct {
    const char *info, *lang;
  } cases[] = {
      {"c", "c"},
      {"cuda", "cuda"},
      {"cu", "cu"},
      {"cpp", "cpp"},
      {"c++", "c++"},
      {"cc", "cc"},
      {"h", "h"},
      {"", ""},
      {"C", "c"},
      {"cuda-c", "cuda-c"},
      {"c title=\"k.c\"", "c"},
      {"{.c}", "c"},
      {"cuda:kernel.cu", "cuda"},
      {"text", "text"},
      {"  cpp  ", "cpp"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char reply[256];
    snprintf(reply, sizeof reply, "Sure.\n\n```%s\n" SMALL_F "```\n", cases[i].info);
    parse_ok(reply, "f");
    if (strcmp(r.code, SMALL_F) || strcmp(r.lang, cases[i].lang) || strcmp(r.plan, "Sure."))
      fail_msg("info '%s': lang '%s' code '%s' plan '%s'", cases[i].info, r.lang, r.code, r.plan);
  }
}

static void test_tilde_and_long_fences(void **state) {
  (void)state;
  parse_ok("~~~cpp\n" SMALL_F "~~~\n", "f");
  assert_string_equal(r.code, SMALL_F);
  assert_string_equal(r.lang, "cpp");
  /* A tilde fence is not closed by backticks, and its info may hold backticks. */
  parse_ok("~~~~ c `x`\n" SMALL_F "```\n~~~\n~~~~~\n", "f");
  assert_string_equal(r.code, SMALL_F "```\n~~~\n");
  assert_int_equal(r.unterminated, 0);
  /* A longer closing fence closes; one with text after it does not. */
  parse_ok("```c\n" SMALL_F "`````\nafter\n", "f");
  assert_string_equal(r.code, SMALL_F);
  assert_string_equal(r.plan, "after");
  parse_ok("```c\n" SMALL_F "``` and more\n", "f");
  assert_string_equal(r.code, SMALL_F "``` and more\n");
  assert_int_equal(r.unterminated, 1);
  /* Backticks in a backtick fence's info string: not a fence at all. */
  parse_ok("```c``` is inline\n" SMALL_F, "f");
  assert_int_equal(r.nblocks, 0);
  assert_string_equal(r.code, SMALL_F);
  assert_string_equal(r.plan, "```c``` is inline");
}

static void test_indented_fences(void **state) {
  (void)state;
  parse_ok("1. Replace the loop:\n"
           "\n"
           "   ```c\n"
           "   void f(int *a) {\n"
           "     a[0] = 1;\n"
           "   }\n"
           "   ```\n"
           "2. Done.\n",
           "f");
  assert_string_equal(r.code, SMALL_F);
  assert_string_equal(r.plan, "1. Replace the loop:\n\n2. Done.");
  /* Content indented less than the fence loses what it has. */
  parse_ok("  ```c\nvoid f(int *a) {\n   a[0] = 1;\n}\n  ```\n", "f");
  assert_string_equal(r.code, "void f(int *a) {\n a[0] = 1;\n}\n");
  /* Four spaces: an indented code block, not a fence; the unfenced code is found. */
  parse_ok("Code:\n"
           "\n"
           "    ```c\n"
           "    void f(int *a) {\n"
           "      a[0] = 1;\n"
           "    }\n"
           "    ```\n",
           "f");
  assert_int_equal(r.nblocks, 0);
  assert_int_equal(r.had_fence, 0);
  assert_int_equal(r.block, -1);
  assert_string_equal(r.code, "    void f(int *a) {\n      a[0] = 1;\n    }\n");
  assert_string_equal(r.plan, "Code:\n\n    ```c\n\n    ```");
}

static void test_nested_backticks(void **state) {
  (void)state;
  static const char code[] = "/* Usage, as markdown:\n"
                             "```\n"
                             "rowsum(x, y, rows, cols);\n"
                             "```\n"
                             "*/\n"
                             "#include <stdio.h>\n"
                             "void rowsum(const float *x, float *y, int rows, int cols) {\n"
                             "  if (rows < 0)\n"
                             "    puts(\"``` not a fence ```\");\n"
                             "  for (int r = 0; r < rows; r++) {\n"
                             "    float s = 0;\n"
                             "    for (int c = 0; c < cols; c++)\n"
                             "      s += x[r * cols + c];\n"
                             "    y[r] = s;\n"
                             "  }\n"
                             "}\n";
  char reply[2048];
  snprintf(reply, sizeof reply, "Four backticks, since the code holds three:\n\n````c\n%s````\n",
           code);
  parse_ok(reply, "rowsum");
  assert_string_equal(r.code, code);
  assert_int_equal(r.nblocks, 1);
  assert_int_equal(r.defines_entry, 1);
  /* Backticks in strings mid-line never close a fence. */
  parse_ok("```c\nvoid f(int *a) {\n  const char *s = \"```\";\n  a[0] = s[0];\n}\n```\n", "f");
  assert_string_equal(r.code, "void f(int *a) {\n  const char *s = \"```\";\n  a[0] = s[0];\n}\n");
}

static void test_blank_lines_trimmed(void **state) {
  (void)state;
  parse_ok("```c\n\n  \n\t\nvoid f(int *a) {  \n\n  a[0] = 1;\t\n}\n\n\n```", "f");
  assert_string_equal(r.code, "void f(int *a) {  \n\n  a[0] = 1;\t\n}\n");
  assert_string_equal(r.plan, "");
}

/* ---- which block ---------------------------------------------------------- */

static void test_prototype_then_definition(void **state) {
  (void)state;
  parse_ok("The prototype kevo generates is:\n"
           "\n"
           "```c\n"
           "void rowsum(const float *x, float *y, int rows, int cols);\n"
           "```\n"
           "\n"
           "and the implementation:\n"
           "\n"
           "```c\n" ROWSUM_C "```\n",
           "rowsum");
  assert_int_equal(r.nblocks, 2);
  assert_int_equal(r.block, 1);
  assert_string_equal(r.code, ROWSUM_C);
  assert_string_equal(r.plan, "The prototype kevo generates is:\n"
                              "\n"
                              "```c\n"
                              "void rowsum(const float *x, float *y, int rows, int cols);\n"
                              "```\n"
                              "\n"
                              "and the implementation:");
}

static void test_definition_then_larger_usage(void **state) {
  (void)state;
  parse_ok("```c\n" ROWSUM_C "```\n"
           "\n"
           "You can test it with:\n"
           "\n"
           "```c\n"
           "#include <stdio.h>\n"
           "void rowsum(const float *x, float *y, int rows, int cols);\n"
           "int main(void) {\n"
           "  static float x[1 << 20], y[1024];\n"
           "  for (int i = 0; i < (1 << 20); i++)\n"
           "    x[i] = (float)(i % 7) * 0.25f - 0.5f + (float)(i % 3) * 0.125f;\n"
           "  rowsum(x, y, 1024, 1024);\n"
           "  for (int i = 0; i < 4; i++)\n"
           "    printf(\"%d: %f (expected about %f)\\n\", i, y[i], 1024 * 0.0f);\n"
           "  if (rowsum != 0) {\n"
           "    puts(\"linked\");\n"
           "  }\n"
           "  return 0;\n"
           "}\n"
           "```\n",
           "rowsum");
  assert_int_equal(r.nblocks, 2);
  assert_int_equal(r.block, 0);
  assert_string_equal(r.code, ROWSUM_C);
}

static void test_last_definition_wins(void **state) {
  (void)state;
  parse_ok("A first version:\n"
           "```c\nvoid f(int *a) {\n  a[0] = 0;\n}\n```\n"
           "Actually, this one is better:\n"
           "```c\n" SMALL_F "```\n"
           "Helper you may also want:\n"
           "```c\nstatic inline int twice(int v) {\n  return 2 * v;\n}\nint g(void) {\n  return "
           "twice(3);\n}\n```\n",
           "f");
  assert_int_equal(r.nblocks, 3);
  assert_int_equal(r.block, 1);
  assert_string_equal(r.code, SMALL_F);
}

static void test_largest_code_block_without_definition(void **state) {
  (void)state;
  parse_ok("Compile with:\n"
           "```bash\n"
           "gcc -O3 -march=native -fopenmp -c kernel.c -o kernel.o && ./bench --rows 8192 --cols "
           "8192 --iterations 100 --warmup 10 { echo; }\n"
           "```\n"
           "```c\nstatic inline float add(float a, float b) { return a + b; }\n```\n"
           "```\nstruct acc { float s[4]; };\nstatic float total(const struct acc *a) {\n  return "
           "a->s[0] + a->s[1] + a->s[2] + a->s[3];\n}\n```\n"
           "```\nThen run make.\n```\n",
           "rowsum");
  assert_int_equal(r.nblocks, 4);
  assert_int_equal(r.block, 2);
  assert_int_equal(r.defines_entry, 0);
  assert_string_equal(r.lang, "");
  assert_string_equal(r.code, "struct acc { float s[4]; };\nstatic float total(const struct acc "
                              "*a) {\n  return a->s[0] + a->s[1] + a->s[2] + a->s[3];\n}\n");
}

static void test_not_definitions(void **state) {
  (void)state;
  /* Mentions in comments, strings, macros, calls and prototypes do not count,
   * so the first block, the only real definition, is chosen though later. */
  parse_ok("```c\n" SMALL_F "```\n"
           "```c\n"
           "// f(x) { is only a comment\n"
           "/* f(int *a) { nor this } */\n"
           "const char *s = \"f(a) {\";\n"
           "#define f(a) { (a)[0] = 1; }\n"
           "#define G \\\n  f(a) {\n"
           "void f(int *a);\n"
           "int g(int *a) { if (f(a)) { return 1; } f(a); return 0; }\n"
           "int h(void) { return obj.f(1); }\n"
           "int ff(int *a) { return 0; }\n"
           "```\n",
           "f");
  assert_int_equal(r.nblocks, 2);
  assert_int_equal(r.block, 0);
  assert_string_equal(r.code, SMALL_F);
}

static void test_definition_forms(void **state) {
  (void)state;
  /* Brace on the next line, qualifiers between ')' and '{', extern "C" { }. */
  static const char *forms[] = {
      "void f(int *a)\n{\n  a[0] = 1;\n}\n",
      "extern \"C\" void f(int *a) noexcept {\n  a[0] = 1;\n}\n",
      "void f(int *a) __attribute__((noinline)) /* why not */ {\n  a[0] = 1;\n}\n",
      "extern \"C\" {\nvoid f(int *a, cudaStream_t stream) {\n  (void)stream;\n}\n}\n",
      "static void (*table[1])(int *);\nvoid f(int *(a)) {\n  a[0] = (1);\n}\n",
  };
  for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
    char reply[512];
    /* A later, larger block that merely calls f must lose to the definition. */
    snprintf(reply, sizeof reply,
             "```cpp\n%s```\n```cpp\nint main(void) {\n  int a[4] = {0, 1, 2, 3};\n  f(a);\n  "
             "return a[0] + a[1] + a[2] + a[3] - 7;\n}\n```\n",
             forms[i]);
    parse_ok(reply, "f");
    if (r.block != 0 || strcmp(r.code, forms[i]))
      fail_msg("form %zu: block %d, code '%s'", i, r.block, r.code);
  }
}

static void test_any_tag_may_define(void **state) {
  (void)state;
  /* A mislabelled block that defines the entry still wins. */
  parse_ok("```python\n" SMALL_F "```\n```c\nint g(void) { return 0; }\n```\n", "f");
  assert_int_equal(r.block, 0);
  assert_string_equal(r.lang, "python");
  /* But a python block that defines nothing is never code. */
  parse_bad("```python\ndef f(a):\n    a[0] = 1\n```\n", "f", "1 fenced block, none C-like");
}

static void test_null_entry(void **state) {
  (void)state;
  parse_ok("```c\n" SMALL_F "```\n```c\n" ROWSUM_C "```\n```c\nint g(void);\n```\n", NULL);
  assert_int_equal(r.block, 1);
  assert_int_equal(r.defines_entry, 0);
  assert_string_equal(r.code, ROWSUM_C);
}

/* ---- no fences, unterminated fences ------------------------------------------ */

static void test_unfenced_code(void **state) {
  (void)state;
  parse_ok(ROWSUM_C, "rowsum");
  assert_string_equal(r.code, ROWSUM_C);
  assert_string_equal(r.plan, "");
  assert_int_equal(r.nblocks, 0);
  assert_int_equal(r.had_fence, 0);
  assert_int_equal(r.block, -1);
  assert_int_equal(r.defines_entry, 1);
  assert_string_equal(r.lang, "");
}

static void test_unfenced_with_prose(void **state) {
  (void)state;
  parse_ok("Here is the optimized kernel:\n\n" ROWSUM_C
           "\nIt uses OpenMP across rows and four accumulators.\n",
           "rowsum");
  assert_string_equal(r.code, ROWSUM_C);
  assert_string_equal(r.plan,
                      "Here is the optimized kernel:\n\nIt uses OpenMP across rows and four "
                      "accumulators.");
  parse_ok("## Approach\n"
           "- Tile by 64 (fits L1)\n"
           "Note the `extern` below\n"
           "\n"
           "extern \"C\"\n"
           "void f(int *a) {\n"
           "  a[0] = 1;\n"
           "}\n"
           "// end of kernel\n"
           "\n"
           "1. Compile it\n"
           "That's all!\n",
           "f");
  assert_string_equal(r.code, "extern \"C\"\nvoid f(int *a) {\n  a[0] = 1;\n}\n// end of kernel\n");
  assert_string_equal(r.plan, "## Approach\n- Tile by 64 (fits L1)\nNote the `extern` below\n\n1. "
                              "Compile it\nThat's all!");
}

static void test_unfenced_beside_other_blocks(void **state) {
  (void)state;
  /* The code itself is unfenced; the only block is a shell command. */
  parse_ok("Kernel:\n" SMALL_F "\nBuild it with\n```sh\ncc -O3 -c k.c\n```\n", "f");
  assert_int_equal(r.nblocks, 1);
  assert_int_equal(r.had_fence, 0);
  assert_string_equal(r.code, SMALL_F);
  assert_string_equal(r.plan, "Kernel:\n\nBuild it with\n```sh\ncc -O3 -c k.c\n```");
}

static void test_unterminated(void **state) {
  (void)state;
  /* Cut off by max_tokens: no closing fence, trailing blank lines. */
  parse_ok("Here you go:\n\n```c\n" ROWSUM_C "\n\n", "rowsum");
  assert_string_equal(r.code, ROWSUM_C);
  assert_string_equal(r.plan, "Here you go:");
  assert_int_equal(r.unterminated, 1);
  /* Cut mid-function: still the code (the compiler will say what is wrong). */
  parse_ok("```c\nvoid f(int *a) {\n  for (int i = 0;", "f");
  assert_string_equal(r.code, "void f(int *a) {\n  for (int i = 0;\n");
  assert_int_equal(r.defines_entry, 1);
}

/* ---- plans ------------------------------------------------------------------ */

static void test_plan_label_inline(void **state) {
  (void)state;
  parse_ok("Plan: unroll by 8 and vectorize with AVX2.\n"
           "\n"
           "```c\n" SMALL_F "```\n"
           "\n"
           "That should be about 4x faster.\n",
           "f");
  assert_string_equal(r.plan, "unroll by 8 and vectorize with AVX2.");
  assert_int_equal(r.plan_explicit, 1);
}

static void test_plan_bold_label(void **state) {
  (void)state;
  parse_ok("**Plan:**\n"
           "1. Tile rows by 64.\n"
           "2. Vectorize the inner loop.\n"
           "\n"
           "**Code:**\n"
           "```c\n" SMALL_F "```\n",
           "f");
  assert_string_equal(r.plan, "1. Tile rows by 64.\n2. Vectorize the inner loop.");
  assert_int_equal(r.plan_explicit, 1);
  /* **Plan** alone on its line, and the section stops at the code block. */
  parse_ok("**Plan**\nTile.\n```c\n" SMALL_F "```\nAfter.\n", "f");
  assert_string_equal(r.plan, "Tile.");
}

static void test_plan_heading_after_code(void **state) {
  (void)state;
  parse_ok("```c\n" SMALL_F "```\n"
           "\n"
           "### Optimization plan\n"
           "- coalesce loads\n"
           "- keep partial sums in registers\n"
           "#### Detail\n"
           "registers: 32\n"
           "### Risks\n"
           "none\n",
           "f");
  assert_string_equal(
      r.plan, "- coalesce loads\n- keep partial sums in registers\n#### Detail\nregisters: 32");
  parse_ok("## Plan: tile by 64\nMore detail.\n\n## Code\n```c\n" SMALL_F "```\n", "f");
  assert_string_equal(r.plan, "tile by 64\nMore detail.");
}

static void test_plan_not_a_section(void **state) {
  (void)state;
  /* An empty Plan section falls back to the prose; "Planning:" and "Plan
   * ahead" are not sections; a "Plan:" inside a block is not either. */
  parse_ok("## Plan\n```c\n" SMALL_F "```\n", "f");
  assert_string_equal(r.plan, "## Plan");
  assert_int_equal(r.plan_explicit, 0);
  parse_ok("Planning: later.\nPlan ahead.\n```text\nPlan: no\n```\n```c\n" SMALL_F "```\n", "f");
  assert_string_equal(r.plan, "Planning: later.\nPlan ahead.\n```text\nPlan: no\n```");
  assert_int_equal(r.plan_explicit, 0);
}

static void test_plan_cap(void **state) {
  (void)state;
  size_t cap = 200000;
  char *reply = malloc(cap), *expect = malloc(cap);
  size_t n = 0;
  for (int i = 0; n < 80000; i++)
    n += (size_t)snprintf(reply + n, cap - n, "Step %d of the explanation.\n", i);
  memcpy(expect, reply, n);
  expect[n - 1] = '\0';
  n += (size_t)snprintf(reply + n, cap - n, "```c\n" SMALL_F "```\n");
  parse_ok_(reply, n, "f", __LINE__);
  assert_int_equal(r.plan_truncated, 1);
  size_t pl = strlen(r.plan);
  assert_true(pl <= KV_REPLY_PLAN_MAX && pl > KV_REPLY_PLAN_MAX - 64);
  assert_memory_equal(r.plan, expect, pl);
  assert_int_equal(expect[pl], '\n'); /* cut at a line boundary */
  assert_string_equal(r.code, SMALL_F);
  free(reply);
  free(expect);
}

static void test_reply_plan(void **state) {
  (void)state;
  char err[256], *plan = NULL;
  static const char planner[] = "## Plan\n"
                                "1. Tile by 32x32 in shared memory.\n"
                                "2. Pad to avoid bank conflicts:\n"
                                "   ```cuda\n"
                                "   __shared__ float tile[32][33];\n"
                                "   ```\n"
                                "\n"
                                "## Risks\n"
                                "Odd sizes.\n";
  assert_int_equal(kv_reply_plan(planner, strlen(planner), &plan, err, sizeof err), 0);
  assert_string_equal(plan, "1. Tile by 32x32 in shared memory.\n2. Pad to avoid bank conflicts:\n"
                            "   ```cuda\n   __shared__ float tile[32][33];\n   ```");
  free(plan);
  static const char free_form[] = "\r\nUse tiling.\r\n\r\n\r\n   \r\nThen vectorize.  \r\n";
  assert_int_equal(kv_reply_plan(free_form, strlen(free_form), &plan, err, sizeof err), 0);
  assert_string_equal(plan, "Use tiling.\n\nThen vectorize.");
  free(plan);
  assert_int_equal(kv_reply_plan(" \n\t", 3, &plan, err, sizeof err), -1);
  assert_null(plan);
  assert_non_null(strstr(err, "empty"));
  assert_int_equal(kv_reply_plan(NULL, 0, &plan, err, sizeof err), -1);
}

/* ---- refusals ---------------------------------------------------------------- */

static void test_empty_and_prose_only(void **state) {
  (void)state;
  parse_bad("", "rowsum", "empty");
  parse_bad(" \r\n\t\n", "rowsum", "empty");
  parse_bad("I can't optimize this without knowing the target GPU. Could you tell me whether "
            "it is an H100 (sm_90) or an A100 (sm_80)?\n",
            "rowsum", "no code: no fenced block and no definition of rowsum()");
  parse_bad("Run:\n```bash\nmake -j\n```\nthen\n```python\nprint(rowsum(x))\n```\n", "rowsum",
            "2 fenced blocks, none C-like and none defining rowsum()");
  parse_bad("```c\n\n\n```\n", NULL, "1 fenced block, none C-like");
}

static void test_limits(void **state) {
  (void)state;
  size_t n = KV_REPLY_MAX;
  char *big = malloc(n + 1);
  static const char head[] = "```c\n" SMALL_F "```\n";
  memcpy(big, head, sizeof head - 1);
  memset(big + sizeof head - 1, 'x', n + 1 - (sizeof head - 1));
  parse_bad_(big, n + 1, "f", "more than the 1048576-byte limit", __LINE__);
  parse_ok_(big, n, "f", __LINE__); /* exactly at the limit */
  assert_string_equal(r.code, SMALL_F);
  assert_int_equal(r.plan_truncated, 1);
  assert_int_equal(strlen(r.plan), KV_REPLY_PLAN_MAX);
  free(big);

  /* Too many blocks. */
  size_t blocks = KV_REPLY_MAX_BLOCKS + 1;
  char *many = malloc(blocks * 8 + 1);
  for (size_t i = 0; i < blocks; i++)
    memcpy(many + 8 * i, "```\n```\n", 8);
  parse_bad_(many, blocks * 8, "f", "more than 1024 fenced blocks", __LINE__);
  parse_bad_(many, (blocks - 1) * 8, "f", "1024 fenced blocks, none C-like", __LINE__);
  free(many);

  static const char nul[] = "```c\nvoid f() {}\n```\0trailing";
  parse_bad_(nul, sizeof nul - 1, "f", "NUL byte at offset 20", __LINE__);
}

/* The torch surface's Python: the block with `class ModelNew` is chosen over
 * a usage example after it, and a reply with only the reference Model has no
 * code defining ModelNew (the largest C-like block is not taken: none). */
static void test_python_modelnew(void **state) {
  (void)state;
  const char *two = "## Plan\nFuse.\n```python\nimport torch\n\nclass ModelNew(torch.nn.Module):\n"
                    "    def forward(self, x):\n        return x.sum(1)\n```\nUse it:\n"
                    "```python\nm = ModelNew()\nprint(m(torch.ones(2, 2)))\n```\n";
  parse_ok(two, "ModelNew");
  assert_true(r.defines_entry);
  assert_int_equal(r.block, 0);
  assert_non_null(strstr(r.code, "class ModelNew(torch.nn.Module):"));
  assert_string_equal(r.plan, "Fuse.");
  parse_bad("```python\nclass Model(torch.nn.Module):\n    pass\n```\n", "ModelNew",
            "none defining ModelNew()");
}

static void test_api_edges(void **state) {
  (void)state;
  char err[256];
  parse_bad(SMALL_F, "row sum", "entry 'row sum' is not a C identifier");
  parse_bad(SMALL_F, "", "is not a C identifier");
  parse_bad(SMALL_F, "1f", "is not a C identifier");
  assert_int_equal(kv_reply_parse(NULL, 0, "f", &r, err, sizeof err), -1);
  assert_int_equal(kv_reply_parse(SMALL_F, strlen(SMALL_F), "f", NULL, err, sizeof err), -1);
  /* No message buffer, or a tiny one. */
  assert_int_equal(kv_reply_parse("", 0, "f", &r, NULL, 0), -1);
  char tiny[8];
  assert_int_equal(kv_reply_parse("", 0, "f", &r, tiny, sizeof tiny), -1);
  assert_string_equal(tiny, "reply: ");
  /* Release twice is harmless. */
  parse_ok(SMALL_F, "f");
  kv_reply_release(&r);
  kv_reply_release(&r);
  kv_reply_release(NULL);
}

/* ---- kevo:tune ----------------------------------------------------------------- */

static void test_tunables(void **state) {
  (void)state;
  struct kv_tunable t[8];
  char err[256];
  static const char code[] = "// kevo:tune BLOCK=64,128,256\n"
                             "  //kevo:tune UNROLL = 1, 2 ,4\r\n"
                             "\t// kevo:tune SCHED=static,dynamic,guided  \n"
                             "// kevo:tuner is not ours\n"
                             "int x; // kevo:tune NOTALINE=1\n"
                             "/* kevo:tune NOPE=1 */\n"
                             "// KEVO:TUNE NOPE=1\n"
                             "// kevo:tune NEG=-1,0,0x10,-0x2\n"
                             "#ifndef BLOCK\n#define BLOCK 64\n#endif\n";
  assert_int_equal(kv_tunables_parse(code, t, 8, err, sizeof err), 4);
  assert_string_equal(t[0].name, "BLOCK");
  assert_int_equal(t[0].nvalues, 3);
  assert_string_equal(t[0].values[2], "256");
  assert_string_equal(t[1].name, "UNROLL");
  assert_int_equal(t[1].nvalues, 3);
  assert_string_equal(t[1].values[0], "1");
  assert_string_equal(t[1].values[1], "2");
  assert_string_equal(t[1].values[2], "4");
  assert_string_equal(t[2].name, "SCHED");
  assert_string_equal(t[2].values[2], "guided");
  assert_string_equal(t[3].name, "NEG");
  assert_int_equal(t[3].nvalues, 4);
  assert_string_equal(t[3].values[0], "-1");
  assert_string_equal(t[3].values[3], "-0x2");
  assert_int_equal(kv_tunables_parse("int main(void) { return 0; }", t, 8, err, sizeof err), 0);
  assert_int_equal(kv_tunables_parse("", NULL, 0, err, sizeof err), 0);
  /* From a parsed reply. */
  parse_ok("```c\n// kevo:tune TILE=16,32\r\n" SMALL_F "```\n", "f");
  assert_int_equal(kv_tunables_parse(r.code, t, 8, err, sizeof err), 1);
  assert_string_equal(t[0].values[1], "32");
  assert_int_equal(t[0].py, 0);
  /* Python (the torch surface): `# kevo:tune`, marked py; `#define` and a
   * `# kevo:tuned` comment are not declarations. */
  const char *py = "import triton\n"
                   "# kevo:tune BLOCK = 64, 128\n"
                   "  #kevo:tune WARPS=4,8\n"
                   "# kevo:tuned BLOCK=64\n"
                   "BLOCK = globals().get(\"BLOCK\", 64)\n";
  assert_int_equal(kv_tunables_parse(py, t, 8, err, sizeof err), 2);
  assert_string_equal(t[0].name, "BLOCK");
  assert_int_equal(t[0].py, 1);
  assert_string_equal(t[0].values[1], "128");
  assert_string_equal(t[1].name, "WARPS");
  assert_int_equal(t[1].py, 1);
  assert_int_equal(kv_tunables_parse("#define kevo 1\n#include <x.h>\n", t, 8, err, sizeof err),
                   0);
}

static void tune_bad(const char *code, int max, const char *want) {
  struct kv_tunable t[4];
  char err[256] = "";
  if (kv_tunables_parse(code, t, max, err, sizeof err) != -1)
    fail_msg("'%s' parsed, expected \"%s\"", code, want);
  if (!strstr(err, want))
    fail_msg("'%s': message \"%s\" lacks \"%s\"", code, err, want);
  assert_null(strchr(err, '\n'));
}

static void test_tunables_errors(void **state) {
  (void)state;
  tune_bad("int x;\n// kevo:tune\n", 4, "line 2: kevo:tune without NAME=v1,v2,...");
  tune_bad("// kevo:tune 9X=1\n", 4, "'9X=1' does not start with a C identifier");
  tune_bad("// kevo:tune X\n", 4, "X: expected '=' and values");
  tune_bad("// kevo:tune X=\n", 4, "X: empty value");
  tune_bad("// kevo:tune X=1,,2\n", 4, "X: empty value");
  tune_bad("// kevo:tune X=1,2,\n", 4, "X: empty value");
  tune_bad("// kevo:tune X=08\n", 4, "'08' is neither an integer nor an identifier");
  tune_bad("// kevo:tune X=1.5\n", 4, "'1.5' is neither");
  tune_bad("// kevo:tune X=a-b\n", 4, "'a-b' is neither");
  tune_bad("// kevo:tune X=-\n", 4, "'-' is neither");
  tune_bad("// kevo:tune X=0x\n", 4, "'0x' is neither");
  tune_bad("// kevo:tune X=\"s\"\n", 4, "'\"s\"' is neither");
  tune_bad("// kevo:tune X=1 2\n", 4, "X: unexpected '2' after the values");
  tune_bad("// kevo:tune X=1 // rows\n", 4, "unexpected '// rows'");
  tune_bad("// kevo:tune X=1\n// kevo:tune X=2\n", 4, "line 2: kevo:tune: X declared twice");
  tune_bad("// kevo:tune X=1,2,1\n", 4, "X: value 1 repeated");
  tune_bad("// kevo:tune A=1\n// kevo:tune B=1\n", 1, "line 2: kevo:tune: more than 1 tunables");
  tune_bad("// kevo:tune A=1\n", 0, "more than 0 tunables");
  char line[512];
  snprintf(line, sizeof line, "// kevo:tune %064d=1\n", 0);
  line[13] = 'N';
  tune_bad(line, 4, "longer than 63 characters");
  tune_bad("// kevo:tune X=V2345678901234567890123456789012\n", 4, "longer than 31 characters");
  int n = snprintf(line, sizeof line, "// kevo:tune X=");
  for (int i = 0; i <= KV_TUNE_MAX_VALUES; i++)
    n += snprintf(line + n, sizeof line - (size_t)n, "%s%d", i ? "," : "", i);
  tune_bad(line, 4, "X: more than 32 values");
  tune_bad("// kevo:tune X=\xff\n", 4, "'?' is neither");
  struct kv_tunable t[1];
  char err[64];
  assert_int_equal(kv_tunables_parse(NULL, t, 1, err, sizeof err), -1);
  assert_int_equal(kv_tunables_parse("", NULL, 1, err, sizeof err), -1);
  /* Exactly 32 values and a 63-character name are fine. */
  n = snprintf(line, sizeof line, "// kevo:tune N%062d=", 0);
  for (int i = 0; i < KV_TUNE_MAX_VALUES; i++)
    n += snprintf(line + n, sizeof line - (size_t)n, "%s%d", i ? "," : "", i);
  assert_int_equal(kv_tunables_parse(line, t, 1, err, sizeof err), 1);
  assert_int_equal(t[0].nvalues, 32);
  assert_int_equal(strlen(t[0].name), 63);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_openai_style, teardown_each),
      cmocka_unit_test_teardown(test_anthropic_style, teardown_each),
      cmocka_unit_test_teardown(test_crlf, teardown_each),
      cmocka_unit_test_teardown(test_info_strings, teardown_each),
      cmocka_unit_test_teardown(test_tilde_and_long_fences, teardown_each),
      cmocka_unit_test_teardown(test_indented_fences, teardown_each),
      cmocka_unit_test_teardown(test_nested_backticks, teardown_each),
      cmocka_unit_test_teardown(test_blank_lines_trimmed, teardown_each),
      cmocka_unit_test_teardown(test_prototype_then_definition, teardown_each),
      cmocka_unit_test_teardown(test_definition_then_larger_usage, teardown_each),
      cmocka_unit_test_teardown(test_last_definition_wins, teardown_each),
      cmocka_unit_test_teardown(test_largest_code_block_without_definition, teardown_each),
      cmocka_unit_test_teardown(test_not_definitions, teardown_each),
      cmocka_unit_test_teardown(test_definition_forms, teardown_each),
      cmocka_unit_test_teardown(test_any_tag_may_define, teardown_each),
      cmocka_unit_test_teardown(test_null_entry, teardown_each),
      cmocka_unit_test_teardown(test_unfenced_code, teardown_each),
      cmocka_unit_test_teardown(test_unfenced_with_prose, teardown_each),
      cmocka_unit_test_teardown(test_unfenced_beside_other_blocks, teardown_each),
      cmocka_unit_test_teardown(test_unterminated, teardown_each),
      cmocka_unit_test_teardown(test_plan_label_inline, teardown_each),
      cmocka_unit_test_teardown(test_plan_bold_label, teardown_each),
      cmocka_unit_test_teardown(test_plan_heading_after_code, teardown_each),
      cmocka_unit_test_teardown(test_plan_not_a_section, teardown_each),
      cmocka_unit_test_teardown(test_plan_cap, teardown_each),
      cmocka_unit_test_teardown(test_reply_plan, teardown_each),
      cmocka_unit_test_teardown(test_empty_and_prose_only, teardown_each),
      cmocka_unit_test_teardown(test_limits, teardown_each),
      cmocka_unit_test_teardown(test_python_modelnew, teardown_each),
      cmocka_unit_test_teardown(test_api_edges, teardown_each),
      cmocka_unit_test_teardown(test_tunables, teardown_each),
      cmocka_unit_test_teardown(test_tunables_errors, teardown_each),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
