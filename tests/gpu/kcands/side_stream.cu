// Attack, kernel-only: work on a side stream, outside the timed events. A
// kernel-only candidate has no host code, so it can create no stream; device
// code cannot either (no device runtime is linked).
// Expected verdict: compile_error.
// kevo:launch k grid=(1) block=(1) args=(y)
__global__ void k(float *y) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  y[0] = 0;
}
