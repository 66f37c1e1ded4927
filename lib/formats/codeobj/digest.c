/* SPDX-License-Identifier: MIT */
/*
 * Code identity: the SHA-256 of a code object's image as the driver or loader receives it.
 *   AMDGPU (bundle entry)   the entry's bytes, what clang-offload-bundler --unbundle writes;
 *                           of a CCOB, the entry's bytes in the decompressed bundle
 *   cubin (fatbin entry)    the ELF, decompressed where the entry is (cuobjdump -xelf)
 *   PTX (fatbin entry)      the text up to its terminating NUL, decompressed where the
 *                           entry is: what cuModuleLoadData would be handed (the driver
 *                           loads the code it compiles from it, which no file holds)
 *   a code object file      the whole file
 * Only the objects the scan's options ask for are hashed: those of digest_arch, or every
 * loadable one with all_digests. Plain ones are read here with pread after the walk, in
 * parallel; compressed ones by their decoders, from the buffer they decompress into.
 */
#include <openssl/evp.h>

#include "formats/codeobj/codeobj.h"

/* Chunks that stay in the reading core's cache (util/hash.c measured 64-128 KiB). */
#define DIGEST_CHUNK (128u << 10)

bool pvg_co_loadable(const struct pvg_code_object *co)
{
	if (co->kind != PVG_CO_AMDGPU && co->kind != PVG_CO_CUBIN && co->kind != PVG_CO_PTX)
		return false;
	/* CUDA relocatable device code waits in __nv_relfatbin for a device link */
	return !co->section || strcmp(co->section, "__nv_relfatbin") != 0;
}

/* Can the driver of an sm_NN GPU compile PTX for compute_MM? MM at most NN (PTX is
 * forward-compatible); "a" PTX only for its own arch. */
static bool ptx_serves(const char *ptx_arch, const char *arch)
{
	unsigned mm, nn;
	char ps[4] = "", as[4] = "";
	if (!ptx_arch || sscanf(ptx_arch, "compute_%u%3s", &mm, ps) < 1 ||
	    sscanf(arch, "sm_%u%3s", &nn, as) < 1)
		return false;
	if (ps[0])
		return mm == nn && strcmp(ps, as) == 0;
	return mm <= nn;
}

bool pvg_co_identity_expected(const struct pvg_codeobj_set *set,
			      const struct pvg_code_object *co)
{
	if (!pvg_co_loadable(co))
		return false;
	if (set->opts.all_digests)
		return true;
	const char *arch = set->opts.digest_arch;
	if (!arch)
		return false;
	if (co->kind == PVG_CO_PTX)
		return ptx_serves(co->arch, arch);
	if (!co->arch && co->kind == PVG_CO_AMDGPU && co->id_target)
		return pvg_target_compatible(arch, co->id_target);
	return pvg_codeobj_matches_arch(co, arch);
}

bool pvg_co_digest_wanted(const struct pvg_codeobj_set *set, const struct pvg_code_object *co)
{
	return !co->error && pvg_co_identity_expected(set, co);
}

/* The bytes a PTX entry's text takes: up to its first NUL (the payload is padded). */
static size_t ptx_text_len(const uint8_t *p, size_t n)
{
	const uint8_t *nul = memchr(p, 0, n);
	return nul ? (size_t)(nul - p) : n;
}

void pvg_co_digest_mem(struct pvg_code_object *co, const uint8_t *p, size_t n)
{
	if (co->kind == PVG_CO_PTX)
		n = ptx_text_len(p, n);
	unsigned int len = 0;
	if (!EVP_Digest(p, n, co->sha256, &len, EVP_sha256(), NULL) || len != 32) {
		pvg_co_set_error(co, "its SHA-256 could not be computed");
		return;
	}
	co->digest_known = true;
	co->digest_size = n;
}

/* [off, off+n) of src, read in chunks into buf (DIGEST_CHUNK bytes). */
static int digest_src(const struct pvg_src *src, uint64_t off, uint64_t n, bool ptx,
		      uint8_t *buf, EVP_MD_CTX *md, uint8_t out[32], uint64_t *hashed)
{
	*hashed = 0;
	if (off > src->size || n > src->size - off)
		return -ENODATA;
	if (!EVP_DigestInit_ex(md, EVP_sha256(), NULL))
		return -EIO;
	for (uint64_t done = 0; done < n;) {
		size_t k = n - done < DIGEST_CHUNK ? (size_t)(n - done) : DIGEST_CHUNK;
		const uint8_t *p = buf;
		if (src->mem) {
			p = src->mem + off + done;
		} else {
			int r = pvg_src_read(src, off + done, buf, k);
			if (r < 0)
				return r;
		}
		size_t use = ptx ? ptx_text_len(p, k) : k;
		if (!EVP_DigestUpdate(md, p, use))
			return -EIO;
		*hashed += use;
		if (use < k)
			break; /* the PTX text ended */
		done += k;
	}
	unsigned int len = 0;
	if (!EVP_DigestFinal_ex(md, out, &len) || len != 32)
		return -EIO;
	return 0;
}

