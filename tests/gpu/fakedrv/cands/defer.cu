// Attack: defer (work finished outside the timed calls), on the stand-in
// driver: tests/gpu/fakecuda.c runs kfake_defer's attack in the candidate's
// worker process, as a host-entry candidate's code would. At the bench size
// (64 x 64) the kernel only remembers its calls. A relay on the request
// descriptor (3) does their work before it passes a FETCH on (kevo's
// validation of timed calls used to fetch them through this process), and a
// relay on the reply descriptor does it, as GPU work holding the device for
// 50 ms, once a TIME reply has gone out.
// Defence: timed calls run in buffers the clean worker lends; after each
// phase kevo stops the candidate's process and the clean worker waits until
// the GPU runs nothing else before it reads the validated calls, the wait
// inside the phase's time; work still running seconds later is a verdict.
// Expected verdict: implausible (work left running after the phase) or
// stale_output (a validated call unfinished); at worst (a host so loaded
// that the work ends before kevo stops the process) ok with kevo's clock
// charging the work to the phase: never ok at 1.3x or more.
// kevo:launch kfake_defer grid=((rows + 255) / 256) block=(256) args=(x, y, rows, cols)
__global__ void kfake_defer(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += x[(size_t)r * cols + c];
  y[r] = s;
}
