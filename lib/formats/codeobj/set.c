/* SPDX-License-Identifier: MIT */
/*
 * The code-object set: what the parsers found in one file (code objects, kernels, issues,
 * sections) and the questions asked of it (does it hold arch, does it hold a kernel), with
 * its JSON form. Every parser below adds to a set; none of them calls back into the scanner.
 */
#include "formats/codeobj/codeobj.h"
#include "util/thread.h"

int pvg_src_read(const struct pvg_src *s, uint64_t off, void *buf, size_t n)
{
	if (off > s->size || n > s->size - off)
		return -ENODATA;
	if (n == 0)
		return 0;
	if (s->mem) {
		memcpy(buf, s->mem + off, n);
		return 0;
	}
	ssize_t r = pvg_pread_full(s->fd, buf, n, off);
	if (r < 0)
		return (int)r;
	if ((size_t)r < n)
		return -EIO; /* the file shrank under us */
	return 0;
}

void pvg_co_budget_init(struct pvg_co_budget *b)
{
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	b->in_use = 0;
}

void pvg_co_budget_destroy(struct pvg_co_budget *b)
{
	pthread_mutex_destroy(&b->mu);
	pthread_cond_destroy(&b->cv);
}

void pvg_co_budget_take(struct pvg_co_budget *b, uint64_t n)
{
	pthread_mutex_lock(&b->mu);
	while (b->in_use && b->in_use + n > PVG_CO_DECODE_BUDGET)
		pthread_cond_wait(&b->cv, &b->mu);
	b->in_use += n;
	pthread_mutex_unlock(&b->mu);
}

void pvg_co_budget_give(struct pvg_co_budget *b, uint64_t n)
{
	pthread_mutex_lock(&b->mu);
	b->in_use -= n;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

void pvg_co_run_workers(void (*fn)(void *), void *pool, size_t max_threads)
{
	size_t n = pvg_cpus_usable();
	if (n > PVG_MAX_JOB_THREADS)
		n = PVG_MAX_JOB_THREADS;
	if (n > max_threads)
		n = max_threads;
	if (n == 0)
		n = 1;
	void *workers[PVG_MAX_JOB_THREADS];
	for (size_t i = 0; i < n; i++)
		workers[i] = pool;
	pvg_run_jobs(fn, workers, n, sizeof(workers[0]));
}

size_t pvg_codeobj_unchecked_bundles(const struct pvg_codeobj_set *set)
{
	size_t n = 0;
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		n += co->checksum == PVG_CSUM_UNCHECKED &&
		     (i == 0 || co[-1].bundle != co->bundle ||
		      strcmp(co[-1].section, co->section) != 0);
	}
	return n;
}

struct pvg_codeobj_set *pvg_codeobj_set_new(const char *path, const struct pvg_codeobj_opts *opts)
{
	struct pvg_codeobj_set *set = pvg_xcalloc(1, sizeof(*set));
	set->path = pvg_strdup(path ? path : "(memory)");
	set->decode_limit = set->decode_left = PVG_CO_DECODE_FLOOR; /* the scan sets its own */
	if (opts) {
		set->opts = *opts;
		if (opts->names_arch)
			set->names_arch = pvg_strdup(opts->names_arch);
		set->opts.names_arch = set->names_arch;
		if (opts->digest_arch)
			set->digest_arch = pvg_strdup(opts->digest_arch);
		set->opts.digest_arch = set->digest_arch;
	}
	return set;
}

static void drop_names(struct pvg_code_object *co)
{
	if (!co->kernels)
		return;
	for (size_t i = 0; i < co->n_kernels; i++) {
		free(co->kernels[i].name);
		free(co->kernels[i].symbol);
	}
	free(co->kernels);
	co->kernels = NULL;
	co->names_dropped = co->n_kernels > 0;
}

bool pvg_co_names_wanted(const struct pvg_codeobj_set *set, const struct pvg_code_object *co)
{
	return set->opts.kernel_names ||
	       (set->opts.names_arch && !co->error &&
		pvg_codeobj_matches_arch(co, set->opts.names_arch));
}

