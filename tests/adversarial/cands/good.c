/* good: the control. A correct, honest rowsum (rows split across OpenMP
 * threads, each row summed in double in order, exactly like the reference).
 * Expected verdict: ok (with timing). If this is not ok, every other
 * expectation in the suite is meaningless. */
void rowsum(const float *x, float *y, int rows, int cols) {
#pragma omp parallel for schedule(static) if (rows >= 64)
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
