// Attack, kernel-only: writes through a wild pointer (an illegal address,
// a sticky error that poisons the context).
// Defence: the error is reported after the call and the worker is replaced.
// Expected verdict: crash.
// kevo:launch wild grid=(1) block=(32) args=(y)
__global__ void wild(float *y) {
  float *p = (float *)((unsigned long long)y ^ 0x7f0000000000ull);
  p[threadIdx.x] = 1.0f;
}
