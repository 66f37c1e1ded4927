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
 *
 * Its rules, in the order the entry evaluates them (facts in 05-stale-service.h):
 *   prestart  rule_configured                  something to look for is configured
 *             rule_no_service_alive            no service process before the start
 *             pvg_stale_rule_port_readable     /proc/net/tcp could be read
 *             rule_port_free                   nothing listens on the port yet
 *   live      pvg_stale_rule_no_service_outside_tree   no orphan, no second instance
 *             pvg_stale_rule_port_readable
 *             pvg_stale_rule_port_owned        the port's socket is held by the tree
 *             pvg_stale_rule_host_side_port    the host's side: the engine's forwarder
 *             pvg_stale_rule_no_gpu_holder_outside_tree
 *             pvg_stale_rule_gpu_driver_accounts  in a container: the driver's count
 *             pvg_stale_rule_no_profiler       unless service.allow_profiler
 *             pvg_stale_rule_no_profiler_traces  no torch-profiler trace written since the
 *                                              start in the folder the service was started
 *                                              to write them to (VLLM_TORCH_PROFILER_DIR,
 *                                              SGLANG_TORCH_PROFILER_DIR), unless
 *                                              service.allow_profiler; the variable set and
 *                                              no trace yet is a note in the evidence
 * The functions named *_json write the evidence from the same facts; read_* gather them.
 */
#include <linux/capability.h>
#include <sys/syscall.h>

#include "05-stale-service.h"
#include "checks.h"
#include "environment.h"
#include "sys/ns.h"

#define MAX_LISTED PVG_STALE_MAX_LISTED

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

static void listeners_json(cJSON *ev, const struct pvg_tcp_table *listeners)
{
	cJSON *a = cJSON_AddArrayToObject(ev, "listeners");
	for (size_t i = 0; i < listeners->n; i++) {
		char addr[64];
		cJSON *o = cJSON_CreateObject();
		pvg_tcp_addr_string(&listeners->s[i], addr, sizeof(addr));
		pvg_json_add_str(o, "address", addr);
		pvg_json_add_u64(o, "inode", listeners->s[i].inode);
		cJSON_AddNumberToObject(o, "uid", listeners->s[i].uid);
		cJSON_AddItemToArray(a, o);
	}
}

struct pvg_outcome pvg_stale_rule_port_readable(const struct pvg_port_view *pv)
{
	struct pvg_outcome o = { 0 };
	if (pv->tcp_r < 0)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "stale-service.net-unreadable",
				    "is /proc mounted?", "cannot read %s/net/tcp: %s", pv->procfs,
				    pv->tcp_r == -EINVAL ? "malformed line" : strerror(-pv->tcp_r));
	return o;
}

/* ---- reading: the live facts ---- */

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

static void prepare_stale_service(struct pvg_ctx *ctx)
{
	const struct pvg_targets *t;
	if (ctx->phase == PVG_PHASE_PRESTART || pvg_targets_get(ctx, &t) < 0 || t->err)
		return;
	pvg_ctx_set_slot(ctx, PVG_SLOT_LISTENERS_FDS, read_live(ctx, t), live_read_free);
}

/* ---- the unread fd tables: one problem however often they matter ---- */

static const char denied_tail[] = " cannot be ruled out";

/* root without CAP_DAC_READ_SEARCH (or CAP_DAC_OVERRIDE) in its effective set (a container's
 * root given only some capabilities): the /proc/PID/fd folder of a process of another user
 * is that user's (mode 0500), and stays closed to it */
static bool root_without_dac(void)
{
	return pvg_root_without_cap(CAP_DAC_READ_SEARCH) && pvg_root_without_cap(CAP_DAC_OVERRIDE);
}

static const char hint_dac[] =
	"provgate runs as root without CAP_DAC_READ_SEARCH, and a process of another user keeps "
	"its open files (/proc/PID/fd) to that user: add that capability (Kubernetes: "
	"securityContext.capabilities.add: [DAC_READ_SEARCH]; podman/docker: --cap-add "
	"DAC_READ_SEARCH)";

/* Adds to o that fs's unread fd tables leave what unknown (nothing when all were read). */
static void denied_add(struct pvg_outcome *o, const struct pvg_fd_scan *fs, const char *what)
{
	if (!fs->n_denied)
		return;
	pvg_outcome_problem(o, PVG_UNVERIFIABLE, "stale-service.permission-denied",
			    root_without_dac() ? hint_dac
					       : "run provgate as root to see every process's open files",
			    "the open files of %zu process%s (first pid %d) could not be read, so "
			    "%s%s",
			    fs->n_denied, fs->n_denied == 1 ? "" : "es", (int)fs->denied[0], what,
			    denied_tail);
}

/* res's permission-denied problem, if it has one. */
static struct pvg_problem *denied_in(struct pvg_result *res)
{
	for (size_t k = 0; k < res->n_problems; k++) {
		struct pvg_problem *p = &res->problems[k];
		if (strcmp(p->code, "stale-service.permission-denied") == 0 &&
		    strlen(p->message) >= strlen(denied_tail))
			return p;
	}
	return NULL;
}

