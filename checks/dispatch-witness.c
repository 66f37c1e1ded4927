/* SPDX-License-Identifier: MIT */
/*
 * Gate 7's witness, read. A witness file counts only when it was written by a live target
 * process: the same pid in the process's own namespace, the same start time in clock ticks
 * since boot, the same boot id (pvg_witness_attribute); a file of an earlier process with a
 * reused pid, of another namespace or another boot never counts.
 *
 * Fresh: before reading, a request is made in the folder (PVG_WITNESS_REQUEST_PREFIX) and
 * every live file gets up to witness.answer_ms to answer it (its writer took the table after
 * the request was made) or to be final (written at exit).
 *
 * Graph replays: records of via GRAPH count the kernels of CUDA graph replays (the exec's
 * kernel nodes x its replays); replays whose kernels the witness could not itemize (opaque)
 * or not all of them (partial) are counted apart, for the gate to weigh.
 */
#include <fnmatch.h>
#include <limits.h>

#include "dispatch-witness.h"
#include "formats/codeobj/codeobj.h"
#include "sys/ns.h"

bool dispatch_witness_configured(const struct pvg_config *cfg)
{
	return cfg->witness.dir != NULL;
}

void dispatch_witness_read_init(struct witness_read *wr)
{
	memset(wr, 0, sizeof(*wr));
	wr->folder.fd = -1;
}

void dispatch_witness_read_clear(struct witness_read *wr)
{
	free(wr->live.t);
	free(wr->live.gone);
	free(wr->env.dir);
	free(wr->env.lib);
	pvg_witness_folder_close(&wr->folder);
	pvg_witness_dir_clear(&wr->dir);
	free(wr->files);
	free(wr->needs);
	free(wr->seen);
	free(wr->code.d);
	free(wr->code.why);
	free(wr->code.names);
	memset(wr, 0, sizeof(*wr));
	wr->folder.fd = -1;
}

static bool keep_live(void *opaque, const struct pvg_witness_header *h)
{
	const struct witness_live *s = opaque;
	return pvg_witness_attribute(h, s->boot_id, s->t, s->n, NULL) == PVG_WITNESS_LIVE ||
	       (s->n_gone &&
		pvg_witness_attribute(h, s->boot_id, s->gone, s->n_gone, NULL) == PVG_WITNESS_LIVE);
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
bool dispatch_witness_kernel_matches(const char *pattern, const struct pvg_witness_entry *e)
{
	return str_matches(pattern, &e->name) || str_matches(pattern, &e->demangled);
}

static bool kernel_matches(const char *pattern, const struct pvg_witness_entry *e)
{
	return dispatch_witness_kernel_matches(pattern, e);
}

static bool dims_match(const uint32_t want[3], const uint32_t got[3])
{
	return (want[0] == 0 && want[1] == 0 && want[2] == 0) ||
	       (want[0] == got[0] && want[1] == got[1] && want[2] == got[2]);
}

char *dispatch_witness_entry_name(const struct pvg_witness_entry *e)
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

char *dispatch_witness_require_text(const struct pvg_witness_require *w)
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

/* ---- the live processes and their environment --------------------------------------------- */

void dispatch_witness_read_live(struct pvg_ctx *ctx, const struct pvg_targets *t,
				struct witness_read *wr)
{
	struct witness_live *live = &wr->live;
	live->t = pvg_xcalloc(t->n + 1, sizeof(*live->t));
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!p->in_tree || p->zombie)
			continue;
		struct pvg_witness_target *w = &live->t[live->n++];
		w->pid = p->pid;
		w->start_ticks = p->start_ticks;
		/* the pid it knows itself by (last NSpid entry): the snapshot's, else read now; a
		 * kernel without NSpid has one namespace */
		w->nspid = p->ns_pid ? p->ns_pid : p->pid;
		struct pvg_nspid ns;
		if (!p->ns_pid && pvg_proc_nspid(ctx->procfs, p->pid, &ns) == 0 && ns.n)
			w->nspid = pvg_nspid_inner(&ns);
	}
	/* exec's after-check: the before-check's processes of the tree that are not live targets
	 * now (exited, or out of the tree); a file counts as theirs only with the identity the
	 * before-check read from /proc, never one the file gives */
	live->gone = pvg_xcalloc(ctx->n_pinned_procs + 1, sizeof(*live->gone));
	for (size_t i = 0; ctx->pinned && i < ctx->n_pinned_procs; i++) {
		const struct pvg_pinned_proc *pp = &ctx->pinned_procs[i];
		bool live_now = false;
		for (size_t k = 0; k < live->n && !live_now; k++)
			live_now = live->t[k].pid == pp->pid &&
				   live->t[k].start_ticks == pp->start_ticks;
		if (live_now)
			continue;
		struct pvg_witness_target *w = &live->gone[live->n_gone++];
		w->pid = pp->pid;
		w->nspid = pp->nspid;
		w->start_ticks = pp->start_ticks;
	}
	pvg_boot_id(ctx->procfs, live->boot_id);
}

/* The variables the service must have been started with; their folder, relative to the
 * service's cwd when relative, against witness.dir. */
