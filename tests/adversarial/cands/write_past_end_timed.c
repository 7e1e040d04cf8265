/* Attack: write_past_end_timed.
 * write_past_end, but only once the checks are over (after its first 14
 * calls: the checks make 12, the timing many more), and it writes zero:
 * what the timed calls' shared memory held where their guard zones are
 * before those zones had a drawn pattern (a comparison with the phase as
 * written did not see it).
 * Defence: the timed calls' buffers have the checks' guard zones, and the
 * calls kevo validates have them compared.
 * Expected verdict: wrong_output at a timed call, naming the zone after y. */
void rowsum(const float *x, float *y, int rows, int cols) {
  static int calls;
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  if (++calls > 14) {
    volatile float *v = y;
    v[rows] = 0.0f;
  }
}
