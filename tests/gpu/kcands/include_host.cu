// Attack, kernel-only, at compile time: include a host file into the
// kernel's source, hoping the compile log shows its contents.
// Defence: NVRTC runs in a sandbox that reads only system directories and
// the toolkit's: the include fails.
// Expected verdict: compile_error ("Permission denied").
#include "/etc/shadow"
#include "/proc/self/environ"
// kevo:launch k grid=(1) block=(1) args=(y)
__global__ void k(float *y) { y[0] = 0; }
