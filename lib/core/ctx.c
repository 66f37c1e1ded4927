/* SPDX-License-Identifier: MIT */
/*
 * The run context: config, the installed artifact's resolution, the file-identity cache,
 * the facts' slots and the chain object. Waiting for the artifact pair, it lends its time to
 * the evaluation's preparation of later gates through the callbacks the runner sets.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/ctx.h"
#include "sys/pymodule.h"
#include "util/thread.h"

static cJSON *new_chain(void)
{
	cJSON *chain = cJSON_CreateObject();
	cJSON_AddNullToObject(chain, "build");
	cJSON_AddNullToObject(chain, "installed");
	cJSON_AddNullToObject(chain, "processes");
	cJSON_AddNullToObject(chain, "markers");
	cJSON_AddNullToObject(chain, "witness");
	return chain;
}

void pvg_ctx_init(struct pvg_ctx *ctx, const struct pvg_config *cfg, enum pvg_phase phase)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->cfg = cfg;
	ctx->phase = phase;
	ctx->procfs = pvg_procfs_root();
	ctx->sysfs = pvg_sysfs_root();
	ctx->started_ns = pvg_now_ns();
	ctx->started_at = time(NULL);
	ctx->chain = new_chain();
	/* every artifact and build file read whole is bounded by the config's size */
	pvg_hash_set_max_size(cfg->install.max_artifact_size);
	struct pvg_artifact *v = pvg_config_artifacts(cfg, &ctx->n_arts);
	ctx->arts = pvg_xcalloc(ctx->n_arts ? ctx->n_arts : 1, sizeof(*ctx->arts));
	for (size_t i = 0; i < ctx->n_arts; i++) {
		struct pvg_ctx_artifact *a = &ctx->arts[i];
		a->a = v[i];
		if (!a->a.name) {
			pvg_artifact_default_name(a->a.build ? a->a.build : a->a.install,
						  a->default_name, sizeof(a->default_name));
			a->a.name = a->default_name;
		}
	}
	free(v);
	/* chain.artifacts: every artifact, filled by the gates that prove its links */
	cJSON *list = cJSON_AddArrayToObject(ctx->chain, "artifacts");
	for (size_t i = 0; i < ctx->n_arts; i++) {
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_str(o, "name", ctx->arts[i].a.name);
		cJSON_AddNullToObject(o, "build");
		cJSON_AddNullToObject(o, "installed");
		cJSON_AddNullToObject(o, "processes");
		cJSON_AddItemToArray(list, o);
	}
}

static void forget_installed(struct pvg_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n_arts; i++) {
		struct pvg_ctx_artifact *a = &ctx->arts[i];
		free(a->installed_path);
		pvg_msg_clear(&a->installed_msg);
		a->installed_path = NULL;
		a->installed_resolved = false;
		a->installed_err = 0;
	}
}

void pvg_ctx_cancel_early(struct pvg_ctx *ctx)
{
	if (ctx->early_pair)
		pvg_pair_cancel(ctx->early_pair);
	ctx->early_pair = NULL;
}

void pvg_ctx_forget(struct pvg_ctx *ctx)
{
	pvg_ctx_cancel_early(ctx);
	forget_installed(ctx);
	for (size_t i = 0; i < ctx->n_files; i++)
		pvg_file_id_clear(&ctx->files[i]);
	ctx->n_files = 0;
	for (int s = 0; s < PVG_SLOT__MAX; s++) {
		if (ctx->slot[s] && ctx->slot_free[s])
			ctx->slot_free[s](ctx->slot[s]);
		ctx->slot[s] = NULL;
		ctx->slot_free[s] = NULL;
	}
}

void pvg_ctx_done(struct pvg_ctx *ctx)
{
	pvg_ctx_forget(ctx);
	for (size_t i = 0; i < ctx->outputs.n; i++)
		free(ctx->outputs.v[i]);
	free(ctx->outputs.v);
	ctx->outputs = (struct pvg_strv){ 0 };
	if (ctx->chain)
		cJSON_Delete(ctx->chain);
	ctx->chain = NULL;
	free(ctx->arts);
	ctx->arts = NULL;
	ctx->n_arts = 0;
	free(ctx->pinned_procs);
	ctx->pinned_procs = NULL;
	ctx->n_pinned_procs = 0;
}

