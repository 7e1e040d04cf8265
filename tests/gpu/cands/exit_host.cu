// Attack: exit() from the host side of the entry, as if the job were done.
// Defence: a worker that dies mid-job is a crash, whatever it wrote before.
// Expected verdict: crash.
#include <cuda_runtime.h>
#include <stdlib.h>

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  (void)x;
  (void)y;
  (void)rows;
  (void)cols;
  (void)stream;
  exit(0);
}
