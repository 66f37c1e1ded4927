/* SPDX-License-Identifier: MIT */
/*
 * Gate 3 artifact-hash: the build artifact and the installed artifact are the same bytes.
 * Begun before gate 1: each chunk of the installed file is read once, compared with the
 * build's and hashed on a thread of its own, while the main thread goes on with gates 1 and 2
 * and then prepares the later ones. Equal bytes share the digest; each identity and digest
 * comes from the fd that was fstat'ed and read.
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

/* Explains why one side could not be hashed; returns the status that follows from it. */
static enum pvg_status side_problem(struct pvg_result *res, const char *side,
				    const struct pvg_file_id *id, const struct pvg_file_id *other)
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
		pvg_problem(res, id->too_large ? "artifact-hash.too-large" : "artifact-hash.sparse",
			    id->too_large ? "point the config at the library itself, or raise "
					    "install.max_artifact_size if it really is this large"
					  : "reinstall the artifact: a library is written whole, never "
					    "as holes",
			    "%s artifact %s %s; not read%s", side, id->path, why,
			    differ ? ", and its size differs from the other side's" : "");
		return differ ? PVG_FAIL : PVG_UNVERIFIABLE;
	}
	if (e == ENOENT || e == ENOTDIR) {
		pvg_problem(res,
			    strcmp(side, "build") == 0 ? "artifact-hash.build-missing"
						       : "artifact-hash.installed-missing",
			    strcmp(side, "build") == 0
				    ? "build the artifact, or fix build.artifact in the config"
				    : "install the artifact (cmake --install / pip install), or fix "
				      "install.artifact",
			    "%s artifact %s does not exist", side, id->path);
		return PVG_FAIL;
	}
	if (e == EISDIR || e == EINVAL) {
		pvg_problem(res, "artifact-hash.not-regular-file",
			    "point the config at the shared library file itself",
			    "%s artifact %s %s", side, id->path, id->err_what);
		return PVG_FAIL;
	}
	if (e == EACCES || e == EPERM) {
		pvg_problem(res, "artifact-hash.unreadable",
			    "run provgate as a user that can read the artifact",
			    "%s artifact %s cannot be read: %s", side, id->path, strerror(e));
		return PVG_UNVERIFIABLE;
	}
	pvg_problem(res, "artifact-hash.read-error",
		    e == EAGAIN ? "something is still writing the artifact; wait for the build or "
				  "install to finish and run again"
				: NULL,
		    "%s artifact %s: %s (%s)", side, id->path,
		    e == EAGAIN ? "file size changed while it was being read" : strerror(e),
		    id->err_what ? id->err_what : "read");
	return PVG_UNVERIFIABLE;
}

static enum pvg_status hash_one(struct pvg_ctx *ctx, size_t ai, cJSON *ev,
				struct pvg_result *res, void *unused)
{
	(void)unused;
	const struct pvg_config *cfg = ctx->cfg;
	const struct pvg_artifact *a = &ctx->arts[ai].a;
	bool listed = cfg->n_artifacts > 0;
	if (!a->build) {
		pvg_summary(res, "build.artifact is not configured");
		pvg_problem(res, "artifact-hash.not-configured",
			    "set build.artifact to the file the build produced",
			    "no build artifact to compare: build.artifact is not set");
		return PVG_UNVERIFIABLE;
	}
	const char *installed, *why;
	int r = pvg_ctx_installed_at(ctx, ai, &installed, &why);
	if (a->python_module) {
		cJSON *m = cJSON_AddObjectToObject(ev, "python_module");
		pvg_json_add_str(m, "name", a->python_module);
		pvg_json_add_str(m, "python", cfg->install.python ? cfg->install.python : "python3");
		pvg_json_add_str(m, "resolved", installed);
		pvg_json_add_str(m, "answer", why);
	}
	if (r == -EDESTADDRREQ) {
		pvg_summary(res, "installed artifact is not configured");
		pvg_problem(res, "artifact-hash.not-configured",
			    listed ? "set the entry's install, or python_module (with install.python)"
				   : "set install.artifact, or install.python_module (with "
				     "install.python)",
			    "%s", why);
		return PVG_UNVERIFIABLE;
	}
	if (r == -ENOENT) {
		pvg_summary(res, "installed module %s cannot be found", a->python_module);
		pvg_problem(res, "artifact-hash.module-not-found",
			    "install the package into the interpreter named by install.python",
			    "%s", why);
		return PVG_FAIL;
	}
	if (r < 0) {
		pvg_summary(res, "cannot tell where %s is installed", a->python_module);
		pvg_problem(res, "artifact-hash.python-failed",
			    "name the interpreter inside its installation (a venv's bin/python3, or "
			    "PREFIX/bin/python3.X beside PREFIX/lib/python3.X): provgate reads its "
			    "files and never runs it; or set install.artifact",
			    "%s", why);
		return PVG_UNVERIFIABLE;
	}

	const struct pvg_file_id *ids[2];
	uint64_t diff_at;
	r = pvg_ctx_hash_pair(ctx, a->build, installed, ids, &diff_at);
	if (r < 0) {
		pvg_problem(res, "artifact-hash.read-error", NULL, "hashing failed: %s", strerror(-r));
		return PVG_UNVERIFIABLE;
	}
	const struct pvg_file_id *b = ids[0], *in = ids[1];
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

	enum pvg_status st = PVG_PASS;
	size_t first = res->n_problems;
	if (!b->hashed)
		st = pvg_status_worst(st, side_problem(res, "build", b, in));
	if (!in->hashed)
		st = pvg_status_worst(st, side_problem(res, "installed", in, b));
	if (st != PVG_PASS) {
		pvg_summary(res, "cannot compare: %s", res->problems[first].message);
		return st;
	}

	bool same_file = b->dev == in->dev && b->ino == in->ino;
	pvg_json_add_bool(ev, "same_file", same_file);
	pvg_json_add_str(ev, "method",
			 b->digest_by_compare ? "installed hashed; build compared byte for byte with it"
			 : strcmp(b->path, in->path) == 0 ? "one path, hashed once"
							  : "both hashed");
	if (diff_at != UINT64_MAX)
		pvg_json_add_u64(ev, "first_difference_at", diff_at);
	if (b->size == 0 || in->size == 0) {
		pvg_summary(res, "%s artifact is empty", b->size == 0 ? "build" : "installed");
		pvg_problem(res, "artifact-hash.empty",
			    "an empty file is never a working library; rebuild and reinstall",
			    "%s artifact %s is 0 bytes", b->size == 0 ? "build" : "installed",
			    b->size == 0 ? b->path : in->path);
		return PVG_FAIL;
	}
	if (memcmp(b->sha256, in->sha256, 32) != 0) {
		char where[64] = "";
		if (diff_at != UINT64_MAX)
			snprintf(where, sizeof(where), "; first difference at byte %" PRIu64, diff_at);
		pvg_summary(res, "installed artifact differs from the build: sha256 %.12s… vs %.12s…",
			    b->hex, in->hex);
		pvg_problem(res, "artifact-hash.mismatch",
			    "reinstall the build artifact (cmake --install, or copy it) and run again",
			    "build %s is sha256 %s (%" PRIu64 " bytes) but installed %s is sha256 %s "
			    "(%" PRIu64 " bytes)%s",
			    b->path, b->hex, b->size, in->path, in->hex, in->size, where);
		return PVG_FAIL;
	}
	pvg_summary(res, "sha256 %.12s… equal (%" PRIu64 " bytes)%s", b->hex, b->size,
		    same_file ? ", same file" : "");
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
