/* SPDX-License-Identifier: MIT */
/*
 * libprovgate-witness.so: the launch table and the witness file writer (see witness.h).
 * Nothing here runs on the launch path but pvg_witness_record and its helpers, which use
 * atomics only; identity, file writes and demangling happen at load, in the helper thread
 * and at exit.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "witness/sha256.h"
#include "witness/witness.h"

#define SLOTS (2 * PVG_WITNESS_MAX_RECORDS) /* half full at most: probes stay short */

enum { SLOT_EMPTY = 0, SLOT_CLAIMED = 1, SLOT_READY = 2 };

struct slot {
	_Atomic uint32_t state;
	uint32_t via, flags;
	uint32_t grid[3], block[3];
	uint64_t handle;
	uint32_t name_off, name_len, module_off, module_len;
	uint32_t code, bind; /* the code module (code_of's answer) */
	_Atomic uint64_t count, first_ns, last_ns;
	/* owned by the writer (under write_lock): the demangled name, once looked up */
	int demangled_done;
	uint32_t dem_off, dem_len;
};

static struct {
	int active;
	char dir[4096];
	char file[128];
	struct slot slots[SLOTS];
	_Atomic uint32_t used; /* slots claimed */
	char names[PVG_WITNESS_MAX_STRINGS];
	_Atomic uint32_t names_used;
	/* what every graph launch touches, in one cache line (the off path of a replay and the
	 * counting both): the counts, the generation of the execs' versions (graph_gen: bumped
	 * after each change of an exec's current version; see replay_cache) and how replays are
	 * stamped (replay_tsc) */
	_Alignas(64) _Atomic uint64_t launches;
	_Atomic uint64_t graph_launches, graph_gen;
	int replay_tsc;
	_Atomic uint64_t dropped, nested_driver, captured, graph_opaque;
	_Atomic uint32_t flags;
	_Atomic uint32_t api;
	char note[128];
	struct pvg_witness_header id; /* pid, nspid, start_ticks, boot_id, init_ns */
	uint64_t written_launches;    /* launches at the last write */
	int written_once;
	pthread_mutex_t write_lock;
	pthread_mutex_t wake_lock;
	int stop;
	pthread_t thread;
	int thread_started;
	long interval_ms;
	/* requests (PVG_WITNESS_REQUEST_PREFIX): the largest token seen, the helper thread's
	 * watch of the folder (-1: none, the folder is scanned instead) and its wake-up */
	uint64_t answered;
} W = {
	.write_lock = PTHREAD_MUTEX_INITIALIZER,
	.wake_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* The helper thread's watch of the folder (-1: none, the folder is scanned instead) and its
 * wake-up. Apart from W: an initializer other than zero there would put all of W's megabytes
 * of slots into the library file's data instead of its bss. */
static struct {
	int inotify_fd, wake_fd;
} R = { -1, -1 };

uint64_t pvg_witness_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int pvg_witness_active(void)
{
	return W.active;
}

/* ---- the launch path ------------------------------------------------------------------------- */

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static uint64_t key_hash(const struct pvg_launch *l)
{
	uint64_t h = mix(l->handle ^ ((uint64_t)l->via << 56));
	for (int d = 0; d < 3; d++)
		h = mix(h ^ ((uint64_t)l->grid[d] << 32 | l->block[d]));
	return h;
}

static int same_key(const struct slot *s, const struct pvg_launch *l)
{
	return s->handle == l->handle && s->via == l->via &&
	       memcmp(s->grid, l->grid, sizeof(s->grid)) == 0 &&
	       memcmp(s->block, l->block, sizeof(s->block)) == 0;
}

/* Copies n bytes into the name area; 0 length when it is full. */
static void arena_put(const char *p, size_t n, uint32_t *off, uint32_t *len)
{
	*off = 0;
	*len = 0;
	uint32_t at = atomic_fetch_add_explicit(&W.names_used, (uint32_t)n, memory_order_relaxed);
	if (at > sizeof(W.names) || n > sizeof(W.names) - at)
		return;
	memcpy(W.names + at, p, n);
	*off = at;
	*len = (uint32_t)n;
}

/* One locked add for the count (2^64 launches are not reached: at one a nanosecond that
 * takes 584 years; the saturation check stays for a corrupted table), a plain load before
 * the first time's compare-and-swap, and a compare-and-swap for the last time only while it
 * moves forward. */
static void count_launch(struct slot *s, uint64_t now)
{
	if (atomic_load_explicit(&s->count, memory_order_relaxed) != UINT64_MAX)
		atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
	uint64_t first = atomic_load_explicit(&s->first_ns, memory_order_relaxed);
	if (first == 0)
		atomic_compare_exchange_strong_explicit(&s->first_ns, &first, now, memory_order_relaxed,
							memory_order_relaxed);
	uint64_t last = atomic_load_explicit(&s->last_ns, memory_order_relaxed);
	while (last < now && !atomic_compare_exchange_weak_explicit(&s->last_ns, &last, now,
								    memory_order_relaxed,
								    memory_order_relaxed))
		;
}

static void fill_slot(struct slot *s, const struct pvg_launch *l)
{
	s->handle = l->handle;
	s->via = l->via;
	memcpy(s->grid, l->grid, sizeof(s->grid));
	memcpy(s->block, l->block, sizeof(s->block));
	s->flags = 0;
	if (l->name && l->name[0]) {
		size_t n = strnlen(l->name, PVG_WITNESS_MAX_NAME + 1);
		if (n > PVG_WITNESS_MAX_NAME) {
			n = PVG_WITNESS_MAX_NAME;
			s->flags |= PVG_WITNESS_R_NAME_CUT;
		}
		arena_put(l->name, n, &s->name_off, &s->name_len);
	} else {
		s->flags |= PVG_WITNESS_R_NO_NAME;
	}
	if (l->module_of) {
		char buf[512];
		const char *m = l->module_of(l->handle, buf, sizeof(buf));
		if (m)
			arena_put(m, strnlen(m, sizeof(buf) - 1), &s->module_off, &s->module_len);
	}
	s->code = 0;
	s->bind = PVG_WITNESS_BIND_NONE;
	if (l->code_of) {
		uint32_t bind = PVG_WITNESS_BIND_NONE;
		uint32_t code = l->code_of(l->handle, l->name, &bind);
		if (code && bind != PVG_WITNESS_BIND_NONE && bind <= PVG_WITNESS_BIND_AMBIGUOUS) {
			s->code = code;
			s->bind = bind;
		}
	}
}

void pvg_witness_record(const struct pvg_launch *l)
{
	if (!W.active)
		return;
	uint64_t now = pvg_witness_now_ns();
	atomic_fetch_add_explicit(&W.launches, 1, memory_order_relaxed);
	uint64_t h = key_hash(l);
	for (uint32_t i = 0; i < SLOTS; i++) {
		struct slot *s = &W.slots[(h + i) & (SLOTS - 1)];
		uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
		if (st == SLOT_EMPTY) {
			if (atomic_load_explicit(&W.used, memory_order_relaxed) >=
			    PVG_WITNESS_MAX_RECORDS)
				break;
			if (atomic_compare_exchange_strong_explicit(&s->state, &st, SLOT_CLAIMED,
								    memory_order_acq_rel,
								    memory_order_acquire)) {
				if (atomic_fetch_add_explicit(&W.used, 1, memory_order_relaxed) >=
				    PVG_WITNESS_MAX_RECORDS) {
					/* lost a race for the last record: the slot stays claimed
					 * and empty, which lookups skip */
					atomic_fetch_sub_explicit(&W.used, 1, memory_order_relaxed);
					break;
				}
				fill_slot(s, l);
				count_launch(s, now);
				atomic_store_explicit(&s->state, SLOT_READY, memory_order_release);
				return;
			}
		}
		/* another thread is filling this slot: it holds no lock, only a few stores */
		for (int spin = 0; st == SLOT_CLAIMED && spin < 1 << 20; spin++)
			st = atomic_load_explicit(&s->state, memory_order_acquire);
		if (st == SLOT_READY && same_key(s, l)) {
			count_launch(s, now);
			return;
		}
	}
	atomic_fetch_add_explicit(&W.dropped, 1, memory_order_relaxed);
	atomic_fetch_or_explicit(&W.flags, PVG_WITNESS_F_TABLE_FULL, memory_order_relaxed);
}

/* ---- code modules (see witness.h) ------------------------------------------------------------- */

#define MOD_KEYS (2u * PVG_WITNESS_MAX_MODULES) /* each key table half full at most */

struct wmod {
	struct pvg_witness_module m; /* path_off, path_len set when written */
	char *path;
	uint32_t path_len;
	int live;
};

/* handle -> module and api_id -> module: a key stays once set; idx -1 once unloaded */
struct mkey {
	uint64_t key;
	int32_t idx;
	uint32_t used;
};

/* one kernel name a module defines: a 64-bit prefix of the name's sha256 (never 0) */
struct mname {
	uint64_t h;
	uint32_t mod;
};

static struct {
	pthread_mutex_t lock; /* every field; the launch path takes it only for a new record */
	struct wmod *v;
	uint32_t n, cap;
	struct mkey by_handle[MOD_KEYS], by_api[MOD_KEYS];
	struct mname *names; /* open addressing, names_cap a power of two, half full at most */
	size_t names_cap, names_used;
	uint64_t loaded, dropped;
} M = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t name_key(const char *p, size_t n)
{
	uint8_t d[32];
	pvg_wsha256(p, n, d);
	uint64_t h = 0;
	for (int i = 0; i < 8; i++)
		h = h << 8 | d[i];
	return h ? h : 1;
}

/* under M.lock */
static struct mkey *mkey_find(struct mkey *t, uint64_t key, int claim)
{
	uint64_t h = mix(key);
	for (uint32_t i = 0; i < MOD_KEYS; i++) {
		struct mkey *k = &t[(h + i) & (MOD_KEYS - 1)];
		if (k->used && k->key == key)
			return k;
		if (!k->used) {
			if (!claim)
				return NULL;
			k->used = 1;
			k->key = key;
			k->idx = -1;
			return k;
		}
	}
	return NULL;
}

/* under M.lock: room for more names (a table twice as large; the names of unloaded modules
 * are left behind). 0 or -ENOMEM. */
static int names_grow(size_t more)
{
	if (2 * (M.names_used + more) <= M.names_cap)
		return 0;
	size_t cap = M.names_cap ? M.names_cap : 1024;
	while (2 * (M.names_used + more) > cap)
		cap *= 2;
	struct mname *t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	size_t used = 0;
	for (size_t i = 0; i < M.names_cap; i++) {
		const struct mname *e = &M.names[i];
		if (!e->h || !M.v[e->mod].live)
			continue;
		for (size_t j = 0;; j++) {
			struct mname *d = &t[(e->h + j) & (cap - 1)];
			if (!d->h) {
				*d = *e;
				used++;
				break;
			}
		}
	}
	free(M.names);
	M.names = t;
	M.names_cap = cap;
	M.names_used = used;
	return 0;
}

/* under M.lock */
static void names_put(uint64_t h, uint32_t mod)
{
	for (size_t j = 0;; j++) {
		struct mname *d = &M.names[(h + j) & (M.names_cap - 1)];
		if (!d->h) {
			d->h = h;
			d->mod = mod;
			M.names_used++;
			return;
		}
		if (d->h == h && d->mod == mod)
			return; /* a name the image defines twice */
	}
}

int pvg_witness_module_add(const struct pvg_module_load *in)
{
	if (!W.active)
		return -ENOTCONN;
	struct wmod w;
	memset(&w, 0, sizeof(w));
	w.m.size = in->size;
	w.m.load_ns = pvg_witness_now_ns();
	w.m.handle = in->handle;
	w.m.file_offset = in->file_offset;
	w.m.api_id = in->api_id;
	w.m.origin = in->origin;
	w.m.flags = in->flags & (PVG_WITNESS_M_NOT_HASHED | PVG_WITNESS_M_COMPRESSED);
	w.m.arch = in->arch;
	w.live = 1;
	/* the expensive part, outside the lock: the image's digest and the names' keys */
	if (in->flags & PVG_WITNESS_M_NOT_HASHED)
		w.m.unhashed = in->unhashed;
	else if (in->sha256)
		memcpy(w.m.sha256, in->sha256, 32);
	else if (in->image && in->size <= PVG_WITNESS_MODULE_MAX_HASH)
		pvg_wsha256(in->image, (size_t)in->size, w.m.sha256);
	else
		w.m.unhashed = in->image ? PVG_WITNESS_UNHASHED_TOO_LARGE : PVG_WITNESS_UNHASHED_NO_IMAGE;
	if (w.m.unhashed)
		w.m.flags |= PVG_WITNESS_M_NOT_HASHED;
	if (w.m.flags & PVG_WITNESS_M_NOT_HASHED)
		memset(w.m.sha256, 0, 32);
	if (in->path && in->path[0]) {
		size_t n = strnlen(in->path, PVG_WITNESS_MAX_NAME + 1);
		if (n > PVG_WITNESS_MAX_NAME) {
			n = PVG_WITNESS_MAX_NAME;
			w.m.flags |= PVG_WITNESS_M_PATH_CUT;
		}
		w.path = malloc(n);
		if (w.path) {
			memcpy(w.path, in->path, n);
			w.path_len = (uint32_t)n;
		}
	}
	uint64_t *keys = NULL;
	uint32_t nk = 0;
	if (in->names && in->n_names) {
		keys = malloc(in->n_names * sizeof(*keys));
		for (size_t at = 0; keys && nk < in->n_names && at < in->names_len; nk++) {
			size_t n = strnlen(in->names + at, in->names_len - at);
			keys[nk] = name_key(in->names + at, n);
			at += n + 1;
		}
	}
	w.m.names = nk;

	pthread_mutex_lock(&M.lock);
	M.loaded++;
	int idx = -ENOSPC;
	if (M.n < PVG_WITNESS_MAX_MODULES) {
		if (M.n == M.cap) {
			uint32_t cap = M.cap ? 2 * M.cap : 64;
			struct wmod *v = realloc(M.v, cap * sizeof(*v));
			if (v) {
				M.v = v;
				M.cap = cap;
			}
		}
		if (M.n < M.cap)
			idx = (int)M.n++;
	}
	if (idx < 0) {
		M.dropped++;
		atomic_fetch_or(&W.flags, PVG_WITNESS_F_MODULE_TABLE_FULL);
		pthread_mutex_unlock(&M.lock);
		free(w.path);
		free(keys);
		return -ENOSPC;
	}
	if (nk && names_grow(nk) < 0) {
		w.m.names = 0; /* no name binds to it: launches of its kernels stay unknown */
		nk = 0;
	}
	M.v[idx] = w;
	for (uint32_t i = 0; i < nk; i++)
		names_put(keys[i], (uint32_t)idx);
	struct mkey *k = mkey_find(M.by_api, in->api_id, 1);
	if (k)
		k->idx = idx;
	if (in->handle && (k = mkey_find(M.by_handle, in->handle, 1)))
		k->idx = idx;
	pthread_mutex_unlock(&M.lock);
	free(keys);
	return idx;
}

void pvg_witness_module_set_handle(int index, uint64_t handle)
{
	pthread_mutex_lock(&M.lock);
	if (index >= 0 && (uint32_t)index < M.n && handle && M.v[index].live) {
		M.v[index].m.handle = handle;
		struct mkey *k = mkey_find(M.by_handle, handle, 1);
		if (k)
			k->idx = index;
	}
	pthread_mutex_unlock(&M.lock);
}

void pvg_witness_module_set_path(int index, const char *path, uint64_t file_offset)
{
	if (!path || !path[0])
		return;
	size_t n = strnlen(path, PVG_WITNESS_MAX_NAME + 1);
	uint32_t cut = 0;
	if (n > PVG_WITNESS_MAX_NAME) {
		n = PVG_WITNESS_MAX_NAME;
		cut = PVG_WITNESS_M_PATH_CUT;
	}
	char *copy = malloc(n);
	if (!copy)
		return;
	memcpy(copy, path, n);
	pthread_mutex_lock(&M.lock);
	if (index >= 0 && (uint32_t)index < M.n && !M.v[index].path) {
		struct wmod *w = &M.v[index];
		w->path = copy;
		w->path_len = (uint32_t)n;
		w->m.file_offset = file_offset;
		w->m.flags |= cut;
		copy = NULL;
	}
	pthread_mutex_unlock(&M.lock);
	free(copy);
}

void pvg_witness_module_unload(int index)
{
	pthread_mutex_lock(&M.lock);
	if (index >= 0 && (uint32_t)index < M.n && M.v[index].live) {
		struct wmod *w = &M.v[index];
		w->live = 0;
		w->m.unload_ns = pvg_witness_now_ns();
		struct mkey *k = mkey_find(M.by_api, w->m.api_id, 0);
		if (k && k->idx == index)
			k->idx = -1;
		k = w->m.handle ? mkey_find(M.by_handle, w->m.handle, 0) : NULL;
		if (k && k->idx == index)
			k->idx = -1;
	}
	pthread_mutex_unlock(&M.lock);
}

static int by_key(struct mkey *t, uint64_t key)
{
	pthread_mutex_lock(&M.lock);
	struct mkey *k = mkey_find(t, key, 0);
	int idx = k && k->idx >= 0 ? k->idx : -ENOENT;
	pthread_mutex_unlock(&M.lock);
	return idx;
}

int pvg_witness_module_by_handle(uint64_t handle)
{
	return handle ? by_key(M.by_handle, handle) : -ENOENT;
}

int pvg_witness_module_by_api_id(uint32_t api_id)
{
	return by_key(M.by_api, api_id);
}

static int same_bytes(const struct wmod *a, const struct wmod *b)
{
	return !(a->m.flags & PVG_WITNESS_M_NOT_HASHED) && !(b->m.flags & PVG_WITNESS_M_NOT_HASHED) &&
	       a->m.size == b->m.size && memcmp(a->m.sha256, b->m.sha256, 32) == 0;
}

uint32_t pvg_witness_module_by_name(const char *name, uint32_t *bind)
{
	*bind = PVG_WITNESS_BIND_NONE;
	if (!name || !name[0])
		return 0;
	uint64_t h = name_key(name, strnlen(name, PVG_WITNESS_MAX_NAME));
	pthread_mutex_lock(&M.lock);
	int64_t first = -1, seen = -1;
	int differ = 0;
	for (size_t j = 0; M.names_cap && j < M.names_cap; j++) {
		const struct mname *e = &M.names[(h + j) & (M.names_cap - 1)];
		if (!e->h)
			break;
		if (e->h != h || !M.v[e->mod].live)
			continue;
		if (seen < 0)
			seen = e->mod;
		else if (!same_bytes(&M.v[seen], &M.v[e->mod]))
			differ = 1;
		if (first < 0 || e->mod < first)
			first = e->mod;
	}
	pthread_mutex_unlock(&M.lock);
	if (first < 0)
		return 0;
	*bind = differ ? PVG_WITNESS_BIND_AMBIGUOUS : PVG_WITNESS_BIND_ONLY_NAME;
	return (uint32_t)first + 1;
}

void pvg_witness_modules_recording(void)
{
	atomic_fetch_or(&W.flags, PVG_WITNESS_F_MODULES);
}

int pvg_witness_module_defines(int index, const char *name)
{
	if (!name || !name[0])
		return 0;
	uint64_t h = name_key(name, strnlen(name, PVG_WITNESS_MAX_NAME));
	int r = 0;
	pthread_mutex_lock(&M.lock);
	for (size_t j = 0; M.names_cap && j < M.names_cap; j++) {
		const struct mname *e = &M.names[(h + j) & (M.names_cap - 1)];
		if (!e->h)
			break;
		if (e->h == h && e->mod == (uint32_t)index) {
			r = 1;
			break;
		}
	}
	pthread_mutex_unlock(&M.lock);
	return r;
}

int pvg_witness_module_digest(int index, uint8_t sha256[32])
{
	int r = -ENOENT;
	pthread_mutex_lock(&M.lock);
	if (index >= 0 && (uint32_t)index < M.n && !(M.v[index].m.flags & PVG_WITNESS_M_NOT_HASHED)) {
		memcpy(sha256, M.v[index].m.sha256, 32);
		r = 0;
	}
	pthread_mutex_unlock(&M.lock);
	return r;
}

/* ---- CUDA graph execs (see witness.h) ---------------------------------------------------------- */

#define GEXEC_SLOTS 16384u          /* exec handles; half of them at most are used */
#define GRAPH_MAX_KERNELS (1u << 20) /* list entries kept over every version */
#define GV_OPAQUE 0x100u

struct gversion {
	_Atomic uint64_t replays, first_ns, last_ns;
	uint64_t exec;
	uint32_t n, flags; /* PVG_GRAPH_* | GV_OPAQUE */
	struct pvg_graph_kernel *k; /* names point into the intern table */
	struct gversion *next;      /* every version, newest first */
};

struct gexec_slot {
	_Atomic uint64_t key;
	_Atomic(struct gversion *) cur;
};

/* a kernel name, copied once and kept (with its demangled form, once the writer made it) */
struct gname {
	uint64_t hash;
	uint32_t len;
	int demangled_done;
	char *dem;
	struct gname *next;
	char s[];
};

static struct {
	pthread_mutex_t lock; /* setting, dropping, reading lists; the launch path takes none */
	struct gexec_slot slots[GEXEC_SLOTS];
	uint32_t used;
	_Atomic(struct gversion *) versions;
	size_t kernels; /* entries over every version */
	struct gname *names[1024];
	_Atomic uint32_t full; /* a table was full: PVG_WITNESS_F_GRAPH_TABLE_FULL */
	_Atomic uint32_t why;  /* PVG_WITNESS_OPAQUE_* */
} G = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct gexec_slot *gexec_find(uint64_t exec)
{
	uint64_t h = mix(exec);
	for (uint32_t i = 0; i < GEXEC_SLOTS; i++) {
		struct gexec_slot *s = &G.slots[(h + i) & (GEXEC_SLOTS - 1)];
		uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
		if (k == exec)
			return s;
		if (k == 0)
			return NULL;
	}
	return NULL;
}

/* under G.lock */
static struct gexec_slot *gexec_claim(uint64_t exec)
{
	struct gexec_slot *s = gexec_find(exec);
	if (s || exec == 0)
		return s;
	if (G.used >= GEXEC_SLOTS / 2)
		return NULL;
	uint64_t h = mix(exec);
	for (uint32_t i = 0; i < GEXEC_SLOTS; i++) {
		s = &G.slots[(h + i) & (GEXEC_SLOTS - 1)];
		if (atomic_load_explicit(&s->key, memory_order_relaxed) == 0) {
			atomic_store_explicit(&s->cur, NULL, memory_order_relaxed);
			atomic_store_explicit(&s->key, exec, memory_order_release);
			G.used++;
			return s;
		}
	}
	return NULL;
}

/* under G.lock */
static const char *gname_intern(const char *name)
{
	if (!name || !name[0])
		return NULL;
	size_t n = strnlen(name, PVG_WITNESS_MAX_NAME);
	uint64_t h = mix(pvg_witness_fnv(PVG_FNV_INIT, name, n));
	struct gname **b = &G.names[h % (sizeof(G.names) / sizeof(G.names[0]))];
	for (struct gname *g = *b; g; g = g->next)
		if (g->hash == h && g->len == n && memcmp(g->s, name, n) == 0)
			return g->s;
	struct gname *g = calloc(1, sizeof(*g) + n + 1);
	if (!g)
		return NULL;
	g->hash = h;
	g->len = (uint32_t)n;
	memcpy(g->s, name, n);
	g->next = *b;
	*b = g;
	return g->s;
}

static struct gname *gname_of(const char *s)
{
	return s ? (struct gname *)(s - offsetof(struct gname, s)) : NULL;
}

/* under G.lock: a new current version of exec (n == 0 and opaque: kernels unknown) */
static int gversion_publish(uint64_t exec, const struct pvg_graph_kernel *k, size_t n,
			    uint32_t flags)
{
	struct gexec_slot *s = gexec_claim(exec);
	if (!s) {
		atomic_store(&G.full, 1);
		atomic_fetch_or(&G.why, PVG_WITNESS_OPAQUE_FULL);
		return -ENOSPC;
	}
	if (!(flags & GV_OPAQUE) && G.kernels + n > GRAPH_MAX_KERNELS) {
		atomic_store(&G.full, 1);
		atomic_fetch_or(&G.why, PVG_WITNESS_OPAQUE_FULL);
		flags = GV_OPAQUE;
		n = 0;
	}
	struct gversion *v = calloc(1, sizeof(*v));
	struct pvg_graph_kernel *copy = n ? calloc(n, sizeof(*copy)) : NULL;
	if (!v || (n && !copy)) {
		free(v);
		free(copy);
		atomic_store_explicit(&s->cur, NULL, memory_order_release);
		atomic_fetch_add_explicit(&W.graph_gen, 1, memory_order_release);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		copy[i] = k[i];
		copy[i].name = gname_intern(k[i].name);
	}
	v->exec = exec;
	v->n = (uint32_t)n;
	v->flags = flags;
	v->k = copy;
	G.kernels += n;
	v->next = atomic_load_explicit(&G.versions, memory_order_relaxed);
	atomic_store_explicit(&G.versions, v, memory_order_release);
	atomic_store_explicit(&s->cur, v, memory_order_release);
	atomic_fetch_add_explicit(&W.graph_gen, 1, memory_order_release);
	return flags & GV_OPAQUE ? -ENOSPC : 0;
}

int pvg_witness_graph_set(uint64_t exec, const struct pvg_graph_kernel *k, size_t n,
			  uint32_t flags)
{
	if (!W.active)
		return 0;
	pthread_mutex_lock(&G.lock);
	int r = gversion_publish(exec, k, n, flags & PVG_GRAPH_PARTIAL);
	pthread_mutex_unlock(&G.lock);
	return r;
}

void pvg_witness_graph_opaque(uint64_t exec, uint32_t why)
{
	if (!W.active)
		return;
	atomic_fetch_or(&G.why, why);
	pthread_mutex_lock(&G.lock);
	gversion_publish(exec, NULL, 0, GV_OPAQUE);
	pthread_mutex_unlock(&G.lock);
}

void pvg_witness_graph_drop(uint64_t exec)
{
	if (!W.active)
		return;
	pthread_mutex_lock(&G.lock);
	struct gexec_slot *s = gexec_find(exec);
	if (s) {
		atomic_store_explicit(&s->cur, NULL, memory_order_release);
		atomic_fetch_add_explicit(&W.graph_gen, 1, memory_order_release);
	}
	pthread_mutex_unlock(&G.lock);
}

struct pvg_graph_kernel *pvg_witness_graph_get(uint64_t exec, size_t *n, uint32_t *flags)
{
	*n = 0;
	*flags = 0;
	pthread_mutex_lock(&G.lock);
	struct gexec_slot *s = gexec_find(exec);
	struct gversion *v = s ? atomic_load_explicit(&s->cur, memory_order_acquire) : NULL;
	struct pvg_graph_kernel *copy = NULL;
	if (v && !(v->flags & GV_OPAQUE)) {
		copy = malloc((v->n ? v->n : 1) * sizeof(*copy));
		if (copy) {
			memcpy(copy, v->k, v->n * sizeof(*copy));
			*n = v->n;
			*flags = v->flags & PVG_GRAPH_PARTIAL;
		}
	}
	pthread_mutex_unlock(&G.lock);
	return copy;
}

/* A replay's stamp: the TSC where the kernel's own clock is the TSC (x86-64, clocksource
 * "tsc": the kernel found it invariant and in step on every CPU), converted to CLOCK_REALTIME
 * when the file is written (replay_ns); elsewhere CLOCK_REALTIME itself. Reading the clock
 * touches the vDSO's code and data, which the launch of a large graph has pushed out of the
 * caches and the TLB by the time the call returns (tests/gpu/results/2026-12-02-h200-graph-cost:
 * counting a replay of 1000 nodes took 0.5 us, of 1 node 0.07 us). */
static inline uint64_t read_tsc(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
#else
	return 0;
#endif
}

static int tsc_is_clocksource(void)
{
#if defined(__x86_64__)
	char b[16] = "";
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	return n == 4 && memcmp(b, "tsc\n", 4) == 0;
#else
	return 0;
#endif
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A (TSC, CLOCK_MONOTONIC_RAW) pair: of three reads, the one whose two TSC reads around the
 * clock's are closest */
struct tsc_pair {
	uint64_t tsc, mono_ns;
};

static struct tsc_pair tsc_pair_now(void)
{
	struct tsc_pair best = { 0, 0 };
	uint64_t width = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		uint64_t a = read_tsc(), m = clock_ns(CLOCK_MONOTONIC_RAW), b = read_tsc();
		if (b - a < width) {
			width = b - a;
			best.tsc = a + (b - a) / 2;
			best.mono_ns = m;
		}
	}
	return best;
}

static struct tsc_pair tsc_at_start; /* taken when the witness starts */

/* The writer's view of the clocks, taken once a file: a stamp becomes CLOCK_REALTIME by its
 * age in TSC ticks, at the rate measured since the start (CLOCK_MONOTONIC_RAW, which the
 * kernel counts from the same TSC). */
struct stamp_clock {
	struct tsc_pair now;
	uint64_t real_ns;
};

static void stamp_clock_now(struct stamp_clock *c)
{
	c->now = tsc_pair_now();
	c->real_ns = pvg_witness_now_ns();
}

static uint64_t replay_ns(const struct stamp_clock *c, uint64_t stamp)
{
	if (!W.replay_tsc || stamp == 0)
		return stamp;
	if (c->now.tsc <= tsc_at_start.tsc || c->now.mono_ns <= tsc_at_start.mono_ns ||
	    stamp >= c->now.tsc)
		return c->real_ns;
	uint64_t ticks = c->now.tsc - tsc_at_start.tsc, ns = c->now.mono_ns - tsc_at_start.mono_ns;
	unsigned __int128 age = (unsigned __int128)(c->now.tsc - stamp) * ns / ticks;
	return age >= c->real_ns ? 0 : c->real_ns - (uint64_t)age;
}

/* The first replay's time from the clock (once a version), the last one's as a stamp (above):
 * one locked add, a load, and a compare-and-swap while the stamp moves forward. */
static void count_replay(struct gversion *v)
{
	atomic_fetch_add_explicit(&v->replays, 1, memory_order_relaxed);
	uint64_t first = atomic_load_explicit(&v->first_ns, memory_order_relaxed);
	if (first == 0)
		atomic_compare_exchange_strong_explicit(&v->first_ns, &first, pvg_witness_now_ns(),
							memory_order_relaxed, memory_order_relaxed);
	uint64_t now = W.replay_tsc ? read_tsc() : pvg_witness_now_ns();
	uint64_t last = atomic_load_explicit(&v->last_ns, memory_order_relaxed);
	while (last < now && !atomic_compare_exchange_weak_explicit(&v->last_ns, &last, now,
								    memory_order_relaxed,
								    memory_order_relaxed))
		;
}

#ifdef PVG_WITNESS_BENCH
/* libprovgate-witness-bench.so only: bit 0 clear counts a graph launch in the header alone, as
 * the witness did before it read graphs; bit 1 (PVG_WITNESS_BENCH_NOCACHE=1) looks every
 * replay's exec up in the slot table, as before replay_cache (tests/gpu/witness: the cost of
 * replay counting) */
_Atomic int pvg_witness_bench_replay_counting = 1;
#endif

/* The exec this thread replayed last and its version, good while W.graph_gen is unchanged: a
 * replay of the same exec needs no lookup in the slot table, whose line the launch of a large
 * graph has evicted by the time the call returns. The generation is read before the version
 * and bumped after each new one is published, so a cached version was current at some point
 * after the generation read here, as a looked-up one is. */
static __thread struct {
	uint64_t exec, gen;
	struct gversion *v;
} replay_cache;

void pvg_witness_graph_replay(uint64_t exec)
{
	if (!W.active)
		return;
	atomic_fetch_add_explicit(&W.graph_launches, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&W.launches, 1, memory_order_relaxed);
#ifdef PVG_WITNESS_BENCH
	int bench = atomic_load_explicit(&pvg_witness_bench_replay_counting, memory_order_relaxed);
	if (!(bench & 1))
		return;
#else
	const int bench = 0;
#endif
	uint64_t gen = atomic_load_explicit(&W.graph_gen, memory_order_acquire);
	struct gversion *v;
	if (replay_cache.v && replay_cache.exec == exec && replay_cache.gen == gen && !(bench & 2)) {
		v = replay_cache.v;
	} else {
		struct gexec_slot *s = gexec_find(exec);
		v = s ? atomic_load_explicit(&s->cur, memory_order_acquire) : NULL;
		replay_cache.exec = exec;
		replay_cache.gen = gen;
		replay_cache.v = v;
	}
	if (!v || (v->flags & GV_OPAQUE)) {
		atomic_fetch_add_explicit(&W.graph_opaque, 1, memory_order_relaxed);
		if (!v)
			atomic_fetch_or_explicit(&G.why, PVG_WITNESS_OPAQUE_UNKNOWN, memory_order_relaxed);
		return;
	}
	count_replay(v);
}

/* A forked child starts with no execs (the parent's are not its own). The versions of the
 * parent stay allocated and unreachable: the child never counts them. */
static void graph_reset_after_fork(void)
{
	pthread_mutex_init(&G.lock, NULL);
	memset(G.slots, 0, sizeof(G.slots));
	G.used = 0;
	atomic_fetch_add(&W.graph_gen, 1); /* the forking thread's replay_cache is the parent's */
	atomic_store(&G.versions, NULL);
	G.kernels = 0;
	atomic_store(&G.full, 0);
	atomic_store(&G.why, 0);
}

void pvg_witness_nested_driver(void)
{
	if (W.active)
		atomic_fetch_add_explicit(&W.nested_driver, 1, memory_order_relaxed);
}

void pvg_witness_captured(void)
{
	if (W.active)
		atomic_fetch_add_explicit(&W.captured, 1, memory_order_relaxed);
}

void pvg_witness_set_api(uint32_t api, const char *note, int recording)
{
	pthread_mutex_lock(&W.write_lock);
	atomic_store(&W.api, api);
	snprintf(W.note, sizeof(W.note), "%s", note ? note : "");
	if (recording)
		atomic_fetch_or(&W.flags, PVG_WITNESS_F_RECORDING);
	W.written_once = 0; /* the header changed: write it at the next tick */
	pthread_mutex_unlock(&W.write_lock);
}

/* ---- identity -------------------------------------------------------------------------------- */

static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = 0;
	while (n + 1 < size) {
		ssize_t r = read(fd, buf + n, size - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	return (ssize_t)n;
}

static void read_identity(struct pvg_witness_header *id)
{
	char buf[4096];
	memset(id, 0, sizeof(*id));
	id->pid = id->nspid = (int32_t)getpid();
	id->nspid_levels = 1;
	if (read_small("/proc/self/stat", buf, sizeof(buf)) > 0) {
		/* field 22; comm (field 2) may hold spaces and parentheses: start after the last ')' */
		char *p = strrchr(buf, ')');
		for (int field = 2; p && field < 22; field++)
			p = strchr(p + 1, ' ');
		if (p)
			id->start_ticks = strtoull(p + 1, NULL, 10);
	}
	if (read_small("/proc/self/status", buf, sizeof(buf)) > 0) {
		char *p = strstr(buf, "\nNSpid:");
		if (p) {
			p += 7;
			unsigned levels = 0;
			char *end;
			for (;;) {
				long v = strtol(p, &end, 10);
				if (end == p)
					break;
				if (levels == 0)
					id->pid = (int32_t)v;
				id->nspid = (int32_t)v;
				levels++;
				p = end;
			}
			if (levels)
				id->nspid_levels = levels;
		}
	}
	if (read_small("/proc/sys/kernel/random/boot_id", buf, sizeof(buf)) > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(id->boot_id, sizeof(id->boot_id), "%.39s", buf);
	}
	id->init_ns = pvg_witness_now_ns();
}

/* ---- the file -------------------------------------------------------------------------------- */

static char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* The process's own C++ demangler: in the global scope when the program is C++, else in a
 * libstdc++ loaded privately (a Python extension's): looked up there without loading one. */
static void find_demangler(void)
{
	if (demangle_fn)
		return;
	void *p = dlsym(RTLD_DEFAULT, "__cxa_demangle");
	if (!p) {
		void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
		if (h) {
			p = dlsym(h, "__cxa_demangle");
			dlclose(h);
		}
	}
	demangle_fn = (char *(*)(const char *, char *, size_t *, int *))p;
}

/* The demangled name of s's mangled name, put once in the name area by the writer. */
static void demangle_slot(struct slot *s)
{
	find_demangler();
	if (!demangle_fn)
		return; /* asked again at the next write: the demangler may be loaded later */
	s->demangled_done = 1;
	if (s->name_len < 2 || memcmp(W.names + s->name_off, "_Z", 2) != 0)
		return;
	char *mangled = malloc(s->name_len + 1);
	if (!mangled)
		return;
	memcpy(mangled, W.names + s->name_off, s->name_len);
	mangled[s->name_len] = '\0';
	int status = -1;
	char *d = demangle_fn(mangled, NULL, NULL, &status);
	if (status == 0 && d) {
		size_t n = strlen(d);
		if (n > PVG_WITNESS_MAX_NAME)
			n = PVG_WITNESS_MAX_NAME;
		arena_put(d, n, &s->dem_off, &s->dem_len);
	}
	free(d);
	free(mangled);
}

/* The file's string area, grown as needed up to PVG_WITNESS_MAX_STRINGS. */
struct strbuf {
	char *p;
	size_t n, cap;
};

/* Appends len bytes of p (0 length when they do not fit); *off, *out_len: where they are. */
static void str_put(struct strbuf *b, const char *p, uint32_t len, uint32_t *off, uint32_t *out_len)
{
	*off = (uint32_t)b->n;
	*out_len = 0;
	if (!len || !p)
		return;
	if (b->n + len > b->cap && b->n + len <= PVG_WITNESS_MAX_STRINGS) {
		size_t cap = 2 * b->cap < PVG_WITNESS_MAX_STRINGS ? 2 * b->cap : PVG_WITNESS_MAX_STRINGS;
		if (cap < b->n + len)
			cap = b->n + len;
		char *grown = realloc(b->p, cap);
		if (grown) {
			b->p = grown;
			b->cap = cap;
		}
	}
	if (b->n + len <= b->cap) {
		memcpy(b->p + b->n, p, len);
		b->n += len;
		*out_len = len;
	}
}

/* The demangled form of an interned graph kernel name, made once. */
static const char *gname_demangled(struct gname *g)
{
	if (g->demangled_done)
		return g->dem;
	find_demangler();
	if (!demangle_fn)
		return NULL;
	g->demangled_done = 1;
	if (g->len < 2 || memcmp(g->s, "_Z", 2) != 0)
		return NULL;
	int status = -1;
	char *d = demangle_fn(g->s, NULL, NULL, &status);
	if (status == 0 && d)
		g->dem = d;
	else
		free(d);
	return g->dem;
}

/* One record per kernel x grid x block over every graph version's kernel list: count the
 * sum of the versions' replays (once per node with that key). */
struct gagg {
	uint64_t handle;
	uint32_t grid[3], block[3];
	const char *name;
	uint64_t count, first_ns, last_ns;
	uint32_t code, bind;
	int used;
};

struct graph_totals {
	uint64_t itemized, partial, kernel_launches, dropped;
	uint32_t execs, records_lost;
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* Adds the graph records to recs[*n..room); under G.lock (the lists and the names). */
static void graph_records(struct pvg_witness_record *recs, uint32_t *n, uint32_t room,
			  struct strbuf *str, struct graph_totals *t)
{
	memset(t, 0, sizeof(*t));
	struct stamp_clock clk;
	stamp_clock_now(&clk);
	const size_t cap = 2 * PVG_WITNESS_MAX_RECORDS;
	struct gagg *agg = NULL;
	size_t distinct = 0;
	for (struct gversion *v = atomic_load_explicit(&G.versions, memory_order_acquire); v;
	     v = v->next) {
		if (v->flags & GV_OPAQUE)
			continue;
		t->execs++;
		uint64_t replays = atomic_load_explicit(&v->replays, memory_order_relaxed);
		if (!replays)
			continue;
		t->itemized = sat_add(t->itemized, replays);
		if (v->flags & PVG_GRAPH_PARTIAL)
			t->partial = sat_add(t->partial, replays);
		uint64_t first = atomic_load_explicit(&v->first_ns, memory_order_relaxed);
		uint64_t last = replay_ns(&clk, atomic_load_explicit(&v->last_ns, memory_order_relaxed));
		if (last < first)
			last = first;
		for (uint32_t i = 0; i < v->n; i++) {
			const struct pvg_graph_kernel *k = &v->k[i];
			if (k->flags & (PVG_GRAPH_K_CHILD | PVG_GRAPH_K_DISABLED))
				continue;
			t->kernel_launches = sat_add(t->kernel_launches, replays);
			if (!agg && !(agg = calloc(cap, sizeof(*agg)))) {
				t->dropped = sat_add(t->dropped, replays);
				continue;
			}
			uint64_t h = mix(k->handle);
			for (int d = 0; d < 3; d++)
				h = mix(h ^ ((uint64_t)k->grid[d] << 32 | k->block[d]));
			struct gagg *a = NULL;
			for (size_t j = 0; j < cap; j++) {
				struct gagg *c = &agg[(h + j) % cap];
				if (!c->used) {
					if (distinct >= PVG_WITNESS_MAX_RECORDS)
						break;
					c->used = 1;
					c->handle = k->handle;
					memcpy(c->grid, k->grid, sizeof(c->grid));
					memcpy(c->block, k->block, sizeof(c->block));
					c->name = k->name;
					c->code = k->code;
					c->bind = k->code ? k->bind : PVG_WITNESS_BIND_NONE;
					c->first_ns = first;
					distinct++;
					a = c;
					break;
				}
				if (c->handle == k->handle && !memcmp(c->grid, k->grid, sizeof(c->grid)) &&
				    !memcmp(c->block, k->block, sizeof(c->block))) {
					a = c;
					break;
				}
			}
			if (!a) {
				t->dropped = sat_add(t->dropped, replays);
				continue;
			}
			a->count = sat_add(a->count, replays);
			if (first < a->first_ns)
				a->first_ns = first;
			if (last > a->last_ns)
				a->last_ns = last;
		}
	}
	for (size_t j = 0; agg && j < cap; j++) {
		struct gagg *a = &agg[j];
		if (!a->used)
			continue;
		if (*n >= room) {
			t->records_lost++;
			t->dropped = sat_add(t->dropped, a->count);
			continue;
		}
		struct pvg_witness_record *r = &recs[(*n)++];
		memset(r, 0, sizeof(*r));
		struct gname *g = gname_of(a->name);
		if (g) {
			str_put(str, g->s, g->len, &r->name_off, &r->name_len);
			const char *d = gname_demangled(g);
			size_t dl = d ? strnlen(d, PVG_WITNESS_MAX_NAME) : 0;
			str_put(str, d, (uint32_t)dl, &r->demangled_off, &r->demangled_len);
		} else {
			r->flags |= PVG_WITNESS_R_NO_NAME;
		}
		memcpy(r->grid, a->grid, sizeof(r->grid));
		memcpy(r->block, a->block, sizeof(r->block));
		r->via = PVG_WITNESS_VIA_GRAPH;
		r->module = a->code;
		r->bind = a->bind;
		r->count = a->count;
		r->first_ns = a->first_ns;
		r->last_ns = a->last_ns;
		if (r->count == UINT64_MAX)
			r->flags |= PVG_WITNESS_R_COUNT_SATURATED;
	}
	free(agg);
}

static int write_file(int final)
{
	uint32_t n = 0;
	/* the image: header, records, then each record's strings copied in order */
	size_t cap = sizeof(struct pvg_witness_header) +
		     (size_t)PVG_WITNESS_MAX_RECORDS * sizeof(struct pvg_witness_record);
	uint8_t *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	struct pvg_witness_record *recs =
		(struct pvg_witness_record *)(buf + sizeof(struct pvg_witness_header));
	/* every record's strings are distinct pieces of the name areas, so they never pass
	 * PVG_WITNESS_MAX_STRINGS */
	struct strbuf str = { .cap = 64 << 10 };
	str.p = malloc(str.cap);
	if (!str.p) {
		free(buf);
		return -ENOMEM;
	}
	/* what the table holds from here on is in this write: answered is set before */
	struct pvg_witness_header h = W.id;
	h.answered = W.answered;
	atomic_thread_fence(memory_order_seq_cst);
	for (uint32_t i = 0; i < SLOTS && n < PVG_WITNESS_MAX_RECORDS; i++) {
		struct slot *s = &W.slots[i];
		if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_READY)
			continue;
		if (!s->demangled_done)
			demangle_slot(s);
		struct pvg_witness_record *r = &recs[n];
		memset(r, 0, sizeof(*r));
		str_put(&str, W.names + s->name_off, s->name_len, &r->name_off, &r->name_len);
		str_put(&str, W.names + s->dem_off, s->dem_len, &r->demangled_off, &r->demangled_len);
		str_put(&str, W.names + s->module_off, s->module_len, &r->module_off, &r->module_len);
		memcpy(r->grid, s->grid, sizeof(r->grid));
		memcpy(r->block, s->block, sizeof(r->block));
		r->via = s->via;
		r->flags = s->flags;
		r->module = s->code;
		r->bind = s->bind;
		r->count = atomic_load_explicit(&s->count, memory_order_relaxed);
		r->first_ns = atomic_load_explicit(&s->first_ns, memory_order_relaxed);
		r->last_ns = atomic_load_explicit(&s->last_ns, memory_order_relaxed);
		if (r->last_ns < r->first_ns)
			r->last_ns = r->first_ns;
		if (r->count == UINT64_MAX)
			r->flags |= PVG_WITNESS_R_COUNT_SATURATED;
		n++;
	}
	/* the opaque replays are read before the lists: a replay counted in neither is one that
	 * came after this write's table */
	uint64_t opaque = atomic_load(&W.graph_opaque);
	struct graph_totals gt;
	pthread_mutex_lock(&G.lock);
	graph_records(recs, &n, PVG_WITNESS_MAX_RECORDS, &str, &gt);
	pthread_mutex_unlock(&G.lock);
	/* the modules, after the records: every module a record names was added before the
	 * record was made, so it is in this table */
	pthread_mutex_lock(&M.lock);
	uint32_t n_mods = M.n;
	uint64_t mods_loaded = M.loaded, mods_dropped = M.dropped;
	struct pvg_witness_module *mods = n_mods ? malloc(n_mods * sizeof(*mods)) : NULL;
	if (n_mods && !mods)
		n_mods = 0;
	for (uint32_t i = 0; i < n_mods; i++) {
		mods[i] = M.v[i].m;
		str_put(&str, M.v[i].path, M.v[i].path_len, &mods[i].path_off, &mods[i].path_len);
	}
	pthread_mutex_unlock(&M.lock);
	/* a record whose module could not be written (no memory for the table) is unknown */
	for (uint32_t i = 0; i < n; i++)
		if (recs[i].module > n_mods) {
			recs[i].module = 0;
			recs[i].bind = PVG_WITNESS_BIND_NONE;
		}
	memcpy(h.magic, PVG_WITNESS_MAGIC, 8);
	h.version = PVG_WITNESS_VERSION;
	h.header_size = sizeof(h);
	h.record_size = sizeof(struct pvg_witness_record);
	h.module_size = sizeof(struct pvg_witness_module);
	h.n_modules = n_mods;
	h.modules_loaded = mods_loaded;
	h.modules_dropped = mods_dropped;
	h.n_records = n;
	h.strings_size = (uint32_t)str.n;
	h.api = atomic_load(&W.api);
	h.flags = atomic_load(&W.flags) | (final ? PVG_WITNESS_F_FINAL : 0);
	if (gt.dropped)
		h.flags |= PVG_WITNESS_F_TABLE_FULL;
	if (atomic_load(&G.full))
		h.flags |= PVG_WITNESS_F_GRAPH_TABLE_FULL;
	h.written_ns = pvg_witness_now_ns();
	h.launches = atomic_load(&W.launches);
	h.launches_dropped = sat_add(atomic_load(&W.dropped), gt.dropped);
	h.graph_launches = atomic_load(&W.graph_launches);
	h.nested_driver = atomic_load(&W.nested_driver);
	h.captured = atomic_load(&W.captured);
	h.graph_replays_itemized = gt.itemized;
	h.graph_replays_opaque = opaque;
	h.graph_replays_partial = gt.partial;
	h.graph_kernel_launches = gt.kernel_launches;
	h.graph_execs = gt.execs;
	h.graph_opaque_why = atomic_load(&G.why);
	snprintf(h.note, sizeof(h.note), "%s", W.note);
	memcpy(buf, &h, sizeof(h));
	size_t head = sizeof(h) + (size_t)n * sizeof(struct pvg_witness_record);
	size_t mbytes = (size_t)n_mods * sizeof(struct pvg_witness_module);
	uint8_t *img = realloc(buf, head + mbytes + str.n);
	if (!img) {
		free(buf);
		free(str.p);
		free(mods);
		return -ENOMEM;
	}
	if (mbytes)
		memcpy(img + head, mods, mbytes);
	memcpy(img + head + mbytes, str.p, str.n);
	size_t total = head + mbytes + str.n;
	free(str.p);
	free(mods);
	int r = pvg_witness_seal(img, total);

	char tmp[sizeof(W.dir) + sizeof(W.file) + 8];
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", W.dir, W.file);
	int fd = r < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = r < 0 ? r : -errno;
	} else {
		size_t done = 0, len = total;
		while (done < len) {
			ssize_t w = write(fd, img + done, len - done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				r = w < 0 ? -errno : -EIO;
				break;
			}
			done += (size_t)w;
		}
		if (close(fd) < 0 && r == 0)
			r = -errno;
		char path[sizeof(W.dir) + sizeof(W.file) + 2];
		snprintf(path, sizeof(path), "%s/%s", W.dir, W.file);
		if (r == 0 && rename(tmp, path) < 0)
			r = -errno;
		if (r < 0)
			unlink(tmp);
	}
	free(img);
	return r;
}

int pvg_witness_flush(void)
{
	if (!W.active)
		return -ENOTCONN;
	pthread_mutex_lock(&W.write_lock);
	int r = write_file(0);
	W.written_launches = atomic_load(&W.launches);
	W.written_once = 1;
	pthread_mutex_unlock(&W.write_lock);
	return r;
}

/* ---- requests: a checker asks for a write now ------------------------------------------------ */

/* The token of a request file's name, 0 when it is not one. */
static uint64_t request_token(const char *name)
{
	const size_t pl = sizeof(PVG_WITNESS_REQUEST_PREFIX) - 1;
	if (strncmp(name, PVG_WITNESS_REQUEST_PREFIX, pl) != 0 || strlen(name + pl) != 16)
		return 0;
	uint64_t t = 0;
	for (const char *p = name + pl; *p; p++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
		if (d < 0)
			return 0;
		t = t << 4 | (uint64_t)d;
	}
	return t;
}

/* The largest token of the folder's request files (a folder whose changes inotify does not
 * see, or a request made while the watch was being set up). */
static uint64_t scan_requests(void)
{
	uint64_t best = 0;
	DIR *d = opendir(W.dir);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		uint64_t t = request_token(de->d_name);
		if (t > best)
			best = t;
	}
	closedir(d);
	return best;
}

/* Drains the watch; the largest token among the request files it names. */
static uint64_t read_watch(void)
{
	uint64_t best = 0;
	char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t len = read(R.inotify_fd, ev, sizeof(ev));
		if (len < 0 && errno == EINTR)
			continue;
		if (len <= 0)
			break;
		for (char *p = ev; p < ev + len;) {
			const struct inotify_event *e = (const struct inotify_event *)p;
			if (e->mask & IN_Q_OVERFLOW) {
				uint64_t t = scan_requests();
				best = t > best ? t : best;
			} else if (e->len) {
				uint64_t t = request_token(e->name);
				best = t > best ? t : best;
			}
			p += sizeof(*e) + e->len;
		}
	}
	return best;
}

