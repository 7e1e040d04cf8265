/* Attack (timing class 2, sabotaged reference): ref_busy_host. The
 * candidate is an exact copy of the reference; the attack is the host's.
 * While this candidate is judged, the suite itself (not the candidate)
 * keeps twice as many threads as CPUs spinning whenever a worker of the
 * gate is stopped (SIGSTOP), which is when the reference runs beside the
 * candidate, and never otherwise. It stands for whatever a candidate's
 * process could leave behind to load the host exactly then (dirty pages to
 * write back, work handed to another process) and for a host busy by
 * chance at those moments: the reference's interleaved times come out two
 * to three times its real ones. Once the candidate's process is gone no
 * worker is stopped, so the reference alone is timed on a quiet host.
 * Defence: the speedup is taken against the faster of the reference beside
 * the candidate and the reference alone.
 * Expected verdict: ok near 1x (or any verdict but ok at >= 1.3x). */
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
