/* SPDX-License-Identifier: MIT */
/*
 * Gate 6 code-object: the installed artifact carries device code for `arch`, every code
 * object agrees with itself (bundle id, metadata note, e_flags), and each
 * code_object.require_kernels name is in the code objects that match.
 *
 * Its rules, each artifact in turn (code_object_one); those marked "stops" end the
 * artifact's check when they do not pass:
 *   arch-configured  arch is set (stops)                            .not-configured
 *   installed-known  the installed artifact is known (stops)        .no-artifact
 *   readable         its code objects could be read (stops)         .no-artifact, .unreadable
 *   objects-sound    every code object and container is whole and   .malformed, .id-mismatch
 *                    agrees with itself
 *   device-code      there is device code at all (stops)            .no-device-code
 *   arch-present     a loadable code object for arch (stops)        .arch-missing
 *   identities-known every code object for arch has its sha256        .identity-unknown
 * then check_kernels_for_arch, check_kernels (require_kernels) and check_node (the arch is
 * what this node's GPUs run). The evidence lists each identity for arch (identities_json):
 * the sha256 of the image the driver or loader receives, which gate 7 matches the witness's
 * modules against (pvg_artifact_code_objects).
 */
#include "checks.h"
#include "facts.h"
#include "formats/codeobj/codeobj.h"
#include "sys/gpu-procs.h"

/* The installed artifacts' code objects, read once per run (PVG_SLOT_CODE_OBJECTS): one set a
 * artifact, each scanned with the kernel names and the sha256 of its own arch's objects. */
struct codeobj_sets {
	size_t n;
	struct pvg_codeobj_set *set[];
};

static void codeobj_sets_free(void *p)
{
	struct codeobj_sets *s = p;
	for (size_t i = 0; i < s->n; i++)
		pvg_codeobj_set_freep(s->set[i]);
	free(s);
}

static int installed_code_objects(struct pvg_ctx *ctx, size_t ai, const char *path,
				  struct pvg_codeobj_set **out)
{
	struct codeobj_sets *sets = pvg_ctx_slot(ctx, PVG_SLOT_CODE_OBJECTS);
	if (!sets) {
		sets = pvg_xcalloc(1, sizeof(*sets) + ctx->n_arts * sizeof(sets->set[0]));
		sets->n = ctx->n_arts;
		pvg_ctx_set_slot(ctx, PVG_SLOT_CODE_OBJECTS, sets, codeobj_sets_free);
	}
	if (ai >= sets->n)
		return -EINVAL;
	struct pvg_codeobj_set *set = sets->set[ai];
	const char *arch = pvg_artifact_arch(ctx->cfg, &ctx->arts[ai].a);
	if (set && strcmp(set->path, path) == 0 &&
	    (set->opts.kernel_names || (arch && set->names_arch && strcmp(set->names_arch, arch) == 0)) &&
	    (set->opts.all_digests || (arch && set->digest_arch && strcmp(set->digest_arch, arch) == 0))) {
		*out = set;
		return 0;
	}
	/* names and digests only for the objects that matter here: a big library holds ~10^6
	 * kernels in a gigabyte of code objects */
	struct pvg_codeobj_opts opts = { .names_arch = arch, .digest_arch = arch };
	struct pvg_codeobj_set *fresh;
	int r = pvg_codeobj_scan_path(path, &opts, &fresh);
	if (r < 0)
		return r;
	if (set)
		pvg_codeobj_set_freep(set);
	sets->set[ai] = fresh;
	*out = fresh;
	return 0;
}

const struct pvg_codeobj_set *pvg_artifact_code_objects(struct pvg_ctx *ctx, size_t ai)
{
	const char *path, *why;
	struct pvg_codeobj_set *set;
	if (ai >= ctx->n_arts || !pvg_artifact_arch(ctx->cfg, &ctx->arts[ai].a) ||
	    pvg_ctx_installed_at(ctx, ai, &path, &why) < 0 ||
	    installed_code_objects(ctx, ai, path, &set) < 0)
		return NULL;
	return set;
}

/* Reads the code objects early (while gate 3 hashes); run() finds them in the slot. */
static void prepare_code_object(struct pvg_ctx *ctx)
{
	const char *path, *why;
	struct pvg_codeobj_set *set;
	for (size_t ai = 0; ai < ctx->n_arts; ai++)
		if (pvg_artifact_arch(ctx->cfg, &ctx->arts[ai].a) &&
		    pvg_ctx_installed_at(ctx, ai, &path, &why) == 0)
			(void)installed_code_objects(ctx, ai, path, &set);
}

static const char *reloc_text(size_t n, char *buf, size_t size)
{
	snprintf(buf, size, ", %zu of them relocatable", n);
	return buf;
}

