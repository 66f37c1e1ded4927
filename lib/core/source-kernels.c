/* SPDX-License-Identifier: MIT */
/*
 * A changed device source's kernels, from the objects the build log compiled from it (see
 * source-kernels.h). Every object the log names must be read: one that is missing, is no
 * regular file, cannot be scanned, or holds no code object for the arch leaves the source's
 * kernels unknown (err, why), never an empty list taken for "no kernels".
 */
#include <sys/stat.h>

#include "core/source-kernels.h"
#include "formats/codeobj/codeobj.h"
#include "util/untrusted.h"

/* An object file is a build tree's file the config's build.log leads to; still, it is read
 * only as a regular file of a bounded size, never a device or FIFO. */
#define OBJECT_MAX_SIZE (4ull << 30)

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

bool pvg_is_device_source(const char *path)
{
	return has_suffix(path, ".cu") || has_suffix(path, ".hip");
}

bool pvg_is_device_header(const char *path)
{
	return has_suffix(path, ".cuh") || has_suffix(path, ".hiph");
}

void pvg_source_kernels_clear(struct pvg_source_kernels *k)
{
	pvg_strv_clear(&k->kernels);
	pvg_strv_clear(&k->linked_into);
	for (size_t i = 0; i < k->n_objs; i++) {
		free(k->objs[i].path);
		free(k->objs[i].why);
	}
	free(k->objs);
	free(k->why);
	memset(k, 0, sizeof(*k));
}

/* The name the log compiles rel as: its hipified copy (HIP), else rel. */
static char *compiled_name(const struct pvg_buildlog *log, const char *rel)
{
	const struct pvg_hipify_line *h = pvg_buildlog_find_hipify(log, rel);
	if (!h || !h->dst || h->status == PVG_HIPIFY_IGNORED)
		return pvg_strdup(rel);
	size_t sl = strlen(h->src), rl = strlen(rel);
	if (strcmp(h->src, rel) == 0)
		return pvg_strdup(h->dst);
	if (sl > rl && strncmp(h->dst, h->src, sl - rl) == 0)
		return pvg_strdup(h->dst + (sl - rl));
	return pvg_strdup(h->dst);
}

/* Where an object the log writes lies: absolute, or in its command's folder, a build folder
 * the log names, or the checkout (setup.py builds run there). NULL when not found. */
static char *find_object(const struct pvg_compile_step *cs, const struct pvg_strv *roots,
			 const char *workdir)
{
	const char *o = cs->object;
	struct stat st;
	if (o[0] == '/')
		return stat(o, &st) == 0 ? pvg_strdup(o) : NULL;
	const char *dirs[20];
	size_t nd = 0;
	if (cs->dir)
		dirs[nd++] = cs->dir;
	for (size_t i = 0; roots && i < roots->n && nd < ARRAY_SIZE(dirs) - 1; i++)
		dirs[nd++] = roots->v[i];
	if (workdir)
		dirs[nd++] = workdir;
	for (size_t k = 0; k < nd; k++) {
		if (dirs[k][0] != '/')
			continue;
		char *p = pvg_path_join(dirs[k], o);
		if (stat(p, &st) == 0)
			return p;
		free(p);
	}
	return NULL;
}

