/* SPDX-License-Identifier: MIT */
/*
 * Streaming SHA-256 on the fd that was fstat'ed, so that the digest and the identity
 * (dev, inode, size, times) describe the same file even if the path is replaced meanwhile.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <openssl/evp.h>

#include "pvg.h"

#define HASH_CHUNK (1u << 20)

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
	unsigned char *buf = malloc(HASH_CHUNK);
	if (!buf || !EVP_DigestInit_ex(md, sha256_md, NULL)) {
		ret = buf ? -EIO : -ENOMEM;
		goto out;
	}
	uint64_t done = 0, last_report = pvg_now_ns();
	for (;;) {
		size_t want = HASH_CHUNK;
		if (len >= 0 && (uint64_t)len - done < want)
			want = (size_t)((uint64_t)len - done);
		if (want == 0)
			break;
		ssize_t r = read(fd, buf, want);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
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

int pvg_hash_file(const char *path, struct pvg_file_id *out)
{
	memset(out, 0, sizeof(*out));
	out->path = pvg_strdup(path);
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		out->err = errno;
		out->err_what = "open";
		return -out->err;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		out->err = errno;
		out->err_what = "stat";
		return -out->err;
	}
	out->mode = st.st_mode;
	out->size = (uint64_t)st.st_size;
	out->dev = (uint64_t)st.st_dev;
	out->ino = (uint64_t)st.st_ino;
	out->mtime = st.st_mtim;
	out->ctime = st.st_ctim;
	if (!S_ISREG(st.st_mode)) {
		out->err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		out->err_what = S_ISDIR(st.st_mode)   ? "is a directory"
				: S_ISFIFO(st.st_mode) ? "is a FIFO, not a regular file"
				: S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
					? "is a device, not a regular file"
					: S_ISSOCK(st.st_mode) ? "is a socket, not a regular file"
							       : "is not a regular file";
		return -out->err;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	uint64_t n = 0;
	int r = hash_fd_impl(fd, -1, out->sha256, &n, path, out->size);
	if (r < 0) {
		out->err = -r;
		out->err_what = "read";
		return r;
	}
	if (n != out->size) {
		/* The file changed size under us: identity and digest would not belong together. */
		out->err = EAGAIN;
		out->err_what = "changed while being read";
		return -EAGAIN;
	}
	pvg_hex(out->sha256, 32, out->hex);
	out->hashed = true;
	return 0;
}

struct hash_job {
	const char *path;
	struct pvg_file_id *out;
};

static void *hash_thread(void *arg)
{
	struct hash_job *job = arg;
	pvg_hash_file(job->path, job->out);
	return NULL;
}

int pvg_hash_files(const char *const *paths, size_t n, struct pvg_file_id *out)
{
	pthread_t tids[8];
	struct hash_job jobs[8];
	bool started[8] = { false };
	if (n > 8)
		return -E2BIG;
	pthread_once(&sha256_once, fetch_sha256);
	/* The first file is hashed on this thread; the rest each get one. */
	for (size_t i = 1; i < n; i++) {
		jobs[i] = (struct hash_job){ paths[i], &out[i] };
		started[i] = pthread_create(&tids[i], NULL, hash_thread, &jobs[i]) == 0;
		if (!started[i])
			hash_thread(&jobs[i]);
	}
	if (n > 0)
		pvg_hash_file(paths[0], &out[0]);
	for (size_t i = 1; i < n; i++)
		if (started[i])
			pthread_join(tids[i], NULL);
	return 0;
}
