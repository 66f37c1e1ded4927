/* SPDX-License-Identifier: MIT */
/*
 * Gate 7's JIT modules and their Triton cache entries (see dispatch-triton.h).
 *
 * Where provgate looks: the service's own environment (/proc/PID/environ, as the witness
 * variables are read): TRITON_CACHE_DIR, else TRITON_HOME/.triton/cache, and HOME/.triton/cache
 * (Triton's defaults, runtime/cache.py); VLLM_CACHE_ROOT (else HOME/.cache/vllm)
 * /torch_compile_cache, searched for the triton_cache folders vLLM sets at run time (which
 * the process's initial environment does not show); and witness.triton_caches. HOME is the
 * service's environment's: /etc/passwd inside its root is not read.
 *
 * The installed file: the change's install path (source.install_map) and the .source's path
 * must resolve, inside the service's root, to the same file (device and inode), and it must
 * hold the bytes of the change. Without an install path for the .py, no file can be told to
 * be the installed one: unverifiable.
 *
 * The entry's time is the earliest mtime or ctime of its json, .source and binary; it must
 * not be before the installed file's latest mtime or ctime. An entry compiled by an earlier run of the service after the install
 * passes (Triton reuses its cache). What this cannot see: a stale entry copied into the
 * cache later with fresh times (cp without -p), or file times set by the service's user.
 */
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "dispatch-triton.h"
#include "formats/codeobj/codeobj.h"
#include "sys/scope.h"
#include "sys/witness.h"
#include "util/hash.h"

void dispatch_triton_init(struct triton_jit *j, struct pvg_ctx *ctx, pid_t pid)
{
	memset(j, 0, sizeof(*j));
	j->ctx = ctx;
	j->pid = pid;
	j->root_fd = -1;
}

void dispatch_triton_clear(struct triton_jit *j)
{
	for (size_t i = 0; i < j->n; i++)
		free(j->v[i].why);
	free(j->v);
	free(j->why);
	pvg_triton_index_clear(&j->idx);
	if (j->root_fd >= 0)
		close(j->root_fd);
	memset(j, 0, sizeof(*j));
	j->root_fd = -1;
}

