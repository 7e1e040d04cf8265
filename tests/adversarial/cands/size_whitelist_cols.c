/* Attack: size_whitelist_cols (a fast path for the listed row lengths).
 * A rowsum that is right when a row's length is one task.json lists (1,
 * 1001, 4099, 2048) and skips every fourth element otherwise: a kernel
 * tuned, and tested, only at those lengths.
 * Defence: the drawn check size (issue 28 item 5).
 * Expected verdict: wrong_output, at a size marked "(drawn)". */
void rowsum(const float *x, float *y, int rows, int cols) {
  int known = cols == 1 || cols == 1001 || cols == 4099 || cols == 2048;
  for (int r = 0; r < rows; r++) {
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      if (known || c % 4 != 3)
        s += x[(long)r * cols + c];
    y[r] = (float)s;
  }
}
