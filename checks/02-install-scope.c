/* SPDX-License-Identifier: MIT */
/*
 * Gate 2 install-scope: every changed runtime file is installed with identical bytes.
 * The change set comes from lib/sys/scope.c; this file decides what each class of change needs:
 * mapped files must be at their install path with the work tree's bytes, deleted or
 * renamed-away mapped files must be gone from it, unknown files fail (default-deny), compiled
 * files are left to gates 1, 3 and 6, ignored files to nobody.
 *
 * Its rules (change_rules[] below), each on the facts of one change (struct change_facts):
 *   installed-identical  a mapped file is at its install path with the work tree's bytes, a
 *                        deleted one is gone (install-scope.not-installed, .differs,
 *                        .deleted-still-installed, .unreadable, .submodule)
 *   in-scope             a changed file is mapped, compiled or ignored (.unknown-scope)
 *   old-path-removed     a rename's old install path is gone (.deleted-still-installed)
 * and once for the change set, runtime-change: something changed that runtime loads
 * (.no-changes). Problems of one code beyond MAX_PROBLEMS_PER_CODE are summed up in one.
 */
#include <stdatomic.h>
#include <sys/stat.h>

#include "checks.h"
#include "facts.h"
#include "util/thread.h"

#define MAX_LISTED_CHANGES 200 /* evidence stays readable on a 10,000-file rebase */
#define MAX_PROBLEMS_PER_CODE 50
#define HASH_THREADS 4

enum verdict {
	V_NONE,
	V_SAME,         /* installed, identical bytes */
	V_MISSING,      /* not at its install path */
	V_DIFFERS,      /* there, other bytes (or not a regular file) */
	V_GONE,         /* deleted, and absent from the install location: as it should be */
	V_STILL,        /* deleted or renamed away, still installed */
	V_UNREADABLE,   /* one side could not be read */
	V_SUBMODULE,    /* a gitlink under an install prefix: no bytes to compare */
};

static const char *const verdict_names[] = {
	[V_NONE] = NULL,           [V_SAME] = "installed",   [V_MISSING] = "missing",
	[V_DIFFERS] = "differs",   [V_GONE] = "removed",     [V_STILL] = "still-installed",
	[V_UNREADABLE] = "unreadable", [V_SUBMODULE] = "submodule",
};

/* One mapped file to compare: the work tree copy against the installed copy. */
struct compare_job {
	const struct pvg_change *change;
	char *work;
	enum verdict verdict;
	int err;             /* -errno behind V_UNREADABLE / V_DIFFERS */
	bool err_installed;  /* which side err is about */
	const char *err_what;
	uint64_t work_size, inst_size;
	char work_hex[65], inst_hex[65];
};

struct pool {
	struct compare_job *jobs;
	size_t n;
	atomic_size_t next;
};

static void compare_one(struct compare_job *j)
{
	const char *inst = j->change->install_path;
	struct stat ws, is;
	if (stat(inst, &is) < 0) {
		if (errno == ENOENT || errno == ENOTDIR) {
			j->verdict = V_MISSING;
		} else {
			j->verdict = V_UNREADABLE;
			j->err = -errno;
			j->err_installed = true;
			j->err_what = "stat";
		}
		return;
	}
	if (stat(j->work, &ws) < 0) {
		j->verdict = V_UNREADABLE;
		j->err = -errno;
		j->err_what = "stat";
		return;
	}
	j->work_size = (uint64_t)ws.st_size;
	j->inst_size = (uint64_t)is.st_size;
	if (S_ISREG(ws.st_mode) && S_ISREG(is.st_mode) && ws.st_size != is.st_size) {
		j->verdict = V_DIFFERS; /* no need to read either: the sizes already disagree */
		return;
	}
	struct pvg_file_id w, i;
	pvg_hash_file(j->work, &w);
	pvg_hash_file(inst, &i);
	if (!w.hashed || !i.hashed) {
		const struct pvg_file_id *bad = !w.hashed ? &w : &i;
		bool not_regular = bad->err == -EISDIR || bad->err == -EINVAL;
		j->verdict = not_regular && bad == &i ? V_DIFFERS : V_UNREADABLE;
		j->err = bad->err;
		j->err_installed = bad == &i;
		j->err_what = bad->err_what;
	} else {
		j->work_size = w.size;
		j->inst_size = i.size;
		memcpy(j->work_hex, w.hex, sizeof(j->work_hex));
		memcpy(j->inst_hex, i.hex, sizeof(j->inst_hex));
		j->verdict = memcmp(w.sha256, i.sha256, 32) == 0 ? V_SAME : V_DIFFERS;
	}
	pvg_file_id_clear(&w);
	pvg_file_id_clear(&i);
}