static void build(struct triton_jit *j)
{
	j->built = true;
	struct pvg_ctx *ctx = j->ctx;
	if (j->pid <= 0) {
		j->why = pvg_strdup("no live service to read the caches of");
		return;
	}
	/* the service's root and user, once: the walk and each entry's source use them */
	_cleanup_free_ char *rootp = pvg_asprintf("%s/%d/root", ctx->procfs, (int)j->pid);
	j->root_fd = open(rootp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (j->root_fd < 0) {
		j->why = pvg_asprintf("the service's root cannot be opened: %s", strerror(errno));
		return;
	}
	j->as_user = pvg_proc_creds(ctx->procfs, j->pid, &j->creds) == 0;
	struct pvg_triton_where w = { .root_fd = j->root_fd, .as = j->as_user ? &j->creds : NULL };
	_cleanup_free_ char *tcd = NULL, *th = NULL, *home = NULL, *vroot = NULL;
	pvg_proc_getenv(ctx->procfs, j->pid, "TRITON_CACHE_DIR", &tcd);
	pvg_proc_getenv(ctx->procfs, j->pid, "TRITON_HOME", &th);
	pvg_proc_getenv(ctx->procfs, j->pid, "HOME", &home);
	pvg_proc_getenv(ctx->procfs, j->pid, "VLLM_CACHE_ROOT", &vroot);
	/* only absolute paths: a relative one is the service's cwd's, not resolved here */
	if (tcd && tcd[0] == '/')
		pvg_triton_index_add(&j->idx, &w, tcd, "TRITON_CACHE_DIR");
	if (th && th[0] == '/') {
		_cleanup_free_ char *p = pvg_asprintf("%s/.triton/cache", th);
		pvg_triton_index_add(&j->idx, &w, p, "TRITON_HOME");
	}
	if (home && home[0] == '/') {
		_cleanup_free_ char *p = pvg_asprintf("%s/.triton/cache", home);
		pvg_triton_index_add(&j->idx, &w, p, "HOME");
	}
	_cleanup_free_ char *vc = vroot && vroot[0] == '/'
					  ? pvg_asprintf("%s/torch_compile_cache", vroot)
				  : home && home[0] == '/'
					  ? pvg_asprintf("%s/.cache/vllm/torch_compile_cache", home)
					  : NULL;
	if (vc)
		pvg_triton_index_add(&j->idx, &w, vc, "VLLM_CACHE_ROOT");
	const struct pvg_strv *cf = &ctx->cfg->witness.triton_caches;
	for (size_t i = 0; i < cf->n; i++)
		pvg_triton_index_add(&j->idx, &w, cf->v[i], "witness.triton_caches");
}

static const char *node_arch(const struct pvg_ctx *ctx)
{
	const struct pvg_config *cfg = ctx->cfg;
	return cfg->arch ? cfg->arch : ctx->n_arts ? pvg_artifact_arch(cfg, &ctx->arts[0].a) : NULL;
}

static bool arch_ok(const char *node, const struct pvg_triton_meta *m)
{
	if (!node)
		return false;
	if (strcmp(m->backend, "cuda") == 0)
		return strcmp(node, m->arch) == 0;
	return pvg_target_compatible(node, m->arch);
}

/* Does the service's path name the repo's file: the same tail from the file's package on
 * (at least a folder and the file)? */
static bool tail_matches(const char *svc, const char *rel)
{
	for (const char *t = rel; t; t = strchr(t + 1, '/')) {
		const char *tail = *t == '/' ? t + 1 : t;
		if (!strchr(tail, '/'))
			return false; /* the file name alone proves nothing */
		size_t a = strlen(svc), b = strlen(tail);
		if (a > b && svc[a - b - 1] == '/' && strcmp(svc + a - b, tail) == 0)
			return true;
	}
	return false;
}

static bool sha_of_bytes(const char *buf, size_t n, char hex[65])
{
	pvg_sha256_hex(buf, n, hex);
	return true;
}

static void ts_max(struct timespec *a, const struct timespec *b)
{
	if (b->tv_sec > a->tv_sec || (b->tv_sec == a->tv_sec && b->tv_nsec > a->tv_nsec))
		*a = *b;
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Is the file the service opens at PATH (inside its root, with its user's rights) the one
 * of identity *st? Where PATH cannot be opened there, our own view of it (a bind mount). */
static bool is_file(const struct pvg_untrusted *how, const char *path, const struct stat *st)
{
	struct pvg_untrusted_file f = { 0 };
	_cleanup_close_ int fd = how->root_fd < 0 ? -EBADF : pvg_open_untrusted(path, how, &f);
	struct stat hs;
	if (fd >= 0)
		hs = f.st;
	else if (stat(path, &hs) < 0)
		return false;
	return hs.st_dev == st->st_dev && hs.st_ino == st->st_ino;
}

/* The entry's source against the change set: the change whose installed file (install_map
 * gives its path) is the very file the .source names, as the service's root resolves both
 * (same device and inode). A file elsewhere with the same tail and bytes is another copy;
 * where the change's install path is not known, which file is the installed one cannot be
 * told: unverifiable, never a pass. */
static enum triton_verdict judge_source(struct triton_jit *j, const struct pvg_triton_entry *e,
					char **why)
{
	const struct pvg_scope *scope;
	int r = pvg_scope_get(j->ctx, &scope);
	if (r < 0 || !scope || !scope->workdir) {
		*why = pvg_strdup("the change set is not known (source.repo)");
		return TRITON_NOT_CHANGED;
	}
	_cleanup_free_ char *src = pvg_utf8_sanitize(e->src_path, strlen(e->src_path));
	/* the file as the service sees it, with its user's rights */
	const struct pvg_untrusted how = { .root_fd = j->root_fd,
					   .as = j->as_user ? &j->creds : NULL,
					   .max_size = PVG_TRITON_MAX_SOURCE };
	struct pvg_untrusted_file f = { 0 };
	_cleanup_close_ int fd = j->root_fd < 0 ? -EBADF
						: pvg_open_untrusted(e->src_path, &how, &f);
	const struct pvg_change *ch = NULL, *copy = NULL, *unmapped = NULL;
	for (size_t i = 0; i < scope->n && !ch; i++) {
		const struct pvg_change *c = &scope->changes[i];
		size_t n = strlen(c->path);
		if (c->kind == 'D' || n < 3 || strcmp(c->path + n - 3, ".py") != 0)
			continue;
		bool tail = tail_matches(e->src_path, c->path);
		if (!c->install_path) {
			if (tail && !unmapped)
				unmapped = c;
		} else if (fd >= 0 && is_file(&how, c->install_path, &f.st)) {
			ch = c;
		} else if (tail && !copy) {
			copy = c;
		}
	}
	if (!ch && fd < 0 && (copy || unmapped)) {
		*why = pvg_asprintf("compiled from %s, which cannot be opened in the service's root "
				    "(%s)", src, f.refused ? pvg_refusal_text(f.refused)
							   : strerror(-fd));
		return TRITON_BAD_ENTRY;
	}
	if (!ch && copy) {
		*why = pvg_asprintf("compiled from %s, another copy of %s than the installed %s", src,
				    copy->path, copy->install_path);
		return TRITON_OTHER_COPY;
	}
	if (!ch && unmapped) {
		*why = pvg_asprintf("compiled from %s; the installed path of %s is not known (no "
				    "source.install_map entry maps it), so whether that is the "
				    "installed file cannot be told",
				    src, unmapped->path);
		return TRITON_INSTALL_UNKNOWN;
	}
	if (!ch) {
		*why = pvg_asprintf("compiled from %s, which is no changed file", src);
		return TRITON_NOT_CHANGED;
	}
	_cleanup_free_ char *inst = NULL, *want = NULL;
	size_t ilen = 0, wlen = 0;
	int ir = pvg_read_fd(fd, PVG_TRITON_MAX_SOURCE, &inst, &ilen);
	_cleanup_free_ char *repo_file = pvg_path_join(scope->workdir, ch->path);
	int wr = pvg_read_file(repo_file, PVG_TRITON_MAX_SOURCE, &want, &wlen);
	if (ir < 0 || wr < 0) {
		*why = pvg_asprintf("%s cannot be read: %s", ir < 0 ? src : repo_file,
				    strerror(-(ir < 0 ? ir : wr)));
		return TRITON_BAD_ENTRY;
	}
	char h1[65], h2[65];
	sha_of_bytes(inst, ilen, h1);
	sha_of_bytes(want, wlen, h2);
	if (strcmp(h1, h2) != 0) {
		*why = pvg_asprintf("compiled from %s, which does not hold the change's %s "
				    "(sha256 %.12s…, the change's %.12s…)",
				    src, ch->path, h1, h2);
		return TRITON_OTHER_COPY;
	}
	struct timespec took = f.st.st_mtim;
	ts_max(&took, &f.st.st_ctim);
	if (ts_before(&e->written, &took)) {
		*why = pvg_asprintf("the entry was written at %lld, before %s took its content "
				    "(%lld): compiled from an older version",
				    (long long)e->written.tv_sec, src, (long long)took.tv_sec);
		return TRITON_STALE;
	}
	*why = pvg_asprintf("compiled from %s line %lu (changed: %s) after it took its content", src,
			    e->src_line, ch->path);
	return TRITON_LINKED;
}

const struct triton_judged *dispatch_triton_judge(struct triton_jit *j,
						  const struct pvg_witness_mod *m)
{
	for (size_t i = 0; i < j->n; i++)
		if (memcmp(j->v[i].sha256, m->sha256, 32) == 0)
			return &j->v[i];
	if (!j->built)
		build(j);
	j->v = pvg_xrealloc(j->v, j->n + 1, sizeof(*j->v));
	struct triton_judged *d = &j->v[j->n++];
	memset(d, 0, sizeof(*d));
	memcpy(d->sha256, m->sha256, 32);
	const struct pvg_triton_entry *e = pvg_triton_index_find(&j->idx, m->sha256);
	d->e = e;
	const char *arch = node_arch(j->ctx);
	if (!e) {
		d->v = TRITON_NO_ENTRY;
		d->why = pvg_asprintf("no Triton cache entry holds these bytes (%zu entr%s in %zu "
				      "folder%s looked at%s%s%s)",
				      j->idx.n, j->idx.n == 1 ? "y" : "ies", j->idx.n_folders,
				      j->idx.n_folders == 1 ? "" : "s", j->idx.cut ? "; walk cut at its "
				      "bound of " : "", j->idx.cut ? j->idx.cut : "",
				      j->why ? j->why : "");
	} else if (!e->meta_ok || !e->src_path) {
		d->v = TRITON_BAD_ENTRY;
		_cleanup_free_ char *k = pvg_utf8_sanitize(e->key, strlen(e->key));
		d->why = pvg_asprintf("its cache entry %s cannot be read: %s", k,
				      e->why ? e->why : "?");
	} else if (!arch_ok(arch, &e->meta)) {
		d->v = TRITON_WRONG_ARCH;
		d->why = pvg_asprintf("its cache entry was compiled for %s, the node is %s",
				      e->meta.arch, arch ? arch : "(arch not set)");
	} else {
		d->v = judge_source(j, e, &d->why);
	}
	return d;
}

static const char *const verdict_names[] = {
	[TRITON_LINKED] = "linked",       [TRITON_NO_ENTRY] = "no-entry",
	[TRITON_BAD_ENTRY] = "bad-entry", [TRITON_WRONG_ARCH] = "wrong-arch",
	[TRITON_NOT_CHANGED] = "not-changed", [TRITON_OTHER_COPY] = "other-copy",
	[TRITON_STALE] = "stale",         [TRITON_INSTALL_UNKNOWN] = "install-unknown",
};

struct pvg_outcome rule_witness_triton(const struct triton_jit *j)
{
	struct pvg_outcome o = { 0 };
	for (size_t i = 0; j && i < j->n_required; i++) {
		const struct triton_judged *d = &j->v[i];
		char h[13];
		for (int b = 0; b < 6; b++)
			snprintf(h + 2 * b, 3, "%02x", d->sha256[b]);
		switch (d->v) {
		case TRITON_LINKED:
		case TRITON_NOT_CHANGED: /* other code: the requirement's own rule says so */
			break;
		case TRITON_NO_ENTRY:
		case TRITON_BAD_ENTRY:
			pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.triton-no-entry",
					    "name the folder the service's Triton writes to in "
					    "witness.triton_caches (vLLM sets TRITON_CACHE_DIR at run "
					    "time), and keep its entries until the check",
					    "JIT module (memory, sha256 %s…): %s", h, d->why);
			break;
		case TRITON_INSTALL_UNKNOWN:
			pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.triton-install-unknown",
					    "map the package's folder to where it is installed "
					    "(source.install_map) so that the entry's source can be "
					    "matched to the installed file",
					    "JIT module (memory, sha256 %s…): %s", h, d->why);
			break;
		case TRITON_WRONG_ARCH:
			pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.triton-arch",
					    "clear the Triton cache and run the service on the node's "
					    "GPU so that it compiles for it",
					    "JIT module (memory, sha256 %s…): %s", h, d->why);
			break;
		case TRITON_OTHER_COPY:
		case TRITON_STALE:
			pvg_outcome_problem(&o, PVG_FAIL,
					    d->v == TRITON_STALE ? "dispatch-marker.triton-stale"
								 : "dispatch-marker.triton-other-copy",
					    "restart the service on the installed change (with a Triton "
					    "cache cleared of older entries) and run the benchmark again",
					    "JIT module (memory, sha256 %s…): %s", h, d->why);
			break;
		}
	}
	return o;
}

