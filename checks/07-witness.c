/* SPDX-License-Identifier: MIT */
/*
 * Gate 7, the dispatch witness: what the GPU runtime itself recorded about the kernels the
 * live service launched (libprovgate-witness.so, formats/witness.h). A witness file counts
 * only when it was written by a live target process: the same pid in the process's own
 * namespace, the same start time in clock ticks since boot, the same boot id; a file of an
 * earlier process with a reused pid, of another namespace or another boot never counts.
 * The service must have been started with the witness (its environment says so), else the
 * absence of a launch proves nothing.
 *
 * Fresh: before reading, the gate makes a request in the folder (PVG_WITNESS_REQUEST_PREFIX)
 * and waits up to witness.answer_ms for every live file to answer it (its writer took the
 * table after the request was made) or to be final (written at exit). A live file that did
 * neither is unverifiable with the reason: the launches since its last write are not seen.
 *
 * Graph replays: records of via GRAPH count the kernels of CUDA graph replays (the exec's
 * kernel nodes x its replays). Replays whose kernels the witness could not itemize (opaque)
 * or not all of them (partial) leave a requirement unmet or a forbid unproven as
 * unverifiable, never as a pass.
 */
#include <fnmatch.h>
#include <limits.h>

#include "07-witness.h"
#include "facts.h"
#include "sys/ns.h"
#include "sys/witness.h"

bool pvg_witness_configured(const struct pvg_config *cfg)
{
	return cfg->witness.dir != NULL;
}

struct live_set {
	struct pvg_witness_target *t;
	size_t n;
	char boot_id[40];
};

static bool keep_live(void *opaque, const struct pvg_witness_header *h)
{
	const struct live_set *s = opaque;
	return pvg_witness_attribute(h, s->boot_id, s->t, s->n, NULL) == PVG_WITNESS_LIVE;
}

static bool has_glob(const char *p)
{
	return strpbrk(p, "*?[") != NULL;
}

static bool str_matches(const char *pattern, const struct pvg_witness_str *s)
{
	if (!s->n)
		return false;
	_cleanup_free_ char *z = pvg_xcalloc(s->n + 1, 1);
	memcpy(z, s->p, s->n);
	if (has_glob(pattern))
		return fnmatch(pattern, z, 0) == 0;
	return strstr(z, pattern) != NULL;
}

/* A pattern against a record: its mangled name or its demangled one. */
static bool kernel_matches(const char *pattern, const struct pvg_witness_entry *e)
{
	return str_matches(pattern, &e->name) || str_matches(pattern, &e->demangled);
}

static bool dims_match(const uint32_t want[3], const uint32_t got[3])
{
	return (want[0] == 0 && want[1] == 0 && want[2] == 0) ||
	       (want[0] == got[0] && want[1] == got[1] && want[2] == got[2]);
}

static char *entry_name(const struct pvg_witness_entry *e)
{
	const struct pvg_witness_str *s = e->demangled.n ? &e->demangled : &e->name;
	if (!s->n)
		return pvg_strdup("(no name)");
	size_t n = s->n > 200 ? 200 : s->n;
	_cleanup_free_ char *clean = pvg_utf8_sanitize(s->p, n);
	return n < s->n ? pvg_asprintf("%s...", clean) : TAKE_PTR(clean);
}

static cJSON *dims_json(const uint32_t d[3])
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < 3; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(d[i]));
	return a;
}

static const char *via_name(int via)
{
	return via == PVG_WITNESS_REQUIRE_GRAPH ? "graph" : via == PVG_WITNESS_REQUIRE_EAGER ? "eager" : NULL;
}

static char *require_text(const struct pvg_witness_require *w)
{
	char g[64] = "", b[64] = "", v[32] = "";
	if (w->grid[0])
		snprintf(g, sizeof(g), " grid=%u,%u,%u", w->grid[0], w->grid[1], w->grid[2]);
	if (w->block[0])
		snprintf(b, sizeof(b), " block=%u,%u,%u", w->block[0], w->block[1], w->block[2]);
	if (via_name(w->via))
		snprintf(v, sizeof(v), " via=%s", via_name(w->via));
	return pvg_asprintf("%s%s%s%s", w->kernel, g, b, v);
}

/* Does a record count for the requirement's kind of launch? */
static bool via_matches(int want, uint32_t via)
{
	return want == PVG_WITNESS_REQUIRE_ANY ||
	       (want == PVG_WITNESS_REQUIRE_GRAPH) == PVG_WITNESS_VIA_IS_GRAPH(via);
}

