/* Attack: input_mutation.
 * Produces the correct output, then casts away const and zeroes the whole
 * input. (A kernel that uses its input as scratch space, or one that hopes the
 * next timed call finds easy data.)
 * Defence: the gate compares the inputs after the call with what it passed.
 * Expected verdict: input_mutated. Also accepted: crash, for a gate that maps
 * inputs read-only so the write faults. */
#include <string.h>
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  memset((void *)x, 0, sizeof(float) * (size_t)rows * (size_t)cols);
}
