/* Reference for the GPU timing-attack suite's histogram task. */
void histogram(const float *x, int *counts, int n, int nbins) {
  for (int b = 0; b < nbins; b++)
    counts[b] = 0;
  for (int i = 0; i < n; i++) {
    int b = (int)(x[i] * (float)nbins);
    b = b < 0 ? 0 : b >= nbins ? nbins - 1 : b;
    counts[b]++;
  }
}
