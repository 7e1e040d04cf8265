/* Reference for the timing-attack suite's scale task: y = 2 x. */
void scale(const float *x, float *y, int rows, int cols) {
  long n = (long)rows * cols;
  for (long i = 0; i < n; i++)
    y[i] = 2.0f * x[i];
}