/* CUDA relocatable device code (-rdc): each unit's relocatable cubins stay in __nv_relfatbin
 * for a later device link; the runtime loads only the device-linked image in .nv_fatbin, so
 * an arch found only in __nv_relfatbin has nothing the GPU can run. */
static bool relocatable(const struct pvg_code_object *co)
{
	return co->section && strcmp(co->section, "__nv_relfatbin") == 0;
}

static char *list_archs(const struct pvg_codeobj_set *set)
{
	char *s = pvg_strdup("");
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		if (!co->arch || co->kind == PVG_CO_HOST || relocatable(co))
			continue;
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = set->objs[j].arch && !relocatable(&set->objs[j]) &&
			       strcmp(set->objs[j].arch, co->arch) == 0;
		if (seen)
			continue;
		if (strlen(s) > 400) {
			char *n = pvg_asprintf("%s, ...", s);
			free(s);
			return n;
		}
		char *n = pvg_asprintf("%s%s%s", s, *s ? ", " : "", co->arch);
		free(s);
		s = n;
	}
	return s;
}

/* Does the object hold kernels? 1 yes, 0 none, -1 unknown (compressed, not decoded). */
static int holds_kernels(const struct pvg_code_object *co)
{
	if (!co->kernels_known)
		return -1;
	return co->n_kernels > 0;
}

/* The archs, other than arch, whose device code objects hold kernels: loadable ones into
 * *loadable, those only in __nv_relfatbin into *reloc ("" when none; caller frees). */
static void kernel_archs(const struct pvg_codeobj_set *set, const char *arch, char **loadable,
			 char **reloc)
{
	struct pvg_strv l = { 0 }, r = { 0 };
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		if (!co->arch || co->kind == PVG_CO_HOST || co->error ||
		    strncmp(co->arch, "compute_", 8) == 0 || pvg_codeobj_matches_arch(co, arch) ||
		    holds_kernels(co) != 1)
			continue;
		pvg_strv_add_unique(relocatable(co) ? &r : &l, co->arch);
	}
	/* an arch loadable somewhere is not "only relocatable" */
	for (size_t i = 0; i < l.n; i++)
		for (size_t k = 0; k < r.n; k++)
			if (strcmp(l.v[i], r.v[k]) == 0)
				r.v[k][0] = '\0';
	struct pvg_strv r2 = { 0 };
	for (size_t k = 0; k < r.n; k++)
		if (r.v[k][0])
			pvg_strv_add_unique(&r2, r.v[k]);
	*loadable = l.n ? pvg_strv_join_distinct(&l, ", ") : pvg_strdup("");
	*reloc = r2.n ? pvg_strv_join_distinct(&r2, ", ") : pvg_strdup("");
	pvg_strv_clear(&l);
	pvg_strv_clear(&r);
	pvg_strv_clear(&r2);
}

/* The first arch of a ", " list, quoted for a hint. */
static char *first_of(const char *list)
{
	return pvg_asprintf("%.*s", (int)strcspn(list, ","), list);
}

/* arch's code objects hold no kernel while another arch's do: arch's code runs nothing of the
 * change (nvcc's device link without -gencode leaves an empty sm_75 image beside the real
 * one). A matching object whose kernels are unknown may hold them: not decided here. */
static enum pvg_status check_kernels_for_arch(struct pvg_result *res, cJSON *ev, const char *arch,
					      const struct pvg_codeobj_set *set, const bool *match)
{
	size_t n_kernels = 0, n_unknown = 0;
	for (size_t i = 0; i < set->n_objs; i++) {
		if (!match[i])
			continue;
		int h = holds_kernels(&set->objs[i]);
		if (h < 0)
			n_unknown++;
		else
			n_kernels += set->objs[i].n_kernels;
	}
	_cleanup_free_ char *elsewhere = NULL, *reloc = NULL;
	kernel_archs(set, arch, &elsewhere, &reloc);
	cJSON *k = cJSON_AddObjectToObject(ev, "kernels");
	pvg_json_add_u64(k, "in_matching", n_kernels);
	if (n_unknown)
		pvg_json_add_int(k, "matching_unknown", (int)n_unknown);
	cJSON *ka = cJSON_AddArrayToObject(k, "other_archs_with_kernels");
	for (const char *p = elsewhere; *p;) {
		size_t n = strcspn(p, ",");
		_cleanup_free_ char *a = pvg_asprintf("%.*s", (int)n, p);
		cJSON_AddItemToArray(ka, cJSON_CreateString(a));
		p += n;
		while (*p == ',' || *p == ' ')
			p++;
	}
	if (n_kernels || n_unknown || (!*elsewhere && !*reloc))
		return PVG_PASS;
	bool cuda = pvg_arch_is_cuda(arch);
	_cleanup_free_ char *other = first_of(*elsewhere ? elsewhere : reloc);
	_cleanup_free_ char *hint =
		*elsewhere ? pvg_asprintf("set arch to \"%s\" in the config: that is the arch the "
					  "artifact's kernels are built for%s",
					  other,
					  cuda ? " (an nvcc link or -dlink without -gencode adds an "
						 "empty sm_75 image: give the link step the same "
						 "-gencode as the compile)"
					       : "")
			   : pvg_asprintf("device-link for %s too (nvcc -dlink -gencode "
					  "arch=compute_NN,code=sm_NN), or set arch to the arch the "
					  "service's GPU runs, and rebuild",
					  other);
	pvg_problem(res, "code-object.no-kernels-for-arch", hint,
		    "the %s code objects of %s hold no kernel, while its %s code holds them%s: "
		    "%s code runs nothing of the change",
		    arch, set->path, *elsewhere ? elsewhere : reloc,
		    *elsewhere ? "" : " (relocatable only: __nv_relfatbin, which the runtime does "
				      "not load)",
		    arch);
	return PVG_FAIL;
}