enum pvg_status pvg_stale_report(struct pvg_result *res, struct pvg_outcome *o,
				 const struct pvg_fd_scan *fs)
{
	for (size_t i = 0; i < o->n_problems; i++) {
		struct pvg_problem *q = &o->problems[i];
		bool denied = strcmp(q->code, "stale-service.permission-denied") == 0;
		if (denied && !cJSON_GetObjectItem(res->evidence, "fds_unreadable")) {
			cJSON *a = cJSON_AddArrayToObject(res->evidence, "fds_unreadable");
			for (size_t k = 0; k < fs->n_denied && k < 64; k++)
				cJSON_AddItemToArray(a, cJSON_CreateNumber(fs->denied[k]));
		}
		struct pvg_problem *p = denied ? denied_in(res) : NULL;
		if (!p) {
			res->problems = pvg_xrealloc(res->problems, res->n_problems + 1,
						     sizeof(*res->problems));
			res->problems[res->n_problems++] = *q;
			continue;
		}
		/* "..., so WHAT cannot be ruled out": WHAT follows the first ", so " */
		const char *what = strstr(q->message, ", so ") + strlen(", so ");
		size_t len = strlen(p->message);
		char *m = pvg_asprintf("%.*s or %.*s%s", (int)(len - strlen(denied_tail)), p->message,
				       (int)(strlen(what) - strlen(denied_tail)), what, denied_tail);
		free(p->message);
		p->message = m;
		free(q->code);
		free(q->message);
		free(q->hint);
	}
	free(o->problems);
	enum pvg_status st = o->status;
	*o = (struct pvg_outcome){ 0 };
	return st;
}

/* ---- prestart ---- */

static struct pvg_outcome rule_configured(const struct pvg_service_spec *svc)
{
	struct pvg_outcome o = { 0 };
	if (!svc->family.n && !svc->match.n && svc->port <= 0 && svc->pid <= 0 && !svc->pidfile)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "stale-service.not-configured",
				    "set service.family (and service.port)",
				    "no service.family, service.match, service.pid, service.pidfile or "
				    "service.port is configured");
	return o;
}

/* A service process: of the family, or a service.pid / pidfile that names a live process
 * (which counts even without family). */
static bool alive_before_start(const struct pvg_targets *t, const struct pvg_proc *p)
{
	bool named = !t->err && t->how != PVG_SELECT_MATCH && p->pid == t->primary;
	return p->family || named;
}

static struct pvg_outcome rule_no_service_alive(const struct pvg_targets *t)
{
	struct pvg_outcome o = { 0 };
	size_t alive = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!alive_before_start(t, p))
			continue;
		if (alive++ < MAX_LISTED)
			pvg_outcome_problem(&o, PVG_FAIL, "stale-service.alive",
					    "stop the previous service (and its orphaned engine) "
					    "before starting the benchmark service",
					    "service process %d (%s) is alive before the service starts",
					    (int)p->pid, p->cmdline ? p->cmdline : p->comm);
		pvg_outcome_worsen(&o, PVG_FAIL);
	}
	return o;
}

/* fs: the scan for the listeners' sockets (made only when something listens). */
static struct pvg_outcome rule_port_free(const struct pvg_targets *t,
					 const struct pvg_port_view *pv,
					 const struct pvg_fd_scan *fs)
{
	struct pvg_outcome o = { 0 };
	if (pv->tcp_r < 0 || !pv->listeners->n)
		return o;
	if (fs->n_hits)
		pvg_outcome_problem(&o, PVG_FAIL, "stale-service.port-held",
				    "stop the process that holds the port",
				    "port %ld is already held by process %d (%s)", pv->port,
				    (int)fs->hits[0].pid, comm_of(t, fs->hits[0].pid));
	else
		pvg_outcome_problem(&o, PVG_FAIL, "stale-service.port-held",
				    "stop the process that holds the port",
				    "port %ld is already in LISTEN state (owner not visible)", pv->port);
	return o;
}

static enum pvg_status prestart_port(struct pvg_ctx *ctx, struct pvg_result *res,
				     const struct pvg_targets *t)
{
	struct pvg_tcp_table listeners = { 0 };
	struct pvg_port_view pv = { .port = ctx->cfg->service.port, .procfs = ctx->procfs,
				    .listeners = &listeners };
	pv.tcp_r = pvg_net_tcp_listeners(ctx->procfs, (uint16_t)pv.port, &listeners);
	struct pvg_fd_scan fs = { 0 };
	if (pv.tcp_r >= 0 && listeners.n) {
		_cleanup_free_ uint64_t *inodes = pvg_xcalloc(listeners.n, sizeof(uint64_t));
		for (size_t i = 0; i < listeners.n; i++)
			inodes[i] = listeners.s[i].inode;
		pvg_fd_scan(ctx->procfs, t, inodes, listeners.n, NULL, &fs);
	}
	struct pvg_outcome o = pvg_stale_rule_port_readable(&pv);
	enum pvg_status st = pvg_outcome_report(res, &o);
	if (pv.tcp_r >= 0)
		listeners_json(res->evidence, &listeners);
	o = rule_port_free(t, &pv, &fs);
	st = pvg_status_worst(st, pvg_outcome_report(res, &o));
	pvg_fd_scan_clear(&fs);
	pvg_tcp_table_clear(&listeners);
	return st;
}

