/* SPDX-License-Identifier: MIT */
/*
 * Discovery for gate 7's compile-cache rule (provgate init): does it apply to the service
 * seen (a vLLM service whose torch.compile cache is in use), and the change's installed
 * Python files, proposed as compile_cache.traced for the user to keep those Dynamo traces.
 */
#include "core/discover.h"
#include "sys/scope.h"
#include "sys/vllm-cache.h"

static bool is_py(const char *p)
{
	size_t n = strlen(p);
	return n > 3 && strcmp(p + n - 3, ".py") == 0;
}

void pvg_discover_compile_cache(struct pvg_discovery *g, const char *procfs,
				const struct pvg_scope *s)
{
	const struct pvg_probe_proc *p = &g->service;
	if (!p->pid || !(pvg_names_vllm(p->comm) || pvg_names_vllm(p->cmdline)))
		return;
	struct pvg_vllm_cache c;
	pvg_vllm_cache_read(procfs, p->pid, &c);
	if (!c.env_read) {
		pvg_strv_push(&g->notes, pvg_strdup("compile cache: the vLLM service's environment "
						    "cannot be read, so whether gate 7's compile-cache "
						    "rule applies is told when it runs"));
	} else if (c.disabled) {
		pvg_strv_push(&g->notes, pvg_strdup("compile cache: gate 7's compile-cache rule does "
						    "not apply: VLLM_DISABLE_COMPILE_CACHE is set in "
						    "the vLLM service's environment"));
	} else if (!c.exists) {
		pvg_strv_push(&g->notes,
			      pvg_asprintf("compile cache: gate 7's compile-cache rule does not apply "
					   "now: no torch.compile cache at %s/torch_compile_cache",
					   c.root ? c.root : "(the service's cache root, unknown)"));
	} else {
		g->compile_applies = true;
		for (size_t i = 0; s && i < s->n; i++) {
			const struct pvg_change *ch = &s->changes[i];
			if (ch->cls == PVG_SCOPE_MAPPED && ch->kind != 'D' && is_py(ch->path))
				pvg_strv_push(&g->compile_traced, pvg_strdup(ch->path));
		}
		if (g->compile_traced.n)
			pvg_strv_push(&g->notes,
				      pvg_asprintf("compile_cache.traced: the %zu changed Python file%s "
						   "installed (the vLLM service uses the torch.compile "
						   "cache at %s/torch_compile_cache; gate 7 refuses a graph "
						   "loaded from there that is older than a changed file it "
						   "traced: keep the files Dynamo traces)",
						   g->compile_traced.n, g->compile_traced.n == 1 ? "" : "s",
						   c.root));
		else
			pvg_strv_push(&g->notes,
				      pvg_asprintf("compile cache: the vLLM service uses the torch.compile "
						   "cache at %s/torch_compile_cache, and the change installs "
						   "no Python file: gate 7's compile-cache rule has nothing "
						   "to refuse", c.root));
		if (!g->service_log)
			pvg_strv_push(&g->todo,
				      pvg_strdup("markers.log: the vLLM service's log, whose \"Using cache "
						 "directory\" lines tell gate 7 which torch.compile cache "
						 "folder it loaded (else the compile-cache rule is "
						 "unverifiable)"));
	}
	pvg_vllm_cache_clear(&c);
}
