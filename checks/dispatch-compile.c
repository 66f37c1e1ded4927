/* SPDX-License-Identifier: MIT */
/*
 * Gate 7's compile-cache rule: its facts (the log's cache folders, the folders themselves, the
 * service's cache root, the change set's installed .py files) and its decision. See
 * dispatch-compile.h.
 *
 * vLLM's own words, as vllm/compilation/backends.py (VllmBackend.__call__ and
 * CompilerManager.compile) logs them at INFO, each line with the process's tag
 * ("(EngineCore_DP0 pid=N)", a worker's "(VllmWorker rank=R pid=N)"):
 *   "Using cache directory: %s for vLLM's torch.compile"   local_cache_dir, that is
 *       os.path.join(cache_dir, f"rank_{rank}_{dp_rank}", prefix), cache_dir being
 *       os.path.join(envs.VLLM_CACHE_ROOT, "torch_compile_cache", hash_key) or the
 *       compilation config's own cache_dir
 *   "vLLM's torch.compile cache is disabled."               VLLM_DISABLE_COMPILE_CACHE
 *   "Directly load the compiled graph(s) for dynamic shape from the cache, took %.3f s"
 *   "Directly load the compiled graph(s) for compile range %s from the cache, took %.3f s"
 *   "Compiling a graph for dynamic shape takes %.2f s" (and "for compile range %s", older
 *       "for shape %s", "for general shape")
 * The load line is written when the last piecewise graph of a shape was loaded; a graph
 * compiled for that shape after earlier ones loaded logs the compile line only.
 * vllm/envs.py: VLLM_CACHE_ROOT = expanduser($VLLM_CACHE_ROOT or
 * ${XDG_CACHE_HOME:-~/.cache}/vllm); VLLM_DISABLE_COMPILE_CACHE = bool(int(value or "0")).
 * In the folder (CompilerManager.initialize_cache): vllm_compile_cache.py (the handles of the
 * compiled graphs, rewritten when a graph is added), computation_graph.py (written once, when
 * absent: split_gm.print_readable(), whose nodes' stack traces print as
 * "# File: PATH:LINE in FUNC, code: ..."), inductor_cache/, triton_cache/.
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dispatch-compile.h"
#include "sys/vllm-cache.h"

/* ---- the log ------------------------------------------------------------------------------ */

#define USING "Using cache directory: "
#define USING_END " for vLLM's torch.compile"

static struct compile_use *add_use(struct compile_facts *cf, const char *dir, size_t n,
				   const struct pvg_log_event *e)
{
	cf->uses_total++;
	if (cf->n_uses == COMPILE_USES_MAX)
		return NULL;
	if (!cf->uses)
		cf->uses = pvg_xcalloc(COMPILE_USES_MAX, sizeof(*cf->uses));
	struct compile_use *u = &cf->uses[cf->n_uses++];
	u->dir = pvg_xcalloc(1, n + 1);
	memcpy(u->dir, dir, n);
	u->has_pid = e->has_pid;
	u->pid = e->has_pid ? e->pid : 0;
	return u;
}

/* The folder a process used last: the latest use of the same pid (or of no pid). */
static struct compile_use *last_use(struct compile_facts *cf, const struct pvg_log_event *e)
{
	for (size_t i = cf->n_uses; i-- > 0;) {
		struct compile_use *u = &cf->uses[i];
		if (u->has_pid == e->has_pid && (!e->has_pid || u->pid == e->pid))
			return u;
	}
	return NULL;
}

/* Lines without a pid that name more than one folder: a load may be any of theirs. */
static void mark_pidless(struct compile_facts *cf, bool loaded, bool compiled)
{
	const char *first = NULL;
	bool several = false;
	for (size_t i = 0; i < cf->n_uses; i++) {
		if (cf->uses[i].has_pid)
			continue;
		if (first && strcmp(first, cf->uses[i].dir) != 0)
			several = true;
		first = first ? first : cf->uses[i].dir;
	}
	if (!several)
		return;
	for (size_t i = 0; i < cf->n_uses; i++) {
		struct compile_use *u = &cf->uses[i];
		if (u->has_pid)
			continue;
		u->ambiguous = true;
		u->loaded |= loaded;
		u->compiled |= compiled;
	}
}

