/* SPDX-License-Identifier: MIT */
/*
 * The change set since a baseline, read with libgit2 (read-only: no index refresh, no
 * fetch). Committed changes come from the three-dot diff merge-base(baseline, HEAD)..HEAD;
 * uncommitted ones from HEAD against the index and work tree. Both are folded into one entry
 * per path, so that a file changed in a commit and again in the work tree appears once.
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <git2.h>

#include "formats/report-kind.h"
#include "sys/scope.h"

/* ---- classification ------------------------------------------------------------------------- */

const char *pvg_scope_class_name(enum pvg_scope_class cls)
{
	switch (cls) {
	case PVG_SCOPE_COMPILED:
		return "compiled";
	case PVG_SCOPE_MAPPED:
		return "mapped";
	case PVG_SCOPE_IGNORED:
		return "ignored";
	case PVG_SCOPE_UNKNOWN:
		break;
	}
	return "unknown";
}

/* Length of the part of path that map->from covers, or -1. *rest points at what follows. */
static long map_match(const struct pvg_install_map *map, const char *path, const char **rest,
		      bool *whole_file)
{
	const char *from = map->from;
	while (from[0] == '.' && from[1] == '/')
		from += 2;
	if (strcmp(from, ".") == 0)
		from = "";
	size_t fl = strlen(from);
	*whole_file = false;
	if (fl == 0) {
		*rest = path;
		return 0;
	}
	if (from[fl - 1] == '/') {
		if (strncmp(path, from, fl) != 0)
			return -1;
		*rest = path + fl;
		return (long)fl;
	}
	if (strcmp(path, from) == 0) {
		*whole_file = true;
		*rest = path + fl;
		return (long)fl;
	}
	/* "vllm" without the slash still names the folder */
	if (strncmp(path, from, fl) == 0 && path[fl] == '/') {
		*rest = path + fl + 1;
		return (long)fl;
	}
	return -1;
}

enum pvg_scope_class pvg_scope_classify(const struct pvg_source_spec *src, const char *path,
					char **install_path)
{
	if (install_path)
		*install_path = NULL;
	/* Compiled first: such a file is proven through the artifact (its build log, digest
	 * and code objects), which must see it whatever else matches. */
	for (size_t i = 0; i < src->compiled.n; i++)
		if (pvg_glob_match(src->compiled.v[i], path))
			return PVG_SCOPE_COMPILED;
	/* install_map before ignore: a file under an install prefix is a runtime file, and a
	 * broad ignore pattern (any *.md) must not silently exempt it from the byte check. */
	const struct pvg_install_map *best = NULL;
	const char *best_rest = NULL;
	bool best_whole = false;
	long best_len = -1;
	for (size_t i = 0; i < src->n_install_map; i++) {
		const char *rest;
		bool whole;
		long l = map_match(&src->install_map[i], path, &rest, &whole);
		if (l > best_len) {
			best = &src->install_map[i];
			best_len = l;
			best_rest = rest;
			best_whole = whole;
		}
	}
	if (best) {
		if (install_path) {
			const char *to = best->to;
			size_t tl = strlen(to);
			while (tl > 1 && to[tl - 1] == '/')
				tl--;
			bool to_is_dir = to[strlen(to) - 1] == '/';
			if (best_whole && !to_is_dir)
				*install_path = pvg_strdup(to);
			else if (best_whole)
				*install_path = pvg_asprintf("%.*s/%s", (int)tl, to, pvg_basename(path));
			else
				*install_path = pvg_asprintf("%.*s/%s", (int)tl, to, best_rest);
		}
		return PVG_SCOPE_MAPPED;
	}
	for (size_t i = 0; i < src->ignore.n; i++)
		if (pvg_glob_match(src->ignore.v[i], path))
			return PVG_SCOPE_IGNORED;
	return PVG_SCOPE_UNKNOWN;
}

/* ---- the change table ------------------------------------------------------------------------ */

struct entry {
	struct pvg_change c;
	bool dead;
};

