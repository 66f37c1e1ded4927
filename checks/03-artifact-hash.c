/* SPDX-License-Identifier: MIT */
/*
 * Gate 3 artifact-hash: the build artifact and the installed artifact are the same bytes.
 * Begun before gate 1: each chunk of the installed file is read once, compared with the
 * build's and hashed on a thread of its own, while the main thread goes on with gates 1 and 2
 * and then prepares the later ones. Equal bytes share the digest; each identity and digest
 * comes from the fd that was fstat'ed and read.
 *
 * Its rules, each artifact in turn (hash_one), each stopping the artifact's check when it
 * does not pass:
 *   build-configured  build.artifact is set                       .not-configured
 *   install-located   the installed file is known (or the module) .not-configured,
 *                                                                 .module-not-found,
 *                                                                 .python-failed
 *   pair-hashed       the two files could be hashed at all        .read-error
 *   sides-read        each side was read whole                    .too-large, .sparse, ...
 *   not-empty         neither side is 0 bytes                     .empty
 *   same-digest       both have one sha256                        .mismatch
 */
#include <sys/stat.h>

#include "checks.h"
#include "facts.h"

static cJSON *file_json(const struct pvg_file_id *id, bool full)
{
	cJSON *o = cJSON_CreateObject();
	pvg_json_add_str(o, "path", id->path);
	pvg_json_add_str(o, "sha256", id->hashed ? id->hex : NULL);
	pvg_json_add_u64(o, "size", id->size);
	if (full) {
		char t[48];
		pvg_json_add_u64(o, "dev", id->dev);
		pvg_json_add_u64(o, "inode", id->ino);
		pvg_format_time(id->mtime.tv_sec, id->mtime.tv_nsec, t, sizeof(t));
		cJSON_AddStringToObject(o, "mtime", t);
		pvg_format_time(id->ctime.tv_sec, id->ctime.tv_nsec, t, sizeof(t));
		cJSON_AddStringToObject(o, "ctime", t);
	}
	return o;
}

/* Explains in o why one side could not be hashed, with the status that follows from it. */
static void side_problem(struct pvg_outcome *o, const char *side, const struct pvg_file_id *id,
			 const struct pvg_file_id *other)
{
	int e = -id->err; /* positive, for the comparisons below */
	if (id->too_large || id->sparse) {
		/* refused from its size or its holes, unread: where the other side was read and
		 * its size differs, they are not the same bytes whatever these hold */
		bool differ = other && other->hashed && other->size != id->size;
		_cleanup_free_ char *why =
			id->too_large
				? pvg_asprintf("is %" PRIu64 " bytes, more than install.max_artifact_size "
					       "(%" PRIu64 ")", id->size, pvg_hash_max_size())
				: pvg_asprintf("is %" PRIu64 " bytes of which %" PRIu64 " are data: "
					       "mostly holes, a sparse file and no library", id->size,
					       id->data_bytes);
		pvg_outcome_problem(o, differ ? PVG_FAIL : PVG_UNVERIFIABLE,
				    id->too_large ? "artifact-hash.too-large" : "artifact-hash.sparse",
				    id->too_large ? "point the config at the library itself, or raise "
						    "install.max_artifact_size if it really is this large"
						  : "reinstall the artifact: a library is written whole, never "
						    "as holes",
				    "%s artifact %s %s; not read%s", side, id->path, why,
				    differ ? ", and its size differs from the other side's" : "");
		return;
	}
	if (e == ENOENT || e == ENOTDIR) {
		pvg_outcome_problem(o, PVG_FAIL,
				    strcmp(side, "build") == 0 ? "artifact-hash.build-missing"
							       : "artifact-hash.installed-missing",
				    strcmp(side, "build") == 0
					    ? "build the artifact, or fix build.artifact in the config"
					    : "install the artifact (cmake --install / pip install), or fix "
					      "install.artifact",
				    "%s artifact %s does not exist", side, id->path);
		return;
	}
	if (e == EISDIR || e == EINVAL) {
		pvg_outcome_problem(o, PVG_FAIL, "artifact-hash.not-regular-file",
				    "point the config at the shared library file itself",
				    "%s artifact %s %s", side, id->path, id->err_what);
		return;
	}
	if (e == EACCES || e == EPERM) {
		pvg_outcome_problem(o, PVG_UNVERIFIABLE, "artifact-hash.unreadable",
				    "run provgate as a user that can read the artifact",
				    "%s artifact %s cannot be read: %s", side, id->path, strerror(e));
		return;
	}
	pvg_outcome_problem(o, PVG_UNVERIFIABLE, "artifact-hash.read-error",
			    e == EAGAIN ? "something is still writing the artifact; wait for the build or "
					  "install to finish and run again"
					: NULL,
			    "%s artifact %s: %s (%s)", side, id->path,
			    e == EAGAIN ? "file size changed while it was being read" : strerror(e),
			    id->err_what ? id->err_what : "read");
}