static int by_offset(const void *a, const void *b)
{
	const struct pvg_log_event *x = *(const struct pvg_log_event *const *)a;
	const struct pvg_log_event *y = *(const struct pvg_log_event *const *)b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

void dispatch_compile_from_log(const struct marker_read *m, struct compile_facts *cf)
{
	if (!m) {
		cf->log_why = pvg_strdup("markers.log is not configured: no service log is read");
		return;
	}
	if (!dispatch_markers_scanned(m)) {
		cf->log_why = pvg_strdup(m->view_r < 0 ? "no live service to attribute log lines to"
							: "the service log could not be read");
		return;
	}
	if (!m->events) {
		cf->log_why = pvg_strdup("no process of the service is named vLLM, so its log was not "
					 "searched for torch.compile lines");
		return;
	}
	cf->log_read = true;
	const struct pvg_marker_scan *s = &m->scan;
	cf->lines_lost = s->events_live - s->events_kept;
	/* the scan notes a block's lines pattern by pattern: in the log's order again */
	const struct pvg_log_event *ev[PVG_MARKER_EVENTS];
	for (size_t k = 0; k < s->events_kept; k++)
		ev[k] = &s->event[(s->events_first + k) % PVG_MARKER_EVENTS];
	qsort(ev, s->events_kept, sizeof(ev[0]), by_offset);
	for (size_t k = 0; k < s->events_kept; k++) {
		const struct pvg_log_event *e = ev[k];
		const char *t = e->text, *p;
		if ((p = strstr(t, USING)) != NULL) {
			p += strlen(USING);
			const char *q = strstr(p, USING_END);
			if (!q) /* cut short: its folder is not known */
				q = p;
			add_use(cf, p, (size_t)(q - p), e);
		} else if (strstr(t, "vLLM's torch.compile cache is disabled")) {
			cf->disabled_lines++;
		} else {
			bool loaded = strstr(t, "Directly load the compiled graph(s) for ") != NULL;
			bool compiled = strstr(t, "Compiling a graph for ") != NULL;
			if (!loaded && !compiled)
				continue;
			struct compile_use *u = last_use(cf, e);
			if (!u) {
				cf->loads_untold += loaded;
				continue;
			}
			u->loaded |= loaded;
			u->compiled |= compiled;
			if (!e->has_pid)
				mark_pidless(cf, loaded, compiled);
		}
	}
}

/* ---- the service and its cache root ------------------------------------------------------- */

struct open_scan {
	char *found;
};

static bool open_fd(void *opaque, int dirfd, int fd, const char *link)
{
	struct open_scan *o = opaque;
	(void)dirfd, (void)fd;
	if (o->found || !strstr(link, "/torch_compile_cache/"))
		return true;
	o->found = pvg_utf8_sanitize(link, strnlen(link, 400));
	return false;
}

/* The process of the tree whose own-namespace pid is pid, else the primary. */
static pid_t host_pid(const struct pvg_targets *t, bool has_pid, pid_t pid)
{
	for (size_t i = 0; has_pid && i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (p->in_tree && (p->ns_pid ? p->ns_pid == pid : p->pid == pid))
			return p->pid;
	}
	return t->primary;
}

static void read_service(struct pvg_ctx *ctx, struct compile_facts *cf, const struct pvg_targets *t)
{
	const struct pvg_proc *root = pvg_targets_find(t, t->root);
	if (root)
		cf->start = root->start;
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!p->in_tree)
			continue;
		cf->vllm |= pvg_names_vllm(p->comm) || pvg_names_vllm(p->cmdline);
		struct open_scan o = { 0 };
		if (!cf->open_folder && pvg_proc_fds(ctx->procfs, p->pid, open_fd, &o) == 0 && o.found)
			cf->open_folder = o.found;
		else
			free(o.found);
	}
	/* vllm/envs.py's VLLM_CACHE_ROOT */
	struct pvg_vllm_cache c;
	pvg_vllm_cache_read(ctx->procfs, t->primary, &c);
	cf->env_read = c.env_read;
	cf->env_disabled = c.disabled;
	cf->cache_root = TAKE_PTR(c.root);
	cf->root_exists = c.exists;
	pvg_vllm_cache_clear(&c);
}