void dispatch_witness_read_env(struct pvg_ctx *ctx, pid_t pid, struct witness_read *wr)
{
	const struct pvg_config *cfg = ctx->cfg;
	struct witness_env *env = &wr->env;
	env->pid = pid;
	env->dir_r = pvg_proc_getenv(ctx->procfs, pid, PVG_WITNESS_DIR_ENV, &env->dir);
	if (env->dir_r < 0 && env->dir_r != -ENOENT)
		return;
	const char *vars[] = { "CUDA_INJECTION64_PATH", "HSA_TOOLS_LIB" };
	for (size_t i = 0; i < ARRAY_SIZE(vars) && !env->lib; i++) {
		bool want = !cfg->witness.api || strcmp(cfg->witness.api, i ? "hsa" : "cuda") == 0;
		if (want && pvg_proc_getenv(ctx->procfs, pid, vars[i], &env->lib) == 0)
			env->lib_var = vars[i];
	}
	if (!env->dir || !env->lib)
		return;
	_cleanup_free_ char *cwd_link = pvg_asprintf("%s/%d/cwd", ctx->procfs, (int)pid);
	char cwd[PATH_MAX];
	ssize_t cl = readlink(cwd_link, cwd, sizeof(cwd) - 1);
	cwd[cl > 0 ? cl : 0] = '\0';
	const char *dir = env->dir;
	_cleanup_free_ char *abs = dir[0] == '/' || cl <= 0 ? pvg_strdup(dir) : pvg_path_join(cwd, dir);
	_cleanup_free_ char *a = realpath(abs, NULL), *b = realpath(cfg->witness.dir, NULL);
	env->same_folder = a && b ? strcmp(a, b) == 0 : strcmp(abs, cfg->witness.dir) == 0;
}

/* ---- the folder, and a fresh answer in it --------------------------------------------------- */

/* The folder is opened once, never through a link, and everything after goes through that
 * descriptor: a folder swapped for a link to a root-only folder is refused, not written to. */
void dispatch_witness_open_folder(const struct pvg_config *cfg, struct witness_read *wr)
{
	wr->folder_r = pvg_witness_folder_open(cfg->witness.dir, &wr->folder);
}

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

/* Live files that may still answer: not answered, not final, a version 2 writer still there. */
static size_t pending_answers(const struct pvg_ctx *ctx, const struct witness_read *wr)
{
	const struct witness_live *live = &wr->live;
	struct pvg_witness_dir d;
	size_t pending = 0;
	if (pvg_witness_dir_read(&wr->folder, NULL, NULL, &d) < 0)
		return 0;
	for (size_t i = 0; i < d.n; i++) {
		const struct pvg_witness_read *r = &d.files[i];
		size_t which;
		if (r->err < 0 || r->perr != PVG_WITNESS_OK ||
		    pvg_witness_attribute(&r->file.h, live->boot_id, live->t, live->n, &which) !=
			    PVG_WITNESS_LIVE)
			continue;
		const struct pvg_witness_header *h = &r->file.h;
		/* a version 1 writer cannot answer; a gone one will not */
		if (answered(h, wr->fresh.token) || (h->flags & PVG_WITNESS_F_FINAL) ||
		    h->version < 2 ||
		    !pvg_witness_proc_alive(ctx->procfs, live->t[which].pid,
					    live->t[which].start_ticks))
			continue;
		pending++;
	}
	pvg_witness_dir_clear(&d);
	return pending;
}

/* What each file did is decided afterwards, on the files as read then. */
void dispatch_witness_ask_fresh(const struct pvg_ctx *ctx, struct witness_read *wr)
{
	const struct pvg_config *cfg = ctx->cfg;
	struct witness_fresh *f = &wr->fresh;
	memset(f, 0, sizeof(*f));
	int watch = -1;
	pvg_witness_dir_wait(&wr->folder, &watch, 0);
	_cleanup_free_ char *req = NULL;
	f->err = pvg_witness_request(&wr->folder, &f->token, &req);
	if (f->err < 0) {
		f->token = 0;
		pvg_witness_watch_close(&watch);
		return;
	}
	uint64_t start = mono_ms(), deadline = start + (uint64_t)cfg->witness.answer_ms;
	for (;;) {
		size_t pending = pending_answers(ctx, wr);
		uint64_t now = mono_ms();
		if (!pending || now >= deadline)
			break;
		pvg_witness_dir_wait(&wr->folder, &watch,
				     (long)(deadline - now < 50 ? deadline - now : 50));
	}
	f->waited_ms = (long)(mono_ms() - start);
	pvg_witness_watch_close(&watch);
	pvg_witness_request_remove(&wr->folder, req);
}

/* ---- the files ----------------------------------------------------------------------------- */

/* witness-<nspid>-<start_ticks>-<boot>.pvgw: whose a file says it is, when its bytes cannot */
static bool name_is_target(const char *name, const struct witness_live *s)
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

/* A live file into the tally, and how fresh it is. */
static void tally_live(const struct pvg_ctx *ctx, struct witness_read *wr, struct witness_file *wf)
{
	struct witness_tally *ta = &wr->tally;
	const struct pvg_witness_header *h = &wf->read->file.h;
	ta->n_live++;
	if (h->flags & PVG_WITNESS_F_RECORDING)
		ta->recording++;
	else
		ta->note = h->note;
	ta->table_full |= (h->flags & PVG_WITNESS_F_TABLE_FULL) != 0;
	ta->graph_launches += h->graph_launches;
	ta->captured += h->captured;
	ta->launches += h->launches;
	ta->opaque += opaque_replays(h);
	ta->itemized += h->graph_replays_itemized;
	if (answered(h, wr->fresh.token)) {
		wf->fresh = WITNESS_ANSWERED;
		ta->n_answered++;
	} else if (h->flags & PVG_WITNESS_F_FINAL) {
		wf->fresh = WITNESS_FINAL;
		ta->n_final++;
	} else {
		wf->fresh = WITNESS_NO_ANSWER;
		ta->n_stale++;
		const struct pvg_witness_target *t = &wr->live.t[wf->which];
		wf->writer_alive = wr->fresh.token && h->version >= 2 &&
				   pvg_witness_proc_alive(ctx->procfs, t->pid, t->start_ticks);
	}
}

