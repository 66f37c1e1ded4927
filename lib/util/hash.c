/* SPDX-License-Identifier: MIT */
/*
 * Streaming SHA-256 on the fd that was fstat'ed, so that the digest and the identity
 * (dev, inode, size, times) describe the same file even if the path is replaced meanwhile.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <openssl/evp.h>

#include "util/hash.h"
#include "util/thread.h"
#include "util/untrusted.h"

/* How files are read (tests/bench/chunks measures the choices against `openssl dgst` and
 * `cat` in one run): chunks that stay in the reading core's cache (copying 256 KiB chunks out
 * of the page cache cost twice the system time of 64-128 KiB ones on a 1 MiB-L2 EPYC), a
 * ring deep enough that the hasher seldom waits for the reader. */
static struct pvg_read_plan plan = PVG_READ_PLAN_DEFAULT;

static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;
static pvg_progress_fn progress_fn;

static void fetch_sha256(void)
{
	/* Fetched once: EVP_MD_fetch per file costs a provider lookup each time. */
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void pvg_hash_set_progress(pvg_progress_fn fn)
{
	progress_fn = fn;
}

void pvg_read_plan_set(const struct pvg_read_plan *p)
{
	struct pvg_read_plan d = PVG_READ_PLAN_DEFAULT;
	plan = p ? *p : d;
	if (plan.chunk < 4096 || plan.chunk > (64u << 20))
		plan.chunk = d.chunk;
	if (plan.ring < 2 || plan.ring > PVG_READ_RING_MAX)
		plan.ring = d.ring;
}

const struct pvg_read_plan *pvg_read_plan_get(void)
{
	return &plan;
}

static int hash_fd_impl(int fd, int64_t len, unsigned char digest[32], uint64_t *nread,
			const char *path, uint64_t total)
{
	pthread_once(&sha256_once, fetch_sha256);
	if (!sha256_md)
		return -ENOSYS;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	if (!md)
		return -ENOMEM;
	int ret = 0;
	size_t chunk = plan.chunk;
	unsigned char *buf = malloc(chunk);
	if (!buf || !EVP_DigestInit_ex(md, sha256_md, NULL)) {
		ret = buf ? -EIO : -ENOMEM;
		goto out;
	}
	uint64_t done = 0, last_report = pvg_now_ns();
	for (;;) {
		size_t want = chunk;
		if (len >= 0 && (uint64_t)len - done < want)
			want = (size_t)((uint64_t)len - done);
		if (want == 0)
			break;
		ssize_t r = pvg_read_full(fd, buf, want);
		if (r < 0) {
			ret = (int)r;
			goto out;
		}
		if (r == 0)
			break;
		if (!EVP_DigestUpdate(md, buf, (size_t)r)) {
			ret = -EIO;
			goto out;
		}
		done += (uint64_t)r;
		if (progress_fn && path) {
			uint64_t now = pvg_now_ns();
			if (now - last_report > 100000000u) {
				progress_fn(path, done, total);
				last_report = now;
			}
		}
		if ((size_t)r < want)
			break; /* the end of the file */
	}
	unsigned int mdlen = 0;
	if (!EVP_DigestFinal_ex(md, digest, &mdlen) || mdlen != 32) {
		ret = -EIO;
		goto out;
	}
	if (nread)
		*nread = done;
	if (progress_fn && path)
		progress_fn(path, done, total);
out:
	free(buf);
	EVP_MD_CTX_free(md);
	return ret;
}

int pvg_hash_fd(int fd, int64_t len, unsigned char digest[32], uint64_t *nread)
{
	return hash_fd_impl(fd, len, digest, nread, NULL, 0);
}

void pvg_file_id_clear(struct pvg_file_id *id)
{
	free(id->path);
	memset(id, 0, sizeof(*id));
}

static _Atomic uint64_t max_file_size = PVG_HASH_MAX_SIZE_DEFAULT;

void pvg_hash_set_max_size(uint64_t bytes)
{
	max_file_size = bytes ? bytes : PVG_HASH_MAX_SIZE_DEFAULT;
}

uint64_t pvg_hash_max_size(void)
{
	return max_file_size;
}

/* Resolves the path as O_PATH first (nothing named here is opened as a device, not even to
 * be refused), records the identity from fstat, refuses what is not a regular file, is over
 * the bound, or is mostly holes (a sparse terabyte costs no disk and would be hashed for an
 * hour), and returns the fd, or -errno with out->err/err_what set. */
static int open_identity(const char *path, struct pvg_file_id *out)
{
	memset(out, 0, sizeof(*out));
	out->path = pvg_strdup(path);
	const struct pvg_untrusted how = { .root_fd = -1, .max_size = max_file_size };
	struct pvg_untrusted_file f;
	int fd = pvg_open_untrusted(path, &how, &f);
	if (fd < 0 && f.refused == PVG_REFUSED_NONE) {
		out->err = fd;
		out->err_what = "open";
		return out->err;
	}
	const struct stat *st = &f.st;
	out->mode = st->st_mode;
	out->size = (uint64_t)st->st_size;
	out->dev = (uint64_t)st->st_dev;
	out->ino = (uint64_t)st->st_ino;
	out->mtime = st->st_mtim;
	out->ctime = st->st_ctim;
	switch (f.refused) {
	case PVG_REFUSED_NONE:
		break;
	case PVG_REFUSED_TOO_BIG:
		out->too_large = true;
		out->err = -EFBIG;
		out->err_what = "is larger than the bound on an artifact";
		return out->err;
	case PVG_REFUSED_DIRECTORY:
		out->err = -EISDIR;
		out->err_what = "is a directory";
		return out->err;
	case PVG_REFUSED_FIFO:
	case PVG_REFUSED_DEVICE:
	case PVG_REFUSED_SOCKET:
		out->err = -EINVAL;
		out->err_what = f.refused == PVG_REFUSED_FIFO ? "is a FIFO, not a regular file"
				: f.refused == PVG_REFUSED_DEVICE ? "is a device, not a regular file"
								  : "is a socket, not a regular file";
		return out->err;
	default:
		out->err = fd < 0 ? fd : -EINVAL;
		out->err_what = "open";
		return out->err;
	}
	if (out->size >= PVG_HASH_SPARSE_MIN) {
		/* a few seeks: what a real library (all data) never fails */
		out->data_bytes = pvg_data_bytes(fd, out->size);
		/* the seeks moved the offset that the readers start from */
		if (lseek(fd, 0, SEEK_SET) < 0) {
			out->err = -errno;
			out->err_what = "seek";
			close(fd);
			return out->err;
		}
		if (out->data_bytes < out->size / 2) {
			out->sparse = true;
			out->err = -EFBIG;
			out->err_what = "is mostly holes (a sparse file), not a library";
			close(fd);
			return out->err;
		}
	} else {
		out->data_bytes = out->size;
	}
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	return fd;
}

bool pvg_file_id_matches(const struct pvg_file_id *id, const struct stat *st)
{
	return id->dev == (uint64_t)st->st_dev && id->ino == (uint64_t)st->st_ino &&
	       id->size == (uint64_t)st->st_size && id->mtime.tv_sec == st->st_mtim.tv_sec &&
	       id->mtime.tv_nsec == st->st_mtim.tv_nsec && id->ctime.tv_sec == st->st_ctim.tv_sec &&
	       id->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* Did the file behind fd stay what `id` recorded while it was read? */
static bool unchanged(int fd, const struct pvg_file_id *id)
{
	struct stat st;
	return fstat(fd, &st) == 0 && pvg_file_id_matches(id, &st);
}

/* Hashes the file open on fd, whose identity open_identity recorded in out. */
static int hash_identified(int fd, const char *path, struct pvg_file_id *out)
{
	uint64_t n = 0;
	int r = hash_fd_impl(fd, -1, out->sha256, &n, path, out->size);
	if (r < 0) {
		out->err = r;
		out->err_what = "read";
		return r;
	}
	if (n != out->size || !unchanged(fd, out)) {
		/* The file changed under us: identity and digest would not belong together. */
		out->err = -EAGAIN;
		out->err_what = "changed while being read";
		return -EAGAIN;
	}
	pvg_hex(out->sha256, 32, out->hex);
	out->hashed = true;
	return 0;
}

static int hash_file_impl(const char *path, struct pvg_file_id *out)
{
	_cleanup_close_ int fd = open_identity(path, out);
	return fd < 0 ? fd : hash_identified(fd, path, out);
}

/* From this size on, a second core that does the reading (the copy out of the page cache)
 * pays for its thread: the hashing core then does nothing but SHA-256. */
#define SPLIT_MIN (64u << 20)

int pvg_hash_file(const char *path, struct pvg_file_id *out)
{
	_cleanup_close_ int fd = open_identity(path, out);
	if (fd < 0)
		return fd;
	if (out->size < SPLIT_MIN || sysconf(_SC_NPROCESSORS_ONLN) < 2 || !plan.split)
		return hash_identified(fd, path, out);
	/* the pair job opens the file itself and records the identity it reads */
	struct pvg_file_id none;
	uint64_t at;
	pvg_file_id_clear(out);
	pvg_pair_join(pvg_pair_start(NULL, path), &none, out, &at);
	pvg_file_id_clear(&none);
	return out->hashed ? 0 : out->err;
}

struct hash_job {
	const char *path;
	struct pvg_file_id *out;
};

/* One core per file here: no reader thread of its own (pvg_hash_file's split), whose
 * pinned hasher would share a CPU with the other files' hashers. */
static void hash_job_run(void *arg)
{
	struct hash_job *job = arg;
	hash_file_impl(job->path, job->out);
}

int pvg_hash_files(const char *const *paths, size_t n, struct pvg_file_id *out)
{
	struct hash_job jobs[8];
	if (n > 8)
		return -E2BIG;
	pthread_once(&sha256_once, fetch_sha256);
	if (n == 1) {
		pvg_hash_file(paths[0], &out[0]);
		return 0;
	}
	/* The first file is hashed on this thread; the rest each get one. */
	for (size_t i = 0; i < n; i++)
		jobs[i] = (struct hash_job){ paths[i], &out[i] };
	pvg_run_jobs(hash_job_run, jobs, n, sizeof(jobs[0]));
	return 0;
}

/* ---- the build and the installed artifact in one pass ----------------------------------------
 *
 * A reader thread reads each chunk of the installed file once, compares it with the same
 * chunk of the build and hands it to a hasher thread through a small ring; the hasher does
 * nothing but SHA-256, the one part that cannot go faster than one core. The digest and
 * the comparison are of the same bytes, read from the fds whose identity was recorded.
 */

/* the reader is woken when half of the ring is free */

struct pvg_pair_job {
	char *path_b, *path_i;
	struct pvg_file_id b, i;
	uint64_t diff_at;
	bool differs;  /* set by the reader as soon as it knows (read with atomics) */
	bool compared; /* the reader compared every byte */
	bool cancel;
	int read_err;  /* reading the installed file failed: -errno */

	pthread_mutex_t mu;
	pthread_cond_t cv_reader, cv_hasher, cv_main; /* room in the ring, a chunk, news */
	size_t chunk;   /* bytes a slot */
	unsigned ring;  /* slots */
	unsigned char *slot[PVG_READ_RING_MAX];
	size_t len[PVG_READ_RING_MAX];
	uint64_t filled, hashed; /* chunks pushed by the reader, taken by the hasher */
	bool eof;
	bool reader_waits, hasher_waits; /* wake a thread only when it sleeps: each wake costs */
	pthread_t reader, hasher;
	int hasher_cpu;  /* -1, or the CPU the hasher has to itself */
	cpu_set_t rest;  /* the other CPUs, for the reader and the helper */
	bool hasher_reads; /* the hasher reads the installed file; the other thread compares */
	bool compare_done; /* hasher_reads: the comparing thread is through */
	int fi, fb;        /* hasher_reads: the installed and the build fd (-1: none) */
	bool threads; /* both threads run */
	bool sync;    /* no thread could start: the work runs in join, reader first */

	EVP_MD_CTX *md;
	bool md_ok;
	uint64_t n_hashed;
};

static void pair_set_differs(struct pvg_pair_job *j, uint64_t at)
{
	pthread_mutex_lock(&j->mu);
	j->diff_at = at;
	__atomic_store_n(&j->differs, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&j->cv_main);
	pthread_mutex_unlock(&j->mu);
}

/* Waits for a free slot; NULL when cancelled. */
static unsigned char *pair_slot_free(struct pvg_pair_job *j, size_t *k)
{
	if (j->sync) {
		*k = 0;
		return __atomic_load_n(&j->cancel, __ATOMIC_RELAXED) ? NULL : j->slot[0];
	}
	pthread_mutex_lock(&j->mu);
	while (j->filled - j->hashed == j->ring && !__atomic_load_n(&j->cancel, __ATOMIC_RELAXED)) {
		j->reader_waits = true;
		pthread_cond_wait(&j->cv_reader, &j->mu);
	}
	j->reader_waits = false;
	pthread_mutex_unlock(&j->mu);
	if (__atomic_load_n(&j->cancel, __ATOMIC_RELAXED))
		return NULL;
	*k = j->filled % j->ring;
	return j->slot[*k];
}

static void pair_push(struct pvg_pair_job *j, size_t k, size_t len, bool eof)
{
	pthread_mutex_lock(&j->mu);
	if (len) {
		j->len[k] = len;
		j->filled++;
	}
	j->eof |= eof;
	if (j->hasher_waits || eof)
		pthread_cond_signal(&j->cv_hasher);
	if (eof)
		pthread_cond_broadcast(&j->cv_main);
	pthread_mutex_unlock(&j->mu);
}

/* With plan.pin, on 2 or 3 CPUs, the hasher gets a CPU of its own (not the one the caller
 * runs on) and the reader and helper keep off it, so that our own threads do not share the
 * hasher's core. Off by default: on a machine that others load too, a pinned hasher waits
 * whenever another process holds its CPU, and the scheduler cannot move it (tests/bench/chunks
 * at a load of 10 on 2 CPUs: 2.4x openssl's wall time pinned, 1.3x not). Each pinned thread
 * ends with the job. */
/* How many tasks the scheduler counts runnable right now (procs_running in /proc/stat, the
 * calling thread included), or -1. */
static long procs_running(void)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (pvg_read_file("/proc/stat", 1u << 20, &text, &len) < 0)
		return -1;
	const char *p = strstr(text, "\nprocs_running ");
	return p ? strtol(p + strlen("\nprocs_running "), NULL, 10) : -1;
}

/* Room for a hasher with a CPU of its own on a machine of ncpu CPUs: fewer other tasks
 * runnable than CPUs, in the least of three looks 0.2 ms apart (a kernel thread that runs
 * for a moment is not load; a build on every CPU is runnable in every look). With one
 * other CPU-bound task on 2 CPUs a pinned hasher still gained (certify 1.27 s against
 * 1.33-1.57 s); with more tasks than CPUs a pinned hasher waits for its CPU's holder. */
static bool machine_quiet(int ncpu)
{
	long least = -1;
	for (int k = 0; k < 3; k++) {
		if (k)
			usleep(200);
		long r = procs_running();
		if (r < 1)
			return false;
		if (least < 0 || r < least)
			least = r;
	}
	return least - 1 < ncpu;
}

static void plan_cpus(struct pvg_pair_job *j)
{
	cpu_set_t cs;
	j->hasher_cpu = -1;
	if ((!plan.pin && !plan.pin_if_quiet) || sched_getaffinity(0, sizeof(cs), &cs) < 0 ||
	    CPU_COUNT(&cs) < 2 || CPU_COUNT(&cs) > 3)
		return;
	if (!plan.pin && !machine_quiet(CPU_COUNT(&cs)))
		return;
	int here = sched_getcpu();
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &cs) && c != here) {
			j->rest = cs;
			CPU_CLR(c, &j->rest);
			j->hasher_cpu = c;
			return;
		}
	}
}