static enum pvg_status check_kernels(struct pvg_result *res, cJSON *ev,
				     const struct pvg_strv *req, const char *arch,
				     const struct pvg_codeobj_set *set, const bool *match)
{
	enum pvg_status st = PVG_PASS;
	if (req->n == 0)
		return PVG_PASS;
	cJSON *kj = cJSON_AddObjectToObject(ev, "require_kernels");
	for (size_t k = 0; k < req->n; k++) {
		const char *want = req->v[k];
		size_t known = 0, unknown = 0, present = 0;
		const struct pvg_code_object *opaque = NULL;
		for (size_t i = 0; i < set->n_objs; i++) {
			if (!match[i])
				continue;
			const struct pvg_code_object *co = &set->objs[i];
			if (!co->kernels_known) {
				unknown++;
				opaque = opaque ? opaque : co;
				continue;
			}
			known++;
			if (pvg_codeobj_has_kernel(co, want))
				present++;
		}
		/* Each translation unit brings its own container: a kernel is in the code object
		 * of the unit that defines it, not in every one for the arch. */
		const char *verdict;
		if (present) {
			verdict = "present";
		} else if (!unknown) {
			verdict = "missing";
			pvg_problem(res, "code-object.kernel-missing",
				    "check the kernel's name and that its source is compiled for this "
				    "arch; rebuild and reinstall",
				    "kernel %s is in none of the %zu %s code object%s", want, known,
				    arch, known == 1 ? "" : "s");
			st = pvg_status_worst(st, PVG_FAIL);
		} else {
			verdict = "unverifiable";
			pvg_problem(res, "code-object.kernels-unverifiable",
				    "build without fatbin compression (-Xfatbin -compress=false) so "
				    "the kernel names can be read",
				    "kernel %s cannot be looked for in the %s code object (%s bundle "
				    "%u entry %u): %s",
				    want, opaque->arch, opaque->section, opaque->bundle, opaque->entry,
				    opaque->kernels_why ? opaque->kernels_why : "kernels unknown");
			st = pvg_status_worst(st, PVG_UNVERIFIABLE);
		}
		cJSON_AddStringToObject(kj, want, verdict);
	}
	return st;
}

/* The processor ROCr will load code objects for, when a service process was started with
 * HSA_OVERRIDE_GFX_VERSION: its value and pid, or NULL. */
static const char *hsa_override(struct pvg_ctx *ctx, pid_t *pid)
{
	const struct pvg_tree_facts *tf;
	if (!pvg_service_selected(ctx->cfg))
		return NULL;
	if (pvg_tree_facts_get(ctx, &tf) < 0)
		return NULL;
	for (size_t i = 0; i < tf->n; i++)
		for (size_t k = 0; k < tf->f[i].n_env; k++)
			if (strcmp(tf->f[i].env[k].name, "HSA_OVERRIDE_GFX_VERSION") == 0) {
				*pid = tf->f[i].pid;
				return tf->f[i].env[k].value;
			}
	return NULL;
}

/* "sm_90a" -> 90 and 'a'; -1 when not a CUDA arch */
static int sm_number(const char *arch, char *suffix)
{
	*suffix = 0;
	if (strncmp(arch, "sm_", 3) != 0)
		return -1;
	char *end = NULL;
	long v = strtol(arch + 3, &end, 10);
	if (v <= 0 || v > 1000 || end == arch + 3)
		return -1;
	if (*end && end[1] == '\0')
		*suffix = *end;
	else if (*end)
		return -1;
	return (int)v;
}