static enum pvg_status run_prestart(struct pvg_ctx *ctx, struct pvg_result *res,
				    const struct pvg_targets *t)
{
	const struct pvg_config *cfg = ctx->cfg;
	struct pvg_outcome o = rule_configured(&cfg->service);
	if (o.status != PVG_PASS) {
		pvg_summary(res, "nothing to look for: no service.family, service.match or port");
		return pvg_outcome_report(res, &o);
	}
	cJSON *a = cJSON_AddArrayToObject(res->evidence, "service_processes");
	for (size_t i = 0; i < t->n; i++)
		if (alive_before_start(t, &t->procs[i]))
			cJSON_AddItemToArray(a, proc_json(&t->procs[i]));
	o = rule_no_service_alive(t);
	enum pvg_status st = pvg_outcome_report(res, &o);
	if (cfg->service.port > 0)
		st = pvg_status_worst(st, prestart_port(ctx, res, t));
	if (st == PVG_PASS)
		pvg_summary(res, "no service process alive (%zu process%s scanned)%s", t->n,
			    t->n == 1 ? "" : "es",
			    cfg->service.port > 0 ? ", port free" : "");
	else
		pvg_summary(res, "%s", res->problems[0].message);
	return st;
}

/* ---- live: the rules ---- */

/* Service processes outside the tree: orphans of an earlier run, or a second service. */
struct pvg_outcome pvg_stale_rule_no_service_outside_tree(const struct pvg_targets *t)
{
	struct pvg_outcome o = { 0 };
	size_t outside = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!p->family || p->in_tree)
			continue;
		pvg_outcome_worsen(&o, PVG_FAIL);
		if (outside++ >= MAX_LISTED)
			continue;
		const struct pvg_proc *parent = pvg_targets_find(t, p->ppid);
		/* reparented to init or to a subreaper that is not a service process */
		if (p->ppid <= 1 || !parent || !parent->family)
			pvg_outcome_problem(&o, PVG_FAIL, "stale-service.orphan",
					    "kill the leftover process of the earlier run (it may hold "
					    "the GPU and serve requests)",
					    "service process %d (%s) is outside the service tree of %d "
					    "and its parent %d (%s) is not a service process: an orphan "
					    "of an earlier run",
					    (int)p->pid, p->comm, (int)t->root, (int)p->ppid,
					    parent ? parent->comm : "gone");
		else
			pvg_outcome_problem(&o, PVG_FAIL, "stale-service.outside-tree",
					    "stop the second service instance",
					    "service process %d (%s) belongs to another tree (parent %d "
					    "%s), not to the service tree of %d",
					    (int)p->pid, p->comm, (int)p->ppid, parent->comm,
					    (int)t->root);
	}
	return o;
}

static bool in_table(const struct pvg_tcp_table *tb, uint64_t inode)
{
	for (size_t i = 0; i < tb->n; i++)
		if (tb->s[i].inode == inode)
			return true;
	return false;
}

/* Does fd hit h hold a socket listening in tb? */
static bool holds_listener(const struct pvg_fd_holder *h, const struct pvg_tcp_table *tb)
{
	return h->socket_inode && in_table(tb, h->socket_inode);
}

/* Processes outside the tree holding the port's socket in the service's namespace. */
static size_t port_foreign(const struct pvg_port_view *pv, const struct pvg_fd_scan *fs)
{
	size_t n = 0;
	for (size_t i = 0; i < fs->n_hits; i++)
		n += holds_listener(&fs->hits[i], pv->listeners) && !fs->hits[i].in_tree;
	return n;
}

struct pvg_outcome pvg_stale_rule_port_owned(const struct pvg_targets *t,
					     const struct pvg_port_view *pv,
					     const struct pvg_fd_scan *fs)
{
	struct pvg_outcome o = { 0 };
	if (pv->port <= 0 || pv->tcp_r < 0)
		return o;
	size_t in_tree = 0, foreign = 0;
	for (size_t i = 0; i < fs->n_hits; i++) {
		const struct pvg_fd_holder *h = &fs->hits[i];
		if (!holds_listener(h, pv->listeners))
			continue;
		if (h->in_tree)
			in_tree++;
		else if (foreign++ < MAX_LISTED)
			pvg_outcome_problem(&o, PVG_FAIL, "stale-service.port-foreign",
					    "stop the process that holds the port; the benchmark would "
					    "talk to it instead of the service",
					    "port %ld is held by process %d (%s), which is outside the "
					    "service tree of %d",
					    pv->port, (int)h->pid, comm_of(t, h->pid), (int)t->root);
	}
	if (foreign)
		pvg_outcome_worsen(&o, PVG_FAIL);
	if (pv->listeners->n == 0) {
		pvg_outcome_problem(&o, PVG_FAIL, "stale-service.port-not-listening",
				    "check service.port, and that the service finished starting",
				    pv->own_netns ? "nothing listens on port %ld in the service's "
						    "network namespace"
						  : "nothing listens on port %ld",
				    pv->port);
	} else if (!in_tree && !foreign) {
		denied_add(&o, fs, "a foreign owner of the port");
		if (!fs->n_denied)
			pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "stale-service.port-owner-unknown",
					    NULL,
					    "port %ld is listening but no process's open files hold "
					    "its socket (another network namespace?)",
					    pv->port);
	}
	return o;
}

/* The host side of a published port (-p PORT:PORT): the engine's forwarder holds it (conmon,
 * rootlessport, pasta, slirp4netns, docker-proxy), or a NAT rule with no socket at all.
 * Anyone else there takes the benchmark's connections. */
