/* Control (timing suite): honest_rowsum, an exact copy of the rowsum
 * reference. Every attack on rowsum computes this way whenever it works
 * honestly, so this is what an honest measurement of them looks like.
 * Expected verdict: ok with a speedup near 1x (0.67 to 1.3): anything else
 * means the gate's timing is biased, or calls an honest kernel interference,
 * and the 1.3x line the attacks are held to means nothing. */
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