/* ---- the rules, each on one artifact's facts ---- */

struct hash_facts {
	const struct pvg_config *cfg;
	const struct pvg_artifact *a;
	int located; /* pvg_ctx_installed_at's answer, with installed and why */
	const char *installed, *why;
	int hashed; /* pvg_ctx_hash_pair's answer, with b, in and diff_at */
	const struct pvg_file_id *b, *in;
	uint64_t diff_at;
};

static struct pvg_outcome rule_build_configured(const struct hash_facts *f)
{
	struct pvg_outcome o = { 0 };
	if (f->a->build)
		return o;
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "artifact-hash.not-configured",
			    "set build.artifact to the file the build produced",
			    "no build artifact to compare: build.artifact is not set");
	o.stop = true;
	o.summary = pvg_strdup("build.artifact is not configured");
	return o;
}

static struct pvg_outcome rule_install_located(const struct hash_facts *f)
{
	struct pvg_outcome o = { 0 };
	int r = f->located;
	const char *module = f->a->python_module;
	if (r >= 0)
		return o;
	o.stop = true;
	if (r == -EDESTADDRREQ) {
		o.summary = pvg_strdup("installed artifact is not configured");
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "artifact-hash.not-configured",
				    f->cfg->n_artifacts > 0
					    ? "set the entry's install, or python_module (with "
					      "install.python)"
					    : "set install.artifact, or install.python_module (with "
					      "install.python)",
				    "%s", f->why);
	} else if (r == -ENOENT) {
		o.summary = pvg_asprintf("installed module %s cannot be found", module);
		pvg_outcome_problem(&o, PVG_FAIL, "artifact-hash.module-not-found",
				    "install the package into the interpreter named by "
				    "install.python",
				    "%s", f->why);
	} else {
		o.summary = pvg_asprintf("cannot tell where %s is installed", module);
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "artifact-hash.python-failed",
				    "name the interpreter inside its installation (a venv's "
				    "bin/python3, or PREFIX/bin/python3.X beside PREFIX/lib/python3.X): "
				    "provgate reads its files and never runs it; or set "
				    "install.artifact",
				    "%s", f->why);
	}
	return o;
}

static struct pvg_outcome rule_pair_hashed(const struct hash_facts *f)
{
	struct pvg_outcome o = { 0 };
	if (f->hashed >= 0)
		return o;
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "artifact-hash.read-error", NULL,
			    "hashing failed: %s", strerror(-f->hashed));
	o.stop = true; /* no summary of its own */
	return o;
}

static struct pvg_outcome rule_sides_read(const struct hash_facts *f)
{
	struct pvg_outcome o = { 0 };
	if (!f->b->hashed)
		side_problem(&o, "build", f->b, f->in);
	if (!f->in->hashed)
		side_problem(&o, "installed", f->in, f->b);
	if (o.status != PVG_PASS) {
		o.stop = true;
		o.summary = pvg_asprintf("cannot compare: %s", o.problems[0].message);
	}
	return o;
}

static struct pvg_outcome rule_not_empty(const struct hash_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct pvg_file_id *b = f->b, *in = f->in;
	if (b->size != 0 && in->size != 0)
		return o;
	const char *side = b->size == 0 ? "build" : "installed";
	o.summary = pvg_asprintf("%s artifact is empty", side);
	pvg_outcome_problem(&o, PVG_FAIL, "artifact-hash.empty",
			    "an empty file is never a working library; rebuild and reinstall",
			    "%s artifact %s is 0 bytes", side, b->size == 0 ? b->path : in->path);
	o.stop = true;
	return o;
}

static struct pvg_outcome rule_same_digest(const struct hash_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct pvg_file_id *b = f->b, *in = f->in;
	if (memcmp(b->sha256, in->sha256, 32) == 0)
		return o;
	char where[64] = "";
	if (f->diff_at != UINT64_MAX)
		snprintf(where, sizeof(where), "; first difference at byte %" PRIu64, f->diff_at);
	o.summary = pvg_asprintf("installed artifact differs from the build: sha256 %.12s… vs "
				 "%.12s…",
				 b->hex, in->hex);
	pvg_outcome_problem(&o, PVG_FAIL, "artifact-hash.mismatch",
			    "reinstall the build artifact (cmake --install, or copy it) and run again",
			    "build %s is sha256 %s (%" PRIu64 " bytes) but installed %s is sha256 %s "
			    "(%" PRIu64 " bytes)%s",
			    b->path, b->hex, b->size, in->path, in->hex, in->size, where);
	o.stop = true;
	return o;
}

/* ---- the evidence ---- */