void pvg_pair_keep_off(const struct pvg_pair_job *j)
{
	if (j && j->hasher_cpu >= 0)
		(void)sched_setaffinity(0, sizeof(j->rest), &j->rest);
}

static void *pair_reader(void *arg)
{
	struct pvg_pair_job *j = arg;
	_cleanup_free_ unsigned char *bbuf = NULL;
	_cleanup_close_ int fi = open_identity(j->path_i, &j->i);
	_cleanup_close_ int fb = j->path_b ? open_identity(j->path_b, &j->b) : -1;
	bool compare = fi >= 0 && fb >= 0;
	if (compare && j->b.size != j->i.size) {
		compare = false;
		pair_set_differs(j, UINT64_MAX); /* not read: the sizes already differ */
	}
	if (compare)
		bbuf = pvg_xrealloc(NULL, 1, j->chunk);
	uint64_t off = 0;
	while (fi >= 0) {
		size_t k;
		unsigned char *buf = pair_slot_free(j, &k);
		if (!buf)
			break;
		ssize_t n = pvg_read_full(fi, buf, j->chunk);
		if (n < 0) {
			j->read_err = (int)n;
			break;
		}
		if (compare) {
			ssize_t m = pvg_read_full(fb, bbuf, j->chunk);
			if (m < 0) {
				j->b.err = (int)m;
				j->b.err_what = "read";
				compare = false;
			} else if (m != n || memcmp(buf, bbuf, (size_t)n) != 0) {
				size_t x = 0, lim = (size_t)(m < n ? m : n);
				while (x < lim && buf[x] == bbuf[x])
					x++;
				pair_set_differs(j, off + x);
				compare = false;
			}
		}
		if (n == 0)
			break;
		off += (uint64_t)n;
		if (j->sync) {
			if (j->md_ok && !EVP_DigestUpdate(j->md, buf, (size_t)n))
				j->md_ok = false;
			j->n_hashed += (uint64_t)n;
		} else {
			pair_push(j, k, (size_t)n, false);
		}
	}
	if (fi >= 0 && !j->read_err && (off != j->i.size || !unchanged(fi, &j->i))) {
		j->i.err = -EAGAIN;
		j->i.err_what = "changed while being read";
	}
	if (compare && !unchanged(fb, &j->b)) {
		j->b.err = -EAGAIN;
		j->b.err_what = "changed while being read";
		compare = false;
	}
	j->compared = compare && off == j->i.size && !j->i.err && !j->read_err;
	pair_push(j, 0, 0, true);
	return NULL;
}

