// Expected verdict: input_mutated (the right sums, then x[0] = 0).
// kevo:launch kfake_scribble grid=(1) block=(1) args=(x, y, rows, cols)
__global__ void kfake_scribble(const float *x, float *y, int rows, int cols) {}
