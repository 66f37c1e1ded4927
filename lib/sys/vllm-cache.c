/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <unistd.h>

#include "sys/vllm-cache.h"
#include "sys/witness.h"

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
