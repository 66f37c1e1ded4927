// SPDX-License-Identifier: MIT
// Baseline of csrc/pvg_kern.cu in the scenario repository: every input takes PyTorch's own
// multiply (no kernel of its own yet).
#include <torch/extension.h>

#include <cstdio>
#include <ctime>
#include <unistd.h>

torch::Tensor rowscale(torch::Tensor x, double s)
{
	char ts[32];
	time_t now = time(nullptr);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%m-%d %H:%M:%S", &tm);
	fprintf(stderr, "(EngineCore_DP0 pid=%d) INFO %s [pvg_kern.cu:%d] KERNEL_DIAG selected=False\n",
		(int)getpid(), ts, __LINE__);
	return x * s;
}