struct table {
	struct entry *e;
	size_t n, cap;
	size_t *slot; /* index + 1, 0 = empty; open addressing */
	size_t nslot;
};

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static size_t *table_slot(struct table *t, const char *path)
{
	size_t mask = t->nslot - 1;
	for (size_t i = fnv1a(path) & mask;; i = (i + 1) & mask) {
		if (!t->slot[i] || strcmp(t->e[t->slot[i] - 1].c.path, path) == 0)
			return &t->slot[i];
	}
}

static void table_grow(struct table *t)
{
	free(t->slot);
	t->nslot = t->nslot ? t->nslot * 2 : 64;
	t->slot = pvg_xcalloc(t->nslot, sizeof(*t->slot));
	for (size_t i = 0; i < t->n; i++)
		*table_slot(t, t->e[i].c.path) = i + 1;
}

static struct entry *table_find(struct table *t, const char *path)
{
	if (!t->nslot)
		return NULL;
	size_t *s = table_slot(t, path);
	return *s ? &t->e[*s - 1] : NULL;
}

static struct entry *table_add(struct table *t, const char *path, char kind, bool uncommitted)
{
	if ((t->n + 1) * 2 > t->nslot)
		table_grow(t);
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->e = pvg_xrealloc(t->e, t->cap, sizeof(*t->e));
	}
	struct entry *e = &t->e[t->n];
	memset(e, 0, sizeof(*e));
	e->c.path = pvg_strdup(path);
	e->c.kind = kind;
	e->c.uncommitted = uncommitted;
	*table_slot(t, path) = ++t->n;
	return e;
}

static void change_clear(struct pvg_change *c)
{
	free(c->path);
	free(c->old_path);
	free(c->install_path);
	free(c->old_install_path);
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		change_clear(&t->e[i].c);
	free(t->e);
	free(t->slot);
}

static char delta_kind(git_delta_t s)
{
	switch (s) {
	case GIT_DELTA_ADDED:
	case GIT_DELTA_UNTRACKED:
	case GIT_DELTA_COPIED:
		return 'A';
	case GIT_DELTA_DELETED:
		return 'D';
	case GIT_DELTA_RENAMED:
		return 'R';
	case GIT_DELTA_TYPECHANGE:
		return 'T';
	case GIT_DELTA_MODIFIED:
	case GIT_DELTA_CONFLICTED: /* an unmerged path is a change whatever its stages say */
	case GIT_DELTA_UNREADABLE:
		return 'M';
	default:
		return 0;
	}
}

static bool delta_is_submodule(const git_diff_delta *d)
{
	return d->old_file.mode == GIT_FILEMODE_COMMIT || d->new_file.mode == GIT_FILEMODE_COMMIT;
}

/* merge-base..HEAD: every delta becomes its own entry. */
static void fold_committed(struct table *t, git_diff *diff)
{
	size_t n = git_diff_num_deltas(diff);
	for (size_t i = 0; i < n; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		char k = delta_kind(d->status);
		if (!k)
			continue;
		const char *path = k == 'D' ? d->old_file.path : d->new_file.path;
		struct entry *e = table_find(t, path);
		if (!e)
			e = table_add(t, path, k, false);
		e->c.kind = k;
		e->c.submodule |= delta_is_submodule(d);
		if (k == 'R') {
			free(e->c.old_path);
			e->c.old_path = pvg_strdup(d->old_file.path);
		}
	}
}

/* The path now exists in the index or work tree but did not at HEAD. */
static struct entry *apply_add(struct table *t, const char *path)
{
	struct entry *e = table_find(t, path);
	if (!e)
		return table_add(t, path, 'A', true);
	if (e->dead) {
		e->dead = false;
		e->c.kind = 'A';
		e->c.uncommitted = true;
	} else if (e->c.kind == 'D') {
		/* deleted by a commit, back in the work tree: it exists at both ends */
		e->c.kind = 'M';
	}
	return e;
}

