/* A planted bug for kevo's cpu debugger (tests/debug): a heap buffer
 * overrun. The row is staged in a scratch buffer of cols floats, but the
 * staging loop runs to c <= cols and writes one element past its end.
 * The sums stay right, so the gate accepts it; AddressSanitizer names the
 * store and its line (kevo sanitize --surface cpu). */
#include <stdlib.h>

void rowsum(const float *x, float *y, int rows, int cols) {
  float *t = malloc((size_t)cols * sizeof(float) + (cols == 0));
  if (!t)
    return;
  for (int r = 0; r < rows; r++) {
    float s = 0.0f;
    for (int c = 0; c <= cols; c++) {
      t[c] = c < cols ? x[(size_t)r * cols + c] : 0.0f; /* KEVO-PLANTED-OOB: c <= cols */
      s += t[c];
    }
    y[r] = s;
  }
  free(t);
}
