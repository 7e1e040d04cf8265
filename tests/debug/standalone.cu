// Standalone programs for recording compute-sanitizer and ncu fixtures
// (tests/debug/record.sh): the tools' own text, from the planted bugs of
// oob.cu and race.cu, a barrier in a divergent branch (synccheck), a read of
// uninitialized memory (initcheck), and a correct memory-bound kernel (ncu).
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

__global__ void oob_write(float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i + (1 << 28)] = 1.0f;
}

__global__ void smem_race(const float *x, float *y) {
  __shared__ float part[256];
  int t = threadIdx.x;
  part[t] = x[blockIdx.x * 256 + t];
  __syncthreads();
  for (int step = 128; step > 0; step /= 2) {
    if (t < step)
      part[t] += part[t + step];
  }
  if (t == 0)
    y[blockIdx.x] = part[0];
}

__global__ void divergent_barrier(float *y) {
  if (threadIdx.x < 16)
    __syncthreads();
  y[threadIdx.x] = 1.0f;
}

__global__ void uninit_read(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = x[i] * 2.0f;
}

__global__ void scale(const float4 *x, float4 *y, int n4) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
    float4 v = x[i];
    v.x *= 2.0f, v.y *= 2.0f, v.z *= 2.0f, v.w *= 2.0f;
    y[i] = v;
  }
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "scale";
  int n = 1 << 24;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  if (strcmp(what, "uninit") != 0)
    cudaMemset(x, 0, n * sizeof(float));
  if (!strcmp(what, "oob"))
    oob_write<<<4, 128>>>(y, 512);
  else if (!strcmp(what, "race"))
    smem_race<<<64, 256>>>(x, y);
  else if (!strcmp(what, "sync"))
    divergent_barrier<<<1, 32>>>(y);
  else if (!strcmp(what, "uninit"))
    uninit_read<<<4, 256>>>(x, y, 1024);
  else
    scale<<<1056, 256>>>((const float4 *)x, (float4 *)y, n / 4);
  cudaError_t e = cudaDeviceSynchronize();
  printf("%s: %s\n", what, cudaGetErrorString(e));
  return 0;
}