void *pvg_ctx_slot(struct pvg_ctx *ctx, enum pvg_slot s)
{
	return ctx->slot[s];
}

void *pvg_ctx_take_slot(struct pvg_ctx *ctx, enum pvg_slot s)
{
	void *p = ctx->slot[s];
	ctx->slot[s] = NULL;
	ctx->slot_free[s] = NULL;
	return p;
}

void pvg_ctx_set_slot(struct pvg_ctx *ctx, enum pvg_slot s, void *p, void (*free_fn)(void *))
{
	if (ctx->slot[s] && ctx->slot_free[s])
		ctx->slot_free[s](ctx->slot[s]);
	ctx->slot[s] = p;
	ctx->slot_free[s] = free_fn;
}

int pvg_ctx_installed_at(struct pvg_ctx *ctx, size_t i, const char **path, const char **why)
{
	const struct pvg_config *cfg = ctx->cfg;
	if (i >= ctx->n_arts) {
		*path = NULL;
		*why = "neither install.artifact nor install.python_module is set";
		return -EDESTADDRREQ;
	}
	struct pvg_ctx_artifact *a = &ctx->arts[i];
	if (!a->installed_resolved) {
		a->installed_resolved = true;
		if (a->a.install) {
			a->installed_path = pvg_strdup(a->a.install);
		} else if (a->a.python_module) {
			a->installed_err = pvg_python_module_path(
				cfg->install.python ? cfg->install.python : "python3",
				a->a.python_module, NULL, &a->installed_path, &a->installed_msg);
		} else {
			a->installed_err = -EDESTADDRREQ;
			if (cfg->n_artifacts)
				pvg_msg_set(&a->installed_msg, NULL,
					    "artifacts entry \"%s\" sets neither install nor "
					    "python_module", a->a.name);
			else
				pvg_msg_set(&a->installed_msg, NULL, "%s",
					    "neither install.artifact nor install.python_module is "
					    "set");
		}
	}
	*path = a->installed_path;
	*why = a->installed_msg.text;
	return a->installed_err;
}

int pvg_ctx_installed(struct pvg_ctx *ctx, const char **path, const char **why)
{
	return pvg_ctx_installed_at(ctx, 0, path, why);
}

const char *pvg_ctx_art_label(const struct pvg_ctx *ctx, size_t i, char *buf, size_t size)
{
	if (ctx->n_arts <= 1 || i >= ctx->n_arts)
		return "";
	snprintf(buf, size, "%s: ", ctx->arts[i].a.name);
	return buf;
}

/* The cached entry for path, if nothing about the file can have changed since. */
static const struct pvg_file_id *cached(struct pvg_ctx *ctx, const char *path)
{
	for (size_t k = 0; k < ctx->n_files; k++) {
		struct pvg_file_id *id = &ctx->files[k];
		struct stat st;
		if (strcmp(id->path, path) != 0)
			continue;
		if (id->hashed && stat(path, &st) == 0 && pvg_file_id_matches(id, &st))
			return id;
		if (!id->hashed && stat(path, &st) < 0 && -errno == id->err)
			return id;
		return NULL;
	}
	return NULL;
}

/* Stores a fresh result (taking its memory), replacing a stale entry of the same path; a
 * full cache gives up its entries in turn, so the entries of one call (at most 8) never
 * push each other out. */
static const struct pvg_file_id *cache_put(struct pvg_ctx *ctx, struct pvg_file_id *fresh)
{
	size_t slot = ctx->n_files;
	for (size_t k = 0; k < ctx->n_files; k++)
		if (strcmp(ctx->files[k].path, fresh->path) == 0)
			slot = k;
	if (slot == PVG_MAX_CACHED_FILES)
		slot = ctx->evict_next++ % PVG_MAX_CACHED_FILES;
	if (slot < ctx->n_files)
		pvg_file_id_clear(&ctx->files[slot]);
	else
		ctx->n_files++;
	ctx->files[slot] = *fresh;
	memset(fresh, 0, sizeof(*fresh));
	return &ctx->files[slot];
}

