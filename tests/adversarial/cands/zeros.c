/* Attack: zeros (trivial output; KernelBench shipped tasks where this passed).
 * Writes 0 to every output element without reading the input.
 * Defence: the comparison against the reference; rowsum of uniform[-1,1] rows
 * is far from 0 beyond atol=1e-4.
 * Expected verdict: wrong_output. */
void rowsum(const float *x, float *y, int rows, int cols) {
  (void)x;
  (void)cols;
  for (int r = 0; r < rows; r++)
    y[r] = 0.0f;
}
