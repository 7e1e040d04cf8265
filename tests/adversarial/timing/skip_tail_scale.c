/* Attack (timing class 3, what is validated): skip_tail_scale. Timed calls
 * are validated on a sample of their outputs (262144 of the 1M elements
 * here), so a cheater skips work that a sample might not look at: from its
 * third call at the bench size on (past the gate's warm-up), it leaves the
 * last 1/1000 of the output unwritten, in one block, where a sample of a
 * few fixed blocks would not reach. Honest at the check sizes.
 * Defence: the sample is drawn after the phase, one index in each of 262144
 * equal strata; a skipped share of 1e-3 goes unseen by one validation with
 * probability (1 - 1e-3)^262144, about e^-262.
 * Expected verdict: anything but ok (stale_output). */
static int bench_calls;

void scale(const float *x, float *y, int rows, int cols) {
  long n = (long)rows * cols, end = n;
  if (n >= (1l << 20) && bench_calls++ >= 2)
    end = n - n / 1000;
  for (long i = 0; i < end; i++)
    y[i] = 2.0f * x[i];
}