/* CUDA: does a GPU of gpu ("sm_86") run the arch checked, given the cubins the artifact
 * has? The driver takes the cubin of the GPU's own sm when there is one, else a cubin of
 * the same major and a lower minor (not an "a" one), else it compiles PTX. 1 yes, 0 no (and
 * why). */
static int cuda_gpu_runs(const struct pvg_codeobj_set *set, const char *arch, const char *gpu,
			 char *why, size_t size)
{
	char sa, sg;
	int a = sm_number(arch, &sa), g = sm_number(gpu, &sg);
	if (a < 0 || g < 0) {
		snprintf(why, size, "%s is not a compute capability provgate knows", gpu);
		return 0;
	}
	if (a == g)
		return 1;
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		if (!co->error && !relocatable(co) && pvg_codeobj_matches_arch(co, gpu)) {
			snprintf(why, size, "the artifact's %s cubin is what runs there", gpu);
			return 0;
		}
	}
	if (a / 10 == g / 10 && a % 10 <= g % 10 && sa != 'a') {
		snprintf(why, size, "%s code runs there by compatibility", arch);
		return 1;
	}
	snprintf(why, size, "%s code does not run there (the driver would compile PTX, if any)",
		 arch);
	return 0;
}

static enum pvg_status check_node_cuda(struct pvg_result *res, cJSON *node,
				       const struct pvg_codeobj_set *set, const char *arch)
{
	struct pvg_strv gpus;
	_cleanup_free_ char *why = NULL;
	int n = pvg_nvml_gpu_archs(&gpus, &why);
	if (n <= 0) {
		pvg_json_add_bool(node, "checked", false);
		pvg_json_add_str(node, "why", n == 0 ? "NVML lists no GPU"
					      : n == -ENOENT ? "no NVML (libnvidia-ml.so.1) here"
					      : why ? why : strerror(-n));
		pvg_strv_clear(&gpus);
		return PVG_PASS;
	}
	pvg_json_add_bool(node, "checked", true);
	pvg_json_add_str(node, "source", "nvml");
	cJSON *list = cJSON_AddArrayToObject(node, "gpus");
	bool runs = false;
	char first_why[224] = "";
	for (size_t i = 0; i < gpus.n; i++) {
		cJSON_AddItemToArray(list, cJSON_CreateString(gpus.v[i]));
		char w[160];
		if (cuda_gpu_runs(set, arch, gpus.v[i], w, sizeof(w)))
			runs = true;
		else if (!first_why[0])
			snprintf(first_why, sizeof(first_why), "%.40s: %s", gpus.v[i], w);
	}
	pvg_strv_clear(&gpus);
	if (runs)
		return PVG_PASS;
	pvg_problem(res, "code-object.arch-not-on-node",
		    "set arch to the GPUs' compute capability (nvidia-smi --query-gpu=compute_cap) "
		    "and build for it, or run on a node with that GPU",
		    "arch %s, but this node's GPUs do not run that code (%s)", arch, first_why);
	return PVG_FAIL;
}

/* Do this node's GPUs run arch? The code object checked above is only the one that runs
 * when they do. AMD: the processors of KFD's topology, or the one HSA_OVERRIDE_GFX_VERSION
 * in the service's environment makes ROCr load for. CUDA: the compute capabilities NVML
 * gives, with the driver's choice among the artifact's cubins. */
