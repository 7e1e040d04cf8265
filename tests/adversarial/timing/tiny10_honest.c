/* Control (timing class 6, tiny kernels; issue 28 item 4): tiny10_honest, an
 * exact copy of the rowsum10us reference (about 10 us a call). The defer_*
 * attacks compute this way, only at other moments; the floor that stops
 * them must not mark this one down or reject it.
 * Expected verdict: ok with a speedup near 1x (0.67 to 1.3). */
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
