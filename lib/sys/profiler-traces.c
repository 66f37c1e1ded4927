/* SPDX-License-Identifier: MIT */
/* A service's torch-profiler trace folder, listed (see profiler-traces.h). */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "sys/profiler-traces.h"
#include "sys/witness.h"

/* vLLM: vllm/envs.py VLLM_TORCH_PROFILER_DIR, traces by torch.profiler's
 * tensorboard_trace_handler(dir, worker_name, use_gzip=True): WORKER.TIME_NS.pt.trace.json.gz.
 * SGLang: SGLANG_TORCH_PROFILER_DIR (python/sglang/srt/environ.py), traces
 * PROFILE_ID-TP-RANK.trace.json.gz and the like. */
const char *const pvg_profiler_dir_vars[] = {
	"VLLM_TORCH_PROFILER_DIR",
	"SGLANG_TORCH_PROFILER_DIR",
	NULL,
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t l = strlen(s), k = strlen(suffix);
	return l > k && strcmp(s + l - k, suffix) == 0;
}

bool pvg_is_trace_name(const char *name)
{
	return name[0] != '.' && (ends_with(name, ".trace.json") || ends_with(name, ".trace.json.gz"));
}

void pvg_profiler_dir_clear(struct pvg_profiler_dir *d)
{
	free(d->dir);
	for (size_t i = 0; i < d->n_traces; i++)
		free(d->traces[i].name);
	memset(d, 0, sizeof(*d));
}

static bool at_or_after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
}

/* The folder's entries: names only, each looked at without following a link; a link, a
 * device or a FIFO named like a trace is no trace. */
static void list_traces(int dfd, const struct timespec *since, struct pvg_profiler_dir *out)
{
	int lfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
	if (!d) {
		out->err = -errno;
		if (lfd >= 0)
			close(lfd);
		return;
	}
	size_t seen = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (++seen > PVG_TRACES_MAX_ENTRIES) {
			out->truncated = true;
			break;
		}
		if (!pvg_is_trace_name(de->d_name))
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (!at_or_after(&st.st_mtim, since)) {
			out->n_before++;
			continue;
		}
		out->n_since++;
		if (out->n_traces < PVG_TRACES_LISTED) {
			struct pvg_trace_file *t = &out->traces[out->n_traces++];
			t->name = pvg_utf8_sanitize(de->d_name, strlen(de->d_name));
			t->mtime = st.st_mtim;
			t->size = (uint64_t)st.st_size;
		}
	}
	closedir(d);
}

int pvg_profiler_dir_read(const char *procfs, pid_t pid, const char *var,
			  const struct timespec *since, struct pvg_profiler_dir *out)
{
	memset(out, 0, sizeof(*out));
	out->pid = pid;
	out->var = var;
	_cleanup_free_ char *value = NULL;
	int r = pvg_proc_getenv(procfs, pid, var, &value);
	if (r < 0)
		return r;
	if (!value[0])
		return -ENOENT; /* set but empty: the frameworks take it as not set */
	out->dir = pvg_utf8_sanitize(value, strlen(value));
	/* inside the process's root (an absolute value) or its working folder (a relative one),
	 * with its user's rights: no link leads out of it */
	_cleanup_close_ int dfd = pvg_proc_open_as(procfs, pid, value, true, 0, &out->refused);
	if (dfd < 0) {
		out->err = dfd;
		return 0;
	}
	list_traces(dfd, since, out);
	return 0;
}
