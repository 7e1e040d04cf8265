// Expected verdict: unwritten_output.
// kevo:launch kfake_nothing grid=(1) block=(32) args=(y)
__global__ void kfake_nothing(float *y) {}