/* the reader on a thread of its own: it may be pinned */
static void *pair_reader_thread(void *arg)
{
	pvg_pair_keep_off(arg);
	return pair_reader(arg);
}

/* The hashing side waits for the next filled slot: false when there is one, true at the end. */
static bool hasher_wait(struct pvg_pair_job *j)
{
	pthread_mutex_lock(&j->mu);
	while (j->filled == j->hashed && !j->eof) {
		j->hasher_waits = true;
		pthread_cond_wait(&j->cv_hasher, &j->mu);
	}
	j->hasher_waits = false;
	bool done = j->filled == j->hashed && j->eof;
	pthread_mutex_unlock(&j->mu);
	return done;
}

static void *pair_hasher(void *arg)
{
	struct pvg_pair_job *j = arg;
	if (!j->sync && j->hasher_cpu >= 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(j->hasher_cpu, &one);
		(void)sched_setaffinity(0, sizeof(one), &one);
	}
	uint64_t last_report = pvg_now_ns();
	for (;;) {
		bool done = hasher_wait(j);
		if (done)
			break;
		size_t k = j->hashed % j->ring;
		if (j->md_ok && !EVP_DigestUpdate(j->md, j->slot[k], j->len[k]))
			j->md_ok = false;
		j->n_hashed += j->len[k];
		pthread_mutex_lock(&j->mu);
		j->hashed++;
		if (j->reader_waits && j->filled - j->hashed <= j->ring / 2)
			pthread_cond_broadcast(&j->cv_reader);
		pthread_mutex_unlock(&j->mu);
		if (progress_fn) {
			uint64_t now = pvg_now_ns();
			if (now - last_report > 100000000u) {
				progress_fn(j->path_i, j->n_hashed, j->i.size);
				last_report = now;
			}
		}
	}
	if (progress_fn && j->n_hashed)
		progress_fn(j->path_i, j->n_hashed, j->i.size);
	return NULL;
}

