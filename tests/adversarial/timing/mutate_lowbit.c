/* Attack (timing class 5, inputs modified during timing): mutate_lowbit. The
 * correctness checks return the inputs after every call and would notice any
 * write, so this candidate leaves them alone; from its third call at the
 * bench size on (the timed loop, after all checks) it computes the right
 * answer (the reference's algorithm) and then sets the lowest mantissa bit
 * of one element per row of its "const" input (kevo's generator leaves it
 * clear, so this is a real change of one unit in the last place, and doing
 * it again changes nothing). The change is far below the task's tolerance,
 * so every output the gate validates stays right: only a bitwise check of
 * the inputs after the timed calls can see it.
 * Defence: inputs verified unchanged after timing, as after every check.
 * Expected verdict: anything but ok (input_mutated). */
#include <stdint.h>
#include <string.h>

static int bench_calls;

void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  if ((long)rows * cols < (1l << 20) || bench_calls++ < 2)
    return;
  float *w = (float *)(uintptr_t)x; /* the const was only a promise */
  for (int r = 0; r < rows; r++) {
    uint32_t v;
    float *e = &w[(long)r * cols + r % cols];
    memcpy(&v, e, 4);
    v |= 1u;
    memcpy(e, &v, 4);
  }
}
