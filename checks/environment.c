/* SPDX-License-Identifier: MIT */
/*
 * The report's "environment" section. Every fact is a value, null (absent: no such driver,
 * no such file), or named in "errors" (it exists and could not be read): compare refuses a
 * field it cannot see on both sides, and nothing here guesses.
 */
#include "environment.h"
#include "facts.h"
#include "sys/ns.h"

/* Tool libraries: loaded only by a profiler or tracer (nsys, ncu, rocprof, rocprofv3,
 * rocprof-sys / omnitrace) into the process it profiles. */
static const char *const tool_prefixes[] = {
	"libToolsInjection",		  /* Nsight Systems (CUDA_INJECTION64_PATH) */
	"libnvperf_",			  /* Perfworks: hardware counters (ncu, CUPTI profiling API) */
	"libInterceptorInjectionTarget", /* Nsight Compute */
	"libcuda-injection",		  /* Nsight Compute */
	"libTreeLauncherTargetInjection", /* Nsight Compute */
	"librocprofiler64",		  /* rocprof v1 / v2 (HSA_TOOLS_LIB) */
	"librocprofiler-sdk-tool",	  /* rocprofv3 (LD_PRELOAD) */
	"librocprofv3",			  /* rocprofv3's own tool libraries */
	"librocprof-sys",		  /* rocprof-sys */
	"libomnitrace",			  /* omnitrace */
};
/* Profiling libraries a framework loads whether or not anyone profiles: PyTorch's
 * __init__ preloads libcupti, ROCm builds link roctracer / rocprofiler-sdk for kineto. */
static const char *const library_prefixes[] = {
	"libcupti", "libroctracer", "libroctx", "librocprofiler-sdk",
};
/* Set to anything, these make the runtime load a tool into the process. */
static const char *const injection_vars[] = {
	"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "NVTX_INJECTION32_PATH",
	"HSA_TOOLS_LIB",	 "ROCP_TOOL_LIBRARIES",
};

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* Nsight Systems / Compute set these in every process they inject into (seen under ncu
 * 2025.3 on the H200: NV_NSIGHT_INJECTION_TRANSPORT_TYPE, NVIDIA_PROCESS_INJECTION_*) */
static bool nsight_injection_var(const char *name)
{
	return has_prefix(name, "NV_NSIGHT_INJECTION_") || has_prefix(name, "NVIDIA_PROCESS_INJECTION_");
}

enum pvg_profiler_kind pvg_profiler_library(const char *path)
{
	const char *b = pvg_basename(path);
	for (size_t i = 0; i < ARRAY_SIZE(tool_prefixes); i++)
		if (has_prefix(b, tool_prefixes[i]))
			return PVG_PROFILER_TOOL;
	for (size_t i = 0; i < ARRAY_SIZE(library_prefixes); i++)
		if (has_prefix(b, library_prefixes[i]))
			return PVG_PROFILER_LIBRARY;
	return PVG_PROFILER_NONE;
}

static void push(struct pvg_strv *v, char *s)
{
	v->v = pvg_xrealloc(v->v, v->n + 1, sizeof(char *));
	v->v[v->n++] = s;
}

/* libprovgate-witness.so, the dispatch witness gate 7 reads: known, not a profiler */
static bool is_witness(const char *path)
{
	return has_prefix(pvg_basename(path), "libprovgate-witness");
}

static void push_unique(struct pvg_strv *v, char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i], s) == 0) {
			free(s);
			return;
		}
	push(v, s);
}

void pvg_profilers_find(const struct pvg_service_facts *s, struct pvg_strv *attached,
			struct pvg_strv *libraries)
{
	pvg_profilers_classify(s, attached, libraries, attached);
}