static void pool_worker(void *arg)
{
	struct pool *p = *(struct pool **)arg;
	for (size_t k; (k = atomic_fetch_add(&p->next, 1)) < p->n;)
		compare_one(&p->jobs[k]);
}

/* Compares all jobs on up to HASH_THREADS threads (this one included). */
static void compare_all(struct compare_job *jobs, size_t n)
{
	struct pool p = { .jobs = jobs, .n = n };
	atomic_init(&p.next, 0);
	struct pool *workers[HASH_THREADS];
	size_t want = n < HASH_THREADS ? n : HASH_THREADS;
	for (size_t t = 0; t < want; t++)
		workers[t] = &p;
	pvg_run_jobs(pool_worker, workers, want, sizeof(workers[0]));
}

/* Problems of one code beyond MAX_PROBLEMS_PER_CODE are counted, then summed up once. */
static const char *const capped_codes[] = {
	"install-scope.not-installed", "install-scope.differs",
	"install-scope.deleted-still-installed", "install-scope.unknown-scope",
	"install-scope.unreadable", "install-scope.submodule",
};

static bool under_cap(size_t count_of[], size_t k)
{
	return ++count_of[k] <= MAX_PROBLEMS_PER_CODE;
}

static const char kind_name[][9] = { ['A' - 'A'] = "added",    ['D' - 'A'] = "deleted",
				     ['M' - 'A'] = "modified", ['R' - 'A'] = "renamed",
				     ['T' - 'A'] = "type" };

static const char *kind_word(char k)
{
	return k >= 'A' && k <= 'T' && kind_name[k - 'A'][0] ? kind_name[k - 'A'] : "changed";
}

/* Deleted (or renamed-away) mapped file: it must not be at its install path any more. */
static enum verdict check_gone(const char *inst, int *err)
{
	struct stat st;
	if (lstat(inst, &st) == 0)
		return V_STILL;
	if (errno == ENOENT || errno == ENOTDIR)
		return V_GONE;
	*err = -errno;
	return V_UNREADABLE;
}

/* The artifact a compiled change goes into by its compiled globs (several artifacts), or
 * NULL: the build log decides (gate 1). */
static const char *compiled_into(const struct pvg_ctx *ctx, const struct pvg_change *c)
{
	if (c->cls != PVG_SCOPE_COMPILED || ctx->n_arts < 2)
		return NULL;
	for (size_t i = 0; i < ctx->n_arts; i++)
		for (size_t k = 0; k < ctx->arts[i].a.compiled.n; k++)
			if (pvg_glob_match(ctx->arts[i].a.compiled.v[k], c->path))
				return ctx->arts[i].a.name;
	return NULL;
}

/* "_rocm_C 2, _moe_C 1, by the build log 1": where the compiled changes go */
static char *compiled_counts(const struct pvg_ctx *ctx, const struct pvg_scope *s)
{
	size_t *n = pvg_xcalloc(ctx->n_arts + 1, sizeof(*n));
	for (size_t i = 0; i < s->n; i++) {
		const char *a = compiled_into(ctx, &s->changes[i]);
		if (s->changes[i].cls != PVG_SCOPE_COMPILED)
			continue;
		size_t k = ctx->n_arts;
		for (size_t j = 0; a && j < ctx->n_arts; j++)
			if (ctx->arts[j].a.name == a)
				k = j;
		n[k]++;
	}
	char *out = pvg_strdup("");
	for (size_t k = 0; k <= ctx->n_arts; k++) {
		if (!n[k])
			continue;
		char *j = pvg_asprintf("%s%s%s %zu", out, out[0] ? ", " : "",
				       k < ctx->n_arts ? ctx->arts[k].a.name : "by the build log",
				       n[k]);
		free(out);
		out = j;
	}
	free(n);
	return out;
}