struct pvg_outcome pvg_stale_rule_host_side_port(const struct pvg_targets *t,
						 const struct pvg_port_view *pv,
						 const struct pvg_fd_scan *fs)
{
	struct pvg_outcome o = { 0 };
	if (pv->port <= 0 || pv->tcp_r < 0 || !pv->own_netns)
		return o;
	if (pv->host_r < 0) {
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "stale-service.net-unreadable",
				    "is /proc mounted?", "cannot read %s/net/tcp: %s", pv->procfs,
				    strerror(-pv->host_r));
		return o;
	}
	if (pv->host_r != 0)
		return o;
	size_t held = 0, foreign = port_foreign(pv, fs); /* listed ones count on */
	for (size_t i = 0; i < fs->n_hits; i++) {
		const struct pvg_fd_holder *h = &fs->hits[i];
		if (!holds_listener(h, pv->host_listeners))
			continue;
		held++;
		if (pvg_port_forwarder_engine(comm_of(t, h->pid)) || h->in_tree)
			continue;
		if (foreign++ < MAX_LISTED)
			pvg_outcome_problem(&o, PVG_FAIL, "stale-service.port-foreign",
					    "stop the process that holds the port on the host; the "
					    "benchmark would talk to it instead of the service",
					    "port %ld on the host's side is held by process %d (%s), "
					    "which is neither the service nor a container engine's "
					    "port forwarder",
					    pv->port, (int)h->pid, comm_of(t, h->pid));
		pvg_outcome_worsen(&o, PVG_FAIL);
	}
	if (pv->host_listeners->n && !held) {
		denied_add(&o, fs, "a foreign listener on the host's side of the port");
		if (!fs->n_denied)
			pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "stale-service.port-owner-unknown",
					    NULL,
					    "port %ld is listened on in provgate's network namespace "
					    "too, by a socket no process's open files hold",
					    pv->port);
	}
	return o;
}

/* Is hit i a GPU device, and the first such of its process (one per process, not per fd)? */
static bool first_gpu_hit(const struct pvg_fd_scan *fs, size_t i)
{
	if (!fs->hits[i].path)
		return false;
	for (size_t k = 0; k < i; k++)
		if (fs->hits[k].path && fs->hits[k].pid == fs->hits[i].pid)
			return false;
	return true;
}

/* Distinct processes holding a GPU device, inside the tree or (in_tree false) outside it. */
static size_t gpu_holders(const struct pvg_fd_scan *fs, bool in_tree)
{
	size_t n = 0;
	for (size_t i = 0; i < fs->n_hits; i++)
		n += first_gpu_hit(fs, i) && fs->hits[i].in_tree == in_tree;
	return n;
}

struct pvg_outcome pvg_stale_rule_no_gpu_holder_outside_tree(const struct pvg_targets *t,
							      const struct pvg_fd_scan *fs)
{
	struct pvg_outcome o = { 0 };
	size_t holders = 0;
	for (size_t i = 0; i < fs->n_hits; i++) {
		const struct pvg_fd_holder *h = &fs->hits[i];
		if (!first_gpu_hit(fs, i) || h->in_tree)
			continue;
		if (holders++ < MAX_LISTED)
			pvg_outcome_problem(&o, PVG_FAIL, "stale-service.gpu-holder",
					    "stop it: a process outside the service holds the GPU and "
					    "can skew or block the benchmark",
					    "process %d (%s) outside the service tree holds %s",
					    (int)h->pid, comm_of(t, h->pid), h->path);
		pvg_outcome_worsen(&o, PVG_FAIL);
	}
	denied_add(&o, fs, "a GPU holder outside the tree");
	return o;
}

/* NVML lists only this namespace's processes; the memory in use is the machine's. Measured
 * on an H200: each process uses 8 MiB more than NVML lists for it, a CUDA context at least
 * 500 MiB. */
static uint64_t gpu_unaccounted(const struct pvg_gpu_procs *g)
{
	return g->used_bytes > g->listed_bytes ? g->used_bytes - g->listed_bytes : 0;
}

static uint64_t gpu_tolerance(const struct pvg_gpu_procs *g)
{
	return (64 + 16 * (uint64_t)g->n_entries) * (1 << 20);
}

/* From inside a pid namespace the processes outside it are invisible. KFD's list covers the
 * machine, by host pids: only its count compares. NVML's list holds this namespace's
 * processes only, but the memory in use is the machine's. */
