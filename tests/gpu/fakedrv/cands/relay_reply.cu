// Attack: relay_reply (a relay on the worker's reply descriptor), on the
// stand-in driver: tests/gpu/fakecuda.c runs kfake_relay_reply's attack in
// the candidate's worker process, as a host-entry candidate's code would.
// At check sizes the kernel sums half of each row and writes y[rows] (past
// the end); at the bench size it is right. On its first call it moves the
// worker's reply descriptor (4) onto a pipe and relays every frame, with
// each CHECK reply's outputs recomputed from the inputs the reply carries
// and its guard report emptied (the job token survives: the worker writes
// it).
// Defence: the clean worker owns the check buffers (CUDA IPC), fills them,
// and reads outputs, inputs and guard zones itself once the candidate's
// process is stopped; the candidate's reply says only that it returned.
// Expected verdict: wrong_output (the guard zone after y).
// kevo:launch kfake_relay_reply grid=((rows + 255) / 256) block=(256) args=(x, y, rows, cols)
__global__ void kfake_relay_reply(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += x[(size_t)r * cols + c];
  y[r] = s;
}
