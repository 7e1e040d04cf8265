// Expected verdict: wrong_output (the right sums, then y[rows] = y[rows-1]:
// one element past the end, into the guard zone after y).
// kevo:launch kfake_overrun grid=(1) block=(1) args=(x, y, rows, cols)
__global__ void kfake_overrun(const float *x, float *y, int rows, int cols) {}