/* Replays whose kernels are not (all) in the records: a version 1 file itemized none. */
static uint64_t opaque_replays(const struct pvg_witness_header *h)
{
	return h->version < 2 ? h->graph_launches : h->graph_replays_opaque + h->graph_replays_partial;
}

/* ---- fresh: every live writer answers a request made now ------------------------------------ */

struct fresh {
	uint64_t token; /* 0: no request could be made */
	int err;        /* making it: 0 or -errno */
	long waited_ms;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool answered(const struct pvg_witness_header *h, uint64_t token)
{
	return token && h->version >= 2 && h->answered >= token;
}

/* Makes the request and waits until every live file has answered it or is final, a writer
 * is gone, or answer_ms has passed. What each file did is decided afterwards, on the files
 * as read then. */
static void ask_fresh(const struct pvg_ctx *ctx, const struct pvg_witness_folder *folder,
		      const struct live_set *live, struct fresh *f)
{
	const struct pvg_config *cfg = ctx->cfg;
	memset(f, 0, sizeof(*f));
	int watch = -1;
	pvg_witness_dir_wait(folder, &watch, 0);
	_cleanup_free_ char *req = NULL;
	f->err = pvg_witness_request(folder, &f->token, &req);
	if (f->err < 0) {
		f->token = 0;
		pvg_witness_watch_close(&watch);
		return;
	}
	uint64_t start = mono_ms(), deadline = start + (uint64_t)cfg->witness.answer_ms;
	for (;;) {
		struct pvg_witness_dir d;
		size_t pending = 0;
		if (pvg_witness_dir_read(folder, NULL, NULL, &d) == 0) {
			for (size_t i = 0; i < d.n; i++) {
				const struct pvg_witness_read *r = &d.files[i];
				size_t which;
				if (r->err < 0 || r->perr != PVG_WITNESS_OK ||
				    pvg_witness_attribute(&r->file.h, live->boot_id, live->t, live->n,
							  &which) != PVG_WITNESS_LIVE)
					continue;
				const struct pvg_witness_header *h = &r->file.h;
				/* a version 1 writer cannot answer; a gone one will not */
				if (answered(h, f->token) || (h->flags & PVG_WITNESS_F_FINAL) ||
				    h->version < 2 ||
				    !pvg_witness_proc_alive(ctx->procfs, live->t[which].pid,
							    live->t[which].start_ticks))
					continue;
				pending++;
			}
			pvg_witness_dir_clear(&d);
		}
		uint64_t now = mono_ms();
		if (!pending || now >= deadline)
			break;
		pvg_witness_dir_wait(folder, &watch,
				     (long)(deadline - now < 50 ? deadline - now : 50));
	}
	f->waited_ms = (long)(mono_ms() - start);
	pvg_witness_watch_close(&watch);
	pvg_witness_request_remove(folder, req);
}

/* witness-<nspid>-<start_ticks>-<boot>.pvgw: whose a file says it is, when its bytes cannot */
static bool name_is_target(const char *name, const struct live_set *s)
{
	int pid;
	unsigned long long ticks;
	if (sscanf(name, "witness-%d-%llu-", &pid, &ticks) != 2)
		return false;
	for (size_t i = 0; i < s->n; i++)
		if (s->t[i].nspid == pid && s->t[i].start_ticks == ticks)
			return true;
	return false;
}

/* The variables the service must have been started with. */
static enum pvg_status check_environment(struct pvg_ctx *ctx, struct pvg_result *res, pid_t pid,
					 cJSON *ev)
{
	const struct pvg_config *cfg = ctx->cfg;
	cJSON *env = cJSON_AddObjectToObject(ev, "environment");
	pvg_json_add_int(env, "pid", (int)pid);
	_cleanup_free_ char *dir = NULL;
	int r = pvg_proc_getenv(ctx->procfs, pid, PVG_WITNESS_DIR_ENV, &dir);
	if (r == -EACCES || r == -EPERM) {
		pvg_problem(res, "dispatch-marker.witness-env-unreadable",
			    "run provgate as the service's user (or root) so that it can read "
			    "/proc/PID/environ",
			    "cannot read the environment of service process %d: %s", (int)pid,
			    strerror(-r));
		return PVG_UNVERIFIABLE;
	}
	if (r < 0 && r != -ENOENT) {
		pvg_problem(res, "dispatch-marker.witness-env-unreadable", NULL,
			    "cannot read the environment of service process %d: %s", (int)pid,
			    strerror(-r));
		return PVG_UNVERIFIABLE;
	}
	const char *vars[] = { "CUDA_INJECTION64_PATH", "HSA_TOOLS_LIB" };
	_cleanup_free_ char *lib = NULL;
	const char *lib_var = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(vars) && !lib; i++) {
		bool want = !cfg->witness.api || strcmp(cfg->witness.api, i ? "hsa" : "cuda") == 0;
		if (want && pvg_proc_getenv(ctx->procfs, pid, vars[i], &lib) == 0)
			lib_var = vars[i];
	}
	pvg_json_add_str(env, PVG_WITNESS_DIR_ENV, dir);
	if (lib_var)
		pvg_json_add_str(env, lib_var, lib);
	if (!dir || !lib) {
		pvg_problem(res, "dispatch-marker.witness-not-enabled",
			    "start the service with the variables `provgate exec --witness DIR` "
			    "prints, then run the benchmark",
			    "service process %d was not started with the witness (%s is not set in "
			    "its environment), so a missing launch proves nothing",
			    (int)pid, !dir ? PVG_WITNESS_DIR_ENV
				       : cfg->witness.api && strcmp(cfg->witness.api, "hsa") == 0
				       ? "HSA_TOOLS_LIB"
				       : cfg->witness.api ? "CUDA_INJECTION64_PATH"
							  : "CUDA_INJECTION64_PATH or HSA_TOOLS_LIB");
		return PVG_UNVERIFIABLE;
	}
	/* the same folder: a relative value is the service's, resolved against its cwd */
	_cleanup_free_ char *cwd_link = pvg_asprintf("%s/%d/cwd", ctx->procfs, (int)pid);
	char cwd[PATH_MAX];
	ssize_t cl = readlink(cwd_link, cwd, sizeof(cwd) - 1);
	cwd[cl > 0 ? cl : 0] = '\0';
	_cleanup_free_ char *abs = dir[0] == '/' || cl <= 0 ? pvg_strdup(dir) : pvg_path_join(cwd, dir);
	_cleanup_free_ char *a = realpath(abs, NULL), *b = realpath(cfg->witness.dir, NULL);
	if (!(a && b ? strcmp(a, b) == 0 : strcmp(abs, cfg->witness.dir) == 0)) {
		pvg_problem(res, "dispatch-marker.witness-dir-mismatch",
			    "point witness.dir at the folder the service writes to, or restart the "
			    "service with PROVGATE_WITNESS_DIR set to witness.dir",
			    "service process %d writes its witness to %s, not to witness.dir %s",
			    (int)pid, dir, cfg->witness.dir);
		return PVG_UNVERIFIABLE;
	}
	return PVG_PASS;
}

