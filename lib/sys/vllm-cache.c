/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <unistd.h>

#include "sys/vllm-cache.h"
#include "sys/witness.h"

int pvg_proc_open_as(const char *procfs, pid_t pid, const char *path, bool dir, uint64_t max,
		     enum pvg_refusal *refused)
{
	_cleanup_free_ char *base = pvg_asprintf("%s/%d/%s", procfs, (int)pid,
						 path[0] == '/' ? "root" : "cwd");
	_cleanup_close_ int root = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	struct pvg_creds creds;
	bool as_user = pvg_proc_creds(procfs, pid, &creds) == 0 && creds.uid != geteuid();
	const struct pvg_untrusted how = { .root_fd = root, .want_dir = dir, .max_size = max,
					   .as = as_user ? &creds : NULL };
	struct pvg_untrusted_file f = { 0 };
	int fd = pvg_open_untrusted(path, &how, &f);
	if (refused)
		*refused = f.refused;
	return fd;
}

bool pvg_names_vllm(const char *s)
{
	return s && strcasestr(s, "vllm") != NULL;
}

void pvg_vllm_cache_read(const char *procfs, pid_t pid, struct pvg_vllm_cache *out)
{
	memset(out, 0, sizeof(*out));
	_cleanup_free_ char *v = NULL, *home = NULL, *xdg = NULL, *dis = NULL;
	int r = pvg_proc_getenv(procfs, pid, "VLLM_CACHE_ROOT", &v);
	if (r < 0 && r != -ENOENT)
		return;
	out->env_read = true;
	if (pvg_proc_getenv(procfs, pid, "VLLM_DISABLE_COMPILE_CACHE", &dis) == 0) {
		char *end;
		long n = strtol(dis, &end, 10);
		out->disabled = end != dis && *end == '\0' && n != 0;
	}
	pvg_proc_getenv(procfs, pid, "HOME", &home);
	_cleanup_free_ char *path = NULL;
	if (v && v[0]) {
		if (v[0] == '~' && (v[1] == '/' || !v[1]))
			path = home ? pvg_asprintf("%s%s", home, v + 1) : NULL;
		else
			path = pvg_strdup(v);
	} else if (pvg_proc_getenv(procfs, pid, "XDG_CACHE_HOME", &xdg) == 0 && xdg[0]) {
		path = pvg_asprintf("%s/vllm", xdg);
	} else if (home && home[0]) {
		path = pvg_asprintf("%s/.cache/vllm", home);
	}
	if (!path)
		return;
	out->root = pvg_utf8_sanitize(path, strlen(path));
	_cleanup_free_ char *tcc = pvg_asprintf("%s/torch_compile_cache", path);
	_cleanup_close_ int fd = pvg_proc_open_as(procfs, pid, tcc, true, 0, NULL);
	out->exists = fd >= 0;
}

void pvg_vllm_cache_clear(struct pvg_vllm_cache *c)
{
	free(c->root);
	memset(c, 0, sizeof(*c));
}
