/* Control (timing class 6, the gate's own overhead): tiny_honest, on the
 * rowsum64 task, whose bench size is 64 x 64: a call takes about a
 * microsecond while the gate flushes a last-level cache (tens to hundreds of
 * MiB) before every timed call. An exact copy of the reference: nothing to
 * catch. A gate that sizes its timed loop from the call time alone runs up to
 * its maximum iteration count of flushes and blows its own deadline.
 * Defence: the iteration count and the deadline account for the flush (and
 * every other per-iteration overhead); an honest kernel never gets a
 * rejection from the gate's own overhead.
 * Expected verdict: ok, timed, within a few seconds at a 0.2 s budget. */
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
