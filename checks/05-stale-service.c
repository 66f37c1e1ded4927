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
 * A service in its own network namespace is checked there (/proc/PID/net/tcp of the service);
 * the host side of a published port belongs to the container engine's forwarder. Inside a
 * container provgate cannot see the processes outside it: the GPU driver tells whether more
 * hold the GPU than the tree accounts for.
 */
#include "checks.h"
#include "environment.h"
#include "facts.h"
#include "sys/gpu-procs.h"
#include "sys/net-tcp.h"
#include "sys/ns.h"

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

/* The live check's reads: the port's listeners (in the service's network namespace, and
 * the host side when that is another one) and one pass over every process's fds. Made by
 * run(), or earlier by prepare() while gate 3 hashes. */
struct live_read {
	const struct pvg_targets *t; /* the snapshot it was made from */
	int tcp_r;
	struct pvg_tcp_table listeners; /* in the service's network namespace */
	uint64_t netns;                 /* that namespace (0: unknown) */
	bool own_netns;                 /* the service has a namespace other than provgate's */
	int host_r;
	struct pvg_tcp_table host_listeners; /* provgate's namespace, when own_netns */
	struct pvg_fd_scan fs;
	const struct pvg_strv *devices; /* the device globs matched; NULL: no GPU driver here */
};

static void live_read_free(void *p)
{
	struct live_read *lr = p;
	if (!lr)
		return;
	pvg_fd_scan_clear(&lr->fs);
	pvg_tcp_table_clear(&lr->listeners);
	pvg_tcp_table_clear(&lr->host_listeners);
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
	size_t n_inodes = 0;
	if (ctx->cfg->service.port > 0) {
		uint16_t port = (uint16_t)ctx->cfg->service.port;
		const struct pvg_proc *p = pvg_targets_find(t, t->primary);
		struct pvg_ns_ids self;
		bool self_ok = pvg_ns_read(ctx->procfs, 0, &self) == 0 && self.net;
		lr->netns = p ? p->ns.net : 0;
		lr->own_netns = self_ok && lr->netns && lr->netns != self.net;
		if (lr->own_netns) {
			/* /proc/PID/net is the network namespace of PID */
			_cleanup_free_ char *dir = pvg_asprintf("%s/%d", ctx->procfs, (int)p->pid);
			lr->tcp_r = pvg_net_tcp_listeners(dir, port, &lr->listeners);
			lr->host_r = pvg_net_tcp_listeners(ctx->procfs, port, &lr->host_listeners);
		} else {
			lr->tcp_r = pvg_net_tcp_listeners(ctx->procfs, port, &lr->listeners);
			if (self_ok && !lr->netns)
				lr->netns = self.net;
		}
		if (lr->tcp_r < 0)
			pvg_tcp_table_clear(&lr->listeners);
		if (lr->host_r < 0)
			pvg_tcp_table_clear(&lr->host_listeners);
		inodes = pvg_xcalloc(lr->listeners.n + lr->host_listeners.n + 1, sizeof(uint64_t));
		for (size_t i = 0; i < lr->listeners.n; i++)
			inodes[n_inodes++] = lr->listeners.s[i].inode;
		for (size_t i = 0; i < lr->host_listeners.n; i++)
			inodes[n_inodes++] = lr->host_listeners.s[i].inode;
	}
	/* no GPU driver, no GPU holder: the fds are then read for the port alone (or not at all) */
	lr->devices = pvg_gpu_device_globs_live(ctx->procfs);
	if (n_inodes || lr->devices)
		pvg_fd_scan(ctx->procfs, t, inodes, n_inodes, lr->devices, &lr->fs);
	return lr;
}

static bool in_table(const struct pvg_tcp_table *tb, uint64_t inode)
{
	for (size_t i = 0; i < tb->n; i++)
		if (tb->s[i].inode == inode)
			return true;
	return false;
}