struct digest_pool {
	struct pvg_codeobj_set *set;
	const struct pvg_src *src;
	size_t *objs, n;
	size_t next; /* atomic */
};

static void digest_worker(void *arg)
{
	struct digest_pool *p = *(struct digest_pool **)arg;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	uint8_t *buf = p->src->mem ? NULL : malloc(DIGEST_CHUNK);
	if (!md || (!p->src->mem && !buf))
		abort();
	for (;;) {
		size_t k = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
		if (k >= p->n)
			break;
		struct pvg_code_object *co = &p->set->objs[p->objs[k]];
		int r = digest_src(p->src, co->offset, co->size, co->kind == PVG_CO_PTX, buf, md,
				   co->sha256, &co->digest_size);
		if (r < 0)
			pvg_co_set_error(co, "its bytes (0x%" PRIx64 ", %" PRIu64 " bytes) cannot be "
					 "read for its SHA-256: %s",
					 co->offset, co->size, strerror(-r));
		else
			co->digest_known = true;
	}
	free(buf);
	EVP_MD_CTX_free(md);
}

void pvg_co_digest_plain(struct pvg_codeobj_set *set, const struct pvg_src *src)
{
	struct digest_pool pool = { .set = set, .src = src };
	uint64_t bytes = 0;
	for (size_t i = 0; i < set->n_objs; i++) {
		const struct pvg_code_object *co = &set->objs[i];
		/* a compressed object is hashed by its decoder, if at all */
		if (co->compressed || co->digest_known || !pvg_co_digest_wanted(set, co))
			continue;
		if (!pool.objs)
			pool.objs = pvg_xcalloc(set->n_objs, sizeof(size_t));
		pool.objs[pool.n++] = i;
		bytes += set->objs[i].size;
	}
	if (!pool.n)
		return;
	/* a thread for every 4 MiB or so: not for a handful of small objects */
	pvg_co_run_workers(digest_worker, &pool, (size_t)(bytes >> 22) + 1);
	free(pool.objs);
}

static const struct pvg_codeobj_set *sort_set; /* qsort has no context argument */

static int by_digest(const void *a, const void *b)
{
	const struct pvg_code_object *x = &sort_set->objs[*(const size_t *)a];
	const struct pvg_code_object *y = &sort_set->objs[*(const size_t *)b];
	int c = memcmp(x->sha256, y->sha256, 32);
	if (c)
		return c;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

void pvg_co_index_digests(struct pvg_codeobj_set *set)
{
	free(set->by_digest);
	set->by_digest = NULL;
	set->n_by_digest = 0;
	/* a malformed object has no identity to vouch for (its kernels or notes were bad) */
	for (size_t i = 0; i < set->n_objs; i++) {
		if (set->objs[i].error)
			set->objs[i].digest_known = false;
		set->n_by_digest += set->objs[i].digest_known;
	}
	if (!set->n_by_digest)
		return;
	set->by_digest = pvg_xcalloc(set->n_by_digest, sizeof(size_t));
	size_t n = 0;
	for (size_t i = 0; i < set->n_objs; i++)
		if (set->objs[i].digest_known)
			set->by_digest[n++] = i;
	/* the sets of one run are scanned one after another; qsort_r is not C11 */
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&mu);
	sort_set = set;
	qsort(set->by_digest, n, sizeof(size_t), by_digest);
	sort_set = NULL;
	pthread_mutex_unlock(&mu);
}

bool pvg_codeobj_has_digest(const struct pvg_codeobj_set *set, const uint8_t sha256[32],
			    const struct pvg_code_object **which)
{
	size_t lo = 0, hi = set ? set->n_by_digest : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct pvg_code_object *co = &set->objs[set->by_digest[mid]];
		int c = memcmp(co->sha256, sha256, 32);
		if (c < 0) {
			lo = mid + 1;
		} else {
			hi = mid; /* the first of equal digests: the first in the file */
		}
	}
	if (lo < (set ? set->n_by_digest : 0)) {
		const struct pvg_code_object *co = &set->objs[set->by_digest[lo]];
		if (memcmp(co->sha256, sha256, 32) == 0) {
			if (which)
				*which = co;
			return true;
		}
	}
	if (which)
		*which = NULL;
	return false;
}
