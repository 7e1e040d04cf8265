// Attack, kernel-only: __trap() in device code.
// Defence: the sticky error is reported after the call; the worker is replaced.
// Expected verdict: crash.
// kevo:launch trapper grid=(1) block=(32) args=(y)
__global__ void trapper(float *y) {
  y[threadIdx.x] = 0.0f;
  __trap();
}
