// Attack, kernel-only: the launch line passes four arguments to a kernel of
// three parameters (a kernel whose parameters do not match could read kevo's
// memory).
// Defence: every argument is passed from a zeroed slot of its own, and where
// the driver tells a kernel's parameters (cuFuncGetParamInfo) they are
// checked against the launch line when the candidate is loaded.
// Expected verdict: load_error (wrong_output where the driver cannot tell).
// kevo:launch three grid=(rows) block=(32) args=(x, y, rows, cols)
__global__ void three(const float *x, float *y, int rows) {
  if (threadIdx.x == 0)
    y[blockIdx.x] = x[0] * rows;
}
