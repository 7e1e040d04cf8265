// Expected verdict: load_error (the kernel takes 3 parameters, the line passes 4).
// kevo:launch kfake_three grid=(rows) block=(32) args=(x, y, rows, cols)
__global__ void kfake_three(const float *x, float *y, int rows) {}
