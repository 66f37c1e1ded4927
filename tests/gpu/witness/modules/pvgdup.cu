// SPDX-License-Identifier: MIT
// libpvgdup.so, the artifact: pvg_dup_kernel as installed (x * 2 + 1). Built with hidden
// visibility so that its host stub is its own (another shared object's stub of the same name
// does not interpose). VARIANT picks the entry point's name (pvgdup_launch, or
// vendor_launch for libvendor_ops.so's older copy, x * 2).
#include <cstdio>
#ifndef VARIANT_VENDOR
#define ENTRY pvgdup_launch
#define BODY x[i] = x[i] * 2.0f + 1.0f
#else
#define ENTRY vendor_launch
#define BODY x[i] = x[i] * 2.0f
#endif
extern "C" __global__ void pvg_dup_kernel(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		BODY;
}
extern "C" __attribute__((visibility("default"))) int ENTRY(float *x, int n, int times)
{
	for (int t = 0; t < times; t++)
		pvg_dup_kernel<<<(n + 127) / 128, 128>>>(x, n);
	return (int)cudaDeviceSynchronize();
}