static void module_json(const struct hash_facts *f, cJSON *ev)
{
	cJSON *m = cJSON_AddObjectToObject(ev, "python_module");
	pvg_json_add_str(m, "name", f->a->python_module);
	pvg_json_add_str(m, "python", f->cfg->install.python ? f->cfg->install.python : "python3");
	pvg_json_add_str(m, "resolved", f->installed);
	pvg_json_add_str(m, "answer", f->why);
}

/* Both sides into the evidence, and those hashed into the report's chain. */
static void sides_json(struct pvg_ctx *ctx, size_t ai, const struct hash_facts *f, cJSON *ev)
{
	const struct pvg_file_id *b = f->b, *in = f->in;
	cJSON_AddItemToObject(ev, "build", file_json(b, true));
	cJSON_AddItemToObject(ev, "installed", file_json(in, true));
	cJSON *link = pvg_chain_artifact(ctx, ai);
	if (b->hashed) {
		if (ai == 0)
			pvg_chain_set(ctx, "build", file_json(b, false));
		if (link)
			cJSON_ReplaceItemInObject(link, "build", file_json(b, false));
	}
	if (in->hashed) {
		if (ai == 0)
			pvg_chain_set(ctx, "installed", file_json(in, true));
		if (link)
			cJSON_ReplaceItemInObject(link, "installed", file_json(in, true));
	}
}

/* How the two sides were compared. */
static void compare_json(const struct hash_facts *f, cJSON *ev)
{
	const struct pvg_file_id *b = f->b, *in = f->in;
	pvg_json_add_bool(ev, "same_file", b->dev == in->dev && b->ino == in->ino);
	pvg_json_add_str(ev, "method",
			 b->digest_by_compare ? "installed hashed; build compared byte for byte with it"
			 : strcmp(b->path, in->path) == 0 ? "one path, hashed once"
							  : "both hashed");
	if (f->diff_at != UINT64_MAX)
		pvg_json_add_u64(ev, "first_difference_at", f->diff_at);
}

/* ---- the gate ---- */

/* One artifact: the rules in their order, the facts each needs read just before it. */
static enum pvg_status hash_one(struct pvg_ctx *ctx, size_t ai, cJSON *ev,
				struct pvg_result *res, void *unused)
{
	(void)unused;
	struct hash_facts f = { .cfg = ctx->cfg, .a = &ctx->arts[ai].a };
	struct pvg_outcome o = rule_build_configured(&f);
	if (o.stop)
		return pvg_outcome_final(res, o);
	f.located = pvg_ctx_installed_at(ctx, ai, &f.installed, &f.why);
	if (f.a->python_module)
		module_json(&f, ev);
	if ((o = rule_install_located(&f)).stop)
		return pvg_outcome_final(res, o);

	const struct pvg_file_id *ids[2];
	f.hashed = pvg_ctx_hash_pair(ctx, f.a->build, f.installed, ids, &f.diff_at);
	if ((o = rule_pair_hashed(&f)).stop)
		return pvg_outcome_final(res, o);
	f.b = ids[0];
	f.in = ids[1];
	sides_json(ctx, ai, &f, ev);
	if ((o = rule_sides_read(&f)).stop)
		return pvg_outcome_final(res, o);
	compare_json(&f, ev);
	if ((o = rule_not_empty(&f)).stop || (o = rule_same_digest(&f)).stop)
		return pvg_outcome_final(res, o);
	pvg_summary(res, "sha256 %.12s… equal (%" PRIu64 " bytes)%s", f.b->hex, f.b->size,
		    f.b->dev == f.in->dev && f.b->ino == f.in->ino ? ", same file" : "");
	return PVG_PASS;
}

static enum pvg_status run_artifact_hash(struct pvg_ctx *ctx, struct pvg_result *res)
{
	if (ctx->n_arts == 0) {
		pvg_summary(res, "build.artifact is not configured");
		pvg_problem(res, "artifact-hash.not-configured",
			    "set build.artifact to the file the build produced (or list artifacts)",
			    "no build artifact to compare: build.artifact is not set");
		return PVG_UNVERIFIABLE;
	}
	return pvg_each_artifact(ctx, res, hash_one, NULL);
}

/* The digest of a big library is the slowest fact of a run: begin it before gate 1. */
static void start_artifact_hash(struct pvg_ctx *ctx)
{
	const char *installed, *why;
	const char *build = ctx->n_arts ? ctx->arts[0].a.build : NULL;
	if (build && pvg_ctx_installed_at(ctx, 0, &installed, &why) == 0 &&
	    strcmp(installed, build) != 0)
		pvg_ctx_hash_early(ctx, build, installed);
}

const struct pvg_check pvg_check_artifact_hash = {
	.id = 3,
	.name = "artifact-hash",
	.phases = PVG_IN_ALL_PHASES,
	.rechecked = true,
	.run = run_artifact_hash,
	.start = start_artifact_hash,
};
