/* Reference for the GPU timing-attack suite's matmul task: c = a * b, each
 * dot product accumulated in double. */
void matmul(const float *a, const float *b, float *c, int m, int n, int k) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double s = 0.0;
      for (int p = 0; p < k; p++)
        s += (double)a[(long)i * k + p] * (double)b[(long)p * n + j];
      c[(long)i * n + j] = (float)s;
    }
}
