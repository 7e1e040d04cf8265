// kevo test fixture: a local array indexed at run time lives in local memory (LDL/STL).
__global__ void spill_local(const float *x, float *y, const int *idx, int n) {
  float t[32];
  for (int i = 0; i < 32; i++)
    t[(idx[i] + threadIdx.x) & 31] = x[i * n + threadIdx.x];
  y[threadIdx.x] = t[idx[threadIdx.x] & 31];
}
