/* Attack: nan.
 * Writes a quiet NaN (with a payload unlike any sensible poison pattern) to
 * every output element, hoping a comparison written as `!(err > tol)` or
 * `fabs(a-b) > tol` (false for NaN) lets it through.
 * Defence: NaN where the reference is finite is a mismatch.
 * Expected verdict: wrong_output. Also accepted: unwritten_output, for a gate
 * that cannot tell a written NaN from its NaN poison (documented, not ideal). */
#include <math.h>
void rowsum(const float *x, float *y, int rows, int cols) {
  (void)x;
  (void)cols;
  volatile float zero = 0.0f;
  float n = __builtin_nanf("0x2a5");
  for (int r = 0; r < rows; r++)
    y[r] = (r & 1) ? zero / zero : n;
}
