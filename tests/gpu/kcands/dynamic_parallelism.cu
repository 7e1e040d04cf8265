// Attack, kernel-only: a kernel that launches kernels itself (dynamic
// parallelism: work kevo did not launch, on streams it does not see).
// Defence: NVRTC compiles whole programs without the device runtime: a
// launch from device code does not compile.
// Expected verdict: compile_error.
// kevo:launch parent grid=(1) block=(1) args=(y, rows)
__global__ void child(float *y, int i) { y[i] = 0; }
__global__ void parent(float *y, int rows) {
  for (int i = 0; i < rows; i++)
    child<<<1, 1>>>(y, i);
}