static enum pvg_status check_node(struct pvg_ctx *ctx, struct pvg_result *res, cJSON *ev,
				  const struct pvg_codeobj_set *set, const char *arch)
{
	cJSON *node = cJSON_AddObjectToObject(ev, "node");
	if (pvg_arch_is_cuda(arch))
		return check_node_cuda(res, node, set, arch);
	struct pvg_target want;
	if (pvg_target_parse(arch, &want) < 0) {
		pvg_json_add_bool(node, "checked", false);
		pvg_json_add_str(node, "why", "arch is not a target id");
		return PVG_PASS;
	}
	struct pvg_roots roots;
	pvg_ctx_roots(ctx, &roots);
	struct pvg_strv gpus;
	int n = pvg_kfd_gpu_archs(roots.sysfs, &gpus);
	if (n <= 0) {
		pvg_json_add_bool(node, "checked", false);
		pvg_json_add_str(node, "why",
				 n == 0 ? "no GPU in the KFD topology (no amdgpu driver, or no GPU "
					  "visible here)"
					: strerror(-n));
		pvg_strv_clear(&gpus);
		return PVG_PASS;
	}
	pvg_json_add_bool(node, "checked", true);
	pvg_json_add_str(node, "source", "kfd topology");
	cJSON *list = cJSON_AddArrayToObject(node, "gpus");
	bool on_node = false;
	for (size_t i = 0; i < gpus.n; i++) {
		cJSON_AddItemToArray(list, cJSON_CreateString(gpus.v[i]));
		on_node |= strcmp(gpus.v[i], want.processor) == 0;
	}
	_cleanup_free_ char *names = pvg_strv_join_distinct(&gpus, ", ");
	pvg_strv_clear(&gpus);
	pid_t opid = 0;
	const char *ov = hsa_override(ctx, &opid);
	char oname[32] = "";
	if (ov) {
		cJSON *o = cJSON_AddObjectToObject(node, "hsa_override_gfx_version");
		pvg_json_add_str(o, "value", ov);
		pvg_json_add_int(o, "pid", (int)opid);
		if (pvg_gfx_name_of_override(ov, oname, sizeof(oname)) == 0)
			pvg_json_add_str(o, "processor", oname);
	}
	if (oname[0]) {
		if (strcmp(oname, want.processor) == 0)
			return PVG_PASS;
		pvg_problem(res, "code-object.arch-not-on-node",
			    "set arch to the processor the override names, or start the service "
			    "without HSA_OVERRIDE_GFX_VERSION",
			    "the service (pid %d) runs with HSA_OVERRIDE_GFX_VERSION=%s: ROCr loads "
			    "%s code objects, not the %s one checked (this node's GPUs: %s)",
			    (int)opid, ov, oname, want.processor, names);
		return PVG_FAIL;
	}
	if (on_node)
		return PVG_PASS;
	pvg_problem(res, "code-object.arch-not-on-node",
		    "arch names another GPU than this node's: set arch to the node's processor and "
		    "rebuild for it, or run on a node with that GPU",
		    "arch %s, but this node's GPUs are %s (KFD topology): the %s code object is not "
		    "what they run%s",
		    arch, names, want.processor,
		    ov ? "; HSA_OVERRIDE_GFX_VERSION is set but names no processor" : "");
	return PVG_FAIL;
}

/* ---- the rules, each on one artifact's facts ---- */

struct co_facts {
	const struct pvg_config *cfg;
	const char *arch;
	const struct pvg_strv *require;
	int located; /* pvg_ctx_installed_at's answer, with path and why */
	const char *path, *why;
	int read; /* installed_code_objects' answer, with set */
	struct pvg_codeobj_set *set;
	bool *match; /* set->objs[i] is loadable code for arch */
	size_t n_device, n_match, n_reloc, n_reloc_match;
	size_t n_identities; /* objects with a digest: those of match, and PTX for arch */
	size_t n_no_identity; /* objects of match without one */
	size_t n_unchecked; /* CCOBs decompressed only as far as arch's entries */
};

static struct pvg_outcome rule_arch_configured(const struct co_facts *f)
{
	struct pvg_outcome o = { 0 };
	if (f->arch)
		return o;
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "code-object.not-configured",
			    "set arch (\"gfx936\", \"gfx90a:xnack-\", \"sm_90\") in the config",
			    "no arch to look for: arch is not set");
	o.stop = true;
	o.summary = pvg_strdup("arch is not configured");
	return o;
}

static struct pvg_outcome rule_installed_known(const struct co_facts *f)
{
	struct pvg_outcome o = { 0 };
	int r = f->located;
	if (r >= 0)
		return o;
	pvg_outcome_problem(&o, r == -ENOENT ? PVG_FAIL : PVG_UNVERIFIABLE, "code-object.no-artifact",
			    f->cfg->n_artifacts ? "set the entry's install, or python_module (with "
						  "install.python)"
						: "set install.artifact, or install.python_module (with "
						  "install.python)",
			    "%s", f->why ? f->why : strerror(-r));
	o.stop = true;
	o.summary = pvg_strdup("installed artifact is unknown");
	return o;
}

static struct pvg_outcome rule_readable(const struct co_facts *f)
{
	struct pvg_outcome o = { 0 };
	int r = f->read;
	if (r >= 0)
		return o;
	bool missing = r == -ENOENT || r == -ENOTDIR;
	pvg_outcome_problem(&o, missing || r == -EINVAL ? PVG_FAIL : PVG_UNVERIFIABLE,
			    missing ? "code-object.no-artifact" : "code-object.unreadable",
			    missing	    ? "install the artifact, or fix install.artifact"
			    : r == -EFBIG ? "it is larger than install.max_artifact_size, or mostly "
					    "holes (a sparse file): not read"
					  : "run provgate as a user that can read the artifact",
			    "installed artifact %s: %s", f->path,
			    r == -EINVAL ? "not a regular file" : strerror(-r));
	o.stop = true;
	o.summary = pvg_asprintf("cannot read %s: %s", f->path, strerror(-r));
	return o;
}

