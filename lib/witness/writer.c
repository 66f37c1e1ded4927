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
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "witness/witness.h"

#define SLOTS (2 * PVG_WITNESS_MAX_RECORDS) /* half full at most: probes stay short */

enum { SLOT_EMPTY = 0, SLOT_CLAIMED = 1, SLOT_READY = 2 };

struct slot {
	_Atomic uint32_t state;
	uint32_t via, flags;
	uint32_t grid[3], block[3];
	uint64_t handle;
	uint32_t name_off, name_len, module_off, module_len;
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
	_Atomic uint64_t launches, dropped, graph_launches, nested_driver, captured;
	_Atomic uint32_t flags;
	_Atomic uint32_t api;
	char note[128];
	struct pvg_witness_header id; /* pid, nspid, start_ticks, boot_id, init_ns */
	uint64_t written_launches;    /* launches at the last write */
	int written_once;
	pthread_mutex_t write_lock;
	pthread_mutex_t wake_lock;
	pthread_cond_t wake;
	int stop;
	pthread_t thread;
	int thread_started;
	long interval_ms;
} W = {
	.write_lock = PTHREAD_MUTEX_INITIALIZER,
	.wake_lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
};

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

void pvg_witness_graph_launch(void)
{
	if (W.active) {
		atomic_fetch_add_explicit(&W.graph_launches, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&W.launches, 1, memory_order_relaxed);
	}
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

static int write_file(int final)
{
	uint32_t n = 0;
	size_t strings = 0;
	/* the image: header, records, then each record's strings copied in order */
	size_t cap = sizeof(struct pvg_witness_header) +
		     (size_t)PVG_WITNESS_MAX_RECORDS * sizeof(struct pvg_witness_record);
	uint8_t *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	struct pvg_witness_record *recs =
		(struct pvg_witness_record *)(buf + sizeof(struct pvg_witness_header));
	/* strings go to a second buffer, grown as needed: every record's strings are distinct
	 * pieces of the name area, so they never pass its size */
	size_t str_cap = 64 << 10;
	char *str = malloc(str_cap);
	if (!str) {
		free(buf);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < SLOTS && n < PVG_WITNESS_MAX_RECORDS; i++) {
		struct slot *s = &W.slots[i];
		if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_READY)
			continue;
		if (!s->demangled_done)
			demangle_slot(s);
		struct pvg_witness_record *r = &recs[n];
		memset(r, 0, sizeof(*r));
		const uint32_t lens[3] = { s->name_len, s->dem_len, s->module_len };
		const uint32_t offs[3] = { s->name_off, s->dem_off, s->module_off };
		uint32_t *dst_off[3] = { &r->name_off, &r->demangled_off, &r->module_off };
		uint32_t *dst_len[3] = { &r->name_len, &r->demangled_len, &r->module_len };
		for (int k = 0; k < 3; k++) {
			*dst_off[k] = (uint32_t)strings;
			if (lens[k] && strings + lens[k] > str_cap &&
			    strings + lens[k] <= PVG_WITNESS_MAX_STRINGS) {
				size_t cap = 2 * str_cap < PVG_WITNESS_MAX_STRINGS ? 2 * str_cap
										: PVG_WITNESS_MAX_STRINGS;
				if (cap < strings + lens[k])
					cap = strings + lens[k];
				char *grown = realloc(str, cap);
				if (grown) {
					str = grown;
					str_cap = cap;
				}
			}
			if (lens[k] && strings + lens[k] <= str_cap) {
				memcpy(str + strings, W.names + offs[k], lens[k]);
				strings += lens[k];
				*dst_len[k] = lens[k];
			}
		}
		memcpy(r->grid, s->grid, sizeof(r->grid));
		memcpy(r->block, s->block, sizeof(r->block));
		r->via = s->via;
		r->flags = s->flags;
		r->count = atomic_load_explicit(&s->count, memory_order_relaxed);
		r->first_ns = atomic_load_explicit(&s->first_ns, memory_order_relaxed);
		r->last_ns = atomic_load_explicit(&s->last_ns, memory_order_relaxed);
		if (r->last_ns < r->first_ns)
			r->last_ns = r->first_ns;
		if (r->count == UINT64_MAX)
			r->flags |= PVG_WITNESS_R_COUNT_SATURATED;
		n++;
	}
	struct pvg_witness_header h = W.id;
	memcpy(h.magic, PVG_WITNESS_MAGIC, 8);
	h.version = PVG_WITNESS_VERSION;
	h.header_size = sizeof(h);
	h.record_size = sizeof(struct pvg_witness_record);
	h.n_records = n;
	h.strings_size = (uint32_t)strings;
	h.api = atomic_load(&W.api);
	h.flags = atomic_load(&W.flags) | (final ? PVG_WITNESS_F_FINAL : 0);
	h.written_ns = pvg_witness_now_ns();
	h.launches = atomic_load(&W.launches);
	h.launches_dropped = atomic_load(&W.dropped);
	h.graph_launches = atomic_load(&W.graph_launches);
	h.nested_driver = atomic_load(&W.nested_driver);
	h.captured = atomic_load(&W.captured);
	snprintf(h.note, sizeof(h.note), "%s", W.note);
	memcpy(buf, &h, sizeof(h));
	size_t head = sizeof(h) + (size_t)n * sizeof(struct pvg_witness_record);
	uint8_t *img = realloc(buf, head + strings);
	if (!img) {
		free(buf);
		free(str);
		return -ENOMEM;
	}
	memcpy(img + head, str, strings);
	free(str);
	int r = pvg_witness_seal(img, head + strings);

	char tmp[sizeof(W.dir) + sizeof(W.file) + 8];
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", W.dir, W.file);
	int fd = r < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = r < 0 ? r : -errno;
	} else {
		size_t done = 0, len = head + strings;
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

static void *flusher(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&W.wake_lock);
	while (!W.stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += W.interval_ms / 1000;
		ts.tv_nsec += (W.interval_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&W.wake, &W.wake_lock, &ts);
		if (W.stop)
			break;
		pthread_mutex_unlock(&W.wake_lock);
		pthread_mutex_lock(&W.write_lock);
		if (!W.written_once || atomic_load(&W.launches) != W.written_launches) {
			write_file(0);
			W.written_launches = atomic_load(&W.launches);
			W.written_once = 1;
		}
		pthread_mutex_unlock(&W.write_lock);
		pthread_mutex_lock(&W.wake_lock);
	}
	pthread_mutex_unlock(&W.wake_lock);
	return NULL;
}

static void start_thread(void)
{
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
		pthread_cond_signal(&W.wake);
		pthread_mutex_unlock(&W.wake_lock);
		pthread_join(W.thread, NULL);
		W.thread_started = 0;
	}
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
	pthread_cond_init(&W.wake, NULL);
	memset(W.slots, 0, sizeof(W.slots));
	atomic_store(&W.used, 0);
	atomic_store(&W.names_used, 0);
	atomic_store(&W.launches, 0);
	atomic_store(&W.dropped, 0);
	atomic_store(&W.graph_launches, 0);
	atomic_store(&W.nested_driver, 0);
	atomic_store(&W.captured, 0);
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