/* The path existed at HEAD and is gone from the work tree. */
static struct entry *apply_delete(struct table *t, const char *path)
{
	struct entry *e = table_find(t, path);
	if (!e)
		return table_add(t, path, 'D', true);
	if (e->dead) {
		e->dead = false;
		e->c.kind = 'D';
		e->c.uncommitted = true;
		return e;
	}
	if (e->c.kind == 'R' && e->c.old_path) {
		/* renamed by a commit, then deleted: both paths are now deletions */
		_cleanup_free_ char *old = TAKE_PTR(e->c.old_path);
		ptrdiff_t idx = e - t->e;
		struct entry *o = table_find(t, old);
		if (!o)
			table_add(t, old, 'D', false);
		else if (o->dead)
			o->dead = false, o->c.kind = 'D', o->c.uncommitted = false;
		e = &t->e[idx]; /* table_add may have moved the array */
	}
	e->c.kind = 'D';
	return e;
}

/* HEAD -> index + work tree, folded into the committed entries. */
static void fold_uncommitted(struct table *t, git_diff *diff)
{
	size_t n = git_diff_num_deltas(diff);
	for (size_t i = 0; i < n; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		char k = delta_kind(d->status);
		if (!k)
			continue;
		bool sub = delta_is_submodule(d);
		if (k == 'R') {
			const char *op = d->old_file.path, *np = d->new_file.path;
			bool old_new = !table_find(t, op), new_new = !table_find(t, np);
			apply_delete(t, op)->c.submodule |= sub;
			struct entry *e = apply_add(t, np);
			e->c.submodule |= sub;
			if (old_new && new_new) {
				/* a rename of a file the commits did not touch: keep it paired */
				struct entry *o = table_find(t, op);
				o->dead = true;
				e = table_find(t, np);
				e->c.kind = 'R';
				e->c.old_path = pvg_strdup(op);
			}
		} else if (k == 'A') {
			apply_add(t, d->new_file.path)->c.submodule |= sub;
		} else if (k == 'D') {
			apply_delete(t, d->old_file.path)->c.submodule |= sub;
		} else {
			struct entry *e = table_find(t, d->new_file.path);
			if (!e)
				e = table_add(t, d->new_file.path, k, true);
			else if (e->dead)
				e->dead = false, e->c.kind = k, e->c.uncommitted = true;
			e->c.submodule |= sub;
		}
	}
}

/* ---- libgit2 ------------------------------------------------------------------------------------ */

static void set_error(struct pvg_scope *s, int err, const char *reason, const char *hint,
		      const char *fmt, ...) PVG_PRINTF(5, 6);

static void set_error(struct pvg_scope *s, int err, const char *reason, const char *hint,
		      const char *fmt, ...)
{
	pvg_msg_clear(&s->msg);
	va_list ap;
	va_start(ap, fmt);
	s->msg.text = pvg_vasprintf(fmt, ap);
	va_end(ap);
	s->msg.hint = hint ? pvg_strdup(hint) : NULL;
	s->err = err;
	s->reason = reason;
}

static const char *git_msg(void)
{
	const git_error *e = git_error_last();
	return e && e->message ? e->message : "unknown libgit2 error";
}

struct remote_find {
	const char *name;
	char *found;
};

static int remote_find_cb(const char *refname, void *payload)
{
	struct remote_find *f = payload;
	const char *rest = refname + strlen("refs/remotes/");
	size_t n = strlen(rest), k = strlen(f->name);
	if (n > k + 1 && rest[n - k - 1] == '/' && strcmp(rest + n - k, f->name) == 0) {
		f->found = pvg_strdup(rest);
		return 1;
	}
	return 0;
}

/* "<remote>/<name>" for the first remote-tracking branch <name>, or NULL. (References are
 * walked by glob: git_remote_list would run a regex over the config, which leaks in
 * libgit2 1.5.) */
