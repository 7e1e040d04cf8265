// A kernel-only candidate whose launch line names a param the task lacks.
// Expected verdict: compile_error naming the line, the field and the fix.
// kevo:launch k grid=((rows + 255) / 256) block=(256) args=(x, y, rows, width)
__global__ void k(const float *x, float *y, int rows, int cols) {}
