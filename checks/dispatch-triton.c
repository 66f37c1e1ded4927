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
 *
 * Entries of the same bytes are each judged (dispatch-triton.h says how they decide); a
 * pass always rests on one entry that is itself a fresh compile of the installed file.
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
	for (size_t i = 0; i < j->n; i++) {
		free(j->v[i].why);
		free(j->v[i].change);
		for (size_t k = 0; k < j->v[i].n_same; k++) {
			free(j->v[i].same[k].why);
			free(j->v[i].same[k].change);
		}
		free(j->v[i].same);
	}
	free(j->v);
	for (size_t i = 0; i < j->n_variants; i++) {
		free(j->variants[i].why);
		free(j->variants[i].change);
	}
	free(j->variants);
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
					char **why, char **change)
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
		char at[40], inst_at[40];
		pvg_format_time(e->written.tv_sec, e->written.tv_nsec, at, sizeof(at));
		pvg_format_time(took.tv_sec, took.tv_nsec, inst_at, sizeof(inst_at));
		*why = pvg_asprintf("the entry was written at %s, before %s took its content "
				    "(%s): Triton reused an entry compiled before the install, "
				    "whose code may be an older version's (its key can miss a "
				    "change) or the same (a kernel the change left as it was keeps "
				    "its key); which, its bytes cannot tell",
				    at, src, inst_at);
		return TRITON_STALE;
	}
	*why = pvg_asprintf("compiled from %s line %lu (changed: %s) after it took its content", src,
			    e->src_line, ch->path);
	*change = pvg_strdup(ch->path);
	return TRITON_LINKED;
}

/* One entry against the node's arch and the change set. */
static enum triton_verdict judge_entry(struct triton_jit *j, const struct pvg_triton_entry *e,
				       char **why, char **change)
{
	const char *arch = node_arch(j->ctx);
	if (!e->meta_ok || !e->src_path) {
		*why = pvg_asprintf("it cannot be read: %s", e->why ? e->why : "?");
		return TRITON_BAD_ENTRY;
	}
	if (!pvg_triton_arch_runs(arch, &e->meta)) {
		*why = pvg_asprintf("its cache entry was compiled for %s, the node is %s",
				    e->meta.arch, arch ? arch : "(arch not set)");
		return TRITON_WRONG_ARCH;
	}
	return judge_source(j, e, why, change);
}

/* Which of several entries with the same bytes speaks for them: a link, then what may still
 * be one (an entry whose file or install path cannot be told), then the refusals, the most
 * telling first; "not changed" last (the requirement's own rule speaks for other code). */
static int verdict_rank(enum triton_verdict v)
{
	static const int rank[] = {
		[TRITON_LINKED] = 0,    [TRITON_INSTALL_UNKNOWN] = 1, [TRITON_BAD_ENTRY] = 2,
		[TRITON_STALE] = 3,     [TRITON_OTHER_COPY] = 4,      [TRITON_WRONG_ARCH] = 5,
		[TRITON_NOT_CHANGED] = 6, [TRITON_NO_ENTRY] = 7,
	};
	return rank[v];
}

static const char *const verdict_names[] = {
	[TRITON_LINKED] = "linked",       [TRITON_NO_ENTRY] = "no-entry",
	[TRITON_BAD_ENTRY] = "bad-entry", [TRITON_WRONG_ARCH] = "wrong-arch",
	[TRITON_NOT_CHANGED] = "not-changed", [TRITON_OTHER_COPY] = "other-copy",
	[TRITON_STALE] = "stale",         [TRITON_INSTALL_UNKNOWN] = "install-unknown",
};