/* ---- the other hand-off (plan.hasher_reads): the hasher reads each chunk of the installed
 * file and hashes it; the second thread then reads the same chunk of the build and compares.
 * The hasher's core does what one openssl pass does; the read of the build, the comparison
 * and everything else of the run share the other core. */

static void *pair_read_hash(void *arg)
{
	struct pvg_pair_job *j = arg;
	j->fi = open_identity(j->path_i, &j->i);
	j->fb = j->path_b ? open_identity(j->path_b, &j->b) : -1;
	uint64_t off = 0, last_report = pvg_now_ns();
	while (j->fi >= 0) {
		size_t k;
		unsigned char *buf = pair_slot_free(j, &k);
		if (!buf)
			break;
		ssize_t n = pvg_read_full(j->fi, buf, j->chunk);
		if (n < 0) {
			j->read_err = (int)n;
			break;
		}
		if (n == 0)
			break;
		if (j->md_ok && !EVP_DigestUpdate(j->md, buf, (size_t)n))
			j->md_ok = false;
		j->n_hashed += (uint64_t)n;
		off += (uint64_t)n;
		pair_push(j, k, (size_t)n, false);
		if (progress_fn) {
			uint64_t now = pvg_now_ns();
			if (now - last_report > 100000000u) {
				progress_fn(j->path_i, j->n_hashed, j->i.size);
				last_report = now;
			}
		}
	}
	if (j->fi >= 0 && !j->read_err && (off != j->i.size || !unchanged(j->fi, &j->i))) {
		j->i.err = -EAGAIN;
		j->i.err_what = "changed while being read";
	}
	if (progress_fn && j->n_hashed)
		progress_fn(j->path_i, j->n_hashed, j->i.size);
	pair_push(j, 0, 0, true);
	return NULL;
}