/* ---- the folders -------------------------------------------------------------------------- */

/* The older mtime of the graph files in the folder. */
static void folder_times(int dfd, struct compile_use *u)
{
	static const char *const files[] = { "vllm_compile_cache.py", "computation_graph.py" };
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		struct stat st;
		if (fstatat(dfd, files[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (!u->has_graphs || st.st_mtim.tv_sec < u->written.tv_sec ||
		    (st.st_mtim.tv_sec == u->written.tv_sec && st.st_mtim.tv_nsec < u->written.tv_nsec))
			u->written = st.st_mtim;
		u->has_graphs = true;
	}
}

/* The files computation_graph.py's "# File: PATH:LINE ..." comments name, once each; the
 * number of comments. */
static size_t graph_files(const char *text, size_t len, struct pvg_strv *out)
{
	size_t n = 0;
	const char *p = text, *end = text + len;
	while (p < end && (p = memmem(p, (size_t)(end - p), "# File: ", 8)) != NULL) {
		n++;
		p += 8;
		const char *le = memchr(p, '\n', (size_t)(end - p));
		le = le ? le : end;
		const char *q = p;
		while (q + 1 < le && !(q[0] == ':' && q[1] >= '0' && q[1] <= '9'))
			q++;
		if (q + 1 >= le || q == p || (size_t)(q - p) >= PATH_MAX)
			continue;
		_cleanup_free_ char *path = pvg_xcalloc(1, (size_t)(q - p) + 1);
		memcpy(path, p, (size_t)(q - p));
		pvg_strv_add_unique(out, path);
	}
	return n;
}

/* Is the change's installed file one the graph names: the same path, or (a service in
 * another mount namespace sees it elsewhere) a named file of the same name that is the same
 * file, opened as the service sees it. */
static bool graph_names(struct pvg_ctx *ctx, pid_t pid, const struct pvg_strv *named,
			const struct compile_change *c)
{
	if (pvg_strv_has(named, c->installed))
		return true;
	if (c->err)
		return false;
	const char *base = strrchr(c->installed, '/');
	base = base ? base + 1 : c->installed;
	for (size_t i = 0; i < named->n; i++) {
		const char *nb = strrchr(named->v[i], '/');
		if (!nb || strcmp(nb + 1, base) != 0 || named->v[i][0] != '/')
			continue;
		struct stat st;
		_cleanup_close_ int fd = pvg_proc_open_as(ctx->procfs, pid, named->v[i], false, 0,
							  NULL);
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
			return true;
	}
	return false;
}

static bool under_model_executor(const char *path)
{
	return strstr(path, "/vllm/model_executor/") != NULL;
}

static void read_folder(struct pvg_ctx *ctx, const struct pvg_targets *t, struct compile_facts *cf,
			struct compile_use *u)
{
	u->read = true;
	u->traced = pvg_xcalloc(cf->n_changes + 1, sizeof(*u->traced));
	u->traced_how = pvg_xcalloc(cf->n_changes + 1, sizeof(*u->traced_how));
	if (!u->dir[0]) {
		u->err = -ENAMETOOLONG; /* the line was cut before the folder's end */
		return;
	}
	pid_t pid = host_pid(t, u->has_pid, u->pid);
	_cleanup_close_ int dfd = pvg_proc_open_as(ctx->procfs, pid, u->dir, true, 0, &u->refused);
	if (dfd < 0) {
		u->err = dfd;
		return;
	}
	folder_times(dfd, u);
	u->preexisting = u->has_graphs &&
			 (u->written.tv_sec < cf->start.tv_sec ||
			  (u->written.tv_sec == cf->start.tv_sec && u->written.tv_nsec < cf->start.tv_nsec));
	struct pvg_creds creds;
	bool as_user = pvg_proc_creds(ctx->procfs, pid, &creds) == 0;
	const struct pvg_untrusted how = { .root_fd = -1, .max_size = COMPILE_GRAPH_MAX,
					   .nofollow = true, .as = as_user ? &creds : NULL };
	struct pvg_untrusted_file f = { 0 };
	_cleanup_close_ int gfd = pvg_openat_untrusted(dfd, "computation_graph.py", &how, &f);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (gfd < 0)
		u->named_why = pvg_asprintf("computation_graph.py: %s",
					    f.refused ? pvg_refusal_text(f.refused) : strerror(-gfd));
	else if (pvg_read_fd(gfd, COMPILE_GRAPH_MAX, &text, &len) < 0)
		u->named_why = pvg_strdup("computation_graph.py could not be read");
	else
		u->named_read = true;
	_cleanup_(pvg_strv_clear) struct pvg_strv named = { 0 };
	if (u->named_read)
		u->n_named = graph_files(text, len, &named);
	for (size_t i = 0; i < cf->n_changes; i++) {
		const struct compile_change *c = &cf->changes[i];
		if (u->named_read && graph_names(ctx, pid, &named, c))
			u->traced_how[i] = "named in computation_graph.py";
		else if (c->glob)
			u->traced_how[i] = "compile_cache.traced";
		else if (!u->named_read && c->model_executor)
			u->traced_how[i] = "under vllm/model_executor/ (computation_graph.py not read)";
		u->traced[i] = u->traced_how[i] != NULL;
	}
}

/* ---- the change --------------------------------------------------------------------------- */

static bool is_py(const char *p)
{
	size_t n = strlen(p);
	return n > 3 && strcmp(p + n - 3, ".py") == 0;
}

static void read_change(struct pvg_ctx *ctx, struct compile_facts *cf)
{
	const struct pvg_scope *scope;
	int r = pvg_scope_get(ctx, &scope);
	if (r < 0 || !scope || scope->err) {
		cf->change_why = pvg_strdup(scope && scope->msg.text ? scope->msg.text
								     : "the change set cannot be read");
		return;
	}
	cf->change_read = true;
	for (size_t i = 0; i < scope->n && cf->n_changes < COMPILE_CHANGES_MAX; i++) {
		const struct pvg_change *ch = &scope->changes[i];
		if (ch->cls != PVG_SCOPE_MAPPED || !ch->install_path || ch->kind == 'D' ||
		    !is_py(ch->path))
			continue;
		if (!cf->changes)
			cf->changes = pvg_xcalloc(COMPILE_CHANGES_MAX, sizeof(*cf->changes));
		struct compile_change *c = &cf->changes[cf->n_changes++];
		c->path = pvg_strdup(ch->path);
		c->installed = pvg_strdup(ch->install_path);
		for (size_t k = 0; k < ctx->cfg->compile_cache.traced.n; k++)
			c->glob |= pvg_glob_match(ctx->cfg->compile_cache.traced.v[k], ch->path);
		c->model_executor = under_model_executor(ch->install_path);
		/* the installed file itself (a link followed, as Python imports it), never a
		 * device */
		const struct pvg_untrusted how = { .root_fd = -1, .service_side = true };
		struct pvg_untrusted_file f = { 0 };
		int fd = pvg_open_untrusted(ch->install_path, &how, &f);
		if (fd < 0) {
			c->err = fd;
			continue;
		}
		close(fd);
		struct stat st = f.st;
		c->dev = st.st_dev;
		c->ino = st.st_ino;
		bool later = st.st_ctim.tv_sec > st.st_mtim.tv_sec ||
			     (st.st_ctim.tv_sec == st.st_mtim.tv_sec &&
			      st.st_ctim.tv_nsec > st.st_mtim.tv_nsec);
		c->took = later ? st.st_ctim : st.st_mtim;
	}
}

void dispatch_compile_read(struct pvg_ctx *ctx, struct compile_facts *cf)
{
	read_change(ctx, cf);
	const struct pvg_targets *t;
	if (pvg_targets_get(ctx, &t) < 0 || t->err)
		return;
	cf->service = true;
	read_service(ctx, cf, t);
	for (size_t i = 0; i < cf->n_uses; i++)
		read_folder(ctx, t, cf, &cf->uses[i]);
}

void dispatch_compile_clear(struct compile_facts *cf)
{
	for (size_t i = 0; i < cf->n_uses; i++) {
		free(cf->uses[i].dir);
		free(cf->uses[i].named_why);
		free(cf->uses[i].traced);
		free(cf->uses[i].traced_how);
	}
	free(cf->uses);
	for (size_t i = 0; i < cf->n_changes; i++) {
		free(cf->changes[i].path);
		free(cf->changes[i].installed);
	}
	free(cf->changes);
	free(cf->log_why);
	free(cf->cache_root);
	free(cf->open_folder);
	free(cf->change_why);
	memset(cf, 0, sizeof(*cf));
}

/* ---- the rule ----------------------------------------------------------------------------- */

bool dispatch_compile_in_use(const struct compile_facts *cf)
{
	if (cf->open_folder)
		return true;
	return cf->vllm && !cf->env_disabled && (cf->root_exists || (cf->env_read && !cf->cache_root));
}

static bool ts_before(struct timespec a, struct timespec b)
{
	return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

static void fmt_ts(struct timespec t, char *out, size_t n)
{
	pvg_format_time(t.tv_sec, t.tv_nsec, out, n);
}

#define STALE_HINT                                                                                \
	"remove the cache folder (or start the service with VLLM_DISABLE_COMPILE_CACHE=1), restart "  \
	"the service so that it compiles the graph from the installed files, and run again"

/* One folder: a changed traced file that took its content at or after the folder's graphs
 * were written. */
static void use_outcome(struct pvg_outcome *o, const struct compile_facts *cf,
			const struct compile_use *u)
{
	/* a folder this run made compiled its graphs from the files as installed */
	bool may_load = u->loaded || u->preexisting || !u->read ||
			(u->compiled && (u->err || !u->has_graphs));
	if (!may_load)
		return;
	_cleanup_free_ char *dir = pvg_utf8_sanitize(u->dir, strlen(u->dir));
	/* compile lines alone: vLLM logs a load only when a shape's last graph was loaded, so
	 * earlier graphs may have come from a folder whose age cannot be read */
	const char *did = u->loaded ? "loaded compiled graphs from"
				    : "compiled graphs in (vLLM logs a load only when a shape's last "
				      "graph was loaded, so earlier ones may have come from it)";
	if (!u->read || u->err) {
		if (!u->loaded && !u->compiled)
			return;
		pvg_outcome_problem(o, PVG_UNVERIFIABLE, "dispatch-marker.compile-cache-unreadable",
				    "let provgate read the folder as the service's user can (no link "
				    "out of the service's root), or start the service with "
				    "VLLM_DISABLE_COMPILE_CACHE=1",
				    "the service %s %s, which cannot be read (%s): whether its graphs "
				    "are older than the changed files they traced is not known", did,
				    dir[0] ? dir : "(a folder cut short in the log)",
				    u->refused ? pvg_refusal_text(u->refused) : strerror(-u->err));
		return;
	}
	if (!u->has_graphs) {
		if (u->loaded || u->compiled)
			pvg_outcome_problem(o, PVG_UNVERIFIABLE, "dispatch-marker.compile-cache-unreadable",
					    STALE_HINT,
					    "the service %s %s, which no longer holds "
					    "vllm_compile_cache.py or computation_graph.py: when its "
					    "graphs were written is not known", did, dir);
		return;
	}
	/* which files its graph traced cannot be read: a changed file newer than the folder may
	 * be one of them */
	for (size_t i = 0; !u->named_read && i < cf->n_changes; i++) {
		const struct compile_change *c = &cf->changes[i];
		if ((u->traced && u->traced[i]) || (!c->err && ts_before(c->took, u->written)))
			continue;
		_cleanup_free_ char *path = pvg_utf8_sanitize(c->path, strlen(c->path));
		char w[48];
		fmt_ts(u->written, w, sizeof(w));
		pvg_outcome_problem(o, PVG_UNVERIFIABLE, "dispatch-marker.compile-cache-undecided",
				    STALE_HINT,
				    "%s was written %s, and its graph may have traced %s, installed "
				    "after that or not readable: which files it traced cannot be read "
				    "(%s)", dir, w, path,
				    u->named_why ? u->named_why : "computation_graph.py");
		break;
	}
	for (size_t i = 0; i < cf->n_changes; i++) {
		const struct compile_change *c = &cf->changes[i];
		if (!u->traced || !u->traced[i])
			continue;
		_cleanup_free_ char *path = pvg_utf8_sanitize(c->path, strlen(c->path));
		if (c->err) {
			pvg_outcome_problem(o, PVG_UNVERIFIABLE, "dispatch-marker.compile-cache-unreadable",
					    "install the change set's files (gate 2)",
					    "%s (traced: %s) cannot be read where it is installed (%s): "
					    "whether the graphs of %s are older is not known",
					    path, u->traced_how[i], strerror(-c->err), dir);
			continue;
		}
		if (ts_before(c->took, u->written))
			continue;
		char w[48], tk[48];
		fmt_ts(u->written, w, sizeof(w));
		fmt_ts(c->took, tk, sizeof(tk));
		if (u->loaded && !u->ambiguous) {
			pvg_outcome_problem(o, PVG_FAIL, "dispatch-marker.compile-cache-stale", STALE_HINT,
					    "the service loaded compiled graphs from %s, written %s, "
					    "before %s (traced: %s) took its installed content (%s): the "
					    "benchmark ran the graph traced from the older code",
					    dir, w, path, u->traced_how[i], tk);
		} else {
			const char *why =
				u->ambiguous ? "log lines without a pid name several cache folders, so "
					       "which one a load line is about is not told"
				: u->loaded ? "?"
				: u->compiled
					? "the folder was written before the service started and the "
					  "log names only compiles; vLLM logs a load only when a "
					  "shape's last graph was loaded, so earlier graphs may have "
					  "come from the folder"
					: "the folder was written before the service started and no "
					  "line of the live service says whether its graphs were loaded";
			pvg_outcome_problem(o, PVG_UNVERIFIABLE, "dispatch-marker.compile-cache-undecided",
					    STALE_HINT,
					    "%s was written %s, before %s (traced: %s) took its installed "
					    "content (%s), and %s", dir, w, path, u->traced_how[i], tk, why);
		}
	}
}

struct pvg_outcome rule_compile_cache(const struct compile_facts *cf)
{
	struct pvg_outcome o = { 0 };
	/* nothing torch.compile traces changed: no graph can be older than its code */
	if (cf->change_read && cf->n_changes == 0)
		return o;
	bool told = cf->n_uses > 0 || cf->disabled_lines > 0;
	if (!told) {
		if (!cf->service || !dispatch_compile_in_use(cf))
			return o;
		pvg_outcome_problem(
			&o, PVG_UNVERIFIABLE, "dispatch-marker.compile-cache-untold",
			"point markers.log at the service's log (vLLM logs \"Using cache directory: "
			"... for vLLM's torch.compile\" and \"Directly load the compiled graph(s)\" at "
			"INFO), or start the service with VLLM_DISABLE_COMPILE_CACHE=1",
			"a torch.compile cache is in use (%s), but %s: whether the service loaded a "
			"graph older than the changed Python files is not known",
			cf->open_folder ? cf->open_folder : cf->cache_root ? cf->cache_root
									    : "its cache root is not known",
			cf->log_why ? cf->log_why
				    : "no live line of the service's log names the folder it used");
		return o;
	}
	if (cf->lines_lost || cf->loads_untold || cf->uses_total > cf->n_uses)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.compile-cache-untold",
				    "remove the log (rm, not truncate) before starting the service, "
				    "so that it holds one run's lines",
				    "the log's torch.compile lines cannot all be tied to a cache folder "
				    "(%zu earliest lines not kept, %zu loads with no folder named before, "
				    "%zu folders over %d)",
				    cf->lines_lost, cf->loads_untold,
				    cf->uses_total > cf->n_uses ? cf->uses_total - cf->n_uses : 0,
				    COMPILE_USES_MAX);
	if (!cf->change_read) {
		for (size_t i = 0; i < cf->n_uses; i++)
			if (cf->uses[i].loaded) {
				pvg_outcome_problem(&o, PVG_UNVERIFIABLE,
						    "dispatch-marker.compile-cache-untold",
						    "see gate 2 about the change set",
						    "the service loaded compiled graphs from a cache, and "
						    "the change set cannot be read (%s)",
						    cf->change_why ? cf->change_why : "?");
				break;
			}
		return o;
	}
	for (size_t i = 0; i < cf->n_uses; i++)
		use_outcome(&o, cf, &cf->uses[i]);
	return o;
}

/* ---- evidence ----------------------------------------------------------------------------- */

static void add_time(cJSON *o, const char *key, struct timespec t)
{
	char s[48];
	fmt_ts(t, s, sizeof(s));
	cJSON_AddStringToObject(o, key, s);
}

void dispatch_compile_evidence(cJSON *ev, const struct compile_facts *cf)
{
	cJSON *o = cJSON_AddObjectToObject(ev, "compile_cache");
	bool told = cf->n_uses > 0 || cf->disabled_lines > 0;
	const char *applies = NULL;
	if (cf->change_read && cf->n_changes == 0)
		applies = "no changed Python file is installed: nothing torch.compile traces changed";
	else if (!told && !(cf->service && dispatch_compile_in_use(cf)))
		applies = "no torch.compile cache in use";
	else if (cf->n_uses == 0 && cf->disabled_lines)
		applies = "the service's log says its torch.compile cache is disabled";
	pvg_json_add_bool(o, "applies", applies == NULL);
	pvg_json_add_str(o, "not_applied_because", applies);
	pvg_json_add_bool(o, "log_read", cf->log_read);
	pvg_json_add_str(o, "log_not_read_because", cf->log_read ? NULL : cf->log_why);
	pvg_json_add_u64(o, "lines_not_kept", cf->lines_lost);
	pvg_json_add_u64(o, "disabled_lines", cf->disabled_lines);
	pvg_json_add_u64(o, "loads_without_folder", cf->loads_untold);
	pvg_json_add_bool(o, "service_is_vllm", cf->vllm);
	pvg_json_add_bool(o, "disabled_by_environment", cf->env_disabled);
	pvg_json_add_str(o, "cache_root", cf->cache_root);
	pvg_json_add_bool(o, "cache_root_exists", cf->root_exists);
	pvg_json_add_str(o, "open_folder", cf->open_folder);
	cJSON *ch = cJSON_AddArrayToObject(o, "changed_python");
	for (size_t i = 0; i < cf->n_changes; i++) {
		const struct compile_change *c = &cf->changes[i];
		cJSON *x = cJSON_CreateObject();
		pvg_json_add_str(x, "path", c->path);
		pvg_json_add_str(x, "installed", c->installed);
		if (c->err)
			pvg_json_add_str(x, "error", strerror(-c->err));
		else
			add_time(x, "installed_at", c->took);
		cJSON_AddItemToArray(ch, x);
	}
	cJSON *fa = cJSON_AddArrayToObject(o, "folders");
	for (size_t i = 0; i < cf->n_uses; i++) {
		const struct compile_use *u = &cf->uses[i];
		cJSON *x = cJSON_CreateObject();
		pvg_json_add_str(x, "dir", u->dir);
		if (u->has_pid)
			pvg_json_add_int(x, "pid", (int)u->pid);
		else
			pvg_json_add_str(x, "pid", NULL);
		pvg_json_add_bool(x, "loaded", u->loaded);
		pvg_json_add_bool(x, "compiled", u->compiled);
		pvg_json_add_bool(x, "ambiguous", u->ambiguous);
		if (u->err)
			pvg_json_add_str(x, "error", u->refused ? pvg_refusal_text(u->refused)
								: strerror(-u->err));
		if (u->has_graphs) {
			add_time(x, "written", u->written);
			pvg_json_add_bool(x, "written_before_start", u->preexisting);
		}
		pvg_json_add_bool(x, "graph_read", u->named_read);
		if (u->named_read)
			pvg_json_add_u64(x, "graph_file_comments", u->n_named);
		else
			pvg_json_add_str(x, "graph_not_read_because", u->named_why);
		cJSON *tr = cJSON_AddArrayToObject(x, "traced_changes");
		for (size_t k = 0; u->traced && k < cf->n_changes; k++)
			if (u->traced[k])
				cJSON_AddItemToArray(tr, cJSON_CreateString(cf->changes[k].path));
		cJSON_AddItemToArray(fa, x);
	}
}