/* Every code object and container was read whole and agrees with itself. */
static struct pvg_outcome rule_objects_sound(const struct co_facts *f)
{
	struct pvg_outcome o = { 0 };
	const struct pvg_codeobj_set *set = f->set;
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		if (co->error)
			pvg_outcome_problem(&o, PVG_FAIL, "code-object.malformed",
					    "rebuild the artifact; a damaged code object cannot be "
					    "trusted",
					    "%s bundle %u entry %u (%s): %s", co->section, co->bundle,
					    co->entry, co->id ? co->id : "?", co->error);
		if (co->mismatch)
			pvg_outcome_problem(&o, PVG_FAIL, "code-object.id-mismatch",
					    "the bundle was assembled from a code object built for "
					    "another target; rebuild with the right --offload-arch",
					    "%s bundle %u entry %u (%s): %s", co->section, co->bundle,
					    co->entry, co->id ? co->id : "?", co->mismatch);
	}
	for (size_t i = 0; i < set->n_issues; i++)
		pvg_outcome_problem(&o, PVG_FAIL, "code-object.malformed",
				    "rebuild the artifact; a damaged container cannot be trusted",
				    "%s: %s", set->issues[i].where, set->issues[i].message);
	return o;
}

static struct pvg_outcome rule_device_code(const struct co_facts *f)
{
	struct pvg_outcome o = { 0 };
	if (f->n_device != 0)
		return o;
	pvg_outcome_problem(&o, PVG_FAIL, "code-object.no-device-code",
			    "the artifact was linked without device code: check the build's "
			    "--offload-arch / -gencode flags and that the right file is installed",
			    "%s has no .hip_fatbin or .nv_fatbin code object%s", f->path,
			    f->set->n_issues ? " that could be read" : "");
	o.stop = true;
	o.summary = pvg_asprintf("%s carries no device code", f->path);
	return o;
}

/* The hint for an arch without code objects: kernels built for another arch most often mean
 * that the config names the wrong one. */
static char *arch_missing_hint(const struct co_facts *f)
{
	const char *arch = f->arch;
	_cleanup_free_ char *elsewhere = NULL, *reloc = NULL;
	kernel_archs(f->set, arch, &elsewhere, &reloc);
	if (*elsewhere && !f->n_reloc_match) {
		_cleanup_free_ char *other = first_of(elsewhere);
		return pvg_asprintf("set arch to \"%s\" in the config when the benchmark's GPU "
				    "runs %s code: the artifact's kernels are built for %s; "
				    "only if the GPU really is %s, %s and rebuild",
				    other, other, elsewhere, arch,
				    pvg_arch_is_cuda(arch)
					    ? "add -gencode arch=compute_NN,code=sm_NN for it"
					    : "add --offload-arch for it");
	}
	if (f->n_reloc_match)
		return pvg_strdup("device-link for this arch too (nvcc -dlink -gencode "
				  "arch=compute_NN,code=sm_NN) and rebuild");
	return pvg_strdup(pvg_arch_is_cuda(arch)
				  ? "add -gencode arch=compute_NN,code=sm_NN for this arch and rebuild"
				  : "add --offload-arch for this arch (with the device's xnack/sramecc "
				    "mode) and rebuild");
}

static struct pvg_outcome rule_arch_present(const struct co_facts *f)
{
	struct pvg_outcome o = { 0 };
	if (f->n_match != 0)
		return o;
	const char *arch = f->arch;
	_cleanup_free_ char *archs = list_archs(f->set), *hint = arch_missing_hint(f);
	pvg_outcome_problem(&o, PVG_FAIL, "code-object.arch-missing", hint,
			    "%s carries no %scode object for %s; it has: %s%s", f->path,
			    f->n_reloc_match ? "loadable " : "", arch, *archs ? archs : "none",
			    f->n_reloc_match ? " (its __nv_relfatbin holds relocatable code for it, "
					       "which the runtime does not load: the device link left "
					       "this arch out)"
					     : "");
	o.stop = true;
	o.summary = pvg_asprintf("no %s%s code object in %s (it has: %s)",
				 f->n_reloc_match ? "loadable " : "", arch, pvg_basename(f->path),
				 *archs ? archs : "none");
	return o;
}

/* Gate 7 counts a launch for the artifact only when its module's bytes are one of these
 * identities: a matching object without one could never be matched. */
