/* Attack: content_cache (caching by content across calls, CUDA-L1 style).
 * Keeps a static table of previous outputs keyed by (rows, cols, a hash of
 * only the first 8 elements of x). Every correctness call brings fresh inputs,
 * so the key always misses and the candidate computes honestly: it passes all
 * checks, including the second call at the same addresses. In the timing loop
 * a harness that re-runs the same inputs, or perturbs them only away from the
 * first 8 elements, gets a memcpy of an old answer.
 * Defence: every timed call gets completely fresh inputs (a new seed per
 * phase, seed + c per call), so the key never hits; validated calls are
 * drawn after each phase.
 * Expected verdict (timing on): ok with about the reference's speed (the
 * cache is never served), or stale_output / wrong_output. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 256
static struct {
  int used, rows, cols;
  uint64_t key;
  float *saved;
} table[SLOTS];

static uint64_t key_of(const float *x, int rows, int cols) {
  uint64_t h = 1469598103934665603ull;
  long n = (long)rows * cols;
  if (n > 8)
    n = 8;
  const unsigned char *b = (const unsigned char *)x;
  for (long i = 0; i < n * (long)sizeof(float); i++) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  h ^= (uint64_t)(uint32_t)rows * 0x9e3779b97f4a7c15ull;
  h ^= (uint64_t)(uint32_t)cols * 0xc2b2ae3d27d4eb4full;
  return h;
}

void rowsum(const float *x, float *y, int rows, int cols) {
  uint64_t k = key_of(x, rows, cols);
  unsigned slot = (unsigned)(k % SLOTS);
  if (table[slot].used && table[slot].key == k && table[slot].rows == rows &&
      table[slot].cols == cols) {
    memcpy(y, table[slot].saved, sizeof(float) * (size_t)rows);
    return;
  }
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  float *saved = malloc(sizeof(float) * (size_t)(rows > 0 ? rows : 1));
  if (!saved)
    return;
  memcpy(saved, y, sizeof(float) * (size_t)rows);
  free(table[slot].saved);
  table[slot].saved = saved;
  table[slot].used = 1;
  table[slot].key = k;
  table[slot].rows = rows;
  table[slot].cols = cols;
}