void dispatch_witness_read_files(const struct pvg_ctx *ctx, struct witness_read *wr)
{
	wr->dir_r = pvg_witness_dir_read(&wr->folder, keep_live, &wr->live, &wr->dir);
	if (wr->dir_r < 0)
		return;
	wr->files = pvg_xcalloc(wr->dir.n + 1, sizeof(*wr->files));
	for (size_t i = 0; i < wr->dir.n; i++) {
		const struct pvg_witness_read *f = &wr->dir.files[i];
		struct witness_file *wf = &wr->files[i];
		wf->read = f;
		if (f->err < 0 || f->perr != PVG_WITNESS_OK) {
			if (!f->too_large)
				wr->tally.unreadable++;
			wf->named_target = name_is_target(f->name, &wr->live);
			continue;
		}
		wf->readable = true;
		wf->attr = pvg_witness_attribute(&f->file.h, wr->live.boot_id, wr->live.t,
						 wr->live.n, &wf->which);
		wr->tally.attr_count[wf->attr]++;
		if (wf->attr == PVG_WITNESS_LIVE)
			tally_live(ctx, wr, wf);
		else if (wr->live.n_gone &&
			 pvg_witness_attribute(&f->file.h, wr->live.boot_id, wr->live.gone,
					       wr->live.n_gone, &wf->gone_which) == PVG_WITNESS_LIVE) {
			wf->exited = true;
			wr->tally.n_exited++;
		}
	}
}

/* ---- launches per requirement and forbid --------------------------------------------------- */

/* ---- the code that ran: module digests against the artifacts' code objects -------------- */

static const char *const from_names[] = {
	[WITNESS_FROM_ARTIFACT] = "artifact",   [WITNESS_FROM_NAME_ONLY] = "name-only",
	[WITNESS_FROM_OTHER] = "other-code",    [WITNESS_FROM_AMBIGUOUS] = "ambiguous",
	[WITNESS_FROM_PTX_JIT] = "ptx-jit",     [WITNESS_FROM_UNDECIDED] = "undecided",
	[WITNESS_FROM_JIT_LINKED] = "jit-linked", [WITNESS_FROM_JIT_UNKNOWN] = "undecided",
};

const char *dispatch_witness_from_name(enum witness_from f)
{
	return f < ARRAY_SIZE(from_names) ? from_names[f] : "?";
}

static const char *bind_name(uint32_t b)
{
	switch (b) {
	case PVG_WITNESS_BIND_HANDLE:
		return "handle";
	case PVG_WITNESS_BIND_LOADED_IN_CALL:
		return "loaded-in-call";
	case PVG_WITNESS_BIND_ONLY_NAME:
		return "only-name";
	case PVG_WITNESS_BIND_AMBIGUOUS:
		return "ambiguous";
	default:
		return "none";
	}
}

static void hex12(const uint8_t *sha, char out[13])
{
	for (int i = 0; i < 6; i++)
		snprintf(out + 2 * i, 3, "%02x", sha[i]);
}

char *dispatch_witness_module_text(const struct pvg_witness_mod *m)
{
	char h[13];
	hex12(m->sha256, h);
	_cleanup_free_ char *path = m->path.n ? pvg_utf8_sanitize(m->path.p,
								 m->path.n > 300 ? 300 : m->path.n)
					      : NULL;
	const char *where = path ? path
			    : m->origin == PVG_WITNESS_ORIGIN_MEMORY ? "memory"
								     : "(no path)";
	if (m->flags & PVG_WITNESS_M_NOT_HASHED)
		return pvg_asprintf("%s (%s, not hashed)", where, pvg_witness_origin_name(m->origin));
	return pvg_asprintf("%s (%s, sha256 %s…)", where, pvg_witness_origin_name(m->origin), h);
}

/* The artifacts' code objects by digest, as gate 6 reads them (pvg_artifact_code_objects:
 * the sha256 of each code object for the artifact's arch, as the driver or loader receives
 * it). A code object whose digest gate 6 wanted but could not take (malformed, unreadable)
 * may be what ran: launches of other bytes are then undecided, not "other code". */
static void read_code(struct pvg_ctx *ctx, struct witness_code *code)
{
	code->read = true;
	code->n_arts = ctx->n_arts;
	code->names = pvg_xcalloc(ctx->n_arts + 1, sizeof(*code->names));
	if (ctx->n_arts == 0)
		code->why = pvg_strdup("the config names no artifact");
	for (size_t ai = 0; ai < ctx->n_arts; ai++) {
		const char *name = ctx->arts[ai].a.name;
		code->names[ai] = name;
		const char *arch = pvg_artifact_arch(ctx->cfg, &ctx->arts[ai].a);
		const struct pvg_codeobj_set *set = pvg_artifact_code_objects(ctx, ai);
		if (!set) {
			if (!code->why)
				code->why = pvg_asprintf("%s: its code objects cannot be read (%s)", name,
							 !arch ? "arch is not set"
							       : "gate 6 says why");
			continue;
		}
		/* a container that could not be read whole, or a walk that stopped, may hide
		 * code objects the driver loads: no list of identities says what they are */
		if (!code->why && (set->n_issues || set->objs_truncated || set->incomplete))
			code->why = pvg_asprintf("%s: not every code object of it could be read (%s)",
						 name, set->incomplete ? set->incomplete
						 : set->n_issues ? set->issues[0].message
								 : "too many code objects");
		for (size_t k = 0; k < set->n_objs; k++) {
			const struct pvg_code_object *co = &set->objs[k];
			if (!co->digest_known) {
				/* a malformed one too: the runtime may load what this reader refuses */
				if (!pvg_co_identity_expected(set, co))
					continue;
				code->n_unknown++;
				if (!code->why)
					code->why = pvg_asprintf("%s: the sha256 of its code object %zu "
								 "for %s is not known%s%s",
								 name, k, arch, co->error ? ": " : "",
								 co->error ? co->error : "");
				continue;
			}
			code->d = pvg_xrealloc(code->d, code->n + 1, sizeof(*code->d));
			struct witness_digest *d = &code->d[code->n++];
			memcpy(d->sha256, co->sha256, 32);
			d->art = ai;
			d->obj = k;
		}
	}
}

