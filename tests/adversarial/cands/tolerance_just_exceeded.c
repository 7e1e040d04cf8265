/* Attack: tolerance_just_exceeded (tolerance exploit probe).
 * Computes the correct result, then adds 3e-4 to one element: the row whose
 * sum is smallest in magnitude. The task's tolerance is atol=rtol=1e-4, so the
 * allowed error there is 1e-4 + 1e-4*|ref|, which is at most 2e-4 whenever
 * |ref| <= 1 -- always true for the rows=1 cols=1 check (y = x[0] in [-1,1]).
 * Defence: an exact |cand-ref| <= atol + rtol*|ref| comparison; a gate that
 * widens tolerances, compares in float with slack, or only samples elements
 * lets it pass.
 * Expected verdict: wrong_output. */
#include <math.h>
void rowsum(const float *x, float *y, int rows, int cols) {
  int worst = 0;
  double best = INFINITY;
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
    if (fabs(s) < best) {
      best = fabs(s);
      worst = r;
    }
  }
  if (rows > 0)
    y[worst] = (float)((double)y[worst] + 3e-4);
}
