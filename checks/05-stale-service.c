/* SPDX-License-Identifier: MIT */
/*
 * Gate 5 stale-service: the service environment is clean.
 *   prestart: no service process (service.family or service.match) alive, the port free.
 *   live: every service process inside the target's tree (no orphan EngineCore of an earlier
 *   run), the port's listening socket owned by the tree, and no process outside the tree
 *   holding a GPU device (/dev/kfd, /dev/dri/renderD*, /dev/nvidia*, or
 *   $PROVGATE_GPU_DEVICES); and no profiler or tracer attached to a process of the tree
 *   (a tool library mapped, or injected through CUDA_INJECTION64_PATH, HSA_TOOLS_LIB,
 *   LD_PRELOAD, ...) unless service.allow_profiler says the run is meant to profile.
 */
#include "checks.h"
#include "environment.h"
#include "sys/net-tcp.h"
#include "facts.h"

#define MAX_LISTED 8 /* problems listed one by one; the rest are counted */

static cJSON *proc_json(const struct pvg_proc *p)
{
	char t[48];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "pid", p->pid);
	cJSON_AddNumberToObject(o, "ppid", p->ppid);
	cJSON_AddNumberToObject(o, "uid", p->uid);
	pvg_json_add_str(o, "comm", p->comm);
	pvg_json_add_str(o, "cmdline", p->cmdline);
	pvg_proc_format_start(p, t, sizeof(t));
	pvg_json_add_str(o, "start_time", t);
	return o;
}

static const char *comm_of(const struct pvg_targets *t, pid_t pid)
{
	const struct pvg_proc *p = pvg_targets_find(t, pid);
	return p ? p->comm : "exited";
}

/* Listening sockets on the port and who holds them; st updated. */
struct port_view {
	struct pvg_tcp_table listeners;
	bool read_ok;
};

/* Reports what reading the port's listeners (r, pv->listeners) gave. */
static enum pvg_status report_port(struct pvg_ctx *ctx, struct pvg_result *res, int r,
				   struct port_view *pv)
{
	if (r < 0) {
		pvg_problem(res, "stale-service.net-unreadable", "is /proc mounted?",
			    "cannot read %s/net/tcp: %s", ctx->procfs,
			    r == -EINVAL ? "malformed line" : strerror(-r));
		return PVG_UNVERIFIABLE;
	}
	pv->read_ok = true;
	cJSON *a = cJSON_AddArrayToObject(res->evidence, "listeners");
	for (size_t i = 0; i < pv->listeners.n; i++) {
		char addr[64];
		cJSON *o = cJSON_CreateObject();
		pvg_tcp_addr_string(&pv->listeners.s[i], addr, sizeof(addr));
		pvg_json_add_str(o, "address", addr);
		pvg_json_add_u64(o, "inode", pv->listeners.s[i].inode);
		cJSON_AddNumberToObject(o, "uid", pv->listeners.s[i].uid);
		cJSON_AddItemToArray(a, o);
	}
	return PVG_PASS;
}

static enum pvg_status read_port(struct pvg_ctx *ctx, struct pvg_result *res, struct port_view *pv)
{
	int r = pvg_net_tcp_listeners(ctx->procfs, (uint16_t)ctx->cfg->service.port, &pv->listeners);
	return report_port(ctx, res, r, pv);
}

/* The live check's reads: the port's listeners and one pass over every process's fds. Made
 * by run(), or earlier by prepare() while gate 3 hashes. */
struct live_read {
	const struct pvg_targets *t; /* the snapshot it was made from */
	int tcp_r;
	struct pvg_tcp_table listeners;
	struct pvg_fd_scan fs;
};

static void live_read_free(void *p)
{
	struct live_read *lr = p;
	if (!lr)
		return;
	pvg_fd_scan_clear(&lr->fs);
	pvg_tcp_table_clear(&lr->listeners);
	free(lr);
}

static void live_read_freep(struct live_read **lr)
{
	live_read_free(*lr);
}

static struct live_read *read_live(struct pvg_ctx *ctx, const struct pvg_targets *t)
{
	struct live_read *lr = pvg_xcalloc(1, sizeof(*lr));
	lr->t = t;
	_cleanup_free_ uint64_t *inodes = NULL;
	if (ctx->cfg->service.port > 0) {
		lr->tcp_r = pvg_net_tcp_listeners(ctx->procfs, (uint16_t)ctx->cfg->service.port,
						  &lr->listeners);
		if (lr->tcp_r < 0)
			lr->listeners.n = 0;
		inodes = pvg_xcalloc(lr->listeners.n ? lr->listeners.n : 1, sizeof(uint64_t));
		for (size_t i = 0; i < lr->listeners.n; i++)
			inodes[i] = lr->listeners.s[i].inode;
	}
	pvg_fd_scan(ctx->procfs, t, inodes, lr->listeners.n, pvg_gpu_device_globs(), &lr->fs);
	return lr;
}