bool pvg_co_decode_take(struct pvg_codeobj_set *set, uint64_t n)
{
	uint64_t left = __atomic_load_n(&set->decode_left, __ATOMIC_RELAXED);
	do {
		if (n > left) {
			__atomic_fetch_add(&set->n_over_budget, 1, __ATOMIC_RELAXED);
			return false;
		}
	} while (!__atomic_compare_exchange_n(&set->decode_left, &left, left - n, false,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return true;
}

char *pvg_co_over_budget_why(const struct pvg_codeobj_set *set)
{
	return pvg_asprintf("not decompressed: the file's compressed code would decode to more "
			    "than %" PRIu64 " MiB in all (%u times its size, at least %llu MiB), "
			    "more than real code objects compress",
			    set->decode_limit >> 20, PVG_CO_DECODE_RATIO, PVG_CO_DECODE_FLOOR >> 20);
}

void pvg_co_finish(struct pvg_codeobj_set *set, struct pvg_code_object *co)
{
	if (co->kernels && !pvg_co_names_wanted(set, co))
		drop_names(co);
}

static void code_object_clear(struct pvg_code_object *co)
{
	drop_names(co);
	free(co->section);
	free(co->id);
	free(co->arch);
	free(co->note_target);
	free(co->id_target);
	free(co->kernels_why);
	free(co->error);
	free(co->mismatch);
}

void pvg_codeobj_set_free(struct pvg_codeobj_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n_objs; i++)
		code_object_clear(&set->objs[i]);
	free(set->objs);
	for (size_t i = 0; i < set->n_issues; i++) {
		free(set->issues[i].where);
		free(set->issues[i].message);
	}
	free(set->issues);
	free(set->deferred);
	for (size_t i = 0; i < set->n_ccobs; i++) {
		free(set->ccobs[i].ent);
		free(set->ccobs[i].where);
		free(set->ccobs[i].err);
	}
	free(set->ccobs);
	for (size_t i = 0; i < set->n_sections; i++)
		free(set->sections[i].name);
	free(set->sections);
	free(set->path);
	free(set->names_arch);
	free(set->digest_arch);
	free(set->by_digest);
	free(set->incomplete);
	free(set);
}

void pvg_codeobj_set_freep(void *p)
{
	pvg_codeobj_set_free(p);
}

void pvg_co_issue(struct pvg_codeobj_set *set, const char *where, const char *fmt, ...)
{
	if (set->n_issues >= PVG_CO_MAX_ISSUES) {
		set->issues_truncated = true;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	char *msg = pvg_vasprintf(fmt, ap);
	va_end(ap);
	set->issues = pvg_xrealloc(set->issues, set->n_issues + 1, sizeof(*set->issues));
	set->issues[set->n_issues++] = (struct pvg_co_issue){ pvg_strdup(where), msg };
}

struct pvg_code_object *pvg_co_add(struct pvg_codeobj_set *set, const char *section,
				   unsigned bundle, unsigned entry)
{
	if (set->n_objs >= PVG_CO_MAX_OBJECTS) {
		if (!set->objs_truncated)
			pvg_co_issue(set, section, "more than %u code objects; the rest is not read",
				     PVG_CO_MAX_OBJECTS);
		set->objs_truncated = true;
		return NULL;
	}
	if (set->n_objs == 0 || (set->n_objs >= 8 && (set->n_objs & (set->n_objs - 1)) == 0))
		set->objs = pvg_xrealloc(set->objs, set->n_objs ? set->n_objs * 2 : 8,
					 sizeof(*set->objs));
	struct pvg_code_object *co = &set->objs[set->n_objs++];
	memset(co, 0, sizeof(*co));
	co->section = pvg_strdup(section);
	co->bundle = bundle;
	co->entry = entry;
	return co;
}

char *pvg_co_strndup(const void *p, size_t n)
{
	const char *nul = memchr(p, 0, n);
	if (nul)
		n = (size_t)(nul - (const char *)p);
	char *s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

void pvg_co_set_error(struct pvg_code_object *co, const char *fmt, ...)
{
	if (co->error)
		return; /* the first problem explains the rest */
	va_list ap;
	va_start(ap, fmt);
	co->error = pvg_vasprintf(fmt, ap);
	va_end(ap);
}

void pvg_co_add_kernel(struct pvg_code_object *co, const char *name, size_t name_len,
		       const char *symbol, size_t symbol_len, int wavefront_size)
{
	if (co->n_kernels >= PVG_CO_MAX_KERNELS)
		return;
	if (co->n_kernels == 0 || (co->n_kernels >= 4 && (co->n_kernels & (co->n_kernels - 1)) == 0))
		co->kernels = pvg_xrealloc(co->kernels, co->n_kernels ? co->n_kernels * 2 : 4,
					   sizeof(*co->kernels));
	struct pvg_kernel *k = &co->kernels[co->n_kernels++];
	k->name = name ? pvg_co_strndup(name, name_len) : NULL;
	k->symbol = symbol ? pvg_co_strndup(symbol, symbol_len) : NULL;
	if ((name && !k->name) || (symbol && !k->symbol))
		abort();
	k->wavefront_size = wavefront_size;
}


/* ---- matching and JSON --------------------------------------------------------------------- */

const char *pvg_co_kind_name(enum pvg_co_kind k)
{
	switch (k) {
	case PVG_CO_HOST: return "host";
	case PVG_CO_AMDGPU: return "amdgpu";
	case PVG_CO_CUBIN: return "cubin";
	case PVG_CO_PTX: return "ptx";
	default: return "other";
	}
}

bool pvg_codeobj_matches_arch(const struct pvg_code_object *co, const char *arch)
{
	if (!co->arch || !arch)
		return false;
	if (strncmp(arch, "sm_", 3) == 0) {
		/* sm_90 (a CC 9.0 device) also loads an sm_90a cubin; sm_90a asks for that one */
		size_t l = strlen(arch);
		return co->kind == PVG_CO_CUBIN &&
		       (strcmp(co->arch, arch) == 0 ||
			(strncmp(co->arch, arch, l) == 0 && strcmp(co->arch + l, "a") == 0));
	}
	return co->kind == PVG_CO_AMDGPU && pvg_target_compatible(arch, co->arch);
}

static bool ident_in_mangled(const char *mangled, const char *want)
{
	size_t wl = strlen(want);
	if (strncmp(mangled, "_Z", 2) != 0 || wl == 0)
		return false;
	char num[24];
	snprintf(num, sizeof(num), "%zu", wl);
	size_t nl = strlen(num);
	for (const char *p = strstr(mangled, num); p; p = strstr(p + 1, num)) {
		if (p > mangled && p[-1] >= '0' && p[-1] <= '9')
			continue;
		if (strncmp(p + nl, want, wl) == 0)
			return true;
	}
	return false;
}

bool pvg_codeobj_has_kernel(const struct pvg_code_object *co, const char *want)
{
	if (!co->kernels)
		return false;
	for (size_t i = 0; i < co->n_kernels; i++) {
		const struct pvg_kernel *k = &co->kernels[i];
		if (k->name && (strcmp(k->name, want) == 0 || ident_in_mangled(k->name, want)))
			return true;
		if (k->symbol && strcmp(k->symbol, want) == 0)
			return true;
	}
	return false;
}

static const char *feature_name(enum pvg_feature f)
{
	switch (f) {
	case PVG_FEAT_OFF: return "off";
	case PVG_FEAT_ON: return "on";
	case PVG_FEAT_UNSUPPORTED: return "unsupported";
	default: return "any";
	}
}

cJSON *pvg_codeobj_json(const struct pvg_code_object *co, bool with_kernels)
{
	cJSON *o = cJSON_CreateObject();
	pvg_json_add_str(o, "section", co->section);
	pvg_json_add_int(o, "bundle", (int)co->bundle);
	pvg_json_add_int(o, "entry", (int)co->entry);
	pvg_json_add_str(o, "container", co->container);
	pvg_json_add_str(o, "id", co->id);
	pvg_json_add_str(o, "kind", pvg_co_kind_name(co->kind));
	pvg_json_add_str(o, "arch", co->arch);
	pvg_json_add_u64(o, "offset", co->offset);
	pvg_json_add_u64(o, "size", co->size);
	pvg_json_add_u64(o, "container_offset", co->container_offset);
	pvg_json_add_u64(o, "container_size", co->container_size);
	pvg_json_add_bool(o, "compressed", co->compressed);
	if (co->digest_known) {
		char hex[65];
		pvg_hex(co->sha256, 32, hex);
		pvg_json_add_str(o, "sha256", hex);
		pvg_json_add_u64(o, "sha256_size", co->digest_size);
	}
	if (co->checksum != PVG_CSUM_NONE) {
		pvg_json_add_str(o, "container_checksum",
				 co->checksum == PVG_CSUM_VERIFIED    ? "verified"
				 : co->checksum == PVG_CSUM_UNCHECKED ? "not verified"
								      : "bad");
		if (co->checksum == PVG_CSUM_UNCHECKED) {
			_cleanup_free_ char *why = pvg_asprintf(
				"only %" PRIu64 " of the bundle's %" PRIu64 " bytes were decompressed "
				"(where the entries asked for end); its MD5 covers all of them and "
				"was not checked",
				co->ccob_decoded, co->ccob_bundle_size);
			pvg_json_add_str(o, "container_checksum_why", why);
		}
	}
	if (co->kind == PVG_CO_AMDGPU) {
		pvg_json_add_int(o, "code_object_version", co->co_version);
		char hex[16];
		snprintf(hex, sizeof(hex), "0x%x", co->e_flags);
		pvg_json_add_str(o, "e_flags", hex);
		snprintf(hex, sizeof(hex), "0x%x", co->mach);
		pvg_json_add_str(o, "mach", hex);
		pvg_json_add_str(o, "mach_name", co->mach_name);
		pvg_json_add_str(o, "xnack", feature_name(co->xnack));
		pvg_json_add_str(o, "sramecc", feature_name(co->sramecc));
		pvg_json_add_str(o, "note_target", co->note_target);
	} else if (co->kind == PVG_CO_CUBIN) {
		char hex[16];
		snprintf(hex, sizeof(hex), "0x%x", co->e_flags);
		pvg_json_add_str(o, "e_flags", hex);
		pvg_json_add_int(o, "abi_version", co->abi_version);
	}
	pvg_json_add_bool(o, "kernels_known", co->kernels_known);
	if (!co->kernels_known && co->kernels_why)
		pvg_json_add_str(o, "kernels_unknown_because", co->kernels_why);
	pvg_json_add_int(o, "kernel_count", (int)co->n_kernels);
	if (with_kernels && co->kernels) {
		cJSON *ks = cJSON_AddArrayToObject(o, "kernels");
		for (size_t i = 0; i < co->n_kernels; i++) {
			cJSON *k = cJSON_CreateObject();
			pvg_json_add_str(k, "name", co->kernels[i].name);
			if (co->kernels[i].symbol)
				pvg_json_add_str(k, "symbol", co->kernels[i].symbol);
			if (co->kernels[i].wavefront_size)
				pvg_json_add_int(k, "wavefront_size", co->kernels[i].wavefront_size);
			cJSON_AddItemToArray(ks, k);
		}
	}
	if (co->error)
		pvg_json_add_str(o, "error", co->error);
	if (co->mismatch)
		pvg_json_add_str(o, "mismatch", co->mismatch);
	return o;
}

cJSON *pvg_codeobj_sections_json(const struct pvg_codeobj_set *set)
{
	cJSON *secs = cJSON_CreateArray();
	for (size_t i = 0; i < set->n_sections; i++) {
		cJSON *s = cJSON_CreateObject();
		pvg_json_add_str(s, "name", set->sections[i].name);
		pvg_json_add_u64(s, "offset", set->sections[i].offset);
		pvg_json_add_u64(s, "size", set->sections[i].size);
		pvg_json_add_int(s, "containers", (int)set->sections[i].n_containers);
		cJSON_AddItemToArray(secs, s);
	}
	return secs;
}
