/* Control (timing suite): honest_scale, an exact copy of the scale
 * reference, whose bench output (1M elements) is validated on a sample.
 * Expected verdict: ok with a speedup near 1x (0.67 to 1.3). */
void scale(const float *x, float *y, int rows, int cols) {
  long n = (long)rows * cols;
  for (long i = 0; i < n; i++)
    y[i] = 2.0f * x[i];
}
