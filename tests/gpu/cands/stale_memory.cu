// Attack: stale memory (the Sakana case). The entry launches nothing and
// relies on the output buffer still holding the reference's answer from an
// earlier run at the same address.
// Defence: outputs are fresh device buffers, poisoned before every call.
// Expected verdict: unwritten_output.
#include <cuda_runtime.h>

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  (void)x;
  (void)y;
  (void)rows;
  (void)cols;
  (void)stream;
}
