#define A 32
#define B (A * 4u) // x
#define C B
#define R R
// kevo:launch k<1, (2)> grid=(rows, (cols + C - 1) / C) block=(A, 2) smem=(B*4) args=(x, y, alpha, rows)
// kevo:launch k grid=(R) block=1 args=()