void pvg_profilers_classify(const struct pvg_service_facts *s, struct pvg_strv *attached,
			    struct pvg_strv *libraries, struct pvg_strv *witness)
{
	for (size_t i = 0; i < s->n_objects; i++) {
		enum pvg_profiler_kind k = pvg_profiler_library(s->objects[i].path);
		if (k == PVG_PROFILER_TOOL)
			push(attached, pvg_asprintf("pid %d maps %s", (int)s->pid, s->objects[i].path));
		else if (k == PVG_PROFILER_LIBRARY && libraries)
			push(libraries, pvg_asprintf("pid %d maps %s", (int)s->pid, s->objects[i].path));
	}
	for (size_t i = 0; i < s->n_env; i++) {
		const struct pvg_env_var *v = &s->env[i];
		bool inject = false;
		for (size_t k = 0; k < ARRAY_SIZE(injection_vars); k++)
			inject |= strcmp(v->name, injection_vars[k]) == 0;
		if (inject && v->value[0] && is_witness(v->value)) {
			push_unique(witness, pvg_asprintf("provgate dispatch witness (%s)", v->name));
			continue;
		}
		if ((inject && v->value[0]) || nsight_injection_var(v->name)) {
			push(attached, pvg_asprintf("pid %d has %s=%s", (int)s->pid, v->name, v->value));
			continue;
		}
		if (strcmp(v->name, "LD_PRELOAD") != 0)
			continue;
		/* ld.so splits LD_PRELOAD at spaces and colons */
		_cleanup_free_ char *copy = pvg_strdup(v->value);
		char *save = NULL;
		for (char *tok = strtok_r(copy, ": ", &save); tok; tok = strtok_r(NULL, ": ", &save))
			if (pvg_profiler_library(tok) != PVG_PROFILER_NONE)
				push(attached, pvg_asprintf("pid %d has LD_PRELOAD=%s", (int)s->pid, tok));
	}
}

static void add_error(cJSON *errors, const char *field, int err, const char *why)
{
	if (!err)
		return;
	_cleanup_free_ char *msg = why ? pvg_asprintf("%s: %s", why, strerror(-err))
				       : pvg_strdup(strerror(-err));
	pvg_json_add_str(errors, field, msg);
}

static void add_fact(cJSON *obj, const char *key, const struct pvg_fact *f, cJSON *errors,
		     const char *field)
{
	pvg_json_add_str(obj, key, f->value);
	add_error(errors, field, f->err, NULL);
}

static cJSON *strv_json(const struct pvg_strv *v)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < v->n; i++)
		cJSON_AddItemToArray(a, pvg_json_string(v->v[i]));
	return a;
}

static void host_json(const struct pvg_roots *roots, cJSON *env, cJSON *errors)
{
	struct pvg_host_facts h;
	pvg_host_facts_read(roots, &h);
	cJSON *o = cJSON_AddObjectToObject(env, "host");
	add_fact(o, "machine_id", &h.machine_id, errors, "host.machine_id");
	add_fact(o, "boot_id", &h.boot_id, errors, "host.boot_id");
	add_fact(o, "hostname", &h.hostname, errors, "host.hostname");
	add_fact(o, "kernel", &h.kernel, errors, "host.kernel");
	pvg_host_facts_clear(&h);
}