static void *pair_compare(void *arg)
{
	struct pvg_pair_job *j = arg;
	_cleanup_free_ unsigned char *bbuf = pvg_xrealloc(NULL, 1, j->chunk);
	bool compare = true, sized = false;
	uint64_t off = 0;
	for (;;) {
		bool done = hasher_wait(j);
		if (!sized) {
			/* the identities are read before the first chunk (or the end) is pushed */
			sized = true;
			compare = j->fi >= 0 && j->fb >= 0;
			if (compare && j->b.size != j->i.size) {
				compare = false;
				pair_set_differs(j, UINT64_MAX); /* not read: the sizes already differ */
			}
		}
		if (done)
			break;
		size_t k = j->hashed % j->ring;
		size_t n = j->len[k];
		if (compare && !__atomic_load_n(&j->cancel, __ATOMIC_RELAXED)) {
			ssize_t m = pvg_read_full(j->fb, bbuf, n);
			if (m < 0) {
				j->b.err = (int)m;
				j->b.err_what = "read";
				compare = false;
			} else if ((size_t)m != n || memcmp(j->slot[k], bbuf, n) != 0) {
				size_t x = 0, lim = (size_t)m < n ? (size_t)m : n;
				while (x < lim && j->slot[k][x] == bbuf[x])
					x++;
				pair_set_differs(j, off + x);
				compare = false;
			}
		}
		off += n;
		pthread_mutex_lock(&j->mu);
		j->hashed++;
		if (j->reader_waits && j->filled - j->hashed <= j->ring / 2)
			pthread_cond_broadcast(&j->cv_reader);
		pthread_mutex_unlock(&j->mu);
	}
	/* the build must end where the installed file ends, and be the file fstat'ed */
	if (compare) {
		unsigned char extra;
		if (pvg_read_full(j->fb, &extra, 1) != 0) {
			pair_set_differs(j, off);
			compare = false;
		} else if (!unchanged(j->fb, &j->b)) {
			j->b.err = -EAGAIN;
			j->b.err_what = "changed while being read";
			compare = false;
		}
	}
	j->compared = compare && off == j->i.size && !j->i.err && !j->read_err;
	pthread_mutex_lock(&j->mu);
	j->compare_done = true;
	pthread_cond_broadcast(&j->cv_main);
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

struct pvg_pair_job *pvg_pair_start(const char *build, const char *installed)
{
	pthread_once(&sha256_once, fetch_sha256);
	struct pvg_pair_job *j = pvg_xcalloc(1, sizeof(*j));
	j->path_b = build ? pvg_strdup(build) : NULL;
	j->path_i = pvg_strdup(installed);
	j->diff_at = UINT64_MAX;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv_reader, NULL);
	pthread_cond_init(&j->cv_hasher, NULL);
	pthread_cond_init(&j->cv_main, NULL);
	j->chunk = plan.chunk;
	j->ring = plan.ring;
	for (size_t k = 0; k < j->ring; k++)
		j->slot[k] = pvg_xrealloc(NULL, 1, j->chunk);
	j->md = EVP_MD_CTX_new();
	j->md_ok = j->md && sha256_md && EVP_DigestInit_ex(j->md, sha256_md, NULL);
	plan_cpus(j);
	j->fi = j->fb = -1;
	if (plan.split && plan.hasher_reads && j->path_b) {
		j->hasher_reads = true;
		if (pvg_thread_start(&j->hasher, pair_read_hash, j) == 0) {
			j->threads = pvg_thread_start(&j->reader, pair_compare, j) == 0;
			if (!j->threads) {
				pair_compare(j); /* compare here; the hasher fills the ring */
				pthread_join(j->hasher, NULL);
			}
			return j;
		}
		j->hasher_reads = false;
	}
	if (!plan.split || pvg_thread_start(&j->hasher, pair_hasher, j) < 0) {
		/* no thread (or a plan without): the same work, one after the other, when joined */
		j->sync = true;
		return j;
	}
	j->threads = pvg_thread_start(&j->reader, pair_reader_thread, j) == 0;
	if (!j->threads) {
		pair_reader(j); /* read here; the hasher drains the ring */
		pthread_join(j->hasher, NULL);
	}
	return j;
}