/* A live file that neither answered the request nor is final: why, as far as can be told. */
static void stale_problem(const struct pvg_ctx *ctx, struct pvg_result *res, const char *file,
			  const struct pvg_witness_header *h, const struct pvg_witness_target *t,
			  const struct fresh *fr)
{
	char ts[48];
	pvg_format_time((time_t)(h->written_ns / 1000000000u), (long)(h->written_ns % 1000000000u), ts,
			sizeof(ts));
	_cleanup_free_ char *clean = pvg_utf8_sanitize(file, strlen(file));
	if (h->version < 2)
		pvg_problem(res, "dispatch-marker.witness-no-answer",
			    "restart the service with this release's libprovgate-witness.so",
			    "witness file %s (process %d) is version %u: its library cannot answer a "
			    "request, so launches after its last write (%s) are not seen",
			    clean, (int)t->pid, h->version, ts);
	else if (!pvg_witness_proc_alive(ctx->procfs, t->pid, t->start_ticks))
		pvg_problem(res, "dispatch-marker.witness-no-answer",
			    "the process ended without the witness's exit handler (killed?): run the "
			    "benchmark against a service that keeps running",
			    "process %d exited during the check without its final witness write: "
			    "launches after its last write (%s) are not seen",
			    (int)t->pid, ts);
	else
		pvg_problem(res, "dispatch-marker.witness-no-answer",
			    "the process may be stopped or overloaded: check it, or raise "
			    "witness.answer_ms",
			    "process %d did not answer the witness request within %ld ms: launches "
			    "after its last write (%s) are not seen",
			    (int)t->pid, fr->waited_ms, ts);
}