struct pvg_outcome pvg_stale_rule_gpu_driver_accounts(const struct pvg_gpu_view *gv)
{
	struct pvg_outcome o = { 0 };
	if (!gv->in_container)
		return o;
	if (gv->r < 0) {
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "stale-service.gpu-holders-unverifiable",
				    "run provgate on the host, or give the container the driver's "
				    "list (/sys/class/kfd for amdgpu, libnvidia-ml.so.1 for NVIDIA)",
				    "provgate runs in a pid namespace of its own and sees no process "
				    "outside it, and %s: a GPU holder outside the container cannot "
				    "be ruled out",
				    gv->why ? gv->why : "no driver list of GPU processes can be read");
		return o;
	}
	const struct pvg_gpu_procs *g = gv->g;
	size_t accounted = gv->n_tree_holders + gv->n_outside_holders;
	if (g->n > accounted && g->n - accounted <= gv->n_unread)
		/* the ones not accounted for may be visible processes whose fds are unreadable (a
		 * service of another user, to a root without CAP_DAC_READ_SEARCH) */
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "stale-service.gpu-holders-unverifiable",
				    root_without_dac() ? hint_dac
						       : "run provgate as root to see every process's "
							 "open files",
				    "the GPU driver (%s) lists %zu process%s using the GPU; this "
				    "container's view accounts for %zu (%zu of the service tree), "
				    "and the open files of %zu process%s in it could not be read: "
				    "whether the rest are among them or outside the container "
				    "cannot be told",
				    g->source, g->n, g->n == 1 ? "" : "es", accounted,
				    gv->n_tree_holders, gv->n_unread, gv->n_unread == 1 ? "" : "es");
	else if (g->n > accounted)
		pvg_outcome_problem(&o, PVG_FAIL, "stale-service.gpu-holder-outside-view",
				    "look on the host (another container, an orphaned engine) for "
				    "the process that holds the GPU, and stop it",
				    "the GPU driver (%s) lists %zu process%s using the GPU; this "
				    "container's view accounts for %zu (%zu of the service tree): "
				    "%zu outside it",
				    g->source, g->n, g->n == 1 ? "" : "es", accounted,
				    gv->n_tree_holders, g->n - accounted);
	uint64_t mib = 1 << 20;
	if (g->namespaced && !g->have_memory)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "stale-service.gpu-holders-unverifiable",
				    "run provgate on the host",
				    "%s lists only the GPU processes of provgate's own pid namespace "
				    "and reports no device memory use, so a GPU holder outside the "
				    "container cannot be ruled out",
				    g->where);
	else if (g->namespaced && gpu_unaccounted(g) > gpu_tolerance(g))
		pvg_outcome_problem(&o, PVG_FAIL, "stale-service.gpu-holder-outside-view",
				    "look on the host (another container, an orphaned engine) for "
				    "the process that holds the GPU, and stop it",
				    "the GPUs have %" PRIu64 " MiB in use, %" PRIu64 " MiB more than "
				    "the %zu process%s NVML lists in this pid namespace account for: "
				    "processes outside the container hold the GPU",
				    g->used_bytes / mib, gpu_unaccounted(g) / mib, g->n,
				    g->n == 1 ? "" : "es");
	return o;
}

/* Could the driver's list rule out a GPU holder outside the container? */
static bool gpu_checked(const struct pvg_gpu_view *gv)
{
	return !gv->in_container || (gv->r >= 0 && !(gv->g->namespaced && !gv->g->have_memory));
}

/* A profiler's overhead (and its serialised launches) is in every number the benchmark
 * prints: a benchmark service runs without one unless the run is meant to profile. */
struct pvg_outcome pvg_stale_rule_no_profiler(const struct pvg_strv *attached, bool allow_profiler)
{
	struct pvg_outcome o = { 0 };
	if (allow_profiler || !attached->n)
		return o;
	for (size_t i = 0; i < attached->n && i < MAX_LISTED; i++)
		pvg_outcome_problem(&o, PVG_FAIL, "stale-service.profiler-attached",
				    "restart the service without the profiler (or set "
				    "service.allow_profiler for a run meant to profile): its overhead "
				    "is in every number the benchmark prints",
				    "a profiler or tracer is attached to the service: %s",
				    attached->v[i]);
	pvg_outcome_worsen(&o, PVG_FAIL);
	return o;
}

/* A service started with a torch-profiler folder profiles whenever a client asks
 * (/start_profile): traces written there since it started say a profile ran, and its overhead
 * may be in the benchmark's number. The variable alone, with no trace yet, is only noted. */
struct pvg_outcome pvg_stale_rule_no_profiler_traces(const struct pvg_stale_trace_dirs *td,
						     bool allow_profiler)
{
	struct pvg_outcome o = { 0 };
	if (allow_profiler)
		return o;
	for (size_t i = 0; i < td->n; i++) {
		const struct pvg_profiler_dir *d = &td->d[i];
		if (d->err < 0 && d->err != -ENOENT) {
			pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "stale-service.profiler-dir-unreadable",
					    pvg_refusal_hint(d->refused,
							     "make the folder readable by the service's "
							     "user (it is read with that user's rights, "
							     "never through a link out of the service's "
							     "root), or restart the service without the "
							     "variable"),
					    "pid %d was started with %s=%s, and that folder cannot be "
					    "listed (%s): profiler traces cannot be ruled out",
					    (int)d->pid, d->var, d->dir,
					    d->refused ? pvg_refusal_text(d->refused) : strerror(-d->err));
			continue;
		}
		if (!d->n_since)
			continue;
		_cleanup_free_ char *names = pvg_strdup("");
		for (size_t k = 0; k < d->n_traces && k < 4; k++) {
			char *n = pvg_asprintf("%s%s%s", names, k ? ", " : "", d->traces[k].name);
			free(names);
			names = n;
		}
		pvg_outcome_problem(&o, PVG_FAIL, "stale-service.profiler-traces",
				    "restart the service without the variable (or set "
				    "service.allow_profiler for a run meant to profile): a profiled "
				    "service is not a benchmark service",
				    "pid %d was started with %s=%s, and %zu torch-profiler trace%s %s "
				    "written there since it started: %s%s",
				    (int)d->pid, d->var, d->dir, d->n_since, d->n_since == 1 ? "" : "s",
				    d->n_since == 1 ? "was" : "were", names,
				    d->n_since > 4 ? ", ..." : "");
	}
	return o;
}

/* ---- live: the evidence ---- */

static void outside_tree_json(cJSON *ev, const struct pvg_targets *t)
{
	cJSON *a = cJSON_AddArrayToObject(ev, "outside_tree");
	for (size_t i = 0; i < t->n; i++)
		if (t->procs[i].family && !t->procs[i].in_tree)
			cJSON_AddItemToArray(a, proc_json(&t->procs[i]));
}

