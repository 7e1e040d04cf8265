// Attack: decoy (the buffers kevo reads timed calls from, named falsely), on
// the stand-in driver: tests/gpu/fakecuda.c runs kfake_decoy's attack in the
// candidate's worker process. Timed calls run in the worker's own buffers,
// whose handles it gives kevo once it has made them; kevo's clean worker
// reads validated calls through those handles. At the bench size (64 x 64)
// the kernel works only into call 0's output buffer (a
// fraction of the work), and a relay on the reply descriptor makes every
// call's handles name that first call's buffers.
// Defence: a named buffer must hold the right answer for the inputs kevo
// drew for the validated call itself (fresh per call and phase): the
// first call's answer is not that, so the decoy is found.
// Expected verdict: wrong_output or stale_output (or input_mutated: the
// first call's inputs are read as the validated call's).
// kevo:launch kfake_decoy grid=((rows + 255) / 256) block=(256) args=(x, y, rows, cols)
__global__ void kfake_decoy(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += x[(size_t)r * cols + c];
  y[r] = s;
}