enum pvg_status pvg_witness_check(struct pvg_ctx *ctx, struct pvg_result *res, char **summary)
{
	const struct pvg_config *cfg = ctx->cfg;
	cJSON *ev = cJSON_AddObjectToObject(res->evidence, "witness");
	pvg_json_add_str(ev, "dir", cfg->witness.dir);
	*summary = NULL;

	if (cfg->witness.n_require == 0) {
		pvg_problem(res, "dispatch-marker.witness-not-configured",
			    "name the new kernel in witness.require (e.g. {\"kernel\": \"my_kernel*\"})",
			    "witness.dir is set but witness.require names no kernel");
		*summary = pvg_strdup("witness: no kernel required");
		return PVG_UNVERIFIABLE;
	}
	const struct pvg_targets *t;
	int r = pvg_targets_get(ctx, &t);
	if (r < 0 || t->err) {
		pvg_problem(res, "dispatch-marker.no-service",
			    "start the service (service.match / pid / pidfile must find it) and run "
			    "the benchmark before this gate",
			    "no live service to attribute witness files to: %s",
			    r < 0 ? strerror(-r) : t->msg.text ? t->msg.text : "no target");
		*summary = pvg_strdup("witness: no live service");
		return PVG_UNVERIFIABLE;
	}

	/* the live targets: every process of the service tree */
	struct live_set live = { 0 };
	live.t = pvg_xcalloc(t->n + 1, sizeof(*live.t));
	cJSON *procs = cJSON_AddArrayToObject(ev, "processes");
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!p->in_tree || p->zombie)
			continue;
		struct pvg_witness_target *w = &live.t[live.n++];
		w->pid = p->pid;
		w->start_ticks = p->start_ticks;
		/* the pid it knows itself by (last NSpid entry): the snapshot's, else read now; a
		 * kernel without NSpid has one namespace */
		w->nspid = p->ns_pid ? p->ns_pid : p->pid;
		struct pvg_nspid ns;
		if (!p->ns_pid && pvg_proc_nspid(ctx->procfs, p->pid, &ns) == 0 && ns.n)
			w->nspid = pvg_nspid_inner(&ns);
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_int(o, "pid", (int)w->pid);
		pvg_json_add_int(o, "nspid", (int)w->nspid);
		pvg_json_add_u64(o, "start_ticks", w->start_ticks);
		cJSON_AddItemToArray(procs, o);
	}
	r = pvg_boot_id(ctx->procfs, live.boot_id);
	pvg_json_add_str(ev, "boot_id", live.boot_id[0] ? live.boot_id : NULL);

	enum pvg_status status = check_environment(ctx, res, t->primary, ev);

	/* the folder is opened once, never through a link, and everything below goes through
	 * that descriptor: a folder swapped for a link to a root-only folder is refused, not
	 * written to */
	_cleanup_(pvg_witness_folder_close) struct pvg_witness_folder folder;
	int fo = pvg_witness_folder_open(cfg->witness.dir, &folder);
	if (fo < 0) {
		if (folder.is_link)
			pvg_problem(res, "dispatch-marker.witness-dir-link",
				    "name the folder itself in witness.dir, not a link to it (a "
				    "folder the service's user can replace by a link would make "
				    "provgate write and read where that link points)",
				    "witness folder %s is a symbolic link: refused, nothing in it "
				    "read or created", cfg->witness.dir);
		else
			pvg_problem(res, "dispatch-marker.witness-dir-unreadable",
				    fo == -ENOENT ? "create the folder and start the service with "
						    "PROVGATE_WITNESS_DIR pointing at it"
				    : fo == -ENOTDIR ? "point witness.dir at a folder"
						     : "let provgate read the witness folder",
				    "witness folder %s: %s", cfg->witness.dir, strerror(-fo));
		*summary = pvg_asprintf("witness folder %s: %s",
					folder.is_link ? "refused" : "unreadable",
					folder.is_link ? "a symbolic link" : strerror(-fo));
		free(live.t);
		return pvg_status_worst(status, PVG_UNVERIFIABLE);
	}
	cJSON *fj = cJSON_AddObjectToObject(ev, "folder");
	pvg_json_add_int(fj, "owner_uid", (int)folder.st.st_uid);
	pvg_json_add_int(fj, "owner_gid", (int)folder.st.st_gid);
	char mode[8];
	snprintf(mode, sizeof(mode), "%04o", (unsigned)(folder.st.st_mode & 07777));
	pvg_json_add_str(fj, "mode", mode);

	struct fresh fr;
	ask_fresh(ctx, &folder, &live, &fr);
	cJSON *rq = cJSON_AddObjectToObject(ev, "request");
	pvg_json_add_u64(rq, "token", fr.token);
	pvg_json_add_int(rq, "answer_ms", (int)cfg->witness.answer_ms);
	pvg_json_add_int(rq, "waited_ms", (int)fr.waited_ms);
	if (fr.err < 0 && fr.err != -ENOENT) {
		pvg_problem(res, "dispatch-marker.witness-request-failed",
			    "let provgate create files in the witness folder (it asks the live "
			    "service for a fresh witness there)",
			    "cannot ask the live service for a fresh witness in %s: %s", cfg->witness.dir,
			    strerror(-fr.err));
		status = pvg_status_worst(status, PVG_UNVERIFIABLE);
	}

	struct pvg_witness_dir dir;
	int dr = pvg_witness_dir_read(&folder, keep_live, &live, &dir);
	if (dr < 0) {
		pvg_problem(res, "dispatch-marker.witness-dir-unreadable",
			    dr == -ENOENT ? "create the folder and start the service with "
					    "PROVGATE_WITNESS_DIR pointing at it"
					  : "let provgate read the witness folder",
			    "witness folder %s: %s", cfg->witness.dir, strerror(-dr));
		*summary = pvg_asprintf("witness folder unreadable: %s", strerror(-dr));
		free(live.t);
		return pvg_status_worst(status, PVG_UNVERIFIABLE);
	}

	size_t attr_count[PVG_WITNESS_ATTR_N] = { 0 }, unreadable = 0, n_live = 0, recording = 0;
	size_t n_answered = 0, n_final = 0, n_stale = 0;
	bool table_full = false;
	uint64_t graph_launches = 0, captured = 0, launches = 0, opaque = 0, itemized = 0;
	cJSON *files = cJSON_AddArrayToObject(ev, "live_files");
	const char *note = NULL;
	for (size_t i = 0; i < dir.n; i++) {
		const struct pvg_witness_read *f = &dir.files[i];
		if (f->err < 0 || f->perr != PVG_WITNESS_OK) {
			if (!f->too_large)
				unreadable++;
			if (name_is_target(f->name, &live)) {
				_cleanup_free_ char *clean = pvg_utf8_sanitize(f->name, strlen(f->name));
				pvg_problem(res, "dispatch-marker.witness-corrupt",
					    "the file was changed or cut short after the library wrote "
					    "it: restart the service with an empty witness folder",
					    "witness file %s of a live service process cannot be read: %s",
					    clean,
					    f->err < 0 ? strerror(-f->err) : pvg_witness_strerror(f->perr));
				status = PVG_FAIL;
			}
			continue;
		}
		size_t which = 0;
		enum pvg_witness_attr a = pvg_witness_attribute(&f->file.h, live.boot_id, live.t,
								live.n, &which);
		attr_count[a]++;
		if (a != PVG_WITNESS_LIVE)
			continue;
		n_live++;
		const struct pvg_witness_header *h = &f->file.h;
		if (h->flags & PVG_WITNESS_F_RECORDING)
			recording++;
		else
			note = h->note;
		table_full |= (h->flags & PVG_WITNESS_F_TABLE_FULL) != 0;
		graph_launches += h->graph_launches;
		captured += h->captured;
		launches += h->launches;
		opaque += opaque_replays(h);
		itemized += h->graph_replays_itemized;
		const char *fresh;
		if (answered(h, fr.token)) {
			fresh = "answered";
			n_answered++;
		} else if (h->flags & PVG_WITNESS_F_FINAL) {
			fresh = "final";
			n_final++;
		} else {
			fresh = "no-answer";
			n_stale++;
			if (fr.token)
				stale_problem(ctx, res, f->name, h, &live.t[which], &fr);
			status = pvg_status_worst(status, PVG_UNVERIFIABLE);
		}
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_str(o, "file", f->name);
		pvg_json_add_int(o, "pid", (int)live.t[which].pid);
		pvg_json_add_int(o, "nspid", h->nspid);
		pvg_json_add_str(o, "api", h->api == PVG_WITNESS_API_CUDA ? "cuda"
					   : h->api == PVG_WITNESS_API_HSA ? "hsa" : "none");
		pvg_json_add_bool(o, "recording", (h->flags & PVG_WITNESS_F_RECORDING) != 0);
		pvg_json_add_bool(o, "final", (h->flags & PVG_WITNESS_F_FINAL) != 0);
		pvg_json_add_str(o, "note", h->note);
		pvg_json_add_str(o, "fresh", fresh);
		pvg_json_add_int(o, "version", (int)h->version);
		pvg_json_add_u64(o, "launches", h->launches);
		pvg_json_add_u64(o, "launches_dropped", h->launches_dropped);
		pvg_json_add_u64(o, "records", h->n_records);
		char ts[48];
		pvg_format_time((time_t)(h->written_ns / 1000000000u), (long)(h->written_ns % 1000000000u),
				ts, sizeof(ts));
		cJSON_AddStringToObject(o, "written_at", ts);
		cJSON_AddItemToArray(files, o);
	}
	cJSON *ign = cJSON_AddObjectToObject(ev, "ignored_files");
	pvg_json_add_u64(ign, "earlier_boot", attr_count[PVG_WITNESS_OTHER_BOOT]);
	pvg_json_add_u64(ign, "pid_reused", attr_count[PVG_WITNESS_PID_REUSED]);
	pvg_json_add_u64(ign, "foreign_namespace", attr_count[PVG_WITNESS_FOREIGN_NS]);
	pvg_json_add_u64(ign, "not_target", attr_count[PVG_WITNESS_NOT_TARGET]);
	pvg_json_add_u64(ign, "unreadable", unreadable);
	if (dir.over_limit)
		pvg_json_add_u64(ign, "over_limit", dir.over_limit);
	/* skipped unread: what is no regular file is never opened, what is over the cap by
	 * its size never read */
	pvg_json_add_u64(ign, "not_regular", dir.not_regular);
	pvg_json_add_u64(ign, "too_large", dir.too_large);
	pvg_json_add_u64(ev, "graph_launches", graph_launches);
	pvg_json_add_u64(ev, "graph_replays_itemized", itemized);
	pvg_json_add_u64(ev, "graph_replays_opaque", opaque);
	pvg_json_add_u64(ev, "captured_launches", captured);
	pvg_json_add_u64(rq, "answered", n_answered);
	pvg_json_add_u64(rq, "final", n_final);
	pvg_json_add_u64(rq, "not_answered", n_stale);

	size_t stale = attr_count[PVG_WITNESS_OTHER_BOOT] + attr_count[PVG_WITNESS_PID_REUSED] +
		       attr_count[PVG_WITNESS_FOREIGN_NS] + attr_count[PVG_WITNESS_NOT_TARGET];
	if (n_live == 0) {
		if (status == PVG_PASS) {
			/* started with the witness, yet no file: the library never loaded, or the
			 * process made no GPU call (CUDA loads it at cuInit) */
			if (stale > 0)
				pvg_problem(res, "dispatch-marker.witness-stale",
					    "these files are from an earlier service or another process: "
					    "run the benchmark against the live service",
					    "no witness file of the live service in %s; %zu file%s from "
					    "other processes ignored (%zu earlier boot, %zu reused pid, %zu "
					    "other pid namespace, %zu not a target)",
					    cfg->witness.dir, stale, stale == 1 ? "" : "s",
					    attr_count[PVG_WITNESS_OTHER_BOOT],
					    attr_count[PVG_WITNESS_PID_REUSED],
					    attr_count[PVG_WITNESS_FOREIGN_NS],
					    attr_count[PVG_WITNESS_NOT_TARGET]);
			else
				pvg_problem(res, "dispatch-marker.witness-missing",
					    "check that the service's GPU runtime loads the library "
					    "(CUDA_INJECTION64_PATH / HSA_TOOLS_LIB naming "
					    "libprovgate-witness.so) and that the benchmark ran",
					    "no witness file of the live service in %s", cfg->witness.dir);
			status = PVG_FAIL;
		}
		*summary = pvg_asprintf("witness: no file of the live service (%zu ignored)", stale);
		goto out;
	}
	if (recording == 0) {
		pvg_problem(res, "dispatch-marker.witness-not-recording",
			    "make libcupti loadable in the service (PROVGATE_WITNESS_CUPTI=PATH), and "
			    "start it without a profiler holding CUPTI",
			    "the witness is loaded in the live service but not recording: %s",
			    note && note[0] ? note : "no reason given");
		status = pvg_status_worst(status, PVG_UNVERIFIABLE);
		*summary = pvg_strdup("witness: loaded but not recording");
		goto out;
	}

	/* what the live service launched, most launched first (at most 32, for the reader) */
	{
		const struct pvg_witness_entry *top[32];
		size_t n_top = 0, n_all = 0;
		for (size_t i = 0; i < dir.n; i++) {
			const struct pvg_witness_read *f = &dir.files[i];
			for (size_t j = 0; f->bytes && j < f->file.n; j++) {
				const struct pvg_witness_entry *e = &f->file.entries[j];
				n_all++;
				size_t at = n_top < ARRAY_SIZE(top) ? n_top++ : ARRAY_SIZE(top);
				if (at == ARRAY_SIZE(top)) {
					if (e->count <= top[at - 1]->count)
						continue;
					at--;
				}
				while (at > 0 && top[at - 1]->count < e->count) {
					top[at] = top[at - 1];
					at--;
				}
				top[at] = e;
			}
		}
		cJSON *ks = cJSON_AddArrayToObject(ev, "kernels");
		for (size_t i = 0; i < n_top; i++) {
			_cleanup_free_ char *nm = entry_name(top[i]);
			cJSON *o = cJSON_CreateObject();
			pvg_json_add_str(o, "name", nm);
			cJSON_AddItemToObject(o, "grid", dims_json(top[i]->grid));
			cJSON_AddItemToObject(o, "block", dims_json(top[i]->block));
			pvg_json_add_u64(o, "count", top[i]->count);
			if (PVG_WITNESS_VIA_IS_GRAPH(top[i]->via))
				pvg_json_add_str(o, "via", "graph");
			cJSON_AddItemToArray(ks, o);
		}
		pvg_json_add_u64(ev, "kernels_total", n_all);
	}

	/* requirements, counted over every live file */
	cJSON *req = cJSON_AddArrayToObject(ev, "required");
	size_t satisfied = 0;
	for (size_t k = 0; k < cfg->witness.n_require; k++) {
		const struct pvg_witness_require *w = &cfg->witness.require[k];
		long need = w->min_count > 0 ? w->min_count
			    : cfg->witness.min_count > 1 ? cfg->witness.min_count : 1;
		uint64_t got = 0, name_only = 0, in_graph = 0, other_via = 0, packets = 0;
		const struct pvg_witness_entry *other = NULL;
		for (size_t i = 0; i < dir.n; i++) {
			const struct pvg_witness_read *f = &dir.files[i];
			for (size_t j = 0; f->bytes && j < f->file.n; j++) {
				const struct pvg_witness_entry *e = &f->file.entries[j];
				if (!kernel_matches(w->kernel, e))
					continue;
				if (w->via != PVG_WITNESS_REQUIRE_ANY && e->via == PVG_WITNESS_VIA_HSA_PACKET) {
					/* a dispatch packet does not say whether a hipGraph replay
					 * sent it */
					packets += e->count;
				} else if (!via_matches(w->via, e->via)) {
					other_via += e->count;
				} else if (dims_match(w->grid, e->grid) && dims_match(w->block, e->block)) {
					got = got + e->count < got ? UINT64_MAX : got + e->count;
					if (PVG_WITNESS_VIA_IS_GRAPH(e->via))
						in_graph += e->count;
				} else {
					name_only += e->count;
					other = e;
				}
			}
		}
		_cleanup_free_ char *want = require_text(w);
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_str(o, "kernel", w->kernel);
		if (w->grid[0])
			cJSON_AddItemToObject(o, "grid", dims_json(w->grid));
		if (w->block[0])
			cJSON_AddItemToObject(o, "block", dims_json(w->block));
		if (via_name(w->via))
			pvg_json_add_str(o, "via", via_name(w->via));
		pvg_json_add_u64(o, "count", got);
		pvg_json_add_u64(o, "in_graph_replays", in_graph);
		pvg_json_add_int(o, "min_count", (int)need);
		cJSON_AddItemToArray(req, o);
		if ((long double)got >= (long double)need) {
			satisfied++;
			continue;
		}
		/* replays the witness could not itemize may hold the kernel (unless eager launches
		 * alone are asked for) */
		bool in_opaque = opaque && w->via != PVG_WITNESS_REQUIRE_EAGER;
		bool unknown = in_opaque || packets;
		_cleanup_free_ char *why = pvg_asprintf(
			"%s%s%s%s",
			table_full ? " (the witness table was full: launches of kernels first seen "
				     "after that were not recorded)"
				   : "",
			in_opaque ? "; graph replays whose kernels the witness could not itemize may "
				    "hold it"
				  : "",
			other_via ? w->via == PVG_WITNESS_REQUIRE_GRAPH
					    ? "; its eager launches do not count (via graph)"
					    : "; its launches inside graph replays do not count (via eager)"
				  : "",
			packets ? "; the ROCm witness's dispatch packets do not say whether a graph "
				  "replay sent them, so \"via\" cannot be decided on them"
				: "");
		const char *full = why;
		if (name_only) {
			_cleanup_free_ char *nm = entry_name(other);
			pvg_problem(res, "dispatch-marker.witness-grid-mismatch",
				    "the kernel ran with other launch dimensions: run the benchmark with "
				    "the shapes the config requires, or correct witness.require",
				    "{%s}: %" PRIu64 " launch%s, %ld required; %s ran %" PRIu64
				    " time%s with other dimensions, e.g. grid=%u,%u,%u block=%u,%u,%u%s",
				    want, got, got == 1 ? "" : "es", need, nm, name_only,
				    name_only == 1 ? "" : "s", other->grid[0], other->grid[1],
				    other->grid[2], other->block[0], other->block[1], other->block[2],
				    full);
		} else {
			pvg_problem(res, "dispatch-marker.witness-too-few",
				    "the live service did not launch this kernel: check that the "
				    "benchmark ran and that dispatch selects the new kernel (look for "
				    "the fallback kernel among the witness's records)",
				    "{%s}: %" PRIu64 " launch%s seen by the witness, %ld required%s", want,
				    got, got == 1 ? "" : "es", need, full);
		}
		status = pvg_status_worst(status, table_full || unknown ? PVG_UNVERIFIABLE : PVG_FAIL);
	}
	/* a forbid is proven only over launches the witness itemized */
	if (opaque && cfg->witness.forbid.n) {
		pvg_problem(res, "dispatch-marker.witness-graph-opaque",
			    "see provgate-witness(7) for the graphs the witness itemizes; "
			    "a witness file of version 1 itemizes none: restart the service with "
			    "this release's libprovgate-witness.so",
			    "%" PRIu64 " graph replay%s ran kernels the witness could not itemize (an "
			    "exec it could not read or follow, a conditional body, a device-launchable "
			    "exec, or a version 1 witness): a forbidden kernel may have run in them",
			    opaque, opaque == 1 ? "" : "s");
		status = pvg_status_worst(status, PVG_UNVERIFIABLE);
	}
	size_t forbidden = 0;
	for (size_t k = 0; k < cfg->witness.forbid.n; k++) {
		const char *pat = cfg->witness.forbid.v[k];
		uint64_t n = 0;
		const struct pvg_witness_entry *seen = NULL;
		for (size_t i = 0; i < dir.n; i++) {
			const struct pvg_witness_read *f = &dir.files[i];
			for (size_t j = 0; f->bytes && j < f->file.n; j++)
				if (kernel_matches(pat, &f->file.entries[j])) {
					n += f->file.entries[j].count;
					seen = &f->file.entries[j];
				}
		}
		if (!seen)
			continue;
		forbidden++;
		_cleanup_free_ char *nm = entry_name(seen);
		pvg_problem(res, "dispatch-marker.witness-forbidden",
			    "the service launched a kernel the benchmark must not use (a fallback): "
			    "fix the dispatch condition and restart the service",
			    "forbidden \"%s\": the live service launched %s %" PRIu64 " time%s (e.g. "
			    "grid=%u,%u,%u block=%u,%u,%u)",
			    pat, nm, n, n == 1 ? "" : "s", seen->grid[0], seen->grid[1], seen->grid[2],
			    seen->block[0], seen->block[1], seen->block[2]);
		status = PVG_FAIL;
	}
	cJSON *chain = cJSON_CreateObject();
	cJSON_AddNumberToObject(chain, "live_files", (double)n_live);
	cJSON_AddNumberToObject(chain, "required_met", (double)satisfied);
	cJSON_AddNumberToObject(chain, "required", (double)cfg->witness.n_require);
	cJSON_AddNumberToObject(chain, "forbidden_seen", (double)forbidden);
	pvg_chain_set(ctx, "witness", chain);
	*summary = pvg_asprintf("witness: %zu of %zu required kernel%s launched by the live service "
				"(%zu file%s, %" PRIu64 " launch%s)%s",
				satisfied, cfg->witness.n_require,
				cfg->witness.n_require == 1 ? "" : "s", n_live, n_live == 1 ? "" : "s",
				launches, launches == 1 ? "" : "es",
				forbidden ? ", forbidden kernel launched" : "");
out:
	pvg_witness_dir_clear(&dir);
	free(live.t);
	return status;
}
