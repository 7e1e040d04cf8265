/* Attack: missing_entry.
 * Compiles cleanly but defines only rowsum_impl, never the task's entry
 * `rowsum` (a shared object may leave symbols undefined, so the build itself
 * succeeds).
 * Defence: loading the object (RTLD_NOW, or a lookup of the entry) fails.
 * Expected verdict: load_error. */
void rowsum_impl(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