const struct triton_judged *dispatch_triton_judge(struct triton_jit *j,
						  const struct pvg_witness_mod *m)
{
	for (size_t i = 0; i < j->n; i++)
		if (memcmp(j->v[i].sha256, m->sha256, 32) == 0)
			return &j->v[i];
	if (!j->built)
		build(j);
	/* every entry with these bytes, judged */
	struct triton_entry_verdict *all = NULL;
	size_t n_all = 0, unjudged = 0, best = 0;
	for (const struct pvg_triton_entry *e = pvg_triton_index_find(&j->idx, m->sha256); e;
	     e = pvg_triton_index_next(&j->idx, m->sha256, e)) {
		if (n_all == TRITON_MAX_SAME_BYTES) {
			unjudged++;
			continue;
		}
		all = pvg_xrealloc(all, n_all + 1, sizeof(*all));
		struct triton_entry_verdict *a = &all[n_all++];
		memset(a, 0, sizeof(*a));
		a->e = e;
		a->v = judge_entry(j, e, &a->why, &a->change);
		if (verdict_rank(a->v) < verdict_rank(all[best].v))
			best = n_all - 1;
	}
	j->v = pvg_xrealloc(j->v, j->n + 1, sizeof(*j->v));
	struct triton_judged *d = &j->v[j->n++];
	memset(d, 0, sizeof(*d));
	memcpy(d->sha256, m->sha256, 32);
	if (!n_all) {
		d->v = TRITON_NO_ENTRY;
		d->why = pvg_asprintf("no Triton cache entry holds these bytes (%zu entr%s in %zu "
				      "folder%s looked at%s%s%s)",
				      j->idx.n, j->idx.n == 1 ? "y" : "ies", j->idx.n_folders,
				      j->idx.n_folders == 1 ? "" : "s", j->idx.cut ? "; walk cut at its "
				      "bound of " : "", j->idx.cut ? j->idx.cut : "",
				      j->why ? j->why : "");
		return d;
	}
	d->v = all[best].v;
	d->e = all[best].e;
	d->why = all[best].why;
	d->change = all[best].change;
	d->same_unjudged = unjudged;
	for (size_t i = 0; i < n_all; i++) {
		if (i == best)
			continue;
		d->same = pvg_xrealloc(d->same, d->n_same + 1, sizeof(*d->same));
		d->same[d->n_same++] = all[i];
	}
	free(all);
	if (d->v == TRITON_LINKED)
		return d;
	/* none links them: say what the others are */
	char others[256] = "";
	size_t at = 0;
	for (size_t i = 0; i < d->n_same && at + 40 < sizeof(others); i++)
		at += (size_t)snprintf(others + at, sizeof(others) - at, "%s%s", i ? ", " : "",
				       verdict_names[d->same[i].v]);
	char *why = d->why;
	if (unjudged) {
		/* one of those not judged may be the fresh compile: not decided */
		enum triton_verdict was = d->v;
		d->v = TRITON_BAD_ENTRY;
		d->why = pvg_asprintf("%zu entries hold these bytes, more than the %u judged, and "
				      "none judged links them (the nearest: %s, %s)",
				      n_all + unjudged, TRITON_MAX_SAME_BYTES, verdict_names[was], why);
		free(why);
	} else if (d->n_same) {
		d->why = pvg_asprintf("%s; no other entry with these bytes links them (%zu: %s)", why,
				      d->n_same, others);
		free(why);
	}
	return d;
}

/* Does an entry compile the kernel of a judged module's entry, from the same .source path? */
static bool variant_of(const struct pvg_triton_entry *e, const struct pvg_triton_entry *of)
{
	return of && of->meta_ok && of->src_path && e->meta_ok && e->src_path &&
	       strcmp(e->meta.name, of->meta.name) == 0 && strcmp(e->src_path, of->src_path) == 0;
}

static bool judged_bytes(const struct triton_jit *j, const uint8_t sha256[32])
{
	for (size_t i = 0; i < j->n; i++)
		if (memcmp(j->v[i].sha256, sha256, 32) == 0)
			return true;
	return false;
}

static bool loaded_bytes(const struct pvg_witness_dir *dir, const uint8_t sha256[32])
{
	for (size_t i = 0; dir && i < dir->n; i++) {
		const struct pvg_witness_file *f = &dir->files[i].file;
		for (size_t k = 0; dir->files[i].bytes && f->modules && k < f->n_modules; k++)
			if (!(f->modules[k].flags & PVG_WITNESS_M_NOT_HASHED) &&
			    memcmp(f->modules[k].sha256, sha256, 32) == 0)
				return true;
	}
	return false;
}

void dispatch_triton_variants(struct triton_jit *j, const struct pvg_witness_dir *dir)
{
	for (size_t i = 0; i < j->idx.n; i++) {
		const struct pvg_triton_entry *e = &j->idx.v[i];
		if (judged_bytes(j, e->sha256))
			continue;
		bool variant = false;
		for (size_t k = 0; k < j->n && !variant; k++) {
			variant = variant_of(e, j->v[k].e);
			for (size_t s = 0; s < j->v[k].n_same && !variant; s++)
				variant = variant_of(e, j->v[k].same[s].e);
		}
		if (!variant)
			continue;
		if (j->variants_total++ >= TRITON_MAX_VARIANTS)
			continue;
		j->variants = pvg_xrealloc(j->variants, j->n_variants + 1, sizeof(*j->variants));
		struct triton_entry_verdict *a = &j->variants[j->n_variants++];
		memset(a, 0, sizeof(*a));
		a->e = e;
		a->v = judge_entry(j, e, &a->why, &a->change);
		a->loaded = loaded_bytes(dir, e->sha256);
	}
}

/* "KEY (KERNEL, num_warps N, num_stages N, maxnreg N) in FOLDER" */
static char *entry_text(const struct pvg_triton_entry *e)
{
	_cleanup_free_ char *k = pvg_utf8_sanitize(e->key, strlen(e->key));
	_cleanup_free_ char *f = pvg_utf8_sanitize(e->folder, strlen(e->folder));
	if (!e->meta_ok)
		return pvg_asprintf("%s in %s", k, f);
	const struct pvg_triton_meta *m = &e->meta;
	char opts[96] = "";
	size_t at = 0;
	if (m->num_warps)
		at += (size_t)snprintf(opts + at, sizeof(opts) - at, ", num_warps %ld", m->num_warps);
	if (m->num_stages)
		at += (size_t)snprintf(opts + at, sizeof(opts) - at, ", num_stages %ld", m->num_stages);
	if (m->maxnreg)
		snprintf(opts + at, sizeof(opts) - at, ", maxnreg %ld", m->maxnreg);
	return pvg_asprintf("%s (%s%s) in %s", k, m->name, opts, f);
}