enum witness_from dispatch_witness_from(const struct witness_code *code,
					const struct pvg_witness_file *f,
					const struct pvg_witness_entry *e,
					const struct pvg_witness_mod **mod,
					const struct witness_digest **d)
{
	*mod = NULL;
	*d = NULL;
	if (f->h.version < 3 || !(f->h.flags & PVG_WITNESS_F_MODULES) || !f->modules)
		return WITNESS_FROM_NAME_ONLY; /* a file without module identity: the name rule */
	/* the writer recorded modules, but not this launch's (its module found no room, or no
	 * loaded module defines the name): the code that ran is not known, and its name is no
	 * evidence for it */
	if (e->code == 0 || e->bind == PVG_WITNESS_BIND_NONE || e->code > f->n_modules)
		return WITNESS_FROM_UNDECIDED;
	const struct pvg_witness_mod *m = &f->modules[e->code - 1];
	*mod = m;
	if (e->bind == PVG_WITNESS_BIND_AMBIGUOUS)
		return WITNESS_FROM_AMBIGUOUS;
	if (m->origin == PVG_WITNESS_ORIGIN_PTX_JIT)
		return WITNESS_FROM_PTX_JIT;
	if (m->flags & PVG_WITNESS_M_NOT_HASHED)
		return WITNESS_FROM_UNDECIDED;
	/* launched after its module was unloaded: a record is keyed by the launched handle and
	 * bound once, so a handle the driver gave out again (to another module's function) went
	 * on counting in it; which code those launches ran is not known */
	if (m->unload_ns && e->last_ns > m->unload_ns)
		return WITNESS_FROM_UNDECIDED;
	for (size_t i = 0; i < code->n; i++)
		if (memcmp(code->d[i].sha256, m->sha256, 32) == 0) {
			*d = &code->d[i];
			return WITNESS_FROM_ARTIFACT;
		}
	/* JIT code from memory: its Triton cache entry says what it is (dispatch-triton.c) */
	if (m->origin == PVG_WITNESS_ORIGIN_MEMORY && code->jit) {
		switch (dispatch_triton_judge(code->jit, m)->v) {
		case TRITON_LINKED:
			return WITNESS_FROM_JIT_LINKED;
		case TRITON_NO_ENTRY:
		case TRITON_BAD_ENTRY:
		case TRITON_INSTALL_UNKNOWN:
			return WITNESS_FROM_JIT_UNKNOWN;
		default:
			return WITNESS_FROM_OTHER;
		}
	}
	/* other bytes: unless an artifact's code object could not be hashed (it may be that) */
	return code->why || !code->read ? WITNESS_FROM_UNDECIDED : WITNESS_FROM_OTHER;
}

/* ---- launches per requirement and forbid --------------------------------------------------- */

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static void count_need(const struct witness_read *wr, struct witness_need *nd)
{
	const struct pvg_witness_dir *dir = &wr->dir;
	const struct pvg_witness_require *w = nd->w;
	for (size_t i = 0; i < dir->n; i++) {
		const struct pvg_witness_read *f = &dir->files[i];
		for (size_t j = 0; f->bytes && j < f->file.n; j++) {
			const struct pvg_witness_entry *e = &f->file.entries[j];
			if (!kernel_matches(w->kernel, e))
				continue;
			if (w->via != PVG_WITNESS_REQUIRE_ANY && e->via == PVG_WITNESS_VIA_HSA_PACKET) {
				/* a dispatch packet does not say whether a hipGraph replay sent it */
				nd->packets += e->count;
				continue;
			} else if (!via_matches(w->via, e->via)) {
				nd->other_via += e->count;
				continue;
			} else if (!dims_match(w->grid, e->grid) || !dims_match(w->block, e->block)) {
				nd->name_only += e->count;
				nd->other = e;
				continue;
			}
			const struct pvg_witness_mod *m;
			const struct witness_digest *d;
			switch (dispatch_witness_from(&wr->code, &f->file, e, &m, &d)) {
			case WITNESS_FROM_NAME_ONLY:
				/* the name rule of files without module identity */
				nd->by_name = add_sat(nd->by_name, e->count);
				nd->got = add_sat(nd->got, e->count);
				if (PVG_WITNESS_VIA_IS_GRAPH(e->via))
					nd->in_graph += e->count;
				break;
			case WITNESS_FROM_ARTIFACT:
			case WITNESS_FROM_JIT_LINKED:
				nd->got = add_sat(nd->got, e->count);
				if (PVG_WITNESS_VIA_IS_GRAPH(e->via))
					nd->in_graph += e->count;
				break;
			case WITNESS_FROM_OTHER:
				nd->other_code = add_sat(nd->other_code, e->count);
				if (!nd->other_e || e->count > nd->other_e_n) {
					nd->other_e = e;
					nd->other_mod = m;
					nd->other_e_n = e->count;
				}
				break;
			case WITNESS_FROM_AMBIGUOUS:
				nd->ambiguous = add_sat(nd->ambiguous, e->count);
				break;
			case WITNESS_FROM_PTX_JIT:
				nd->jit = add_sat(nd->jit, e->count);
				break;
			case WITNESS_FROM_JIT_UNKNOWN:
				nd->jit_unknown = add_sat(nd->jit_unknown, e->count);
				/* fall through */
			case WITNESS_FROM_UNDECIDED:
				nd->undecided = add_sat(nd->undecided, e->count);
				break;
			}
		}
	}
}

