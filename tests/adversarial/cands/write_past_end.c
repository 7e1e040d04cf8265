/* Attack: write_past_end.
 * A correct rowsum that also writes one element past the end of its output
 * (y[rows]), the classic off-by-one: on its own the extra element lands in
 * allocation slack and every element of y is right.
 * Defence: a guard zone of unpredictable bytes (drawn from the call's seed)
 * follows every buffer and is checked after every call.
 * Expected verdict: wrong_output, the detail naming the guard zone after y. */
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  volatile float *v = y;
  v[rows] = v[rows - 1];
}