static char *remote_tracking(git_repository *repo, const char *name)
{
	if (strchr(name, '/') || strpbrk(name, "^~:@{*?[\\"))
		return NULL;
	struct remote_find f = { .name = name };
	_cleanup_free_ char *glob = pvg_asprintf("refs/remotes/*/%s", name);
	git_reference_foreach_glob(repo, glob, remote_find_cb, &f);
	return f.found;
}

static int cmp_change(const void *a, const void *b)
{
	return strcmp(((const struct pvg_change *)a)->path, ((const struct pvg_change *)b)->path);
}

static void git_diff_freep(git_diff **d)
{
	if (*d)
		git_diff_free(*d);
}
static void git_tree_freep(git_tree **t)
{
	if (*t)
		git_tree_free(*t);
}
static void git_object_freep(git_object **o)
{
	if (*o)
		git_object_free(*o);
}
static void git_commit_freep(git_commit **c)
{
	if (*c)
		git_commit_free(*c);
}

static int find_renames(git_diff *diff)
{
	git_diff_find_options fo;
	git_diff_find_options_init(&fo, GIT_DIFF_FIND_OPTIONS_VERSION);
	/* git's defaults (50% similarity, rename limit 1000) so that the answer agrees with
	 * `git diff --name-status`. libgit2 scores tiny files differently and may pair a
	 * rename git reports as D + A; what must be installed is the same either way (new path
	 * installed, old path gone). */
	fo.flags = GIT_DIFF_FIND_RENAMES;
	return git_diff_find_similar(diff, &fo);
}