static cJSON *change_json(const struct pvg_ctx *ctx, const struct pvg_change *c, enum verdict v,
			  enum verdict old_v)
{
	cJSON *o = cJSON_CreateObject();
	pvg_json_add_str(o, "path", c->path);
	const char *into = compiled_into(ctx, c);
	if (into)
		pvg_json_add_str(o, "artifact", into);
	if (c->old_path)
		pvg_json_add_str(o, "old_path", c->old_path);
	char k[2] = { c->kind, 0 };
	cJSON_AddStringToObject(o, "kind", k);
	cJSON_AddStringToObject(o, "class", pvg_scope_class_name(c->cls));
	pvg_json_add_bool(o, "uncommitted", c->uncommitted);
	if (c->install_path)
		pvg_json_add_str(o, "install_path", c->install_path);
	if (v != V_NONE)
		cJSON_AddStringToObject(o, "installed", verdict_names[v]);
	if (c->old_install_path)
		pvg_json_add_str(o, "old_install_path", c->old_install_path);
	if (old_v != V_NONE)
		cJSON_AddStringToObject(o, "old_installed", verdict_names[old_v]);
	if (c->submodule)
		pvg_json_add_bool(o, "submodule", true);
	if (c->provgate_input)
		pvg_json_add_bool(o, "provgate_input", true);
	if (c->provgate_output)
		pvg_json_add_bool(o, "provgate_output", true);
	if (c->build_state)
		pvg_json_add_bool(o, "build_state", true);
	return o;
}

static enum pvg_status scope_error(struct pvg_result *res, const struct pvg_scope *s)
{
	_cleanup_free_ char *code = pvg_asprintf("install-scope.%s", s->reason ? s->reason : "git-error");
	pvg_problem(res, code, s->msg.hint, "%s", s->msg.text ? s->msg.text : strerror(-s->err));
	pvg_summary(res, "no change set: %s", s->msg.text ? s->msg.text : strerror(-s->err));
	return PVG_UNVERIFIABLE;
}

/* ---- the rules: what each changed file must show ---------------------------------------------- */

/* How many problems of each capped code were seen (MAX_PROBLEMS_PER_CODE are written). */
struct caps {
	size_t count_of[ARRAY_SIZE(capped_codes)];
};

/* What was found about one change: its install verdict (and the comparison behind it), and
 * for a rename, whether the old path is gone. */
struct change_facts {
	const struct pvg_change *change;
	enum verdict verdict, old_verdict;
	const struct compare_job *job; /* the comparison, or NULL when none was made */
	int gone_err, old_err;         /* -errno of check_gone for the path and the old path */
};

static void problem_differs(const struct change_facts *f, struct pvg_result *res)
{
	const struct pvg_change *c = f->change;
	const struct compare_job *j = f->job;
	if (j && j->err)
		pvg_problem(res, "install-scope.differs",
			    "reinstall: the install location holds something else",
			    "%s: installed %s %s", c->path, c->install_path, j->err_what);
	else if (j && !j->work_hex[0])
		pvg_problem(res, "install-scope.differs", "reinstall the changed files, then run again",
			    "%s: installed copy %s differs (%" PRIu64 " bytes in the work tree, %" PRIu64
			    " installed)",
			    c->path, c->install_path, j->work_size, j->inst_size);
	else if (j)
		pvg_problem(res, "install-scope.differs", "reinstall the changed files, then run again",
			    "%s: installed copy %s differs (sha256 %.12s… in the work tree, %.12s… "
			    "installed)",
			    c->path, c->install_path, j->work_hex, j->inst_hex);
}

/* A mapped file is at its install path with the work tree's bytes; a deleted one is gone. */
static struct pvg_outcome rule_installed_identical(const struct change_facts *f,
						  struct caps *caps, struct pvg_result *res)
{
	const struct pvg_change *c = f->change;
	const struct compare_job *j = f->job;
	size_t from = res->n_problems;
	switch (f->verdict) {
	case V_NONE:
	case V_SAME:
	case V_GONE:
		return pvg_outcome_since(res, from, PVG_PASS);
	case V_MISSING:
		if (under_cap(caps->count_of, 0))
			pvg_problem(res, "install-scope.not-installed",
				    "install it (pip install / cmake --install / your deploy copy) or "
				    "fix install_map",
				    "%s file %s is not installed: %s does not exist",
				    kind_word(c->kind), c->path, c->install_path);
		return pvg_outcome_since(res, from, PVG_FAIL);
	case V_DIFFERS:
		if (under_cap(caps->count_of, 1))
			problem_differs(f, res);
		return pvg_outcome_since(res, from, PVG_FAIL);
	case V_STILL:
		if (under_cap(caps->count_of, 2))
			pvg_problem(res, "install-scope.deleted-still-installed",
				    "remove it from the install location (a stale module can still be "
				    "imported), or reinstall cleanly",
				    "%s was deleted but is still installed at %s", c->path,
				    c->install_path);
		return pvg_outcome_since(res, from, PVG_FAIL);
	case V_UNREADABLE:
		if (under_cap(caps->count_of, 4))
			pvg_problem(res, "install-scope.unreadable",
				    "run provgate as a user that can read the work tree and the install "
				    "location",
				    "%s: cannot read %s: %s", c->path,
				    j && !j->err_installed ? j->work : c->install_path,
				    strerror(-(j ? j->err : f->gone_err)));
		return pvg_outcome_since(res, from, PVG_UNVERIFIABLE);
	case V_SUBMODULE:
		if (under_cap(caps->count_of, 5))
			pvg_problem(res, "install-scope.submodule",
				    "map the submodule's runtime files individually, or ignore the "
				    "submodule path",
				    "%s is a submodule under an install_map prefix: its installation "
				    "cannot be compared file by file",
				    c->path);
		return pvg_outcome_since(res, from, PVG_UNVERIFIABLE);
	}
	return pvg_outcome_since(res, from, PVG_PASS);
}

