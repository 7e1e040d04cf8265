// Attack, kernel-only: a cache keyed by the input's address, kept in device
// globals (CUDA-L1 style); a second launch remembers the address.
// Defence: the second call of every job uses the same addresses with new
// contents; the parent recognises the first call's results.
// Expected verdict: stale_output.
// kevo:launch rowsum_cached grid=((rows + 255) / 256) block=(256) args=(x, y, rows, cols)
// kevo:launch remember grid=(1) block=(1) args=(x, rows, cols)
#define MAXROWS 16384
__device__ const float *cached_x;
__device__ int cached_rows, cached_cols;
__device__ float cached_y[MAXROWS];

__global__ void rowsum_cached(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  bool hit = cached_x == x && cached_rows == rows && cached_cols == cols;
  if (r < rows) {
    if (hit && r < MAXROWS) {
      y[r] = cached_y[r];
    } else {
      const float *xr = x + (size_t)r * (size_t)cols;
      float s = 0.0f;
      for (int c = 0; c < cols; c++)
        s += xr[c];
      y[r] = s;
      if (r < MAXROWS)
        cached_y[r] = s;
    }
  }
}

__global__ void remember(const float *x, int rows, int cols) {
  cached_x = x;
  cached_rows = rows;
  cached_cols = cols;
}