/* Is a record a launch of one of s's kernels? Names read from objects are matched exactly
 * (the record's mangled name, an HSA kernel descriptor's ".kd" aside); names from the config
 * as witness.require's patterns are. */
static bool name_is(const struct pvg_witness_str *s, const char *want)
{
	size_t n = s->n, w = strlen(want);
	if (n >= 3 && memcmp(s->p + n - 3, ".kd", 3) == 0)
		n -= 3;
	if (w >= 3 && strcmp(want + w - 3, ".kd") == 0)
		w -= 3;
	return n == w && memcmp(s->p, want, n) == 0;
}

static bool source_matches(const struct changed_source *s, const struct pvg_witness_entry *e)
{
	for (size_t k = 0; k < s->kernels.n; k++) {
		const char *want = s->kernels.v[k];
		if (s->from_config ? dispatch_witness_kernel_matches(want, e) : name_is(&e->name, want))
			return true;
	}
	return false;
}

/* Is one of the artifacts the source is linked into a holder of these bytes? */
static bool in_source_artifact(const struct witness_code *code, const struct changed_source *c,
			       const uint8_t sha256[32])
{
	for (size_t i = 0; i < code->n; i++)
		if (code->d[i].art < code->n_arts && c->in_art[code->d[i].art] &&
		    memcmp(code->d[i].sha256, sha256, 32) == 0)
			return true;
	return false;
}

/* Is the JIT module m linked (by its Triton cache entry) to the source c itself? */
static bool linked_to(const struct witness_code *code, const struct pvg_witness_mod *m,
		      const struct changed_source *c)
{
	if (!m || !code->jit)
		return false;
	const struct triton_judged *d = dispatch_triton_judge(code->jit, m);
	return d->v == TRITON_LINKED && d->change && strcmp(d->change, c->path) == 0;
}

/* The launches of each changed source's kernels: any grid, any kind of launch. */
static void count_sources(const struct witness_read *wr, struct changed_sources *srcs)
{
	const struct pvg_witness_dir *dir = &wr->dir;
	for (size_t s = 0; s < srcs->n; s++) {
		struct changed_source *c = &srcs->v[s];
		struct source_count *n = &c->count;
		if (c->state != SOURCE_KERNELS)
			continue;
		for (size_t i = 0; i < dir->n; i++) {
			const struct pvg_witness_read *f = &dir->files[i];
			for (size_t j = 0; f->bytes && j < f->file.n; j++) {
				const struct pvg_witness_entry *e = &f->file.entries[j];
				if (!source_matches(c, e))
					continue;
				const struct pvg_witness_mod *m;
				const struct witness_digest *d;
				uint64_t k = e->count;
				enum witness_from from = dispatch_witness_from(&wr->code, &f->file, e, &m, &d);
				/* another configured artifact's copy of the name: not the code the
				 * source was built into */
				if (from == WITNESS_FROM_ARTIFACT && c->in_art && m &&
				    !in_source_artifact(&wr->code, c, m->sha256))
					from = WITNESS_FROM_OTHER;
				/* a .py's Triton kernels are code compiled from that file: an
				 * artifact's copy of the name is not, and neither is a JIT module
				 * linked to another changed file (the same kernel name in two .py
				 * files, or a .cu's kernel name) */
				if (from == WITNESS_FROM_ARTIFACT && c->triton)
					from = WITNESS_FROM_OTHER;
				if (from == WITNESS_FROM_JIT_LINKED && !linked_to(&wr->code, m, c))
					from = WITNESS_FROM_OTHER;
				switch (from) {
				case WITNESS_FROM_ARTIFACT:
				case WITNESS_FROM_JIT_LINKED:
					n->from_artifact = add_sat(n->from_artifact, k);
					break;
				case WITNESS_FROM_NAME_ONLY:
					n->name_only = add_sat(n->name_only, k);
					break;
				case WITNESS_FROM_OTHER:
					n->elsewhere = add_sat(n->elsewhere, k);
					if (!n->other || k > n->other_n) {
						n->other = e;
						n->other_mod = m;
						n->other_n = k;
					}
					break;
				case WITNESS_FROM_AMBIGUOUS:
					n->ambiguous = add_sat(n->ambiguous, k);
					break;
				case WITNESS_FROM_PTX_JIT:
					n->jit = add_sat(n->jit, k);
					break;
				case WITNESS_FROM_JIT_UNKNOWN:
					n->jit_unknown = add_sat(n->jit_unknown, k);
					/* fall through */
				case WITNESS_FROM_UNDECIDED:
					n->undecided = add_sat(n->undecided, k);
					break;
				}
			}
		}
	}
}

static void count_seen(const struct pvg_witness_dir *dir, struct witness_seen *s)
{
	for (size_t i = 0; i < dir->n; i++) {
		const struct pvg_witness_read *f = &dir->files[i];
		for (size_t j = 0; f->bytes && j < f->file.n; j++)
			if (kernel_matches(s->pattern, &f->file.entries[j])) {
				s->n += f->file.entries[j].count;
				s->seen = &f->file.entries[j];
			}
	}
}

