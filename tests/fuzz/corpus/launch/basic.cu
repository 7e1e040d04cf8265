#define BLOCK 256
__global__ void k(const float *x, float *y, int rows, int cols) {}
// kevo:launch k grid=((rows + BLOCK - 1) / BLOCK) block=(BLOCK) args=(x, y, rows, cols)