static void port_owners_json(cJSON *ev, const struct pvg_targets *t,
			     const struct pvg_port_view *pv, const struct pvg_fd_scan *fs)
{
	pvg_json_add_u64(ev, "listeners_netns", pv->netns);
	pvg_json_add_bool(ev, "service_own_netns", pv->own_netns);
	cJSON *oj = cJSON_AddArrayToObject(ev, "port_owners");
	for (size_t i = 0; i < fs->n_hits; i++) {
		const struct pvg_fd_holder *h = &fs->hits[i];
		if (!holds_listener(h, pv->listeners))
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "pid", h->pid);
		pvg_json_add_str(o, "comm", comm_of(t, h->pid));
		pvg_json_add_bool(o, "in_tree", h->in_tree);
		cJSON_AddItemToArray(oj, o);
	}
}

/* 0 listeners: nothing listens on provgate's side (a NAT rule, or not published). */
static void port_forwarders_json(cJSON *ev, const struct pvg_targets *t,
				 const struct pvg_port_view *pv, const struct pvg_fd_scan *fs)
{
	pvg_json_add_int(ev, "host_side_listeners", (int)pv->host_listeners->n);
	cJSON *fj = cJSON_AddArrayToObject(ev, "port_forwarders");
	for (size_t i = 0; i < fs->n_hits; i++) {
		const struct pvg_fd_holder *h = &fs->hits[i];
		if (!holds_listener(h, pv->host_listeners))
			continue;
		const char *engine = pvg_port_forwarder_engine(comm_of(t, h->pid));
		if (!engine && !h->in_tree)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "pid", h->pid);
		pvg_json_add_str(o, "comm", comm_of(t, h->pid));
		pvg_json_add_str(o, "engine", engine);
		cJSON_AddItemToArray(fj, o);
	}
}

static void gpu_holders_json(cJSON *ev, const struct pvg_targets *t, const struct pvg_fd_scan *fs)
{
	cJSON *gj = cJSON_AddArrayToObject(ev, "gpu_holders_outside_tree");
	for (size_t i = 0; i < fs->n_hits; i++) {
		const struct pvg_fd_holder *h = &fs->hits[i];
		if (!first_gpu_hit(fs, i) || h->in_tree)
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "pid", h->pid);
		pvg_json_add_str(o, "comm", comm_of(t, h->pid));
		pvg_json_add_str(o, "device", h->path);
		cJSON_AddItemToArray(gj, o);
	}
	cJSON *tj = cJSON_AddArrayToObject(ev, "gpu_holders_in_tree");
	for (size_t i = 0; i < fs->n_hits; i++)
		if (first_gpu_hit(fs, i) && fs->hits[i].in_tree)
			cJSON_AddItemToArray(tj, cJSON_CreateNumber(fs->hits[i].pid));
}

static void gpu_driver_json(cJSON *ev, const struct pvg_gpu_view *gv)
{
	if (!gv->in_container)
		return;
	cJSON *dj = cJSON_AddObjectToObject(ev, "gpu_driver");
	if (gv->r < 0) {
		pvg_json_add_str(dj, "error", gv->why);
		return;
	}
	const struct pvg_gpu_procs *g = gv->g;
	pvg_json_add_str(dj, "source", g->source);
	pvg_json_add_str(dj, "where", g->where);
	pvg_json_add_int(dj, "processes", (int)g->n);
	pvg_json_add_int(dj, "accounted", (int)(gv->n_tree_holders + gv->n_outside_holders));
	pvg_json_add_bool(dj, "lists_this_namespace_only", g->namespaced);
	if (!g->namespaced || !g->have_memory)
		return;
	uint64_t mib = 1 << 20;
	pvg_json_add_u64(dj, "used_mib", g->used_bytes / mib);
	pvg_json_add_u64(dj, "listed_mib", g->listed_bytes / mib);
	pvg_json_add_u64(dj, "unaccounted_mib", gpu_unaccounted(g) / mib);
	pvg_json_add_u64(dj, "tolerance_mib", gpu_tolerance(g) / mib);
}

/* The profilers of the tree's processes: attached ones, libraries frameworks load whether or
 * not anyone profiles (PyTorch preloads libcupti), and provgate's own dispatch witness (it
 * counts launches without timing them: allowed). */
struct profilers {
	struct pvg_strv attached, libraries, witness;
};

static void read_profilers(struct pvg_ctx *ctx, struct profilers *pf)
{
	const struct pvg_tree_facts *tf;
	if (pvg_tree_facts_get(ctx, &tf) == 0)
		for (size_t i = 0; i < tf->n; i++)
			pvg_profilers_classify(&tf->f[i], &pf->attached, &pf->libraries,
					       &pf->witness);
}

static void strv_json(cJSON *ev, const char *key, const struct pvg_strv *v)
{
	cJSON *a = cJSON_AddArrayToObject(ev, key);
	for (size_t i = 0; i < v->n; i++)
		cJSON_AddItemToArray(a, pvg_json_string(v->v[i]));
}

/* Each distinct trace folder of the tree's live processes, listed for traces written since
 * that process started. */