/* Default-deny: a changed file is mapped, compiled or ignored. */
static struct pvg_outcome rule_in_scope(const struct change_facts *f, struct caps *caps,
					struct pvg_result *res)
{
	const struct pvg_change *c = f->change;
	size_t from = res->n_problems;
	if (c->cls != PVG_SCOPE_UNKNOWN)
		return pvg_outcome_since(res, from, PVG_PASS);
	if (under_cap(caps->count_of, 3) && pvg_scope_is_build_state(c->path)) {
		/* build state outside the artifact's build folder: say how to ignore it */
		const char *slash = strchr(c->path, '/');
		_cleanup_free_ char *hint =
			slash ? pvg_asprintf("this is a build tool's state file, not a runtime file: "
					     "add \"%.*s**\" (its build folder) or \"**/%s\" to "
					     "source.ignore",
					     (int)(slash - c->path + 1), c->path, pvg_basename(c->path))
			      : pvg_asprintf("this is a build tool's state file, not a runtime file: "
					     "add \"%s\" to source.ignore",
					     c->path);
		pvg_problem(res, "install-scope.unknown-scope", hint,
			    "%s file %s is neither mapped, compiled nor ignored", kind_word(c->kind),
			    c->path);
	} else if (caps->count_of[3] <= MAX_PROBLEMS_PER_CODE) {
		pvg_problem(res, "install-scope.unknown-scope",
			    "add it to source.install_map (runtime file), source.compiled (built into "
			    "the artifact) or source.ignore",
			    "%s file %s is neither mapped, compiled nor ignored", kind_word(c->kind),
			    c->path);
	}
	return pvg_outcome_since(res, from, PVG_FAIL);
}

/* The old path of a rename is gone from the install location. */
static struct pvg_outcome rule_old_path_removed(const struct change_facts *f, struct caps *caps,
						struct pvg_result *res)
{
	const struct pvg_change *c = f->change;
	size_t from = res->n_problems;
	if (f->old_verdict == V_STILL) {
		if (under_cap(caps->count_of, 2))
			pvg_problem(res, "install-scope.deleted-still-installed",
				    "remove it from the install location (a stale module can still be "
				    "imported), or reinstall cleanly",
				    "%s was renamed to %s but is still installed at %s", c->old_path,
				    c->path, c->old_install_path);
		return pvg_outcome_since(res, from, PVG_FAIL);
	}
	if (f->old_verdict == V_UNREADABLE) {
		if (under_cap(caps->count_of, 4))
			pvg_problem(res, "install-scope.unreadable", NULL, "%s: cannot check %s: %s",
				    c->old_path, c->old_install_path, strerror(-f->old_err));
		return pvg_outcome_since(res, from, PVG_UNVERIFIABLE);
	}
	return pvg_outcome_since(res, from, PVG_PASS);
}

/* Gate 2's rules, in the order their problems are listed for each change. */
static const struct change_rule {
	const char *name;
	struct pvg_outcome (*check)(const struct change_facts *, struct caps *,
				    struct pvg_result *);
} change_rules[] = {
	{ "installed-identical", rule_installed_identical }, /* same bytes, or gone if deleted */
	{ "in-scope",            rule_in_scope },            /* mapped, compiled or ignored */
	{ "old-path-removed",    rule_old_path_removed },    /* a rename's old install path */
};