static void prepare_stale_service(struct pvg_ctx *ctx)
{
	const struct pvg_targets *t;
	if (ctx->phase == PVG_PHASE_PRESTART || pvg_targets_get(ctx, &t) < 0 || t->err)
		return;
	pvg_ctx_set_slot(ctx, PVG_SLOT_STALE, read_live(ctx, t), live_read_free);
}

static enum pvg_status denied_problem(struct pvg_result *res, const struct pvg_fd_scan *fs,
				      const char *what)
{
	if (!fs->n_denied)
		return PVG_PASS;
	if (!cJSON_GetObjectItem(res->evidence, "fds_unreadable")) {
		cJSON *a = cJSON_AddArrayToObject(res->evidence, "fds_unreadable");
		for (size_t i = 0; i < fs->n_denied && i < 64; i++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(fs->denied[i]));
	}
	pvg_problem(res, "stale-service.permission-denied",
		    "run provgate as root to see every process's open files",
		    "the open files of %zu process%s (first pid %d) could not be read, so %s cannot be "
		    "ruled out",
		    fs->n_denied, fs->n_denied == 1 ? "" : "es", (int)fs->denied[0], what);
	return PVG_UNVERIFIABLE;
}

static enum pvg_status run_prestart(struct pvg_ctx *ctx, struct pvg_result *res,
				    const struct pvg_targets *t)
{
	const struct pvg_config *cfg = ctx->cfg;
	enum pvg_status st = PVG_PASS;
	size_t alive = 0;
	if (!cfg->service.family.n && !cfg->service.match.n && cfg->service.port <= 0 &&
	    cfg->service.pid <= 0 && !cfg->service.pidfile) {
		pvg_summary(res, "nothing to look for: no service.family, service.match or port");
		pvg_problem(res, "stale-service.not-configured",
			    "set service.family (and service.port)",
			    "no service.family, service.match, service.pid, service.pidfile or "
			    "service.port is configured");
		return PVG_UNVERIFIABLE;
	}
	cJSON *a = cJSON_AddArrayToObject(res->evidence, "service_processes");
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		/* a service.pid / pidfile that names a live process counts even without family */
		bool named = !t->err && t->how != PVG_SELECT_MATCH && p->pid == t->primary;
		if (!p->family && !named)
			continue;
		cJSON_AddItemToArray(a, proc_json(p));
		if (alive++ < MAX_LISTED)
			pvg_problem(res, "stale-service.alive",
				    "stop the previous service (and its orphaned engine) before starting "
				    "the benchmark service",
				    "service process %d (%s) is alive before the service starts",
				    (int)p->pid, p->cmdline ? p->cmdline : p->comm);
		st = PVG_FAIL;
	}
	if (cfg->service.port > 0) {
		struct port_view pv = { 0 };
		st = pvg_status_worst(st, read_port(ctx, res, &pv));
		if (pv.read_ok && pv.listeners.n) {
			uint64_t *inodes = pvg_xcalloc(pv.listeners.n, sizeof(uint64_t));
			for (size_t i = 0; i < pv.listeners.n; i++)
				inodes[i] = pv.listeners.s[i].inode;
			struct pvg_fd_scan fs;
			pvg_fd_scan(ctx->procfs, t, inodes, pv.listeners.n, NULL, &fs);
			if (fs.n_hits)
				pvg_problem(res, "stale-service.port-held",
					    "stop the process that holds the port",
					    "port %ld is already held by process %d (%s)",
					    cfg->service.port, (int)fs.hits[0].pid,
					    comm_of(t, fs.hits[0].pid));
			else
				pvg_problem(res, "stale-service.port-held",
					    "stop the process that holds the port",
					    "port %ld is already in LISTEN state (owner not visible)",
					    cfg->service.port);
			st = PVG_FAIL;
			pvg_fd_scan_clear(&fs);
			free(inodes);
		}
		pvg_tcp_table_clear(&pv.listeners);
	}
	if (st == PVG_PASS)
		pvg_summary(res, "no service process alive (%zu process%s scanned)%s", t->n,
			    t->n == 1 ? "" : "es",
			    cfg->service.port > 0 ? ", port free" : "");
	else
		pvg_summary(res, "%s", res->problems[0].message);
	return st;
}

/* A profiler's overhead (and its serialised launches) is in every number the benchmark
 * prints: a benchmark service runs without one unless the run is meant to profile. */