static void prepare_stale_service(struct pvg_ctx *ctx)
{
	const struct pvg_targets *t;
	if (ctx->phase == PVG_PHASE_PRESTART || pvg_targets_get(ctx, &t) < 0 || t->err)
		return;
	pvg_ctx_set_slot(ctx, PVG_SLOT_LISTENERS_FDS, read_live(ctx, t), live_read_free);
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
	/* one scan, one problem: a second use of the same unread files names what else it
	 * cannot rule out in the problem already there */
	static const char tail[] = " cannot be ruled out";
	for (size_t k = 0; k < res->n_problems; k++) {
		struct pvg_problem *p = &res->problems[k];
		size_t len = strlen(p->message);
		if (strcmp(p->code, "stale-service.permission-denied") != 0 || len < strlen(tail))
			continue;
		char *m = pvg_asprintf("%.*s or %s%s", (int)(len - strlen(tail)), p->message, what,
				       tail);
		free(p->message);
		p->message = m;
		return PVG_UNVERIFIABLE;
	}
	pvg_problem(res, "stale-service.permission-denied",
		    "run provgate as root to see every process's open files",
		    "the open files of %zu process%s (first pid %d) could not be read, so %s%s",
		    fs->n_denied, fs->n_denied == 1 ? "" : "es", (int)fs->denied[0], what, tail);
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
static enum pvg_status check_profilers(struct pvg_ctx *ctx, struct pvg_result *res)
{
	struct pvg_strv attached = { 0 }, libraries = { 0 }, witness = { 0 };
	const struct pvg_tree_facts *tf;
	if (pvg_tree_facts_get(ctx, &tf) == 0)
		for (size_t i = 0; i < tf->n; i++)
			pvg_profilers_classify(&tf->f[i], &attached, &libraries, &witness);
	cJSON *a = cJSON_AddArrayToObject(res->evidence, "profilers");
	for (size_t i = 0; i < attached.n; i++)
		cJSON_AddItemToArray(a, pvg_json_string(attached.v[i]));
	/* loaded by frameworks whether or not anyone profiles (PyTorch preloads libcupti) */
	cJSON *l = cJSON_AddArrayToObject(res->evidence, "profiling_libraries");
	for (size_t i = 0; i < libraries.n; i++)
		cJSON_AddItemToArray(l, pvg_json_string(libraries.v[i]));
	/* provgate's own dispatch witness counts launches without timing them: allowed */
	cJSON *w = cJSON_AddArrayToObject(res->evidence, "witness");
	for (size_t i = 0; i < witness.n; i++)
		cJSON_AddItemToArray(w, pvg_json_string(witness.v[i]));
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
	pvg_strv_clear(&witness);
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
	_cleanup_(live_read_freep) struct live_read *lr = pvg_ctx_take_slot(ctx, PVG_SLOT_LISTENERS_FDS);
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
	pvg_json_add_bool(res->evidence, "gpu_drivers_registered", lr->devices != NULL);

	if (cfg->service.port > 0 && pv.read_ok) {
		size_t in_tree = 0, foreign = 0;
		pvg_json_add_u64(res->evidence, "listeners_netns", lr->netns);
		pvg_json_add_bool(res->evidence, "service_own_netns", lr->own_netns);
		cJSON *oj = cJSON_AddArrayToObject(res->evidence, "port_owners");
		for (size_t i = 0; i < fs.n_hits; i++) {
			const struct pvg_fd_holder *h = &fs.hits[i];
			if (!h->socket_inode || !in_table(&lr->listeners, h->socket_inode))
				continue;
			bool mine = h->in_tree;
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
				    lr->own_netns ? "nothing listens on port %ld in the service's network "
						    "namespace"
						  : "nothing listens on port %ld",
				    cfg->service.port);
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
		/* The host side of a published port (-p PORT:PORT): the engine's forwarder holds
		 * it (conmon, rootlessport, pasta, slirp4netns, docker-proxy), or a NAT rule with
		 * no socket at all. Anyone else there takes the benchmark's connections. */
		if (lr->own_netns && lr->host_r == 0) {
			/* 0: nothing listens on provgate's side (a NAT rule, or not published) */
			pvg_json_add_int(res->evidence, "host_side_listeners", (int)lr->host_listeners.n);
			cJSON *fj = cJSON_AddArrayToObject(res->evidence, "port_forwarders");
			size_t held = 0;
			for (size_t i = 0; i < fs.n_hits; i++) {
				const struct pvg_fd_holder *h = &fs.hits[i];
				if (!h->socket_inode || !in_table(&lr->host_listeners, h->socket_inode))
					continue;
				held++;
				const char *engine = pvg_port_forwarder_engine(comm_of(t, h->pid));
				if (engine || h->in_tree) {
					cJSON *o = cJSON_CreateObject();
					cJSON_AddNumberToObject(o, "pid", h->pid);
					pvg_json_add_str(o, "comm", comm_of(t, h->pid));
					pvg_json_add_str(o, "engine", engine);
					cJSON_AddItemToArray(fj, o);
					continue;
				}
				if (foreign++ < MAX_LISTED)
					pvg_problem(res, "stale-service.port-foreign",
						    "stop the process that holds the port on the host; the "
						    "benchmark would talk to it instead of the service",
						    "port %ld on the host's side is held by process %d (%s), "
						    "which is neither the service nor a container engine's "
						    "port forwarder",
						    cfg->service.port, (int)h->pid, comm_of(t, h->pid));
				st = PVG_FAIL;
			}
			if (lr->host_listeners.n && !held) {
				st = pvg_status_worst(st, denied_problem(res, &fs, "a foreign listener on "
									 "the host's side of the port"));
				if (!fs.n_denied) {
					pvg_problem(res, "stale-service.port-owner-unknown", NULL,
						    "port %ld is listened on in provgate's network namespace "
						    "too, by a socket no process's open files hold",
						    cfg->service.port);
					st = pvg_status_worst(st, PVG_UNVERIFIABLE);
				}
			}
		} else if (lr->own_netns && lr->host_r < 0) {
			pvg_problem(res, "stale-service.net-unreadable", "is /proc mounted?",
				    "cannot read %s/net/tcp: %s", ctx->procfs, strerror(-lr->host_r));
			st = pvg_status_worst(st, PVG_UNVERIFIABLE);
		}
	}

	size_t holders = 0;
	pid_t *tree_holders = NULL;
	size_t n_tree_holders = 0;
	cJSON *gj = cJSON_AddArrayToObject(res->evidence, "gpu_holders_outside_tree");
	for (size_t i = 0; i < fs.n_hits; i++) {
		const struct pvg_fd_holder *h = &fs.hits[i];
		if (!h->path)
			continue;
		/* one per process, not per fd */
		bool seen = false;
		for (size_t k = 0; k < i; k++)
			seen |= fs.hits[k].path && fs.hits[k].pid == h->pid;
		if (seen)
			continue;
		if (h->in_tree) {
			tree_holders = pvg_xrealloc(tree_holders, n_tree_holders + 1, sizeof(pid_t));
			tree_holders[n_tree_holders++] = h->pid;
			continue;
		}
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
	cJSON *tj = cJSON_AddArrayToObject(res->evidence, "gpu_holders_in_tree");
	for (size_t i = 0; i < n_tree_holders; i++)
		cJSON_AddItemToArray(tj, cJSON_CreateNumber(tree_holders[i]));
	free(tree_holders);
	st = pvg_status_worst(st, denied_problem(res, &fs, "a GPU holder outside the tree"));

	/* From inside a pid namespace the processes outside it are invisible. KFD's list covers
	 * the machine, by host pids: only its count compares. NVML's list holds this
	 * namespace's processes only, but the memory in use is the machine's. */
	bool gpu_checked = true;
	struct pvg_self_view self;
	if (pvg_self_view_read(ctx->procfs, "/", &self) == 0 && self.in_container) {
		struct pvg_gpu_procs g;
		_cleanup_free_ char *why = NULL;
		int gr = pvg_gpu_procs_read(ctx->sysfs, true, &g, &why);
		cJSON *dj2 = cJSON_AddObjectToObject(res->evidence, "gpu_driver");
		if (gr < 0) {
			gpu_checked = false;
			pvg_json_add_str(dj2, "error", why);
			pvg_problem(res, "stale-service.gpu-holders-unverifiable",
				    "run provgate on the host, or give the container the driver's "
				    "list (/sys/class/kfd for amdgpu, libnvidia-ml.so.1 for NVIDIA)",
				    "provgate runs in a pid namespace of its own and sees no process "
				    "outside it, and %s: a GPU holder outside the container cannot be "
				    "ruled out",
				    why ? why : "no driver list of GPU processes can be read");
			st = pvg_status_worst(st, PVG_UNVERIFIABLE);
		} else {
			size_t accounted = n_tree_holders + holders;
			pvg_json_add_str(dj2, "source", g.source);
			pvg_json_add_str(dj2, "where", g.where);
			pvg_json_add_int(dj2, "processes", (int)g.n);
			pvg_json_add_int(dj2, "accounted", (int)accounted);
			pvg_json_add_bool(dj2, "lists_this_namespace_only", g.namespaced);
			if (g.n > accounted) {
				pvg_problem(res, "stale-service.gpu-holder-outside-view",
					    "look on the host (another container, an orphaned engine) for "
					    "the process that holds the GPU, and stop it",
					    "the GPU driver (%s) lists %zu process%s using the GPU; this "
					    "container's view accounts for %zu (%zu of the service tree): "
					    "%zu outside it",
					    g.source, g.n, g.n == 1 ? "" : "es", accounted, n_tree_holders,
					    g.n - accounted);
				st = PVG_FAIL;
			}
			/* NVML lists only this namespace's processes; the memory in use is the
			 * machine's. Measured on an H200: each process uses 8 MiB more than NVML
			 * lists for it, a CUDA context at least 500 MiB. */
			if (g.namespaced && !g.have_memory) {
				gpu_checked = false;
				pvg_problem(res, "stale-service.gpu-holders-unverifiable",
					    "run provgate on the host",
					    "%s lists only the GPU processes of provgate's own pid namespace "
					    "and reports no device memory use, so a GPU holder outside the "
					    "container cannot be ruled out",
					    g.where);
				st = pvg_status_worst(st, PVG_UNVERIFIABLE);
			} else if (g.namespaced) {
				uint64_t mib = 1 << 20;
				uint64_t unaccounted = g.used_bytes > g.listed_bytes
							       ? g.used_bytes - g.listed_bytes : 0;
				uint64_t tolerance = (64 + 16 * (uint64_t)g.n_entries) * mib;
				pvg_json_add_u64(dj2, "used_mib", g.used_bytes / mib);
				pvg_json_add_u64(dj2, "listed_mib", g.listed_bytes / mib);
				pvg_json_add_u64(dj2, "unaccounted_mib", unaccounted / mib);
				pvg_json_add_u64(dj2, "tolerance_mib", tolerance / mib);
				if (unaccounted > tolerance) {
					pvg_problem(res, "stale-service.gpu-holder-outside-view",
						    "look on the host (another container, an orphaned "
						    "engine) for the process that holds the GPU, and stop it",
						    "the GPUs have %" PRIu64 " MiB in use, %" PRIu64 " MiB "
						    "more than the %zu process%s NVML lists in this pid "
						    "namespace account for: processes outside the container "
						    "hold the GPU",
						    g.used_bytes / mib, unaccounted / mib, g.n,
						    g.n == 1 ? "" : "es");
					st = PVG_FAIL;
				}
			}
			pvg_gpu_procs_clear(&g);
		}
	}
	pvg_json_add_str(res->evidence, "view", self.in_container ? "container" : "host");

	st = pvg_status_worst(st, check_profilers(ctx, res));

	size_t n_tree = 0;
	for (size_t i = 0; i < t->n; i++)
		n_tree += t->procs[i].in_tree;
	pvg_json_add_int(res->evidence, "tree_size", (int)n_tree);
	if (st == PVG_PASS)
		pvg_summary(res, "service tree of %d (%zu process%s) is the only service%s; no "
			    "foreign GPU holder%s",
			    (int)t->root, n_tree, n_tree == 1 ? "" : "es",
			    cfg->service.port > 0 ? " and owns the port" : "",
			    self.in_container ? " (by the driver's list)" : "");
	else if (!gpu_checked && res->n_problems == 1)
		pvg_summary(res, "service tree of %d (%zu process%s) is the only service it can "
			    "see; GPU holders outside the container unverifiable",
			    (int)t->root, n_tree, n_tree == 1 ? "" : "es");
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
			    "reading the process list in /proc failed: %s", strerror(-r));
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
