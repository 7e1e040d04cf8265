// Attack, kernel-only: asks for more dynamic shared memory than any block can
// have (228 KiB; Hopper gives at most 227 KiB).
// Defence: kevo's launch fails and the slot's guard reports it after the call.
// Expected verdict: crash.
// kevo:launch greedy grid=(rows) block=(32) smem=(228 * 1024) args=(x, y, cols)
__global__ void greedy(const float *x, float *y, int cols) {
  extern __shared__ float s[];
  s[threadIdx.x] = x[(size_t)blockIdx.x * cols];
  __syncthreads();
  if (threadIdx.x == 0)
    y[blockIdx.x] = s[0];
}
