/* Attack: write_before_start.
 * A correct rowsum that also writes one element before the start of its
 * output (y[-1]), as a loop running from -1 would.
 * Defence: a guard zone of unpredictable bytes (drawn from the call's seed)
 * precedes every buffer and is checked after every call.
 * Expected verdict: wrong_output, the detail naming the guard zone before y. */
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  volatile float *v = y;
  v[-1] = v[0];
}
