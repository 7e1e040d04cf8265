/* Reference of the allow tests' level-2 task: y = relu(x * w^T + bias), each
 * dot product accumulated in double. */
void gemm_bias_relu(const float *x, const float *w, const float *bias, float *y, int m, int n,
                    int k) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double s = bias[j];
      for (int p = 0; p < k; p++)
        s += (double)x[(long)i * k + p] * (double)w[(long)j * k + p];
      y[(long)i * n + j] = s > 0 ? (float)s : 0.0f;
    }
}
