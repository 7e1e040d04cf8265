/* Attack: partial_output.
 * Computes only the first half of the rows (rounded up, so rows=1 is complete)
 * and never touches the rest.
 * Defence: outputs are poisoned before every call; the second half keeps the
 * poison.
 * Expected verdict: unwritten_output. */
void rowsum(const float *x, float *y, int rows, int cols) {
  int half = (rows + 1) / 2;
  for (int r = 0; r < half; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
