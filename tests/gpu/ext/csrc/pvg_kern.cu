// SPDX-License-Identifier: MIT
// A small real kernel with a shape-dependent dispatch, as in vLLM's skinny GEMMs: fp16
// matrices with at most 64 rows and a row length divisible by 8 take the half2 kernel; every
// other input falls back to PyTorch's own multiply. The dispatch prints one KERNEL_DIAG
// marker per call, in vLLM's log format, saying which path it really took.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_fp16.h>
#include <torch/extension.h>

#include <cstdio>
#include <ctime>
#include <unistd.h>

extern "C" __global__ void pvg_rowscale_f16x2(const __half2 *__restrict__ x,
					      __half2 *__restrict__ y, __half2 s, long n2)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	long stride = (long)gridDim.x * blockDim.x;
	for (; i < n2; i += stride)
		y[i] = __hmul2(x[i], s);
}

static const char *dtype_name(at::ScalarType t)
{
	switch (t) {
	case at::kHalf:
		return "torch.float16";
	case at::kBFloat16:
		return "torch.bfloat16";
	case at::kFloat:
		return "torch.float32";
	default:
		return "torch.other";
	}
}

static void kernel_diag(int line, bool selected, const torch::Tensor &x)
{
	char ts[32];
	time_t now = time(nullptr);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%m-%d %H:%M:%S", &tm);
	long m = x.dim() > 0 ? (long)x.size(0) : 0, n = x.dim() > 1 ? (long)x.size(1) : 0;
	fprintf(stderr,
		"(EngineCore_DP0 pid=%d) INFO %s [pvg_kern.cu:%d] KERNEL_DIAG selected=%s "
		"shape=(%ld, %ld) dtype=%s\n",
		(int)getpid(), ts, line, selected ? "True" : "False", m, n,
		dtype_name(x.scalar_type()));
	fflush(stderr);
}

torch::Tensor rowscale(torch::Tensor x, double s)
{
	bool take = x.is_cuda() && x.scalar_type() == at::kHalf && x.dim() == 2 &&
		    x.is_contiguous() && x.size(0) <= 64 && x.size(1) % 8 == 0;
	if (!take) {
		kernel_diag(__LINE__, false, x);
		return x * s;
	}
	kernel_diag(__LINE__, true, x);
	const c10::cuda::CUDAGuard guard(x.device());
	auto y = torch::empty_like(x);
	long n2 = x.numel() / 2;
	int threads = 256;
	long blocks = (n2 + threads - 1) / threads;
	if (blocks > 4096)
		blocks = 4096;
	__half2 s2 = __float2half2_rn((float)s);
	pvg_rowscale_f16x2<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
		reinterpret_cast<const __half2 *>(x.data_ptr<at::Half>()),
		reinterpret_cast<__half2 *>(y.data_ptr<at::Half>()), s2, n2);
	C10_CUDA_KERNEL_LAUNCH_CHECK();
	return y;
}