/* Writes the "… and N more" problem of every code that reached its cap. */
static void caps_problems(const struct caps *caps, struct pvg_result *res)
{
	for (size_t k = 0; k < ARRAY_SIZE(capped_codes); k++)
		if (caps->count_of[k] > MAX_PROBLEMS_PER_CODE)
			pvg_problem(res, capped_codes[k], NULL, "… and %zu more files like the above",
				    caps->count_of[k] - MAX_PROBLEMS_PER_CODE);
}

/* ---- the facts: what is at each install path --------------------------------------------------- */

struct install_facts {
	struct change_facts *f; /* one per change, in the change set's order */
	struct compare_job *jobs;
	size_t n, n_jobs;
};

/* Compares each mapped change with its install path (in parallel) and checks that deleted
 * and renamed-away paths are gone. */
static void install_facts_read(const struct pvg_scope *s, struct install_facts *out)
{
	*out = (struct install_facts){
		.f = pvg_xcalloc(s->n, sizeof(*out->f)),
		.jobs = pvg_xcalloc(s->n, sizeof(*out->jobs)),
		.n = s->n,
	};
	size_t *job_of = pvg_xcalloc(s->n, sizeof(*job_of));
	for (size_t i = 0; i < s->n; i++) {
		const struct pvg_change *c = &s->changes[i];
		struct change_facts *f = &out->f[i];
		f->change = c;
		job_of[i] = SIZE_MAX;
		if (c->cls == PVG_SCOPE_MAPPED) {
			if (c->submodule)
				f->verdict = V_SUBMODULE;
			else if (c->kind == 'D')
				f->verdict = check_gone(c->install_path, &f->gone_err);
			else {
				out->jobs[out->n_jobs] = (struct compare_job){
					.change = c, .work = pvg_path_join(s->workdir, c->path)
				};
				job_of[i] = out->n_jobs++;
			}
		}
		/* the old path of a rename must be gone, unless the work tree has it again */
		if (c->old_install_path && !pvg_scope_find(s, c->old_path))
			f->old_verdict = check_gone(c->old_install_path, &f->old_err);
	}
	compare_all(out->jobs, out->n_jobs);
	for (size_t i = 0; i < s->n; i++) {
		if (job_of[i] == SIZE_MAX)
			continue;
		out->f[i].job = &out->jobs[job_of[i]];
		out->f[i].verdict = out->f[i].job->verdict;
	}
	free(job_of);
}

static void install_facts_release(struct install_facts *facts)
{
	for (size_t k = 0; k < facts->n_jobs; k++)
		free(facts->jobs[k].work);
	free(facts->jobs);
	free(facts->f);
}

/* Was this change not proven installed (or removed)? For the summary's count. */
static bool unproven(const struct change_facts *f)
{
	return (f->verdict != V_NONE && f->verdict != V_SAME && f->verdict != V_GONE) ||
	       f->change->cls == PVG_SCOPE_UNKNOWN || f->old_verdict == V_STILL ||
	       f->old_verdict == V_UNREADABLE;
}

/* ---- evidence and summary ---------------------------------------------------------------------- */

static void scope_json(const struct pvg_scope *s, cJSON *ev)
{
	pvg_json_add_str(ev, "repo", s->workdir ? s->workdir : s->repo);
	pvg_json_add_str(ev, "baseline", s->baseline);
	pvg_json_add_str(ev, "head", s->head[0] ? s->head : NULL);
	pvg_json_add_str(ev, "merge_base", s->merge_base[0] ? s->merge_base : NULL);
	pvg_json_add_bool(ev, "shallow", s->shallow);
	pvg_json_add_bool(ev, "include_uncommitted", s->include_uncommitted);
}

static cJSON *counts_json(const struct pvg_scope *s, cJSON *ev)
{
	cJSON *counts = cJSON_AddObjectToObject(ev, "counts");
	pvg_json_add_int(counts, "changed", (int)s->n);
	for (int c = 0; c < PVG_SCOPE__N_CLASSES; c++)
		pvg_json_add_int(counts, pvg_scope_class_name(c), (int)s->count[c]);
	return counts;
}

/* evidence.changes[]: the first MAX_LISTED_CHANGES, with their verdicts when facts is set. */
static void changes_json(const struct pvg_ctx *ctx, const struct pvg_scope *s,
			 const struct install_facts *facts, cJSON *ev)
{
	cJSON *list = cJSON_AddArrayToObject(ev, "changes");
	for (size_t i = 0; i < s->n && i < MAX_LISTED_CHANGES; i++)
		cJSON_AddItemToArray(list, change_json(ctx, &s->changes[i],
						       facts ? facts->f[i].verdict : V_NONE,
						       facts ? facts->f[i].old_verdict : V_NONE));
}