int pvg_ctx_hash(struct pvg_ctx *ctx, const char *const *paths, size_t n,
		 const struct pvg_file_id **out)
{
	const char *todo[8];
	size_t n_todo = 0;
	if (n > 8)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		out[i] = cached(ctx, paths[i]);
		if (out[i])
			continue;
		bool dup = false;
		for (size_t t = 0; t < n_todo; t++)
			dup |= strcmp(todo[t], paths[i]) == 0;
		if (!dup)
			todo[n_todo++] = paths[i];
	}
	if (n_todo) {
		struct pvg_file_id fresh[8];
		pvg_hash_files(todo, n_todo, fresh);
		for (size_t t = 0; t < n_todo; t++)
			cache_put(ctx, &fresh[t]);
		for (size_t i = 0; i < n; i++)
			if (!out[i])
				for (size_t k = 0; k < ctx->n_files; k++)
					if (strcmp(ctx->files[k].path, paths[i]) == 0)
						out[i] = &ctx->files[k];
	}
	return 0;
}

struct help {
	struct pvg_ctx *ctx;
	struct pvg_pair_job *job;
};

static void help_thread(void *arg)
{
	struct help *h = arg;
	/* Yield to the hasher: this work has time to spare, the digest has none. Lowering
	 * the priority of a thread of our own needs no privilege. */
	(void)setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	pvg_pair_keep_off(h->job);
	h->ctx->prepare_later(h->ctx);
}

/* The evaluation's preparation of later gates on a thread of low priority, while this one
 * only waits for it: the ctx is used by one thread at a time. */
static void help_niced(struct pvg_ctx *ctx, struct pvg_pair_job *job)
{
	if (ctx->prepare_here)
		ctx->prepare_here(ctx);
	if (!ctx->prepare_later)
		return;
	struct help h = { ctx, job };
	if (pvg_run_on_thread(help_thread, &h) < 0)
		ctx->prepare_later(ctx); /* here, at this thread's own priority */
}

int pvg_ctx_hash_pair(struct pvg_ctx *ctx, const char *build, const char *installed,
		      const struct pvg_file_id *out[2], uint64_t *diff_at)
{
	*diff_at = UINT64_MAX;
	/* the early job is one artifact's pair; another artifact's leaves it for its own */
	struct pvg_pair_job *job = NULL;
	if (ctx->early_pair && strcmp(pvg_pair_installed(ctx->early_pair), installed) == 0) {
		job = ctx->early_pair;
		ctx->early_pair = NULL;
	}
	out[0] = cached(ctx, build);
	out[1] = cached(ctx, installed);
	if ((out[0] && out[1]) || strcmp(build, installed) == 0) {
		if (job)
			pvg_pair_cancel(job);
		const char *paths[2] = { build, installed };
		return pvg_ctx_hash(ctx, paths, 2, out);
	}
	if (!job)
		job = pvg_pair_start(build, installed);
	help_niced(ctx, job);
	struct pvg_file_id b, i, own;
	bool own_done = false;
	if (pvg_pair_wait_differs(job)) {
		/* hash the build here while the installed file finishes */
		pvg_hash_file(build, &own);
		own_done = true;
	}
	int eq = pvg_pair_join(job, &b, &i, diff_at);
	if (eq != 1) {
		/* they differ, or could not be compared: the build's own digest */
		pvg_file_id_clear(&b);
		if (own_done)
			b = own;
		else
			pvg_hash_file(build, &b);
	} else if (own_done) {
		pvg_file_id_clear(&own);
	}
	out[1] = cache_put(ctx, &i);
	out[0] = cache_put(ctx, &b);
	return 0;
}

void pvg_ctx_hash_early(struct pvg_ctx *ctx, const char *build, const char *installed)
{
	if (!ctx->early_pair && strcmp(build, installed) != 0 &&
	    !(cached(ctx, build) && cached(ctx, installed)))
		ctx->early_pair = pvg_pair_start(build, installed);
}

void pvg_chain_set(struct pvg_ctx *ctx, const char *key, cJSON *value)
{
	cJSON_ReplaceItemInObject(ctx->chain, key, value);
}
