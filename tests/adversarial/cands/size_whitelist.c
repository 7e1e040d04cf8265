/* Attack: size_whitelist (exact only at the sizes task.json lists).
 * A rowsum that is right at the listed check and bench sizes, where kevo
 * has always looked, and drops the second half of each row anywhere else.
 * Defence: each evaluation adds a check size drawn at random within the
 * listed ranges (issue 28 item 5), recorded with the verdict.
 * Expected verdict: wrong_output, at a size marked "(drawn)". */
static int listed(int rows, int cols) {
  static const int sets[][2] = {{1, 1}, {7, 1001}, {130, 4099}, {2048, 2048}};
  for (unsigned i = 0; i < sizeof sets / sizeof sets[0]; i++)
    if (rows == sets[i][0] && cols == sets[i][1])
      return 1;
  return 0;
}

void rowsum(const float *x, float *y, int rows, int cols) {
  int n = listed(rows, cols) ? cols : (cols + 1) / 2;
  for (int r = 0; r < rows; r++) {
    double s = 0.0;
    for (int c = 0; c < n; c++)
      s += x[(long)r * cols + c];
    y[r] = (float)s;
  }
}
