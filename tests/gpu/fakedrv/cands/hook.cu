// Attack: hook (the worker's cuMemcpyDtoH entry rewritten), on the stand-in
// driver: tests/gpu/fakecuda.c runs kfake_hook's attack in the candidate's
// worker process, as a host-entry candidate's constructor would (the
// stand-in test runs unsandboxed: nothing is sealed). The kernel writes
// nothing; the attack finds the worker's table entry for cuMemcpyDtoH by its
// value in the worker's memory, makes its page writable and puts a hook
// there that returns the row sums for any output the worker copies back.
// Defence: no verdict's number is copied back by the candidate's process:
// the clean worker reads the lent buffers in its own context.
// Expected verdict: unwritten_output.
// kevo:launch kfake_hook grid=((rows + 255) / 256) block=(256) args=(x, y, rows, cols)
__global__ void kfake_hook(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += x[(size_t)r * cols + c];
  y[r] = s;
}