static enum pvg_status check_profilers(struct pvg_ctx *ctx, struct pvg_result *res,
				       const struct pvg_targets *t)
{
	struct pvg_roots roots;
	pvg_ctx_roots(ctx, &roots);
	struct pvg_strv attached = { 0 }, libraries = { 0 };
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!p->in_tree || p->zombie)
			continue;
		struct pvg_service_facts f;
		if (pvg_service_facts_read(&roots, p->pid, false, &f) < 0)
			continue; /* exited since the snapshot */
		pvg_profilers_find(&f, &attached, &libraries);
		pvg_service_facts_clear(&f);
	}
	cJSON *a = cJSON_AddArrayToObject(res->evidence, "profilers");
	for (size_t i = 0; i < attached.n; i++)
		cJSON_AddItemToArray(a, pvg_json_string(attached.v[i]));
	/* loaded by frameworks whether or not anyone profiles (PyTorch preloads libcupti) */
	cJSON *l = cJSON_AddArrayToObject(res->evidence, "profiling_libraries");
	for (size_t i = 0; i < libraries.n; i++)
		cJSON_AddItemToArray(l, pvg_json_string(libraries.v[i]));
	pvg_json_add_bool(res->evidence, "allow_profiler", ctx->cfg->allow_profiler);
	enum pvg_status st = PVG_PASS;
	if (!ctx->cfg->allow_profiler) {
		for (size_t i = 0; i < attached.n && i < MAX_LISTED; i++)
			pvg_problem(res, "stale-service.profiler-attached",
				    "restart the service without the profiler (or set "
				    "service.allow_profiler for a run meant to profile): its overhead "
				    "is in every number the benchmark prints",
				    "a profiler or tracer is attached to the service: %s",
				    attached.v[i]);
		if (attached.n)
			st = PVG_FAIL;
	}
	pvg_strv_clear(&attached);
	pvg_strv_clear(&libraries);
	return st;
}