/* Nothing to prove is not a proof: usually the baseline already contains the change. */
static struct pvg_outcome rule_runtime_change(const struct pvg_scope *s, struct pvg_result *res)
{
	size_t from = res->n_problems;
	size_t runtime = s->count[PVG_SCOPE_MAPPED] + s->count[PVG_SCOPE_COMPILED] +
			 s->count[PVG_SCOPE_UNKNOWN];
	if (runtime != 0)
		return pvg_outcome_since(res, from, PVG_PASS);
	const char *hint = "check source.baseline: it must name the branch the change is based on "
			   "(e.g. origin/main), not one that already contains it";
	if (s->n == 0) {
		pvg_problem(res, "install-scope.no-changes", hint,
			    "no file changed between merge base %.12s and the work tree",
			    s->merge_base);
		pvg_summary(res, "nothing to prove: no changed files since %.12s", s->merge_base);
	} else {
		pvg_problem(res, "install-scope.no-changes", hint,
			    "all %zu changed files are ignored (source.ignore): no runtime change to "
			    "prove",
			    s->n);
		pvg_summary(res, "nothing to prove: all %zu changed files are ignored", s->n);
	}
	return pvg_outcome_since(res, from, PVG_UNVERIFIABLE);
}

static void install_summary(const struct pvg_ctx *ctx, const struct pvg_scope *s,
			    const struct install_facts *facts, enum pvg_status st,
			    struct pvg_result *res)
{
	size_t n_same = 0, n_gone = 0, n_unproven = 0;
	for (size_t i = 0; i < facts->n; i++) {
		n_same += facts->f[i].verdict == V_SAME;
		n_gone += facts->f[i].verdict == V_GONE;
		n_unproven += unproven(&facts->f[i]);
	}
	cJSON *counts = cJSON_GetObjectItem(res->evidence, "counts");
	pvg_json_add_int(counts, "installed_identical", (int)n_same);
	pvg_json_add_int(counts, "removed", (int)n_gone);
	_cleanup_free_ char *into = ctx->n_arts > 1 && s->count[PVG_SCOPE_COMPILED]
					    ? compiled_counts(ctx, s) : NULL;
	if (st == PVG_PASS)
		pvg_summary(res,
			    "%zu changed since %.12s: %zu installed identical, %zu removed, "
			    "%zu compiled (gates 1, 3, 6%s%s), %zu ignored",
			    s->n, s->merge_base, n_same, n_gone, s->count[PVG_SCOPE_COMPILED],
			    into ? ": " : "", into ? into : "", s->count[PVG_SCOPE_IGNORED]);
	else
		pvg_summary(res, "%zu of %zu changed files not proven installed: %s", n_unproven,
			    s->n, res->problems[0].message);
}

/* ---- the gate ------------------------------------------------------------------------------------ */

static enum pvg_status run_install_scope(struct pvg_ctx *ctx, struct pvg_result *res)
{
	const struct pvg_scope *s;
	int r = pvg_scope_get(ctx, &s);
	cJSON *ev = res->evidence;
	scope_json(s, ev);
	if (r < 0)
		return scope_error(res, s);
	counts_json(s, ev);
	enum pvg_status runtime = pvg_outcome_into(res, rule_runtime_change(s, res));
	if (runtime != PVG_PASS) {
		changes_json(ctx, s, NULL, ev);
		return runtime;
	}

	struct install_facts facts;
	install_facts_read(s, &facts);
	enum pvg_status st = PVG_PASS;
	struct caps caps = { 0 };
	for (size_t i = 0; i < facts.n; i++)
		for (size_t k = 0; k < ARRAY_SIZE(change_rules); k++)
			st = pvg_status_worst(st, pvg_outcome_into(res, change_rules[k].check(
							  &facts.f[i], &caps, res)));
	caps_problems(&caps, res);

	changes_json(ctx, s, &facts, ev);
	pvg_json_add_int(ev, "changes_listed", (int)(s->n < MAX_LISTED_CHANGES ? s->n
									 : MAX_LISTED_CHANGES));
	install_summary(ctx, s, &facts, st, res);
	install_facts_release(&facts);
	return st;
}

const struct pvg_check pvg_check_install_scope = {
	.id = 2,
	.name = "install-scope",
	.phases = PVG_IN_ALL_PHASES,
	.run = run_install_scope,
};
