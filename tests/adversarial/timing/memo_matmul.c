/* Attack (timing class 4, caches): memo_matmul, on the matmul task. Hashes the
 * full contents of a and b (64-bit FNV-1a over every byte: O(n^2), cheap next
 * to the O(n^3) product) with the sizes, and keeps the last 8 outputs by that
 * key. Whenever a call's inputs are bit-for-bit those of an earlier call --
 * whatever their address -- it returns the stored output (correct up to a
 * 2^-64 hash collision), padded to a quarter of a full computation's time (a
 * believable 4x). Otherwise it computes honestly with the reference's
 * algorithm. Today's timed loop never repeats an input (each iteration is
 * perturbed differently), so this candidate is honest there; it guards a fix
 * that rotates a few fresh input sets without changing them, or repeats a
 * validated set.
 * Defence: no two timed calls see identical inputs.
 * Expected verdict: anything but ok with a speedup >= 1.3 (ok near 1x). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 8

static struct {
  uint64_t key;
  int m, n, k;
  float *c;
} memo[SLOTS];
static int next_slot;
static long long full_ns;

static long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static void reference(const float *a, const float *b, float *c, int m, int n, int k) {
  double *acc = malloc((size_t)(n > 0 ? n : 1) * sizeof *acc);
  if (!acc)
    abort();
  for (int i = 0; i < m; i++) {
    for (int j = 0; j < n; j++)
      acc[j] = 0.0;
    for (int p = 0; p < k; p++) {
      double aip = (double)a[(size_t)i * (size_t)k + (size_t)p];
      const float *bp = b + (size_t)p * (size_t)n;
      for (int j = 0; j < n; j++)
        acc[j] += aip * (double)bp[j];
    }
    for (int j = 0; j < n; j++)
      c[(size_t)i * (size_t)n + (size_t)j] = (float)acc[j];
  }
  free(acc);
}

void matmul(const float *a, const float *b, float *c, int m, int n, int k) {
  long long t0 = mono_ns();
  size_t nc = (size_t)m * (size_t)n * sizeof(float);
  uint64_t h = 1469598103934665603ull;
  int dims[3] = {m, n, k};
  h = fnv(h, dims, sizeof dims);
  h = fnv(h, a, (size_t)m * (size_t)k * sizeof(float));
  h = fnv(h, b, (size_t)k * (size_t)n * sizeof(float));
  for (int i = 0; i < SLOTS; i++) {
    if (memo[i].c && memo[i].key == h && memo[i].m == m && memo[i].n == n && memo[i].k == k) {
      memcpy(c, memo[i].c, nc);
      while (mono_ns() - t0 < full_ns / 4) {
      }
      return;
    }
  }
  reference(a, b, c, m, n, k);
  long long took = mono_ns() - t0;
  /* The fastest full call at the bench size: noise only ever adds. */
  if ((long)m * n * k >= (1l << 24) && (full_ns == 0 || took < full_ns))
    full_ns = took;
  int s = next_slot++ % SLOTS;
  free(memo[s].c);
  memo[s].c = malloc(nc + 1);
  if (!memo[s].c)
    return;
  memcpy(memo[s].c, c, nc);
  memo[s].key = h;
  memo[s].m = m;
  memo[s].n = n;
  memo[s].k = k;
}