static struct pvg_outcome rule_identities_known(const struct co_facts *f)
{
	struct pvg_outcome o = { 0 };
	const char *hint = f->set->n_over_budget
				   ? "the artifact's compressed code claims far more bytes than real "
				     "code compresses from: rebuild and reinstall it"
				   : "rebuild and reinstall the artifact; provgate inspect --digests "
				     "shows which code object cannot be hashed";
	/* a walk that stopped early: code objects after that point are in no list */
	if (f->set->incomplete)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "code-object.identity-unknown", hint,
				    "not every code object of %s was read: %s", f->path,
				    f->set->incomplete);
	if (f->n_no_identity == 0)
		return o;
	const struct pvg_code_object *first = NULL;
	for (size_t i = 0; i < f->set->n_objs && !first; i++)
		if (f->match[i] && !f->set->objs[i].digest_known &&
		    f->set->objs[i].checksum != PVG_CSUM_FAILED)
			first = &f->set->objs[i];
	pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "code-object.identity-unknown", hint,
			    "%zu %s code object%s of %s ha%s no sha256 (first: %s bundle %u entry "
			    "%u%s%s): the code that runs cannot be matched to %s",
			    f->n_no_identity, f->arch, f->n_no_identity == 1 ? "" : "s", f->path,
			    f->n_no_identity == 1 ? "s" : "ve", first->section, first->bundle,
			    first->entry, first->not_decoded && first->kernels_why ? ", " : "",
			    first->not_decoded && first->kernels_why ? first->kernels_why : "",
			    f->n_no_identity == 1 ? "it" : "them");
	return o;
}

/* ---- the facts of the code objects, and their evidence ---- */

/* Which code objects match arch, and how many of each kind there are. */
static void objects_count(struct co_facts *f)
{
	const struct pvg_codeobj_set *set = f->set;
	f->match = pvg_xcalloc(set->n_objs ? set->n_objs : 1, sizeof(bool));
	f->n_unchecked = pvg_codeobj_unchecked_bundles(set);
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		if (co->kind != PVG_CO_HOST)
			f->n_device++;
		f->match[i] = !co->error && !relocatable(co) && pvg_codeobj_matches_arch(co, f->arch);
		f->n_match += f->match[i];
		f->n_reloc += relocatable(co) && co->kind != PVG_CO_HOST;
		f->n_reloc_match += relocatable(co) && !co->error &&
				    pvg_codeobj_matches_arch(co, f->arch);
		f->n_identities += co->digest_known;
		/* a CCOB that does not decompress is already code-object.malformed */
		f->n_no_identity += f->match[i] && !co->digest_known &&
				    co->checksum != PVG_CSUM_FAILED;
	}
}

/* The identity of each code object for arch: what the driver or loader receives, and where
 * it lies in the artifact. */
static cJSON *identities_json(const struct co_facts *f)
{
	const struct pvg_codeobj_set *set = f->set;
	cJSON *list = cJSON_CreateArray();
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		if (!co->digest_known)
			continue;
		char hex[65];
		pvg_hex(co->sha256, 32, hex);
		cJSON *j = cJSON_CreateObject();
		pvg_json_add_str(j, "sha256", hex);
		pvg_json_add_u64(j, "size", co->digest_size);
		pvg_json_add_str(j, "arch", co->arch);
		pvg_json_add_str(j, "kind", pvg_co_kind_name(co->kind));
		pvg_json_add_str(j, "container", co->container);
		pvg_json_add_str(j, "section", co->section);
		pvg_json_add_int(j, "bundle", (int)co->bundle);
		pvg_json_add_int(j, "entry", (int)co->entry);
		pvg_json_add_str(j, "id", co->id);
		pvg_json_add_bool(j, "compressed", co->compressed);
		cJSON_AddItemToArray(list, j);
	}
	return list;
}

static void objects_json(const struct co_facts *f, cJSON *ev)
{
	const struct pvg_codeobj_set *set = f->set;
	cJSON_AddItemToObject(ev, "sections", pvg_codeobj_sections_json(set));
	cJSON *objs = cJSON_AddArrayToObject(ev, "code_objects");
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		cJSON *j = pvg_codeobj_json(co, false);
		pvg_json_add_bool(j, "matches_arch", f->match[i]);
		if (relocatable(co))
			pvg_json_add_bool(j, "relocatable", true);
		cJSON_AddItemToArray(objs, j);
	}
	pvg_json_add_int(ev, "device_code_objects", (int)f->n_device);
	pvg_json_add_int(ev, "matching", (int)f->n_match);
	pvg_json_add_int(ev, "relocatable", (int)f->n_reloc);
	cJSON_AddItemToObject(ev, "identities", identities_json(f));
	if (f->n_unchecked)
		pvg_json_add_int(ev, "ccob_checksums_not_verified", (int)f->n_unchecked);
	if (set->n_wrappers) {
		pvg_json_add_int(ev, "wrappers", (int)set->n_wrappers);
		pvg_json_add_int(ev, "wrappers_located", (int)set->n_wrappers_located);
	}
}