static void read_trace_dirs(struct pvg_ctx *ctx, const struct pvg_targets *t,
			    struct pvg_stale_trace_dirs *td)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!p->in_tree || p->zombie)
			continue;
		for (size_t v = 0; pvg_profiler_dir_vars[v]; v++) {
			struct pvg_profiler_dir d;
			if (pvg_profiler_dir_read(ctx->procfs, p->pid, pvg_profiler_dir_vars[v],
						  &p->start, &d) < 0) {
				pvg_profiler_dir_clear(&d);
				continue;
			}
			bool again = false;
			for (size_t k = 0; k < td->n && !again; k++)
				again = td->d[k].var == d.var && strcmp(td->d[k].dir, d.dir) == 0;
			if (again) {
				pvg_profiler_dir_clear(&d);
				continue;
			}
			td->d = pvg_xrealloc(td->d, td->n + 1, sizeof(*td->d));
			td->d[td->n++] = d;
		}
	}
}

static void trace_dirs_json(cJSON *ev, const struct pvg_stale_trace_dirs *td)
{
	cJSON *a = cJSON_AddArrayToObject(ev, "profiler_trace_dirs");
	for (size_t i = 0; i < td->n; i++) {
		const struct pvg_profiler_dir *d = &td->d[i];
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_int(o, "pid", (int)d->pid);
		pvg_json_add_str(o, "variable", d->var);
		pvg_json_add_str(o, "dir", d->dir);
		if (d->err < 0)
			pvg_json_add_str(o, "error", d->refused ? pvg_refusal_text(d->refused)
							       : strerror(-d->err));
		pvg_json_add_u64(o, "traces_since_start", d->n_since);
		pvg_json_add_u64(o, "traces_before_start", d->n_before);
		if (d->truncated)
			pvg_json_add_bool(o, "truncated", true);
		cJSON *ta = cJSON_AddArrayToObject(o, "traces");
		for (size_t k = 0; k < d->n_traces; k++) {
			cJSON *x = cJSON_CreateObject();
			char t[48];
			pvg_json_add_str(x, "name", d->traces[k].name);
			pvg_json_add_u64(x, "size", d->traces[k].size);
			pvg_format_time(d->traces[k].mtime.tv_sec, d->traces[k].mtime.tv_nsec, t,
					sizeof(t));
			cJSON_AddStringToObject(x, "written_at", t);
			cJSON_AddItemToArray(ta, x);
		}
		if (!d->n_since && (d->err == 0 || d->err == -ENOENT))
			pvg_json_add_str(o, "note", "the service can be profiled (a client's "
						    "/start_profile writes traces here), but no "
						    "trace was written since it started");
		cJSON_AddItemToArray(a, o);
	}
}

static enum pvg_status check_trace_dirs(struct pvg_ctx *ctx, struct pvg_result *res,
					const struct pvg_targets *t)
{
	struct pvg_stale_trace_dirs td = { 0 };
	read_trace_dirs(ctx, t, &td);
	trace_dirs_json(res->evidence, &td);
	struct pvg_outcome o = pvg_stale_rule_no_profiler_traces(&td, ctx->cfg->allow_profiler);
	for (size_t i = 0; i < td.n; i++)
		pvg_profiler_dir_clear(&td.d[i]);
	free(td.d);
	return pvg_outcome_report(res, &o);
}

static enum pvg_status check_profilers(struct pvg_ctx *ctx, struct pvg_result *res)
{
	struct profilers pf = { 0 };
	read_profilers(ctx, &pf);
	strv_json(res->evidence, "profilers", &pf.attached);
	strv_json(res->evidence, "profiling_libraries", &pf.libraries);
	strv_json(res->evidence, "witness", &pf.witness);
	pvg_json_add_bool(res->evidence, "allow_profiler", ctx->cfg->allow_profiler);
	struct pvg_outcome o = pvg_stale_rule_no_profiler(&pf.attached, ctx->cfg->allow_profiler);
	pvg_strv_clear(&pf.attached);
	pvg_strv_clear(&pf.libraries);
	pvg_strv_clear(&pf.witness);
	return pvg_outcome_report(res, &o);
}

/* ---- live: the gate ---- */

static struct pvg_port_view port_view_of(const struct pvg_ctx *ctx, const struct live_read *lr)
{
	return (struct pvg_port_view){
		.port = ctx->cfg->service.port, .procfs = ctx->procfs, .tcp_r = lr->tcp_r,
		.listeners = &lr->listeners, .netns = lr->netns, .own_netns = lr->own_netns,
		.host_r = lr->host_r, .host_listeners = &lr->host_listeners,
	};
}

/* The port's rules and evidence; nothing when no port is configured. */
static enum pvg_status check_port(struct pvg_ctx *ctx, struct pvg_result *res,
				  const struct live_read *lr)
{
	const struct pvg_port_view pv = port_view_of(ctx, lr);
	struct pvg_outcome o = pvg_stale_rule_port_readable(&pv);
	enum pvg_status st = pvg_outcome_report(res, &o);
	if (pv.tcp_r >= 0)
		listeners_json(res->evidence, pv.listeners);
	return st;
}

static enum pvg_status check_port_owners(struct pvg_ctx *ctx, struct pvg_result *res,
					 const struct pvg_targets *t, const struct live_read *lr)
{
	const struct pvg_port_view pv = port_view_of(ctx, lr);
	port_owners_json(res->evidence, t, &pv, &lr->fs);
	struct pvg_outcome o = pvg_stale_rule_port_owned(t, &pv, &lr->fs);
	enum pvg_status st = pvg_stale_report(res, &o, &lr->fs);
	if (pv.own_netns && pv.host_r == 0)
		port_forwarders_json(res->evidence, t, &pv, &lr->fs);
	o = pvg_stale_rule_host_side_port(t, &pv, &lr->fs);
	return pvg_status_worst(st, pvg_stale_report(res, &o, &lr->fs));
}

