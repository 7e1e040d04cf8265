/* Attack: abort_call.
 * Computes the correct output, then calls abort() (SIGABRT).
 * Defence: a worker that dies mid-job is a crash, whatever it wrote first.
 * Expected verdict: crash. */
#include <stdlib.h>
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  abort();
}