static void gpu_json(const struct pvg_roots *roots, cJSON *env, cJSON *errors)
{
	struct pvg_gpu_facts g;
	pvg_gpu_facts_read(roots, &g);
	cJSON *o = cJSON_AddObjectToObject(env, "gpu");
	cJSON *drv = cJSON_AddObjectToObject(o, "driver");
	cJSON *amd = cJSON_AddObjectToObject(drv, "amdgpu");
	pvg_json_add_bool(amd, "loaded", g.amdgpu_loaded);
	add_fact(amd, "version", &g.amdgpu_version, errors, "gpu.driver.amdgpu");
	add_fact(drv, "nvidia", &g.nvidia_version, errors, "gpu.driver.nvidia");
	cJSON_AddItemToObject(o, "devices", strv_json(&g.ids));
	add_error(errors, "gpu.devices", g.ids_err, NULL);
	pvg_gpu_facts_clear(&g);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static cJSON *service_json(const struct pvg_roots *roots, const struct pvg_targets *t,
			   const struct pvg_tree_facts *tf, cJSON *errors)
{
	const struct pvg_proc *p = pvg_targets_find(t, t->primary);
	struct pvg_service_facts s;
	if (!p || pvg_service_facts_read(roots, t->primary, true, &s) < 0)
		return NULL;
	cJSON *o = cJSON_CreateObject();
	char start[48];
	cJSON_AddNumberToObject(o, "pid", (double)s.pid);
	pvg_proc_format_start(p, start, sizeof(start));
	pvg_json_add_str(o, "start_time", start);
	pvg_json_add_u64(o, "start_ticks", p->start_ticks);
	cJSON_AddItemToObject(o, "cmdline", strv_json(&s.argv));
	add_error(errors, "service.cmdline", s.argv_err, NULL);

	cJSON *env = cJSON_AddObjectToObject(o, "env");
	for (size_t i = 0; i < s.n_env; i++)
		pvg_json_add_str(env, s.env[i].name, s.env[i].value);
	add_error(errors, "service.env", s.env_err, NULL);

	cJSON *ns = cJSON_AddObjectToObject(o, "namespaces");
	for (int i = 0; i < PVG_NS__MAX; i++) {
		if (s.ns[i].err) {
			_cleanup_free_ char *f = pvg_asprintf("service.namespaces.%s", pvg_ns_names[i]);
			add_error(errors, f, s.ns[i].err, NULL);
			cJSON_AddNullToObject(ns, pvg_ns_names[i]);
			continue;
		}
		cJSON *n = cJSON_AddObjectToObject(ns, pvg_ns_names[i]);
		pvg_json_add_u64(n, "inode", s.ns[i].ino);
		pvg_json_add_bool(n, "shared_with_provgate", s.ns[i].shared);
	}
	/* one line per hierarchy (cgroup v1), or the single "0::/..." line of v2 */
	if (s.cgroup.value) {
		cJSON *cg = cJSON_AddArrayToObject(o, "cgroup");
		char *save = NULL;
		for (char *l = strtok_r(s.cgroup.value, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			cJSON_AddItemToArray(cg, pvg_json_string(l));
	} else {
		cJSON_AddNullToObject(o, "cgroup");
	}
	add_error(errors, "service.cgroup", s.cgroup.err, NULL);

	/* devices and profilers of the whole tree: vLLM's GPU workers are the engine's children;
	 * and every command line of it: the engine retitles itself ("VLLM::EngineCore"), the
	 * flags are on the API server's ("vllm serve MODEL --enable-prefix-caching") */
	size_t n_tree = 0;
	_cleanup_free_ pid_t *tree = pvg_xcalloc(t->n ? t->n : 1, sizeof(pid_t));
	for (size_t i = 0; i < t->n; i++)
		if (t->procs[i].in_tree && !t->procs[i].zombie)
			tree[n_tree++] = t->procs[i].pid;
	/* the command lines as gate 5's profiler check read them (one read per process) */
	cJSON *tj = cJSON_AddArrayToObject(o, "tree");
	for (size_t i = 0; tf && i < tf->n; i++) {
		const struct pvg_service_facts *f = &tf->f[i];
		if (f->argv_err == -ENOENT || f->argv_err == -ESRCH)
			continue; /* exited since the snapshot, or nothing to describe */
		const struct pvg_proc *tp = pvg_targets_find(t, f->pid);
		cJSON *pj = cJSON_CreateObject();
		cJSON_AddNumberToObject(pj, "pid", (double)f->pid);
		cJSON_AddNumberToObject(pj, "ppid", tp ? (double)tp->ppid : 0);
		if (f->argv_err < 0) {
			cJSON_AddNullToObject(pj, "cmdline");
			add_error(errors, "service.tree", f->argv_err, NULL);
		} else {
			cJSON_AddItemToObject(pj, "cmdline", strv_json(&f->argv));
		}
		cJSON_AddItemToArray(tj, pj);
	}
	struct pvg_strv devices = { 0 };
	int r = pvg_held_devices(roots->procfs, tree, n_tree, pvg_gpu_device_globs(), &devices);
	cJSON_AddItemToObject(o, "devices", strv_json(&devices));
	add_error(errors, "service.devices", r, NULL);
	pvg_strv_clear(&devices);

	struct pvg_strv attached = { 0 };
	pvg_profilers_find(&s, &attached, NULL);
	for (size_t i = 0; tf && i < tf->n; i++)
		if (tf->f[i].pid != s.pid)
			pvg_profilers_find(&tf->f[i], &attached, NULL);
	if (attached.n > 1)
		qsort(attached.v, attached.n, sizeof(char *), cmp_str);
	cJSON_AddItemToObject(o, "profilers", strv_json(&attached));
	pvg_strv_clear(&attached);

	cJSON *objs = cJSON_AddArrayToObject(o, "shared_objects");
	for (size_t i = 0; i < s.n_objects; i++) {
		const struct pvg_shared_object *so = &s.objects[i];
		cJSON *j = cJSON_CreateObject();
		pvg_json_add_str(j, "path", so->path);
		pvg_json_add_str(j, "build_id", so->build_id[0] ? so->build_id : NULL);
		if (so->size)
			pvg_json_add_u64(j, "size", so->size);
		if (so->deleted)
			pvg_json_add_bool(j, "deleted", true);
		if (so->err) {
			_cleanup_free_ char *msg = so->err == -ENOENT && so->why
							   ? pvg_strdup(so->why)
							   : pvg_asprintf("%s: %s", so->why ? so->why : "read",
									  strerror(-so->err));
			pvg_json_add_str(j, "error", msg);
		}
		cJSON_AddItemToArray(objs, j);
	}
	add_error(errors, "service.shared_objects", s.maps_err, NULL);
	pvg_json_add_u64(o, "file_mappings", s.n_mappings);
	pvg_service_facts_clear(&s);
	return o;
}

static void inputs_json(const struct pvg_config *cfg, cJSON *env)
{
	cJSON *b = cJSON_AddObjectToObject(env, "benchmark");
	cJSON *a = cJSON_AddArrayToObject(b, "inputs");
	const struct pvg_strv *in = &cfg->benchmark.inputs;
	for (size_t done = 0; done < in->n;) {
		size_t n = in->n - done > 8 ? 8 : in->n - done;
		struct pvg_file_id ids[8];
		pvg_hash_files((const char *const *)in->v + done, n, ids);
		for (size_t i = 0; i < n; i++) {
			cJSON *j = cJSON_CreateObject();
			pvg_json_add_str(j, "path", in->v[done + i]);
			if (ids[i].err || !ids[i].hashed) {
				cJSON_AddNullToObject(j, "sha256");
				_cleanup_free_ char *msg =
					pvg_asprintf("%s: %s", ids[i].err_what ? ids[i].err_what : "read",
						     strerror(ids[i].err ? ids[i].err : EIO));
				pvg_json_add_str(j, "error", msg);
			} else {
				pvg_json_add_str(j, "sha256", ids[i].hex);
				pvg_json_add_u64(j, "size", ids[i].size);
			}
			cJSON_AddItemToArray(a, j);
			pvg_file_id_clear(&ids[i]);
		}
		done += n;
	}
}

/* The service's container, as its cgroup path names it (or, from inside a container with
 * a private cgroup namespace, provgate's own when they share the pid namespace): what an
 * A/B comparison checks as "the same container". null when it runs in none. */
static cJSON *service_container_json(const struct pvg_targets *t)
{
	const struct pvg_proc *p = pvg_targets_find(t, t->primary);
	struct pvg_container c;
	bool found = p && pvg_proc_container("/proc", p->pid, &c) > 0 && !c.conmon;
	struct pvg_self_view self;
	if (!found && p && pvg_self_view_read("/proc", "/", &self) == 0 && self.in_container &&
	    self.have_container && p->ns.pid == self.ns.pid) {
		c = self.container;
		found = true;
	}
	if (!found)
		return cJSON_CreateNull();
	cJSON *o = cJSON_CreateObject();
	pvg_json_add_str(o, "engine", c.engine);
	pvg_json_add_str(o, "id", c.id[0] ? c.id : NULL);
	if (c.pod[0])
		pvg_json_add_str(o, "pod", c.pod);
	/* what the container's root is made of: two containers of one image share it */
	struct pvg_rootfs_id fs;
	if (p && pvg_proc_rootfs("/proc", "/", p->pid, &fs) > 0) {
		cJSON *r = cJSON_AddObjectToObject(o, "rootfs");
		pvg_json_add_str(r, "fstype", fs.fstype);
		if (fs.layers) {
			pvg_json_add_int(r, "layers", (int)fs.layers);
			pvg_json_add_str(r, "layers_sha256", fs.sha256);
			pvg_json_add_int(r, "unresolved", (int)fs.unresolved);
		}
	}
	return o;
}

static const struct pvg_tree_facts *tree_facts(struct pvg_ctx *ctx)
{
	const struct pvg_tree_facts *tf;
	return pvg_tree_facts_get(ctx, &tf) == 0 ? tf : NULL;
}

/* Who read the service: provgate's own uid against the service's. Not root and not the
 * service's user, it cannot read the service's environment, open files, mappings or root,
 * and every check that needs them is unverifiable; "limited" says so in one sentence, which
 * the text output prints once at the top. */
static cJSON *reader_json(const struct pvg_targets *t)
{
	cJSON *o = cJSON_CreateObject();
	uid_t me = geteuid();
	const struct pvg_proc *p = t && !t->err ? pvg_targets_find(t, t->primary) : NULL;
	pvg_json_add_int(o, "uid", (int)me);
	pvg_json_add_bool(o, "root", me == 0);
	if (p && p->uid != (uid_t)-1)
		pvg_json_add_int(o, "service_uid", (int)p->uid);
	else
		cJSON_AddNullToObject(o, "service_uid");
	if (me != 0 && p && p->uid != (uid_t)-1 && p->uid != me) {
		_cleanup_free_ char *why = pvg_asprintf(
			"provgate runs as uid %d, not root, and the service (pid %d) as uid %d: its "
			"environment, open files, mappings and root cannot be read, so the checks "
			"that need them are unverifiable; run provgate as root or as the service's "
			"user",
			(int)me, (int)p->pid, (int)p->uid);
		pvg_json_add_str(o, "limited", why);
	} else
		cJSON_AddNullToObject(o, "limited");
	return o;
}

cJSON *pvg_environment_collect(struct pvg_ctx *ctx)
{
	uint64_t t0 = pvg_now_ns();
	struct pvg_roots roots;
	pvg_ctx_roots(ctx, &roots);
	cJSON *env = cJSON_CreateObject();
	cJSON *errors = cJSON_CreateObject();
	cJSON *r = cJSON_AddObjectToObject(env, "roots");
	pvg_json_add_str(r, "procfs", roots.procfs);
	pvg_json_add_str(r, "sysfs", roots.sysfs);
	host_json(&roots, env, errors);
	gpu_json(&roots, env, errors);
	/* the container the service runs in (filled in below once the service is known) */
	cJSON_AddNullToObject(env, "container");

	cJSON *svc = NULL;
	const char *why = NULL;
	const struct pvg_targets *t = NULL;
	if (ctx->phase != PVG_PHASE_LIVE)
		why = "no live service in this phase";
	else if (!pvg_service_selected(ctx->cfg))
		why = "service.match, service.pid or service.pidfile is not set";
	else if (pvg_targets_get(ctx, &t) < 0)
		why = "the process table could not be read";
	else if (t->err)
		why = t->msg.text ? t->msg.text : "no service process was selected";
	else if (!(svc = service_json(&roots, t, tree_facts(ctx), errors)))
		why = "the service process exited while it was read";
	if (svc)
		cJSON_ReplaceItemInObject(env, "container", service_container_json(t));
	if (svc)
		cJSON_AddItemToObject(env, "service", svc);
	else
		cJSON_AddNullToObject(env, "service");
	if (why)
		pvg_json_add_str(env, "service_why", why);
	inputs_json(ctx->cfg, env);
	cJSON_AddItemToObject(env, "reader", reader_json(t && !t->err ? t : NULL));
	cJSON_AddItemToObject(env, "errors", errors);
	char ms[32];
	snprintf(ms, sizeof(ms), "%.3f", (double)(pvg_now_ns() - t0) / 1e6);
	cJSON_AddStringToObject(env, "collected_ms", ms);
	return env;
}
