/* SPDX-License-Identifier: MIT */
/*
 * Triton cache folders, walked (see triton-cache.h). An entry is a folder holding NAME.json
 * and NAME.cubin or NAME.hsaco (Triton's compile() writes both; __grp__NAME.json lists
 * them); entries without a binary (TRITON_STORE_BINARY_ONLY aside, an interrupted write) are
 * skipped. vLLM points TRITON_CACHE_DIR at run time under
 * $VLLM_CACHE_ROOT/torch_compile_cache/<hash>/rank_<i>_<j>/<prefix>/triton_cache, which is
 * why a folder that is not itself a cache is searched for such folders.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sys/triton-cache.h"
#include "util/hash.h"

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

struct walk {
	struct pvg_triton_index *idx;
	const struct pvg_triton_where *w;
	struct pvg_triton_folder *folder;
	uint64_t deadline;
};

static bool bounded(struct walk *k)
{
	struct pvg_triton_index *idx = k->idx;
	if (idx->cut)
		return true;
	if (idx->visited >= PVG_TRITON_MAX_ENTRIES)
		idx->cut = "entries";
	else if (idx->bytes >= PVG_TRITON_MAX_BYTES)
		idx->cut = "bytes";
	else if (now_ms() > k->deadline)
		idx->cut = "time";
	return idx->cut != NULL;
}

static int open_at(struct walk *k, int dfd, const char *name, bool dir, uint64_t max,
		   struct stat *st)
{
	const struct pvg_untrusted how = { .root_fd = -1, .as = k->w->as, .nofollow = true,
					   .service_side = true, .want_dir = dir, .max_size = max };
	struct pvg_untrusted_file f = { 0 };
	int fd = pvg_openat_untrusted(dfd, name, &how, &f);
	if (st)
		*st = f.st;
	return fd;
}

static char *read_at(struct walk *k, int dfd, const char *name, uint64_t max, size_t *len,
		     struct stat *st, int *err)
{
	_cleanup_close_ int fd = open_at(k, dfd, name, false, max, st);
	char *buf = NULL;
	*err = fd < 0 ? fd : pvg_read_fd(fd, max, &buf, len);
	if (*err < 0)
		return NULL;
	k->idx->bytes += *len;
	return buf;
}

/* *a: the earliest time so far, *set once one was taken (a time of 0, the epoch, is a time:
 * files with normalised times say they were written then). */
static void older(struct timespec *a, bool *set, const struct stat *st)
{
	const struct timespec *c[2] = { &st->st_mtim, &st->st_ctim };
	for (int i = 0; i < 2; i++)
		if (!*set || c[i]->tv_sec < a->tv_sec ||
		    (c[i]->tv_sec == a->tv_sec && c[i]->tv_nsec < a->tv_nsec)) {
			*a = *c[i];
			*set = true;
		}
}