/* The driver's list of GPU processes, read when provgate runs in a container. */
static void read_gpu_driver(struct pvg_ctx *ctx, const struct pvg_fd_scan *fs, bool in_container,
			    struct pvg_gpu_procs *g, char **why, struct pvg_gpu_view *gv)
{
	*gv = (struct pvg_gpu_view){ .in_container = in_container, .g = g,
				     .n_tree_holders = gpu_holders(fs, true),
				     .n_outside_holders = gpu_holders(fs, false),
				     .n_unread = fs->n_denied };
	if (!in_container)
		return;
	gv->r = pvg_gpu_procs_read(ctx->sysfs, true, g, why);
	gv->why = *why;
}

/* The GPU rules' status, and whether a holder outside a container could be ruled out. */
struct gpu_finding {
	enum pvg_status status;
	bool checked;
};

static struct gpu_finding check_gpu(struct pvg_ctx *ctx, struct pvg_result *res,
				    const struct pvg_targets *t, const struct pvg_fd_scan *fs,
				    bool in_container)
{
	gpu_holders_json(res->evidence, t, fs);
	struct pvg_outcome o = pvg_stale_rule_no_gpu_holder_outside_tree(t, fs);
	enum pvg_status st = pvg_stale_report(res, &o, fs);
	struct pvg_gpu_procs g = { 0 };
	_cleanup_free_ char *why = NULL;
	struct pvg_gpu_view gv;
	read_gpu_driver(ctx, fs, in_container, &g, &why, &gv);
	gpu_driver_json(res->evidence, &gv);
	o = pvg_stale_rule_gpu_driver_accounts(&gv);
	st = pvg_status_worst(st, pvg_outcome_report(res, &o));
	struct gpu_finding found = { st, gpu_checked(&gv) };
	if (in_container && gv.r >= 0)
		pvg_gpu_procs_clear(&g);
	return found;
}

/* The live read prepare() made while gate 3 hashed, if it was of this snapshot; else now. */
static struct live_read *take_live_read(struct pvg_ctx *ctx, const struct pvg_targets *t)
{
	struct live_read *lr = pvg_ctx_take_slot(ctx, PVG_SLOT_LISTENERS_FDS);
	if (lr && lr->t != t) {
		live_read_free(lr);
		lr = NULL;
	}
	return lr ? lr : read_live(ctx, t);
}

static void live_summary(struct pvg_result *res, enum pvg_status st, const struct pvg_targets *t,
			 long port, bool in_container, bool gpu_checked)
{
	size_t n_tree = 0;
	for (size_t i = 0; i < t->n; i++)
		n_tree += t->procs[i].in_tree;
	pvg_json_add_int(res->evidence, "tree_size", (int)n_tree);
	if (st == PVG_PASS)
		pvg_summary(res, "service tree of %d (%zu process%s) is the only service%s; no "
			    "foreign GPU holder%s",
			    (int)t->root, n_tree, n_tree == 1 ? "" : "es",
			    port > 0 ? " and owns the port" : "",
			    in_container ? " (by the driver's list)" : "");
	else if (!gpu_checked && res->n_problems == 1)
		pvg_summary(res, "service tree of %d (%zu process%s) is the only service it can "
			    "see; GPU holders outside the container unverifiable",
			    (int)t->root, n_tree, n_tree == 1 ? "" : "es");
	else
		pvg_summary(res, "%s", res->problems[0].message);
}

static enum pvg_status run_live(struct pvg_ctx *ctx, struct pvg_result *res,
				const struct pvg_targets *t)
{
	long port = ctx->cfg->service.port;
	if (t->err)
		return pvg_targets_problem(t, res);
	outside_tree_json(res->evidence, t);
	struct pvg_outcome o = pvg_stale_rule_no_service_outside_tree(t);
	enum pvg_status st = pvg_outcome_report(res, &o);

	/* one pass over every process's fds: the port's socket and GPU devices */
	_cleanup_(live_read_freep) struct live_read *lr = take_live_read(ctx, t);
	if (port > 0)
		st = pvg_status_worst(st, check_port(ctx, res, lr));
	strv_json(res->evidence, "gpu_device_globs", pvg_gpu_device_globs());
	pvg_json_add_int(res->evidence, "fd_tables_scanned", (int)lr->fs.n_scanned);
	pvg_json_add_bool(res->evidence, "gpu_drivers_registered", lr->devices != NULL);
	if (port > 0 && lr->tcp_r >= 0)
		st = pvg_status_worst(st, check_port_owners(ctx, res, t, lr));

	struct pvg_self_view self;
	bool in_container = pvg_self_view_read(ctx->procfs, "/", &self) == 0 && self.in_container;
	struct gpu_finding gpu = check_gpu(ctx, res, t, &lr->fs, in_container);
	st = pvg_status_worst(st, gpu.status);
	pvg_json_add_str(res->evidence, "view", self.in_container ? "container" : "host");

	st = pvg_status_worst(st, check_profilers(ctx, res));
	st = pvg_status_worst(st, check_trace_dirs(ctx, res, t));
	live_summary(res, st, t, port, self.in_container, gpu.checked);
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