static void compute(struct pvg_scope *s, git_repository *repo, struct table *t)
{
	const char *wd = git_repository_workdir(repo);
	if (!wd) {
		set_error(s, -ENOTDIR, "not-a-repo", "point source.repo at a checkout with a work tree",
			  "%s is a bare repository: there is no work tree to compare", s->repo);
		return;
	}
	s->workdir = pvg_strdup(wd);
	size_t wl = strlen(s->workdir);
	if (wl > 1 && s->workdir[wl - 1] == '/')
		s->workdir[wl - 1] = '\0';

	if (!s->baseline) {
		set_error(s, -EDESTADDRREQ, "no-baseline",
			  "set source.baseline to the branch the change is based on, e.g. "
			  "\"origin/main\"",
			  "source.baseline is not set: without a baseline there is no change set");
		return;
	}
	if (git_repository_head_unborn(repo) == 1) {
		set_error(s, -ENOENT, "no-head", "commit something first",
			  "%s has no commit on its current branch (unborn HEAD)", s->workdir);
		return;
	}
	_cleanup_(git_object_freep) git_object *head_obj = NULL;
	_cleanup_(git_object_freep) git_object *base_obj = NULL;
	if (git_revparse_single(&head_obj, repo, "HEAD^{commit}") < 0) {
		set_error(s, -ENOENT, "no-head", NULL, "cannot resolve HEAD in %s: %s", s->workdir,
			  git_msg());
		return;
	}
	_cleanup_free_ char *spec = pvg_asprintf("%s^{commit}", s->baseline);
	int r = git_revparse_single(&base_obj, repo, spec);
	if (r < 0) {
		_cleanup_free_ char *why = pvg_strdup(git_msg());
		/* CI checkouts (GitHub, GitLab) have no local branches, only remote-tracking
		 * ones: name the one that exists rather than guess that it is meant */
		_cleanup_free_ char *remote = remote_tracking(repo, s->baseline);
		_cleanup_free_ char *hint = remote ?
			pvg_asprintf("this checkout has no local branch \"%s\" (as in CI "
				     "checkouts), but has %s: set source.baseline to \"%s\"",
				     s->baseline, remote, remote) : NULL;
		set_error(s, -ENOENT, "unknown-baseline",
			  hint ? hint : "fetch it (git fetch origin, or git fetch --unshallow in a "
					"shallow clone), or set source.baseline to a ref that exists "
					"here (git branch -a)",
			  "baseline \"%s\" cannot be resolved in %s: %s", s->baseline, s->workdir,
			  why);
		return;
	}
	const git_oid *head_id = git_object_id(head_obj), *base_id = git_object_id(base_obj);
	git_oid_tostr(s->head, sizeof(s->head), head_id);
	if (s->shallow) {
		/* History is cut: a merge base found (or not found) in what is left proves nothing. */
		set_error(s, -ESRCH, "shallow",
			  "fetch the history: git fetch --unshallow (CI: fetch-depth: 0)",
			  "%s is a shallow clone: merge-base(%s, HEAD) cannot be trusted", s->workdir,
			  s->baseline);
		return;
	}
	git_oid mb;
	r = git_merge_base(&mb, repo, base_id, head_id);
	if (r == GIT_ENOTFOUND) {
		set_error(s, -ESRCH, "no-merge-base",
			  "fetch the full history of both sides (git fetch --unshallow origin), or "
			  "choose a baseline that shares history with HEAD",
			  "HEAD and baseline \"%s\" have no common ancestor", s->baseline);
		return;
	}
	if (r < 0) {
		set_error(s, -EIO, "git-error", NULL, "merge-base(%s, HEAD): %s", s->baseline,
			  git_msg());
		return;
	}
	git_oid_tostr(s->merge_base, sizeof(s->merge_base), &mb);

	_cleanup_(git_commit_freep) git_commit *mb_commit = NULL;
	_cleanup_(git_tree_freep) git_tree *mb_tree = NULL;
	_cleanup_(git_tree_freep) git_tree *head_tree = NULL;
	_cleanup_(git_diff_freep) git_diff *committed = NULL;
	_cleanup_(git_diff_freep) git_diff *uncommitted = NULL;
	if (git_commit_lookup(&mb_commit, repo, &mb) < 0 ||
	    git_commit_tree(&mb_tree, mb_commit) < 0 ||
	    git_commit_tree(&head_tree, (git_commit *)head_obj) < 0) {
		set_error(s, -EIO, "git-error", NULL, "reading the trees: %s", git_msg());
		return;
	}
	git_diff_options o;
	git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION);
	o.flags = GIT_DIFF_INCLUDE_TYPECHANGE;
	if (git_diff_tree_to_tree(&committed, repo, mb_tree, head_tree, &o) < 0 ||
	    find_renames(committed) < 0) {
		set_error(s, -EIO, "git-error", NULL, "diff merge-base..HEAD: %s", git_msg());
		return;
	}
	fold_committed(t, committed);

	if (s->include_uncommitted) {
		/* Untracked files honour .gitignore, as `git status` does. Nothing is written back:
		 * no GIT_DIFF_UPDATE_INDEX. */
		o.flags = GIT_DIFF_INCLUDE_TYPECHANGE | GIT_DIFF_INCLUDE_UNTRACKED |
			  GIT_DIFF_RECURSE_UNTRACKED_DIRS;
		if (git_diff_tree_to_workdir_with_index(&uncommitted, repo, head_tree, &o) < 0 ||
		    find_renames(uncommitted) < 0) {
			set_error(s, -EIO, "git-error", NULL, "diff HEAD..work tree: %s", git_msg());
			return;
		}
		fold_uncommitted(t, uncommitted);
	}
}

/* provgate's own inputs (the config, the build and service logs) and outputs (reports)
 * often live in the experiment's checkout without being tracked; they are not runtime
 * files. */
struct input_id {
	dev_t dev;
	ino_t ino;
};

static size_t file_ids(const char *const *paths, size_t n_paths, struct input_id *out)
{
	size_t n = 0;
	for (size_t i = 0; i < n_paths; i++) {
		struct stat st;
		if (paths[i] && strcmp(paths[i], "-") != 0 && stat(paths[i], &st) == 0 &&
		    S_ISREG(st.st_mode))
			out[n++] = (struct input_id){ st.st_dev, st.st_ino };
	}
	return n;
}