static void open_watch(void)
{
	R.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	R.inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (R.inotify_fd >= 0 && inotify_add_watch(R.inotify_fd, W.dir, IN_CREATE | IN_MOVED_TO) < 0) {
		close(R.inotify_fd);
		R.inotify_fd = -1;
	}
}

static void close_watch(void)
{
	if (R.inotify_fd >= 0)
		close(R.inotify_fd);
	if (R.wake_fd >= 0)
		close(R.wake_fd);
	R.inotify_fd = R.wake_fd = -1;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Without a watch the folder is scanned this often for requests. */
#define REQUEST_POLL_MS 20

/* The helper thread: writes the file every interval when something changed, and at once for
 * a request newer than the last one answered. It waits on the folder's watch (inotify), else
 * scans the folder every REQUEST_POLL_MS; the launch path is never involved. */
static void *flusher(void *arg)
{
	(void)arg;
	uint64_t next_tick = mono_ms() + (uint64_t)W.interval_ms;
	for (;;) {
		uint64_t now = mono_ms();
		long wait = next_tick > now ? (long)(next_tick - now) : 0;
		if (R.inotify_fd < 0 && wait > REQUEST_POLL_MS)
			wait = REQUEST_POLL_MS;
		struct pollfd pf[2] = { { .fd = R.wake_fd, .events = POLLIN },
					{ .fd = R.inotify_fd, .events = POLLIN } };
		int nfds = R.inotify_fd >= 0 ? 2 : 1;
		if (R.wake_fd < 0) {
			struct timespec ts = { wait / 1000, (wait % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		} else {
			poll(pf, (nfds_t)nfds, (int)wait);
		}
		pthread_mutex_lock(&W.wake_lock);
		int stop = W.stop;
		pthread_mutex_unlock(&W.wake_lock);
		if (stop)
			break;
		uint64_t token = 0;
		if (R.inotify_fd >= 0 && (pf[1].revents & POLLIN))
			token = read_watch();
		now = mono_ms();
		int tick = now >= next_tick;
		if (tick)
			next_tick = now + (uint64_t)W.interval_ms;
		if (tick || R.inotify_fd < 0) {
			uint64_t t = scan_requests();
			token = t > token ? t : token;
		}
		pthread_mutex_lock(&W.write_lock);
		int asked = token > W.answered;
		if (asked)
			W.answered = token;
		if (asked || (tick && (!W.written_once || atomic_load(&W.launches) != W.written_launches))) {
			uint64_t launches = atomic_load(&W.launches);
			write_file(0);
			W.written_launches = launches;
			W.written_once = 1;
		}
		pthread_mutex_unlock(&W.write_lock);
	}
	return NULL;
}

static void start_thread(void)
{
	open_watch();
	sigset_t all, old;
	sigfillset(&all);
	/* the helper takes no signal meant for the service */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	W.thread_started = pthread_create(&W.thread, NULL, flusher, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (W.thread_started)
		pthread_setname_np(W.thread, "pvg-witness");
}

static void at_exit(void)
{
	if (!W.active)
		return;
	if (W.thread_started) {
		pthread_mutex_lock(&W.wake_lock);
		W.stop = 1;
		pthread_mutex_unlock(&W.wake_lock);
		uint64_t one = 1;
		if (R.wake_fd >= 0 && write(R.wake_fd, &one, sizeof(one)) < 0) {
			/* the thread still sees stop at its next wake-up (at most an interval) */
		}
		pthread_join(W.thread, NULL);
		W.thread_started = 0;
	}
	close_watch();
	pthread_mutex_lock(&W.write_lock);
	write_file(1);
	W.active = 0;
	pthread_mutex_unlock(&W.write_lock);
}

static void name_file(void)
{
	char boot8[9] = "unknown";
	if (W.id.boot_id[0])
		snprintf(boot8, sizeof(boot8), "%.8s", W.id.boot_id);
	snprintf(W.file, sizeof(W.file), "witness-%d-%llu-%s%s", (int)W.id.nspid,
		 (unsigned long long)W.id.start_ticks, boot8, PVG_WITNESS_SUFFIX);
}

/* A forked child is another process: it starts an empty table and a file of its own. */
static void after_fork_child(void)
{
	if (!W.active)
		return;
	pthread_mutex_init(&W.write_lock, NULL);
	pthread_mutex_init(&W.wake_lock, NULL);
	/* the parent's watch and wake-up are the parent's: this process makes its own */
	close_watch();
	graph_reset_after_fork();
	/* the modules the parent loaded are mapped in the child too: the table is kept */
	pthread_mutex_init(&M.lock, NULL);
	memset(W.slots, 0, sizeof(W.slots));
	atomic_store(&W.used, 0);
	atomic_store(&W.names_used, 0);
	atomic_store(&W.launches, 0);
	atomic_store(&W.dropped, 0);
	atomic_store(&W.graph_launches, 0);
	atomic_store(&W.nested_driver, 0);
	atomic_store(&W.captured, 0);
	atomic_store(&W.graph_opaque, 0);
	W.answered = 0;
	atomic_fetch_and(&W.flags, ~PVG_WITNESS_F_TABLE_FULL);
	read_identity(&W.id);
	name_file();
	W.written_once = 0;
	W.written_launches = 0;
	W.stop = 0;
	W.thread_started = 0;
	start_thread();
}

int pvg_witness_start(const char *dir)
{
	if (W.active)
		return -EALREADY;
	if (!dir || !dir[0])
		return -EINVAL;
	if (strlen(dir) >= sizeof(W.dir) - 300)
		return -ENAMETOOLONG;
	snprintf(W.dir, sizeof(W.dir), "%s", dir);
	const char *iv = getenv("PROVGATE_WITNESS_INTERVAL_MS");
	W.interval_ms = iv ? strtol(iv, NULL, 10) : 1000;
	if (W.interval_ms < 10)
		W.interval_ms = 10;
	if (W.interval_ms > 60000)
		W.interval_ms = 60000;
	read_identity(&W.id);
	name_file();
	W.replay_tsc = tsc_is_clocksource();
#ifdef PVG_WITNESS_BENCH
	const char *bc = getenv("PVG_WITNESS_BENCH_CLOCK");
	if (bc && strcmp(bc, "gettime") == 0)
		W.replay_tsc = 0;
	const char *nc = getenv("PVG_WITNESS_BENCH_NOCACHE");
	if (nc && strcmp(nc, "1") == 0)
		atomic_fetch_or(&pvg_witness_bench_replay_counting, 2);
#endif
	tsc_at_start = tsc_pair_now();
	snprintf(W.note, sizeof(W.note), "loaded; no GPU runtime has called it yet");
	W.stop = 0;
	W.active = 1;
	/* the header alone, at once: the service has the witness even before its first launch */
	pvg_witness_flush();
	atexit(at_exit);
	pthread_atfork(NULL, NULL, after_fork_child);
	start_thread();
	return 0;
}

void pvg_witness_stop(void)
{
	at_exit();
}

__attribute__((constructor)) static void witness_init(void)
{
	(void)pvg_witness_start(getenv(PVG_WITNESS_DIR_ENV));
}

__attribute__((destructor)) static void witness_fini(void)
{
	at_exit();
}