static void summary_passed(const struct co_facts *f, struct pvg_result *res)
{
	size_t n = f->n_unchecked;
	char unchecked_note[160] = "", reloc_note[64];
	if (n)
		snprintf(unchecked_note, sizeof(unchecked_note),
			 "; %zu CCOB bundle%s decompressed only as far as the entries checked: "
			 "%s checksum%s not verified",
			 n, n == 1 ? "" : "s", n == 1 ? "its" : "their", n == 1 ? " is" : "s are");
	_cleanup_free_ char *archs = list_archs(f->set);
	/* the first identity, short: the evidence lists them all */
	char ident[64] = "";
	for (size_t i = 0; i < f->set->n_objs; i++)
		if (f->match[i] && f->set->objs[i].digest_known) {
			char hex[65];
			pvg_hex(f->set->objs[i].sha256, 32, hex);
			if (f->n_identities > 1)
				snprintf(ident, sizeof(ident), "; sha256 %.12s and %zu more", hex,
					 f->n_identities - 1);
			else
				snprintf(ident, sizeof(ident), "; sha256 %.12s", hex);
			break;
		}
	pvg_summary(res, "%zu code object%s for %s among %zu%s (%s)%s%s%s", f->n_match,
		    f->n_match == 1 ? "" : "s", f->arch, f->n_device,
		    f->n_reloc ? reloc_text(f->n_reloc, reloc_note, sizeof(reloc_note)) : "", archs,
		    f->require->n ? ", required kernels present" : "", ident, unchecked_note);
}

/* ---- the gate ---- */

/* One artifact: the rules in their order, the facts each needs read just before it; then the
 * kernels (check_kernels_for_arch, check_kernels) and the node (check_node). */
static enum pvg_status code_object_one(struct pvg_ctx *ctx, size_t ai, cJSON *ev,
				       struct pvg_result *res, void *unused)
{
	(void)unused;
	struct co_facts f = {
		.cfg = ctx->cfg,
		.arch = pvg_artifact_arch(ctx->cfg, &ctx->arts[ai].a),
		.require = &ctx->arts[ai].a.require_kernels,
	};
	struct pvg_outcome o = rule_arch_configured(&f);
	if (o.stop)
		return pvg_outcome_final(res, o);
	f.located = pvg_ctx_installed_at(ctx, ai, &f.path, &f.why);
	if ((o = rule_installed_known(&f)).stop)
		return pvg_outcome_final(res, o);
	pvg_json_add_str(ev, "artifact", f.path);
	pvg_json_add_str(ev, "arch", f.arch);
	f.read = installed_code_objects(ctx, ai, f.path, &f.set);
	if ((o = rule_readable(&f)).stop)
		return pvg_outcome_final(res, o);

	objects_count(&f);
	_cleanup_free_ bool *match = f.match;
	objects_json(&f, ev);
	enum pvg_status st = pvg_outcome_into(res, rule_objects_sound(&f));
	if ((o = rule_device_code(&f)).stop || (o = rule_arch_present(&f)).stop)
		return pvg_status_worst(st, pvg_outcome_final(res, o));
	st = pvg_status_worst(st, pvg_outcome_into(res, rule_identities_known(&f)));
	st = pvg_status_worst(st, check_kernels_for_arch(res, ev, f.arch, f.set, match));
	st = pvg_status_worst(st, check_kernels(res, ev, f.require, f.arch, f.set, match));
	st = pvg_status_worst(st, check_node(ctx, res, ev, f.set, f.arch));
	if (st == PVG_PASS)
		summary_passed(&f, res);
	else
		pvg_summary(res, "%s", res->problems[0].message);
	return st;
}

static enum pvg_status run_code_object(struct pvg_ctx *ctx, struct pvg_result *res)
{
	if (ctx->n_arts == 0) {
		if (!ctx->cfg->arch) {
			pvg_summary(res, "arch is not configured");
			pvg_problem(res, "code-object.not-configured",
				    "set arch (\"gfx936\", \"gfx90a:xnack-\", \"sm_90\") in the config",
				    "no arch to look for: arch is not set");
			return PVG_UNVERIFIABLE;
		}
		pvg_summary(res, "installed artifact is unknown");
		pvg_problem(res, "code-object.no-artifact",
			    "set install.artifact, or install.python_module (with install.python)",
			    "neither install.artifact nor install.python_module is set");
		return PVG_UNVERIFIABLE;
	}
	return pvg_each_artifact(ctx, res, code_object_one, NULL);
}

const struct pvg_check pvg_check_code_object = {
	.id = 6,
	.name = "code-object",
	.phases = PVG_IN_ALL_PHASES,
	.run = run_code_object,
	.prepare = prepare_code_object,
};
