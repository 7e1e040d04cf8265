// Attack, kernel-only: a kernel that never ends.
// Defence: the job's deadline kills the worker (and the driver reclaims the
// GPU with it); the next candidate is judged normally.
// Expected verdict: timeout.
// kevo:launch spin grid=(1) block=(1) args=(y, rows)
__global__ void spin(float *y, int rows) {
  volatile int keep = 1;
  while (keep)
    y[0] = (float)rows;
}