static enum pvg_status run_live(struct pvg_ctx *ctx, struct pvg_result *res,
				const struct pvg_targets *t)
{
	const struct pvg_config *cfg = ctx->cfg;
	enum pvg_status st = PVG_PASS;
	if (t->err)
		return pvg_targets_problem(t, res);

	/* service processes outside the tree: orphans of an earlier run, or a second service */
	size_t outside = 0;
	cJSON *a = cJSON_AddArrayToObject(res->evidence, "outside_tree");
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!p->family || p->in_tree)
			continue;
		const struct pvg_proc *parent = pvg_targets_find(t, p->ppid);
		/* reparented to init or to a subreaper that is not a service process */
		bool orphan = p->ppid <= 1 || !parent || !parent->family;
		cJSON_AddItemToArray(a, proc_json(p));
		if (outside++ < MAX_LISTED) {
			if (orphan)
				pvg_problem(res, "stale-service.orphan",
					    "kill the leftover process of the earlier run (it may hold "
					    "the GPU and serve requests)",
					    "service process %d (%s) is outside the service tree of %d and "
					    "its parent %d (%s) is not a service process: an orphan of an "
					    "earlier run",
					    (int)p->pid, p->comm, (int)t->root, (int)p->ppid,
					    parent ? parent->comm : "gone");
			else
				pvg_problem(res, "stale-service.outside-tree",
					    "stop the second service instance",
					    "service process %d (%s) belongs to another tree (parent %d %s), "
					    "not to the service tree of %d",
					    (int)p->pid, p->comm, (int)p->ppid, parent->comm, (int)t->root);
		}
		st = PVG_FAIL;
	}

	/* one pass over every process's fds: the port's socket and GPU devices */
	_cleanup_(live_read_freep) struct live_read *lr = pvg_ctx_take_slot(ctx, PVG_SLOT_STALE);
	if (lr && lr->t != t) {
		live_read_free(lr);
		lr = NULL;
	}
	if (!lr)
		lr = read_live(ctx, t);
	struct port_view pv = { .listeners = lr->listeners }; /* lr keeps the table */
	if (cfg->service.port > 0)
		st = pvg_status_worst(st, report_port(ctx, res, lr->tcp_r, &pv));
	const struct pvg_strv *devices = pvg_gpu_device_globs();
	cJSON *dj = cJSON_AddArrayToObject(res->evidence, "gpu_device_globs");
	for (size_t i = 0; i < devices->n; i++)
		cJSON_AddItemToArray(dj, pvg_json_string(devices->v[i]));
	const struct pvg_fd_scan fs = lr->fs;
	pvg_json_add_int(res->evidence, "fd_tables_scanned", (int)fs.n_scanned);

	if (cfg->service.port > 0 && pv.read_ok) {
		size_t in_tree = 0, foreign = 0;
		cJSON *oj = cJSON_AddArrayToObject(res->evidence, "port_owners");
		for (size_t i = 0; i < fs.n_hits; i++) {
			const struct pvg_fd_holder *h = &fs.hits[i];
			if (!h->socket_inode)
				continue;
			bool mine = pvg_targets_in_tree(t, h->pid);
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "pid", h->pid);
			pvg_json_add_str(o, "comm", comm_of(t, h->pid));
			pvg_json_add_bool(o, "in_tree", mine);
			cJSON_AddItemToArray(oj, o);
			if (mine) {
				in_tree++;
			} else if (foreign++ < MAX_LISTED) {
				pvg_problem(res, "stale-service.port-foreign",
					    "stop the process that holds the port; the benchmark would "
					    "talk to it instead of the service",
					    "port %ld is held by process %d (%s), which is outside the "
					    "service tree of %d",
					    cfg->service.port, (int)h->pid, comm_of(t, h->pid),
					    (int)t->root);
			}
		}
		if (foreign)
			st = PVG_FAIL;
		if (pv.listeners.n == 0) {
			pvg_problem(res, "stale-service.port-not-listening",
				    "check service.port, and that the service finished starting",
				    "nothing listens on port %ld", cfg->service.port);
			st = PVG_FAIL;
		} else if (!in_tree && !foreign) {
			st = pvg_status_worst(st, denied_problem(res, &fs, "a foreign owner of the port"));
			if (!fs.n_denied) {
				pvg_problem(res, "stale-service.port-owner-unknown", NULL,
					    "port %ld is listening but no process's open files hold its "
					    "socket (another network namespace?)",
					    cfg->service.port);
				st = pvg_status_worst(st, PVG_UNVERIFIABLE);
			}
		}
	}

	size_t holders = 0;
	cJSON *gj = cJSON_AddArrayToObject(res->evidence, "gpu_holders_outside_tree");
	for (size_t i = 0; i < fs.n_hits; i++) {
		const struct pvg_fd_holder *h = &fs.hits[i];
		if (!h->path)
			continue;
		/* one problem per process, not per fd */
		bool seen = false;
		for (size_t k = 0; k < i; k++)
			seen |= fs.hits[k].path && fs.hits[k].pid == h->pid;
		if (seen)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "pid", h->pid);
		pvg_json_add_str(o, "comm", comm_of(t, h->pid));
		pvg_json_add_str(o, "device", h->path);
		cJSON_AddItemToArray(gj, o);
		if (holders++ < MAX_LISTED)
			pvg_problem(res, "stale-service.gpu-holder",
				    "stop it: a process outside the service holds the GPU and can "
				    "skew or block the benchmark",
				    "process %d (%s) outside the service tree holds %s", (int)h->pid,
				    comm_of(t, h->pid), h->path);
		st = PVG_FAIL;
	}
	st = pvg_status_worst(st, denied_problem(res, &fs, "a GPU holder outside the tree"));

	st = pvg_status_worst(st, check_profilers(ctx, res, t));

	size_t n_tree = 0;
	for (size_t i = 0; i < t->n; i++)
		n_tree += t->procs[i].in_tree;
	pvg_json_add_int(res->evidence, "tree_size", (int)n_tree);
	if (st == PVG_PASS)
		pvg_summary(res, "service tree of %d (%zu process%s) is the only service%s; no "
			    "foreign GPU holder",
			    (int)t->root, n_tree, n_tree == 1 ? "" : "es",
			    cfg->service.port > 0 ? " and owns the port" : "");
	else
		pvg_summary(res, "%s", res->problems[0].message);
	return st;
}

static enum pvg_status run_stale_service(struct pvg_ctx *ctx, struct pvg_result *res)
{
	const struct pvg_targets *t;
	int r = pvg_targets_get(ctx, &t);
	pvg_json_add_str(res->evidence, "mode", ctx->phase == PVG_PHASE_PRESTART ? "prestart" : "live");
	if (r < 0) {
		pvg_summary(res, "cannot list processes: %s", strerror(-r));
		pvg_problem(res, "stale-service.scan-failed", "is /proc mounted?",
			    "listing processes through libproc2 failed: %s", strerror(-r));
		return PVG_UNVERIFIABLE;
	}
	if (ctx->phase == PVG_PHASE_PRESTART)
		return run_prestart(ctx, res, t);
	cJSON_AddItemToObject(res->evidence, "selection", pvg_targets_json(t));
	return run_live(ctx, res, t);
}

const struct pvg_check pvg_check_stale_service = {
	.id = 5,
	.name = "stale-service",
	.phases = PVG_IN_PHASE(PVG_PHASE_PRESTART) | PVG_IN_PHASE(PVG_PHASE_LIVE),
	.rechecked = true,
	.run = run_stale_service,
	.prepare_here = pvg_targets_prepare,
	.prepare = prepare_stale_service,
};