/* Reads one object's kernels for arch into k. */
static void read_object(struct pvg_source_kernels *k, struct pvg_source_object *ob,
			const char *arch)
{
	const struct pvg_untrusted how = { .root_fd = -1, .max_size = OBJECT_MAX_SIZE };
	struct pvg_untrusted_file uf;
	_cleanup_close_ int fd = pvg_open_untrusted(ob->path, &how, &uf);
	if (fd < 0) {
		ob->err = fd;
		ob->why = uf.refused ? pvg_asprintf("refused: %s", pvg_refusal_text(uf.refused))
				     : pvg_strdup(strerror(-fd));
		return;
	}
	struct pvg_codeobj_opts opts = { .names_arch = arch };
	struct pvg_codeobj_set *set = NULL;
	int r = pvg_codeobj_scan_fd(fd, ob->path, &opts, &set);
	if (r < 0) {
		ob->err = r;
		ob->why = pvg_asprintf("cannot be read: %s", strerror(-r));
		return;
	}
	size_t n_dev = 0, n_arch = 0;
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		if (co->kind == PVG_CO_HOST)
			continue;
		n_dev++;
		if (!co->arch || co->error || !pvg_codeobj_matches_arch(co, arch))
			continue;
		n_arch++;
		if (!co->kernels_known) {
			ob->err = -ENODATA;
			free(ob->why);
			ob->why = pvg_asprintf("its code object for %s does not list its kernels%s%s",
					       arch, co->kernels_why ? ": " : "",
					       co->kernels_why ? co->kernels_why : "");
			continue;
		}
		for (size_t j = 0; j < co->n_kernels; j++) {
			pvg_strv_add_unique(&k->kernels, co->kernels[j].name);
			ob->n_kernels++;
		}
	}
	if (n_dev)
		k->device_code = true;
	if (!set->elf && !ob->why) {
		ob->err = -ENOEXEC;
		ob->why = pvg_strdup("cannot be read: not an ELF object (or its headers are cut short)");
	}
	if (set->n_issues && !n_arch && !ob->why) {
		ob->err = -EBADMSG;
		ob->why = pvg_asprintf("its device code cannot be read: %s", set->issues[0].message);
	}
	if (n_dev && !n_arch && !ob->why) {
		ob->err = -ENOENT;
		ob->why = pvg_asprintf("it holds device code, but none for %s", arch);
	}
	pvg_codeobj_set_free(set);
}

void pvg_source_kernels_read(const struct pvg_buildlog *log, const struct pvg_linkgraph *g,
			     const struct pvg_strv *roots, const char *workdir, const char *rel,
			     const char *arch, struct pvg_source_kernels *out)
{
	memset(out, 0, sizeof(*out));
	_cleanup_free_ char *name = compiled_name(log, rel);
	struct pvg_strv seen = { 0 };
	/* the last compile line writing each object is the one that made it */
	for (size_t i = log->n_commands; i-- > 0;) {
		const struct pvg_build_command *cmd = &log->commands[i];
		if (!cmd->compile || !pvg_command_mentions(cmd->text, name))
			continue;
		const struct pvg_compile_step *cs = pvg_linkgraph_compile_of(g, i);
		if (!cs || !cs->object)
			continue;
		bool dup = false;
		for (size_t k = 0; k < seen.n && !dup; k++)
			dup = strcmp(seen.v[k], cs->object) == 0;
		if (dup)
			continue;
		pvg_strv_add_unique(&seen, cs->object);
		size_t outs[8];
		size_t n_out = pvg_linkgraph_outputs_of(g, cs->object, cs->dir, outs, 8);
		for (size_t k = 0; k < n_out; k++)
			if (outs[k] < g->n_links && g->links[outs[k]].output)
				pvg_strv_add_unique(&out->linked_into, g->links[outs[k]].output);
		out->objs = pvg_xrealloc(out->objs, out->n_objs + 1, sizeof(*out->objs));
		struct pvg_source_object *ob = &out->objs[out->n_objs++];
		memset(ob, 0, sizeof(*ob));
		ob->line = cmd->lineno;
		ob->path = find_object(cs, roots, workdir);
		if (!ob->path) {
			ob->path = pvg_strdup(cs->object);
			ob->err = -ENOENT;
			ob->why = pvg_strdup("not found in the build folders the log names");
		}
	}
	pvg_strv_clear(&seen);
	if (out->n_objs == 0) {
		out->err = -ENOENT;
		out->why = pvg_asprintf("the build log has no compile line writing an object from %s",
					name);
		return;
	}
	for (size_t k = 0; k < out->n_objs; k++)
		if (!out->objs[k].err)
			read_object(out, &out->objs[k], arch);
	for (size_t k = 0; k < out->n_objs; k++)
		if (out->objs[k].err) {
			/* one object unread: the kernels it holds are not known */
			out->err = out->objs[k].err;
			out->why = pvg_asprintf("object %s (compile line %zu): %s", out->objs[k].path,
						out->objs[k].line, out->objs[k].why);
			return;
		}
	/* a device source whose objects hold no device code at all: a device compile leaves a
	 * bundle or fatbin even without a kernel, so what was read is not what the log built */
	if (!out->device_code) {
		out->err = -ENODATA;
		out->why = pvg_asprintf("object %s (compile line %zu) holds no device code, though "
					"it was compiled from a device source",
					out->objs[0].path, out->objs[0].line);
	}
}
