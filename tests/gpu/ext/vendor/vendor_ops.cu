// SPDX-License-Identifier: MIT
// A vendor plugin carrying its own, older copy of pvg_rowscale_f16x2: the same extern "C"
// name and parameters as the extension's kernel (tests/gpu/ext/csrc/pvg_kern.cu), other
// code (one half at a time, no half2 arithmetic) and the same grid and block for a call. A service that maps both objects and
// launches this one runs code that is not the installed artifact's, under the same name.
// Built by run-identity.sh: nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC
#include <cuda_fp16.h>

extern "C" __global__ void pvg_rowscale_f16x2(const __half2 *__restrict__ x,
					      __half2 *__restrict__ y, __half2 s, long n2)
{
	const __half *xh = reinterpret_cast<const __half *>(x);
	__half *yh = reinterpret_cast<__half *>(y);
	float f = __low2float(s);
	for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n2;
	     i += (long)gridDim.x * blockDim.x) {
		yh[2 * i] = __float2half(__half2float(xh[2 * i]) * f);
		yh[2 * i + 1] = __float2half(__half2float(xh[2 * i + 1]) * f);
	}
}

// y = x * s for n2 half2 values on the given stream; 0 or the CUDA error
extern "C" int vendor_rowscale(const void *x, void *y, float s, long n2, void *stream)
{
	int threads = 256;
	long blocks = (n2 + threads - 1) / threads; /* the extension's grid for the same call */
	if (blocks > 4096)
		blocks = 4096;
	pvg_rowscale_f16x2<<<(unsigned)blocks, threads, 0, (cudaStream_t)stream>>>(
		(const __half2 *)x, (__half2 *)y, __float2half2_rn(s), n2);
	return (int)cudaGetLastError();
}