static void hex_to_bytes(const char hex[65], uint8_t out[32])
{
	for (int i = 0; i < 32; i++) {
		unsigned v = 0;
		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
}

/* One entry folder; stem: its NAME (from NAME.json). */
static void read_entry(struct walk *k, int efd, const char *key, const char *stem)
{
	struct pvg_triton_index *idx = k->idx;
	struct pvg_triton_entry e = { 0 };
	struct stat st;
	int err;
	size_t len = 0;
	bool dated = false;
	_cleanup_free_ char *jname = pvg_asprintf("%s.json", stem);
	_cleanup_free_ char *json = read_at(k, efd, jname, PVG_TRITON_MAX_JSON, &len, &st, &err);
	if (json) {
		older(&e.written, &dated, &st);
		e.meta_ok = pvg_triton_meta_parse(json, len, &e.meta, &e.why) == 0;
	} else {
		e.why = pvg_asprintf("%s: %s", jname, strerror(-err));
	}
	/* the binary: by the metadata's backend, else either */
	const char *exts[2] = { "cubin", "hsaco" };
	if (e.meta_ok) {
		exts[0] = pvg_triton_binary_ext(e.meta.backend);
		exts[1] = NULL;
	}
	_cleanup_free_ char *bin = NULL;
	size_t blen = 0;
	for (int i = 0; i < 2 && exts[i] && !bin; i++) {
		_cleanup_free_ char *bname = pvg_asprintf("%s.%s", stem, exts[i]);
		bin = read_at(k, efd, bname, PVG_TRITON_MAX_BINARY, &blen, &st, &err);
	}
	if (!bin) {
		idx->skipped++;
		free(e.why);
		return;
	}
	older(&e.written, &dated, &st);
	char hex[65];
	pvg_sha256_hex(bin, blen, hex);
	hex_to_bytes(hex, e.sha256);
	e.size = blen;
	_cleanup_free_ char *sname = pvg_asprintf("%s.source", stem);
	_cleanup_free_ char *src = read_at(k, efd, sname, PVG_TRITON_MAX_SOURCE, &len, &st, &err);
	if (src) {
		older(&e.written, &dated, &st);
		int r = pvg_triton_first_loc(src, len, &e.src_path, &e.src_line);
		if (r < 0 && !e.why)
			e.why = pvg_asprintf("%s: %s", sname, r == -ENOENT ? "no loc names the .py file"
								     : "its first loc is malformed");
	} else if (!e.why) {
		e.why = pvg_asprintf("%s: %s", sname, strerror(-err));
	}
	e.folder = pvg_strdup(k->folder->path);
	e.key = pvg_strdup(key);
	e.name = pvg_strdup(stem);
	idx->v = pvg_xrealloc(idx->v, idx->n + 1, sizeof(*idx->v));
	idx->v[idx->n++] = e;
	k->folder->entries++;
}

/* The NAME of an entry folder: its NAME.json that is not __grp__. NULL: not an entry. */
static char *entry_stem(int efd)
{
	int dup_fd = fcntl(efd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return NULL;
	}
	rewinddir(d); /* the descriptor's offset is shared with every dup of it */
	char *stem = NULL;
	struct dirent *de;
	for (int n = 0; (de = readdir(d)) && n < 64 && !stem; n++) {
		size_t l = strlen(de->d_name);
		if (l > 5 && l - 5 < PVG_TRITON_MAX_NAME && strcmp(de->d_name + l - 5, ".json") == 0 &&
		    strncmp(de->d_name, "__grp__", 7) != 0 && de->d_name[0] != '.')
			stem = pvg_xcalloc(l - 4, 1), memcpy(stem, de->d_name, l - 5);
	}
	closedir(d);
	return stem;
}

static void walk_dir(struct walk *k, int dfd, int depth)
{
	int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	/* from the start: entry_stem read this folder through a dup of the same descriptor,
	 * and a dup shares the offset (without this, no folder below the first level, such as
	 * vLLM's per-rank triton_cache folders, was ever read) */
	rewinddir(d);
	struct dirent *de;
	while ((de = readdir(d)) && !bounded(k)) {
		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		k->idx->visited++;
		_cleanup_close_ int efd = open_at(k, dfd, de->d_name, true, 0, NULL);
		if (efd < 0)
			continue;
		_cleanup_free_ char *stem = entry_stem(efd);
		if (stem)
			read_entry(k, efd, de->d_name, stem);
		else if (depth < 6)
			walk_dir(k, efd, depth + 1);
	}
	closedir(d);
}

void pvg_triton_index_add(struct pvg_triton_index *idx, const struct pvg_triton_where *w,
			  const char *path, const char *from)
{
	for (size_t i = 0; i < idx->n_folders; i++)
		if (strcmp(idx->folders[i].path, path) == 0)
			return;
	idx->folders = pvg_xrealloc(idx->folders, idx->n_folders + 1, sizeof(*idx->folders));
	struct pvg_triton_folder *f = &idx->folders[idx->n_folders++];
	memset(f, 0, sizeof(*f));
	f->path = pvg_strdup(path);
	f->from = from;
	const struct pvg_untrusted how = { .root_fd = w->root_fd, .as = w->as, .want_dir = true,
					   .service_side = true };
	struct pvg_untrusted_file uf = { 0 };
	_cleanup_close_ int dfd = pvg_open_untrusted(path, &how, &uf);
	if (dfd < 0) {
		f->err = dfd;
		f->refused = uf.refused;
		return;
	}
	struct walk k = { .idx = idx, .w = w, .folder = f, .deadline = now_ms() + PVG_TRITON_MAX_MS };
	walk_dir(&k, dfd, 0);
}

const struct pvg_triton_entry *pvg_triton_index_next(const struct pvg_triton_index *idx,
						     const uint8_t sha256[32],
						     const struct pvg_triton_entry *prev)
{
	for (size_t i = prev ? (size_t)(prev - idx->v) + 1 : 0; i < idx->n; i++)
		if (memcmp(idx->v[i].sha256, sha256, 32) == 0)
			return &idx->v[i];
	return NULL;
}

const struct pvg_triton_entry *pvg_triton_index_find(const struct pvg_triton_index *idx,
						     const uint8_t sha256[32])
{
	return pvg_triton_index_next(idx, sha256, NULL);
}

void pvg_triton_index_clear(struct pvg_triton_index *idx)
{
	for (size_t i = 0; i < idx->n; i++) {
		struct pvg_triton_entry *e = &idx->v[i];
		free(e->folder);
		free(e->key);
		free(e->name);
		free(e->why);
		free(e->src_path);
	}
	free(idx->v);
	for (size_t i = 0; i < idx->n_folders; i++)
		free(idx->folders[i].path);
	free(idx->folders);
	memset(idx, 0, sizeof(*idx));
}