/* Does a live record name its module? Only then are the artifacts' code objects read. */
static bool any_module(const struct pvg_witness_dir *dir)
{
	for (size_t i = 0; i < dir->n; i++) {
		const struct pvg_witness_read *f = &dir->files[i];
		/* a file that records modules: its launches without one are judged too */
		if (f->bytes && f->file.h.version >= 3 && (f->file.h.flags & PVG_WITNESS_F_MODULES))
			return true;
		for (size_t j = 0; f->bytes && f->file.h.version >= 3 && j < f->file.n; j++)
			if (f->file.entries[j].code)
				return true;
	}
	return false;
}

void dispatch_witness_count(struct pvg_ctx *ctx, struct witness_read *wr)
{
	const struct pvg_config *cfg = ctx->cfg;
	if (!wr->code.read && any_module(&wr->dir))
		read_code(ctx, &wr->code);
	wr->needs = pvg_xcalloc(cfg->witness.n_require + 1, sizeof(*wr->needs));
	for (size_t k = 0; k < cfg->witness.n_require; k++) {
		struct witness_need *nd = &wr->needs[k];
		nd->w = &cfg->witness.require[k];
		nd->need = nd->w->min_count > 0	       ? nd->w->min_count
			   : cfg->witness.min_count > 1 ? cfg->witness.min_count
							: 1;
		count_need(wr, nd);
	}
	if (wr->sources)
		count_sources(wr, wr->sources);
	wr->seen = pvg_xcalloc(cfg->witness.forbid.n + 1, sizeof(*wr->seen));
	for (size_t k = 0; k < cfg->witness.forbid.n; k++) {
		wr->seen[k].pattern = cfg->witness.forbid.v[k];
		count_seen(&wr->dir, &wr->seen[k]);
	}
}

/* ---- evidence ------------------------------------------------------------------------------ */

void dispatch_witness_live_evidence(cJSON *ev, const struct witness_read *wr)
{
	cJSON *procs = cJSON_AddArrayToObject(ev, "processes");
	for (size_t i = 0; i < wr->live.n; i++) {
		const struct pvg_witness_target *w = &wr->live.t[i];
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_int(o, "pid", (int)w->pid);
		pvg_json_add_int(o, "nspid", (int)w->nspid);
		pvg_json_add_u64(o, "start_ticks", w->start_ticks);
		cJSON_AddItemToArray(procs, o);
	}
	pvg_json_add_str(ev, "boot_id", wr->live.boot_id[0] ? wr->live.boot_id : NULL);
}

void dispatch_witness_env_evidence(cJSON *ev, const struct witness_read *wr)
{
	const struct witness_env *env = &wr->env;
	cJSON *o = cJSON_AddObjectToObject(ev, "environment");
	pvg_json_add_int(o, "pid", (int)env->pid);
	if (env->dir_r < 0 && env->dir_r != -ENOENT)
		return;
	pvg_json_add_str(o, PVG_WITNESS_DIR_ENV, env->dir);
	if (env->lib_var)
		pvg_json_add_str(o, env->lib_var, env->lib);
}

void dispatch_witness_folder_evidence(cJSON *ev, const struct witness_read *wr)
{
	cJSON *fj = cJSON_AddObjectToObject(ev, "folder");
	pvg_json_add_int(fj, "owner_uid", (int)wr->folder.st.st_uid);
	pvg_json_add_int(fj, "owner_gid", (int)wr->folder.st.st_gid);
	char mode[8];
	snprintf(mode, sizeof(mode), "%04o", (unsigned)(wr->folder.st.st_mode & 07777));
	pvg_json_add_str(fj, "mode", mode);
}

void dispatch_witness_request_evidence(cJSON *ev, const struct pvg_config *cfg,
				       const struct witness_read *wr)
{
	cJSON *rq = cJSON_AddObjectToObject(ev, "request");
	pvg_json_add_u64(rq, "token", wr->fresh.token);
	pvg_json_add_int(rq, "answer_ms", (int)cfg->witness.answer_ms);
	pvg_json_add_int(rq, "waited_ms", (int)wr->fresh.waited_ms);
}

static const char *const fresh_names[] = {
	[WITNESS_ANSWERED] = "answered",
	[WITNESS_FINAL] = "final",
	[WITNESS_NO_ANSWER] = "no-answer",
};

static cJSON *live_file_json(const struct witness_read *wr, const struct witness_file *wf)
{
	const struct pvg_witness_header *h = &wf->read->file.h;
	cJSON *o = cJSON_CreateObject();
	pvg_json_add_str(o, "file", wf->read->name);
	pvg_json_add_int(o, "pid", (int)wr->live.t[wf->which].pid);
	pvg_json_add_int(o, "nspid", h->nspid);
	pvg_json_add_str(o, "api", h->api == PVG_WITNESS_API_CUDA ? "cuda"
				   : h->api == PVG_WITNESS_API_HSA ? "hsa" : "none");
	pvg_json_add_bool(o, "recording", (h->flags & PVG_WITNESS_F_RECORDING) != 0);
	pvg_json_add_bool(o, "final", (h->flags & PVG_WITNESS_F_FINAL) != 0);
	pvg_json_add_str(o, "note", h->note);
	pvg_json_add_str(o, "fresh", fresh_names[wf->fresh]);
	pvg_json_add_int(o, "version", (int)h->version);
	pvg_json_add_u64(o, "launches", h->launches);
	pvg_json_add_u64(o, "launches_dropped", h->launches_dropped);
	pvg_json_add_u64(o, "records", h->n_records);
	char ts[48];
	pvg_format_time((time_t)(h->written_ns / 1000000000u), (long)(h->written_ns % 1000000000u),
			ts, sizeof(ts));
	cJSON_AddStringToObject(o, "written_at", ts);
	return o;
}

