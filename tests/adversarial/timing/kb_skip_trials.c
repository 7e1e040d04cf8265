/* Attack (--timing kernelbench, issue 27 item 5): kb_skip_trials. Under
 * KernelBench's protocol every trial runs on the same inputs, so a kernel
 * that computed its output once could leave it in place and return at once
 * from every later trial (KernelBench's own harness would time the empty
 * calls). From its 8th call at the bench size (past kevo's pricing calls and
 * the block's warm-ups) this candidate writes nothing.
 * Defence: kevo poisons the candidate's outputs before every trial and
 * validates trials drawn after each (the last one when none was drawn), so
 * an output left from an earlier trial is poison by then.
 * Expected verdict: not ok (stale_output). */
static int bench_calls;

void rowsum(const float *x, float *y, int rows, int cols) {
  if (rows == 64 && cols == 256 && bench_calls++ >= 8)
    return;
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