static bool is_one_of(const struct input_id *in, size_t n, const char *workdir, const char *path)
{
	_cleanup_free_ char *full = pvg_path_join(workdir, path);
	struct stat st;
	if (!n || stat(full, &st) < 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (in[i].dev == st.st_dev && in[i].ino == st.st_ino)
			return true;
	return false;
}

/* A provgate report (or comparison, cluster verdict, attestation) by its content: the first
 * byte decides whether the rest is read at all. */
static bool is_provgate_output(const char *workdir, const char *path)
{
	_cleanup_free_ char *full = pvg_path_join(workdir, path);
	struct stat st;
	_cleanup_close_ int fd = pvg_open_regular(full, &st);
	if (fd < 0 || st.st_size < 2 || (uint64_t)st.st_size > PVG_REPORT_KIND_MAX)
		return false;
	char head[64];
	ssize_t r = pread(fd, head, sizeof(head), 0);
	if (r <= 0 || !pvg_report_kind_maybe(head, (size_t)r))
		return false;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (pvg_read_file(full, PVG_REPORT_KIND_MAX, &text, &len) < 0)
		return false;
	return pvg_report_kind(text, len, NULL, 0);
}

static const char *const build_state_names[] = {
	".ninja_log",	     ".ninja_deps",	    "build.ninja",	"CMakeCache.txt",
	"compile_commands.json", "cmake_install.cmake", "install_manifest.txt", "CTestTestfile.cmake",
};
static const char *const build_state_dirs[] = {
	"CMakeFiles", ".cmake", "meson-info", "meson-logs", "meson-private",
};

bool pvg_scope_is_build_state(const char *path)
{
	const char *base = pvg_basename(path);
	for (size_t i = 0; i < ARRAY_SIZE(build_state_names); i++)
		if (strcmp(base, build_state_names[i]) == 0)
			return true;
	size_t bl = strlen(base);
	if (bl > 2 && base[bl - 2] == '.' && (base[bl - 1] == 'o' || base[bl - 1] == 'd'))
		return true; /* object and dependency files */
	for (size_t i = 0; i < ARRAY_SIZE(build_state_dirs); i++) {
		size_t dl = strlen(build_state_dirs[i]);
		for (const char *p = path; (p = strstr(p, build_state_dirs[i])); p += dl)
			if ((p == path || p[-1] == '/') && p[dl] == '/')
				return true;
	}
	return false;
}

/* The top folder of the work tree that holds the artifact ("cmake-build-rocm/", "build/"),
 * or NULL when the artifact is outside the work tree or at its root. */
static bool in_build_tree(char *const *trees, size_t n, const char *path)
{
	for (size_t k = 0; k < n; k++)
		if (trees[k] && strncmp(path, trees[k], strlen(trees[k])) == 0)
			return true;
	return false;
}

static char *build_tree_prefix(const char *workdir, const char *artifact)
{
	if (!artifact || !workdir)
		return NULL;
	_cleanup_free_ char *dir = pvg_strdup(artifact);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	char real_dir[PATH_MAX], real_work[PATH_MAX];
	if (!realpath(dir[0] ? dir : "/", real_dir) || !realpath(workdir, real_work))
		return NULL;
	size_t wl = strlen(real_work);
	if (strncmp(real_dir, real_work, wl) != 0 || real_dir[wl] != '/')
		return NULL;
	const char *rel = real_dir + wl + 1;
	const char *end = strchr(rel, '/');
	size_t n = end ? (size_t)(end - rel) : strlen(rel);
	return n ? pvg_asprintf("%.*s/", (int)n, rel) : NULL;
}

struct pvg_scope *pvg_scope_compute(const struct pvg_source_spec *src, const char *default_repo,
				     const struct pvg_scope_own *own)
{
	static const struct pvg_scope_own none = { 0 };
	if (!own)
		own = &none;
	struct pvg_scope *s = pvg_xcalloc(1, sizeof(*s));
	s->repo = pvg_strdup(src->repo ? src->repo : default_repo ? default_repo : ".");
	s->baseline = pvg_strdup(src->baseline);
	s->include_uncommitted = src->include_uncommitted;

	git_libgit2_init();
	/* provgate only reads the repository and runs none of its hooks or filters, so a
	 * checkout owned by another user (root verifying a user's tree) is fine to read. */
	git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
	git_repository *repo = NULL;
	struct table t = { 0 };
	int r = git_repository_open_ext(&repo, s->repo, 0, NULL);
	if (r < 0) {
		set_error(s, -ENOTDIR, "not-a-repo",
			  "set source.repo to the git checkout the change was made in",
			  "no git repository at %s: %s", s->repo, git_msg());
	} else {
		s->shallow = git_repository_is_shallow(repo) == 1;
		compute(s, repo, &t);
		git_repository_free(repo);
	}
	git_libgit2_shutdown();
	if (s->err) {
		table_free(&t);
		return s;
	}

	_cleanup_free_ struct input_id *in_ids =
		pvg_xcalloc(own->n_inputs ? own->n_inputs : 1, sizeof(*in_ids));
	_cleanup_free_ struct input_id *out_ids =
		pvg_xcalloc(own->n_outputs ? own->n_outputs : 1, sizeof(*out_ids));
	size_t n_in = file_ids(own->inputs, own->n_inputs, in_ids);
	size_t n_out = file_ids(own->outputs, own->n_outputs, out_ids);
	/* the build trees of every artifact: [0] is build_artifact's */
	size_t n_trees = 1 + own->n_build_artifacts;
	char **build_trees = pvg_xcalloc(n_trees, sizeof(*build_trees));
	build_trees[0] = build_tree_prefix(s->workdir, own->build_artifact);
	for (size_t k = 0; k < own->n_build_artifacts; k++)
		build_trees[k + 1] = build_tree_prefix(s->workdir, own->build_artifacts[k]);
	s->changes = pvg_xcalloc(t.n, sizeof(*s->changes));
	for (size_t i = 0; i < t.n; i++) {
		if (t.e[i].dead) {
			change_clear(&t.e[i].c);
			continue;
		}
		struct pvg_change *c = &s->changes[s->n++];
		*c = t.e[i].c;
		c->cls = pvg_scope_classify(src, c->path, &c->install_path);
		/* only ever turns unknown into ignored: never exempts a mapped or compiled file */
		if (c->cls == PVG_SCOPE_UNKNOWN && c->kind != 'D') {
			if (is_one_of(in_ids, n_in, s->workdir, c->path)) {
				c->provgate_input = true;
			} else if (is_one_of(out_ids, n_out, s->workdir, c->path) ||
				   is_provgate_output(s->workdir, c->path)) {
				c->provgate_output = true;
			} else if (in_build_tree(build_trees, n_trees, c->path) &&
				   pvg_scope_is_build_state(c->path)) {
				c->build_state = true;
			}
			if (c->provgate_input || c->provgate_output || c->build_state)
				c->cls = PVG_SCOPE_IGNORED;
		}
		c->old_cls = c->cls;
		if (c->old_path)
			c->old_cls = pvg_scope_classify(src, c->old_path, &c->old_install_path);
		s->count[c->cls]++;
	}
	for (size_t k = 0; k < n_trees; k++)
		free(build_trees[k]);
	free(build_trees);
	free(t.e);
	free(t.slot);
	qsort(s->changes, s->n, sizeof(*s->changes), cmp_change);
	return s;
}

void pvg_scope_free(struct pvg_scope *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		change_clear(&s->changes[i]);
	free(s->changes);
	pvg_msg_clear(&s->msg);
	free(s->workdir);
	free(s->baseline);
	free(s->repo);
	free(s);
}

const struct pvg_change *pvg_scope_find(const struct pvg_scope *s, const char *path)
{
	struct pvg_change key = { .path = (char *)path };
	return bsearch(&key, s->changes, s->n, sizeof(*s->changes), cmp_change);
}
