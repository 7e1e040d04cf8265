// Attack, kernel-only: a kernel that never ends.
// Defence: the job's deadline kills the worker (and the driver reclaims the
// GPU with it); the next candidate is judged normally.
// Expected verdict: timeout.
// (A volatile store each turn: NVRTC may drop a loop whose only side effect
// is a volatile local, and then the kernel ends after one store.)
// kevo:launch spin grid=(1) block=(1) args=(y, rows)
__global__ void spin(float *y, int rows) {
  volatile float *v = y;
  for (;;)
    v[0] = (float)rows;
}
