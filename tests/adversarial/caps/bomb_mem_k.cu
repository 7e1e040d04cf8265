/* The NVRTC bomb: a kernel-only candidate (launch line, no entry) whose
 * 2^20 device floats take NVRTC past a 512 MiB cap. Compile error naming it. */
// kevo:launch kevo_bomb grid=(1) block=(1) args=(y, rows)
#define A0 1.0f,
#define A1 A0 A0
#define A2 A1 A1
#define A3 A2 A2
#define A4 A3 A3
#define A5 A4 A4
#define A6 A5 A5
#define A7 A6 A6
#define A8 A7 A7
#define A9 A8 A8
#define A10 A9 A9
#define A11 A10 A10
#define A12 A11 A11
#define A13 A12 A12
#define A14 A13 A13
#define A15 A14 A14
#define A16 A15 A15
#define A17 A16 A16
#define A18 A17 A17
#define A19 A18 A18
#define A20 A19 A19
__device__ const float table[] = {A20 0.0f};
__global__ void kevo_bomb(float *y, int i) { y[0] = table[i]; }