void dispatch_triton_evidence(cJSON *ev, const struct triton_jit *j)
{
	if (!j->built)
		return;
	cJSON *t = cJSON_AddObjectToObject(ev, "triton");
	if (j->why)
		pvg_json_add_str(t, "error", j->why);
	cJSON *fs = cJSON_AddArrayToObject(t, "caches");
	for (size_t i = 0; i < j->idx.n_folders; i++) {
		const struct pvg_triton_folder *f = &j->idx.folders[i];
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_str(o, "path", f->path);
		pvg_json_add_str(o, "from", f->from);
		if (f->err)
			pvg_json_add_str(o, "error", f->refused ? pvg_refusal_text(f->refused)
								: strerror(-f->err));
		pvg_json_add_u64(o, "entries", f->entries);
		cJSON_AddItemToArray(fs, o);
	}
	pvg_json_add_u64(t, "entries_visited", j->idx.visited);
	if (j->idx.cut)
		pvg_json_add_str(t, "cut_at", j->idx.cut);
	cJSON *ms = cJSON_AddArrayToObject(t, "modules");
	for (size_t i = 0; i < j->n; i++) {
		const struct triton_judged *d = &j->v[i];
		cJSON *o = cJSON_CreateObject();
		char hex[65];
		for (int b = 0; b < 32; b++)
			snprintf(hex + 2 * b, 3, "%02x", d->sha256[b]);
		pvg_json_add_str(o, "sha256", hex);
		pvg_json_add_str(o, "verdict", verdict_names[d->v]);
		pvg_json_add_str(o, "why", d->why);
		if (d->e) {
			pvg_json_add_str(o, "entry", d->e->key);
			pvg_json_add_str(o, "cache", d->e->folder);
			if (d->e->meta_ok) {
				pvg_json_add_str(o, "kernel", d->e->meta.name);
				pvg_json_add_str(o, "arch", d->e->meta.arch);
			}
			if (d->e->src_path) {
				pvg_json_add_str(o, "source", d->e->src_path);
				pvg_json_add_u64(o, "line", d->e->src_line);
			}
			pvg_json_add_u64(o, "written", (uint64_t)d->e->written.tv_sec);
		}
		cJSON_AddItemToArray(ms, o);
	}
}