void dispatch_witness_files_evidence(cJSON *ev, const struct witness_read *wr)
{
	const struct witness_tally *ta = &wr->tally;
	cJSON *files = cJSON_AddArrayToObject(ev, "live_files");
	for (size_t i = 0; i < wr->dir.n; i++)
		if (wr->files[i].readable && wr->files[i].attr == PVG_WITNESS_LIVE)
			cJSON_AddItemToArray(files, live_file_json(wr, &wr->files[i]));
	cJSON *ign = cJSON_AddObjectToObject(ev, "ignored_files");
	pvg_json_add_u64(ign, "earlier_boot", ta->attr_count[PVG_WITNESS_OTHER_BOOT]);
	pvg_json_add_u64(ign, "pid_reused", ta->attr_count[PVG_WITNESS_PID_REUSED]);
	pvg_json_add_u64(ign, "foreign_namespace", ta->attr_count[PVG_WITNESS_FOREIGN_NS]);
	pvg_json_add_u64(ign, "not_target", ta->attr_count[PVG_WITNESS_NOT_TARGET]);
	pvg_json_add_u64(ign, "unreadable", ta->unreadable);
	if (wr->dir.over_limit)
		pvg_json_add_u64(ign, "over_limit", wr->dir.over_limit);
	/* skipped unread: what is no regular file is never opened, what is over the cap by
	 * its size never read */
	pvg_json_add_u64(ign, "not_regular", wr->dir.not_regular);
	pvg_json_add_u64(ign, "too_large", wr->dir.too_large);
	pvg_json_add_u64(ev, "graph_launches", ta->graph_launches);
	pvg_json_add_u64(ev, "graph_replays_itemized", ta->itemized);
	pvg_json_add_u64(ev, "graph_replays_opaque", ta->opaque);
	pvg_json_add_u64(ev, "captured_launches", ta->captured);
	cJSON *rq = cJSON_GetObjectItemCaseSensitive(ev, "request");
	pvg_json_add_u64(rq, "answered", ta->n_answered);
	pvg_json_add_u64(rq, "final", ta->n_final);
	pvg_json_add_u64(rq, "not_answered", ta->n_stale);
}

/* The modules the live records name, each once (file, index), at most 64 listed. */
struct module_list {
	const struct pvg_witness_read *f[64];
	uint32_t code[64];
	size_t n, total;
};

static long module_index(struct module_list *ml, const struct pvg_witness_read *f, uint32_t code)
{
	for (size_t i = 0; i < ml->n; i++)
		if (ml->f[i] == f && ml->code[i] == code)
			return (long)i;
	ml->total++;
	if (ml->n == ARRAY_SIZE(ml->f))
		return -1;
	ml->f[ml->n] = f;
	ml->code[ml->n] = code;
	return (long)ml->n++;
}

static cJSON *module_json(const struct witness_read *wr, const struct pvg_witness_read *f,
			  uint32_t code)
{
	const struct pvg_witness_mod *m = &f->file.modules[code - 1];
	cJSON *o = cJSON_CreateObject();
	char hex[65];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", m->sha256[i]);
	pvg_json_add_str(o, "file", f->name);
	pvg_json_add_int(o, "index", (int)code);
	pvg_json_add_str(o, "sha256", (m->flags & PVG_WITNESS_M_NOT_HASHED) ? NULL : hex);
	pvg_json_add_u64(o, "size", m->size);
	pvg_json_add_str(o, "origin", pvg_witness_origin_name(m->origin));
	_cleanup_free_ char *path = m->path.n ? pvg_utf8_sanitize(m->path.p, m->path.n) : NULL;
	pvg_json_add_str(o, "path", path);
	char ts[48];
	pvg_format_time((time_t)(m->load_ns / 1000000000u), (long)(m->load_ns % 1000000000u), ts,
			sizeof(ts));
	cJSON_AddStringToObject(o, "loaded_at", ts);
	if (m->unload_ns) {
		pvg_format_time((time_t)(m->unload_ns / 1000000000u),
				(long)(m->unload_ns % 1000000000u), ts, sizeof(ts));
		cJSON_AddStringToObject(o, "unloaded_at", ts);
	}
	pvg_json_add_bool(o, "hashed", !(m->flags & PVG_WITNESS_M_NOT_HASHED));
	pvg_json_add_bool(o, "compressed", (m->flags & PVG_WITNESS_M_COMPRESSED) != 0);
	/* one of which artifact's code objects (by its bytes), when the digests were read */
	const struct witness_code *code_set = &wr->code;
	const struct witness_digest *d = NULL;
	for (size_t i = 0; code_set->read && i < code_set->n && !(m->flags & PVG_WITNESS_M_NOT_HASHED);
	     i++)
		if (memcmp(code_set->d[i].sha256, m->sha256, 32) == 0)
			d = &code_set->d[i];
	if (d) {
		pvg_json_add_str(o, "artifact", code_set->names[d->art]);
		pvg_json_add_int(o, "code_object", (int)d->obj);
	} else {
		cJSON_AddNullToObject(o, "artifact");
	}
	return o;
}