struct pvg_outcome rule_witness_triton(const struct triton_jit *j)
{
	struct pvg_outcome o = { 0 };
	for (size_t i = 0; j && i < j->n_required; i++) {
		const struct triton_judged *d = &j->v[i];
		char h[13];
		for (int b = 0; b < 6; b++)
			snprintf(h + 2 * b, 3, "%02x", d->sha256[b]);
		/* the entry that decided, named: a fresh sibling variant is no cover for it */
		_cleanup_free_ char *et = d->e ? entry_text(d->e) : NULL;
		_cleanup_free_ char *from = et ? pvg_asprintf(" from cache entry %s", et)
					       : pvg_strdup("");
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
					    "JIT module (memory, sha256 %s…)%s: %s", h, from, d->why);
			break;
		case TRITON_INSTALL_UNKNOWN:
			pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "dispatch-marker.triton-install-unknown",
					    "map the package's folder to where it is installed "
					    "(source.install_map) so that the entry's source can be "
					    "matched to the installed file",
					    "JIT module (memory, sha256 %s…)%s: %s", h, from, d->why);
			break;
		case TRITON_WRONG_ARCH:
			pvg_outcome_problem(&o, PVG_FAIL, "dispatch-marker.triton-arch",
					    "clear the Triton cache and run the service on the node's "
					    "GPU so that it compiles for it",
					    "JIT module (memory, sha256 %s…)%s: %s", h, from, d->why);
			break;
		case TRITON_OTHER_COPY:
		case TRITON_STALE:
			pvg_outcome_problem(&o, PVG_FAIL,
					    d->v == TRITON_STALE ? "dispatch-marker.triton-stale"
								 : "dispatch-marker.triton-other-copy",
					    d->v == TRITON_STALE
						    ? "remove the entry's folder (or start the service with an "
						      "empty TRITON_CACHE_DIR) so that Triton compiles it from "
						      "the installed file, and run the benchmark again"
						    : "restart the service on the installed change (with a "
						      "Triton cache cleared of older entries) and run the "
						      "benchmark again",
					    "JIT module (memory, sha256 %s…)%s: %s", h, from, d->why);
			break;
		}
	}
	return o;
}

/* An entry's own fields in the evidence. */
static void entry_evidence(cJSON *o, const struct pvg_triton_entry *e)
{
	pvg_json_add_str(o, "entry", e->key);
	pvg_json_add_str(o, "cache", e->folder);
	if (e->meta_ok) {
		pvg_json_add_str(o, "kernel", e->meta.name);
		pvg_json_add_str(o, "arch", e->meta.arch);
		if (e->meta.num_warps)
			cJSON_AddNumberToObject(o, "num_warps", (double)e->meta.num_warps);
		if (e->meta.num_stages)
			cJSON_AddNumberToObject(o, "num_stages", (double)e->meta.num_stages);
		if (e->meta.maxnreg)
			cJSON_AddNumberToObject(o, "maxnreg", (double)e->meta.maxnreg);
	}
	if (e->src_path) {
		pvg_json_add_str(o, "source", e->src_path);
		pvg_json_add_u64(o, "line", e->src_line);
	}
	pvg_json_add_u64(o, "written", (uint64_t)e->written.tv_sec);
}

static cJSON *verdict_evidence(const struct triton_entry_verdict *a, bool variant)
{
	cJSON *o = cJSON_CreateObject();
	entry_evidence(o, a->e);
	char hex[65];
	for (int b = 0; b < 32; b++)
		snprintf(hex + 2 * b, 3, "%02x", a->e->sha256[b]);
	pvg_json_add_str(o, "sha256", hex);
	pvg_json_add_str(o, "verdict", verdict_names[a->v]);
	pvg_json_add_str(o, "why", a->why);
	if (variant)
		pvg_json_add_bool(o, "loaded", a->loaded);
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
		if (d->e)
			entry_evidence(o, d->e);
		if (d->n_same || d->same_unjudged) {
			cJSON *sb = cJSON_AddArrayToObject(o, "same_bytes");
			for (size_t k = 0; k < d->n_same; k++)
				cJSON_AddItemToArray(sb, verdict_evidence(&d->same[k], false));
			if (d->same_unjudged)
				pvg_json_add_u64(o, "same_bytes_unjudged", d->same_unjudged);
		}
		cJSON_AddItemToArray(ms, o);
	}
	if (j->variants_total) {
		cJSON *vs = cJSON_AddArrayToObject(t, "other_variants");
		for (size_t k = 0; k < j->n_variants; k++)
			cJSON_AddItemToArray(vs, verdict_evidence(&j->variants[k], true));
		pvg_json_add_u64(t, "other_variants_total", j->variants_total);
	}
}