bool pvg_pair_differs(struct pvg_pair_job *j)
{
	return __atomic_load_n(&j->differs, __ATOMIC_ACQUIRE);
}

bool pvg_pair_wait_differs(struct pvg_pair_job *j)
{
	if (j->threads) {
		pthread_mutex_lock(&j->mu);
		while (!__atomic_load_n(&j->differs, __ATOMIC_ACQUIRE) &&
		       !(j->hasher_reads ? j->compare_done : j->eof))
			pthread_cond_wait(&j->cv_main, &j->mu);
		pthread_mutex_unlock(&j->mu);
	}
	return pvg_pair_differs(j);
}

const char *pvg_pair_installed(const struct pvg_pair_job *j)
{
	return j->path_i;
}

static void pair_free(struct pvg_pair_job *j)
{
	if (j->fi >= 0)
		close(j->fi);
	if (j->fb >= 0)
		close(j->fb);
	for (size_t k = 0; k < j->ring; k++)
		free(j->slot[k]);
	EVP_MD_CTX_free(j->md);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv_reader);
	pthread_cond_destroy(&j->cv_hasher);
	pthread_cond_destroy(&j->cv_main);
	free(j->path_b);
	free(j->path_i);
	free(j);
}

int pvg_pair_join(struct pvg_pair_job *j, struct pvg_file_id *b, struct pvg_file_id *i,
		  uint64_t *diff_at)
{
	if (j->sync) {
		pair_reader(j);
		pair_hasher(j);
	} else if (j->threads) {
		pthread_join(j->reader, NULL);
		pthread_join(j->hasher, NULL);
	}
	if (!j->i.err && j->read_err) {
		j->i.err = j->read_err;
		j->i.err_what = "read";
	}
	if (!j->i.err && __atomic_load_n(&j->cancel, __ATOMIC_RELAXED)) {
		j->i.err = -ECANCELED;
		j->i.err_what = "cancelled";
	}
	unsigned int mdlen = 0;
	if (!j->i.err && j->n_hashed == j->i.size && j->md_ok &&
	    EVP_DigestFinal_ex(j->md, j->i.sha256, &mdlen) && mdlen == 32) {
		pvg_hex(j->i.sha256, 32, j->i.hex);
		j->i.hashed = true;
	} else if (!j->i.err) {
		j->i.err = -EIO;
		j->i.err_what = "hash";
	}
	bool equal = j->compared && !pvg_pair_differs(j) && j->i.hashed;
	if (equal) {
		memcpy(j->b.sha256, j->i.sha256, 32);
		memcpy(j->b.hex, j->i.hex, sizeof(j->b.hex));
		j->b.hashed = true;
		j->b.digest_by_compare = true;
	}
	*diff_at = pvg_pair_differs(j) ? j->diff_at : UINT64_MAX;
	*b = j->b;
	*i = j->i;
	pair_free(j);
	return equal ? 1 : 0;
}

void pvg_pair_cancel(struct pvg_pair_job *j)
{
	struct pvg_file_id b, i;
	uint64_t at;
	__atomic_store_n(&j->cancel, true, __ATOMIC_RELAXED);
	pthread_mutex_lock(&j->mu);
	pthread_cond_broadcast(&j->cv_reader);
	pthread_cond_broadcast(&j->cv_hasher);
	pthread_cond_broadcast(&j->cv_main);
	pthread_mutex_unlock(&j->mu);
	pvg_pair_join(j, &b, &i, &at);
	pvg_file_id_clear(&b);
	pvg_file_id_clear(&i);
}

void pvg_sha256_hex(const void *data, size_t n, char out[65])
{
	unsigned char d[32];
	unsigned int dl = 0;
	EVP_Digest(data, n, d, &dl, EVP_sha256(), NULL);
	pvg_hex(d, 32, out);
}