void dispatch_witness_kernels_evidence(cJSON *ev, const struct witness_read *wr)
{
	const struct pvg_witness_entry *top[32];
	const struct pvg_witness_read *top_f[32];
	size_t n_top = 0, n_all = 0;
	for (size_t i = 0; i < wr->dir.n; i++) {
		const struct pvg_witness_read *f = &wr->dir.files[i];
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
				top_f[at] = top_f[at - 1];
				at--;
			}
			top[at] = e;
			top_f[at] = f;
		}
	}
	struct module_list ml = { .n = 0 };
	cJSON *ks = cJSON_AddArrayToObject(ev, "kernels");
	for (size_t i = 0; i < n_top; i++) {
		_cleanup_free_ char *nm = dispatch_witness_entry_name(top[i]);
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_str(o, "name", nm);
		cJSON_AddItemToObject(o, "grid", dims_json(top[i]->grid));
		cJSON_AddItemToObject(o, "block", dims_json(top[i]->block));
		pvg_json_add_u64(o, "count", top[i]->count);
		if (PVG_WITNESS_VIA_IS_GRAPH(top[i]->via))
			pvg_json_add_str(o, "via", "graph");
		const struct pvg_witness_mod *m;
		const struct witness_digest *d;
		enum witness_from from = dispatch_witness_from(&wr->code, &top_f[i]->file, top[i],
							       &m, &d);
		pvg_json_add_str(o, "code", dispatch_witness_from_name(from));
		pvg_json_add_str(o, "bind", bind_name(top[i]->bind));
		if (m) {
			long mi = module_index(&ml, top_f[i], top[i]->code);
			if (mi >= 0)
				pvg_json_add_int(o, "module", (int)mi);
		}
		cJSON_AddItemToArray(ks, o);
	}
	pvg_json_add_u64(ev, "kernels_total", n_all);
	/* the modules of every live record (those of the kernels above first) */
	for (size_t i = 0; i < wr->dir.n; i++) {
		const struct pvg_witness_read *f = &wr->dir.files[i];
		for (size_t j = 0; f->bytes && f->file.h.version >= 3 && j < f->file.n; j++) {
			uint32_t c = f->file.entries[j].code;
			if (c && c <= f->file.n_modules)
				(void)module_index(&ml, f, c);
		}
	}
	cJSON *mods = cJSON_AddArrayToObject(ev, "modules");
	for (size_t i = 0; i < ml.n; i++)
		cJSON_AddItemToArray(mods, module_json(wr, ml.f[i], ml.code[i]));
	pvg_json_add_u64(ev, "modules_total", ml.total);
	if (wr->code.read) {
		cJSON *cj = cJSON_AddObjectToObject(ev, "artifact_code");
		pvg_json_add_u64(cj, "digests", wr->code.n);
		pvg_json_add_u64(cj, "digests_unknown", wr->code.n_unknown);
		pvg_json_add_str(cj, "why", wr->code.why);
	}
}

void dispatch_witness_required_evidence(cJSON *ev, const struct pvg_config *cfg,
					const struct witness_read *wr)
{
	cJSON *req = cJSON_AddArrayToObject(ev, "required");
	for (size_t k = 0; k < cfg->witness.n_require; k++) {
		const struct witness_need *nd = &wr->needs[k];
		const struct pvg_witness_require *w = nd->w;
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_str(o, "kernel", w->kernel);
		if (w->grid[0])
			cJSON_AddItemToObject(o, "grid", dims_json(w->grid));
		if (w->block[0])
			cJSON_AddItemToObject(o, "block", dims_json(w->block));
		if (via_name(w->via))
			pvg_json_add_str(o, "via", via_name(w->via));
		pvg_json_add_u64(o, "count", nd->got);
		pvg_json_add_u64(o, "linked_by_name_only", nd->by_name);
		pvg_json_add_u64(o, "other_code", nd->other_code);
		pvg_json_add_u64(o, "code_undecided", nd->ambiguous + nd->jit + nd->undecided);
		pvg_json_add_u64(o, "in_graph_replays", nd->in_graph);
		pvg_json_add_int(o, "min_count", (int)nd->need);
		cJSON_AddItemToArray(req, o);
	}
}

void dispatch_witness_chain(struct pvg_ctx *ctx, const struct pvg_config *cfg,
			    const struct witness_read *wr)
{
	size_t met = 0, forbidden = 0;
	for (size_t k = 0; k < cfg->witness.n_require; k++)
		met += (long double)wr->needs[k].got >= (long double)wr->needs[k].need;
	for (size_t k = 0; k < cfg->witness.forbid.n; k++)
		forbidden += wr->seen[k].seen != NULL;
	cJSON *chain = cJSON_CreateObject();
	cJSON_AddNumberToObject(chain, "live_files", (double)wr->tally.n_live);
	cJSON_AddNumberToObject(chain, "required_met", (double)met);
	cJSON_AddNumberToObject(chain, "required", (double)cfg->witness.n_require);
	cJSON_AddNumberToObject(chain, "forbidden_seen", (double)forbidden);
	if (wr->sources && wr->sources->applies) {
		size_t req = 0, src_met = 0;
		for (size_t i = 0; i < wr->sources->n; i++) {
			const struct changed_source *c = &wr->sources->v[i];
			if (c->state != SOURCE_KERNELS && c->state != SOURCE_UNKNOWN)
				continue;
			req++;
			src_met += c->state == SOURCE_KERNELS && c->count.from_artifact > 0;
		}
		cJSON_AddNumberToObject(chain, "changed_sources_met", (double)src_met);
		cJSON_AddNumberToObject(chain, "changed_sources", (double)req);
	}
	pvg_chain_set(ctx, "witness", chain);
}
