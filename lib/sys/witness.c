/* SPDX-License-Identifier: MIT */
/* The witness folder and the process facts its attribution needs (see witness.h). */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>

#include "sys/witness.h"
#include "util/untrusted.h"

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct pvg_witness_read *)a)->name,
		      ((const struct pvg_witness_read *)b)->name);
}

static bool is_witness_name(const char *n)
{
	size_t l = strlen(n), s = strlen(PVG_WITNESS_SUFFIX);
	return n[0] != '.' && l > s && strcmp(n + l - s, PVG_WITNESS_SUFFIX) == 0;
}

/* Reads one entry through the folder's descriptor: its size is known (fstatat) and within
 * the cap, and the open refuses anything that became another kind of file since. */
static void read_one(int dir_fd, struct pvg_witness_read *f,
		     bool (*keep)(void *, const struct pvg_witness_header *), void *opaque)
{
	const struct pvg_untrusted how = { .root_fd = -1, .max_size = PVG_WITNESS_MAX_FILE };
	_cleanup_close_ int fd = pvg_openat_untrusted(dir_fd, f->name, &how, NULL);
	char *buf = NULL;
	size_t len = 0;
	f->err = fd < 0 ? fd : pvg_read_fd(fd, PVG_WITNESS_MAX_FILE, &buf, &len);
	if (f->err < 0)
		return;
	struct pvg_witness_entry *e = pvg_xcalloc(PVG_WITNESS_MAX_RECORDS, sizeof(*e));
	struct pvg_witness_mod *m = pvg_xcalloc(PVG_WITNESS_MAX_MODULES, sizeof(*m));
	f->file.entries = e;
	f->file.modules = m;
	f->perr = pvg_witness_parse((const uint8_t *)buf, len, &f->file, &f->perr_at);
	if (f->perr == PVG_WITNESS_OK && keep && keep(opaque, &f->file.h)) {
		f->bytes = (uint8_t *)buf;
		f->len = len;
		f->file.entries = pvg_xrealloc(e, f->file.n ? f->file.n : 1, sizeof(*e));
		f->file.modules = pvg_xrealloc(m, f->file.n_modules ? f->file.n_modules : 1,
					       sizeof(*m));
		return;
	}
	free(buf);
	free(e);
	free(m);
	f->file.entries = NULL;
	f->file.modules = NULL;
	f->file.n = 0;
	f->file.n_modules = 0;
}

int pvg_witness_folder_open(const char *dir, struct pvg_witness_folder *out)
{
	*out = (struct pvg_witness_folder){ .fd = -1 };
	/* "dir/" would follow a link named dir: the name itself is opened */
	_cleanup_free_ char *name = pvg_strdup(dir);
	for (size_t l = strlen(name); l > 1 && name[l - 1] == '/'; l--)
		name[l - 1] = '\0';
	int fd = open(name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		struct stat st;
		/* O_NOFOLLOW says ELOOP for a link; ENOTDIR for a link to a folder on some
		 * kernels: lstat tells */
		if (e == ELOOP || (e == ENOTDIR && lstat(name, &st) == 0 && S_ISLNK(st.st_mode))) {
			out->is_link = true;
			e = ELOOP;
		}
		return out->err = -e;
	}
	if (fstat(fd, &out->st) < 0) {
		out->err = -errno;
		close(fd);
		return out->err;
	}
	out->fd = fd;
	return 0;
}

void pvg_witness_folder_close(struct pvg_witness_folder *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

int pvg_witness_dir_read(const struct pvg_witness_folder *folder,
			 bool (*keep)(void *, const struct pvg_witness_header *), void *opaque,
			 struct pvg_witness_dir *out)
{
	memset(out, 0, sizeof(*out));
	if (folder->fd < 0)
		return folder->err ? folder->err : -EBADF;
	/* the listing from a descriptor of its own (a DIR takes the fd it is given), of the
	 * folder already open: never the path again */
	int lfd = fcntl(folder->fd, F_DUPFD_CLOEXEC, 3);
	if (lfd < 0)
		return -errno;
	DIR *d = fdopendir(lfd);
	if (!d) {
		int e = -errno;
		close(lfd);
		return e;
	}
	rewinddir(d); /* a dup shares the offset of the reads before */
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!is_witness_name(de->d_name))
			continue;
		/* what the entry is, from the folder, before anything opens it: a link, a device
		 * or a FIFO is never opened, and a file over the cap is never read */
		struct stat st;
		if (fstatat(folder->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone since the listing */
		if (!S_ISREG(st.st_mode)) {
			out->not_regular++;
			continue;
		}
		if (out->n == PVG_WITNESS_DIR_MAX_FILES) {
			out->over_limit++;
			continue;
		}
		if (out->n == cap) {
			cap = cap ? 2 * cap : 16;
			out->files = pvg_xrealloc(out->files, cap, sizeof(*out->files));
		}
		struct pvg_witness_read *f = &out->files[out->n++];
		memset(f, 0, sizeof(*f));
		f->name = pvg_strdup(de->d_name);
		if ((uint64_t)st.st_size > PVG_WITNESS_MAX_FILE) {
			f->err = -EFBIG;
			f->too_large = true;
			out->too_large++;
		}
	}
	closedir(d);
	if (out->n)
		qsort(out->files, out->n, sizeof(*out->files), by_name);
	for (size_t i = 0; i < out->n; i++)
		if (!out->files[i].too_large)
			read_one(folder->fd, &out->files[i], keep, opaque);
	return 0;
}

void pvg_witness_dir_clear(struct pvg_witness_dir *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->files[i].name);
		free(d->files[i].bytes);
		free(d->files[i].file.entries);
		free(d->files[i].file.modules);
	}
	free(d->files);
	memset(d, 0, sizeof(*d));
}

int pvg_boot_id(const char *procfs, char out[40])
{
	out[0] = '\0';
	_cleanup_free_ char *path = pvg_asprintf("%s/sys/kernel/random/boot_id", procfs);
	_cleanup_free_ char *s = NULL;
	int r = pvg_read_file(path, 256, &s, NULL);
	if (r < 0)
		return r;
	s[strcspn(s, "\n")] = '\0';
	if (!s[0] || strlen(s) >= 40)
		return -EINVAL;
	strcpy(out, s);
	return 0;
}

int pvg_proc_getenv(const char *procfs, pid_t pid, const char *name, char **value)
{
	*value = NULL;
	_cleanup_free_ char *path = pvg_asprintf("%s/%d/environ", procfs, (int)pid);
	_cleanup_free_ char *s = NULL;
	size_t len = 0;
	int r = pvg_read_file(path, 4 << 20, &s, &len);
	if (r < 0)
		return r;
	size_t nl = strlen(name);
	for (size_t i = 0; i < len;) {
		const char *e = s + i;
		size_t el = strnlen(e, len - i);
		if (el > nl && memcmp(e, name, nl) == 0 && e[nl] == '=') {
			*value = pvg_strdup(e + nl + 1);
			return 0;
		}
		i += el + 1;
	}
	return -ENOENT;
}

int pvg_witness_request(const struct pvg_witness_folder *folder, uint64_t *token, char **name)
{
	*name = NULL;
	if (folder->fd < 0)
		return folder->err ? folder->err : -EBADF;
	struct timespec ts;
	if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
		return -errno;
	uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	for (int tries = 0; tries < 16; tries++, t++) {
		char *n = pvg_asprintf("%s%016" PRIx64, PVG_WITNESS_REQUEST_PREFIX, t);
		/* in the folder opened once: a folder swapped for a link since is not where
		 * this lands */
		int fd = openat(folder->fd, n, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
				0644);
		if (fd >= 0) {
			close(fd);
			*token = t;
			*name = n;
			return 0;
		}
		int e = errno;
		free(n);
		if (e != EEXIST)
			return -e;
	}
	return -EEXIST;
}

void pvg_witness_request_remove(const struct pvg_witness_folder *folder, const char *name)
{
	if (folder->fd >= 0 && name)
		(void)unlinkat(folder->fd, name, 0);
}

void pvg_witness_dir_wait(const struct pvg_witness_folder *folder, int *watch, long ms)
{
	if (*watch == -1) {
		/* the folder open already, through its descriptor's link: the watch is on that
		 * inode whatever its name means now */
		char self[64];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", folder->fd);
		int fd = folder->fd >= 0 ? inotify_init1(IN_CLOEXEC | IN_NONBLOCK) : -1;
		if (fd >= 0 && inotify_add_watch(fd, self, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
			close(fd);
			fd = -1;
		}
		*watch = fd >= 0 ? fd : -2;
	}
	if (ms <= 0)
		return;
	if (*watch < 0) {
		long nap = ms < 20 ? ms : 20;
		struct timespec ts = { nap / 1000, (nap % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		return;
	}
	struct pollfd pf = { .fd = *watch, .events = POLLIN };
	if (poll(&pf, 1, (int)(ms > 60000 ? 60000 : ms)) > 0) {
		char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
		while (read(*watch, buf, sizeof(buf)) > 0)
			;
	}
}

void pvg_witness_watch_close(int *watch)
{
	if (*watch >= 0)
		close(*watch);
	*watch = -1;
}

bool pvg_witness_proc_alive(const char *procfs, pid_t pid, uint64_t start_ticks)
{
	_cleanup_free_ char *path = pvg_asprintf("%s/%d/stat", procfs, (int)pid);
	_cleanup_free_ char *s = NULL;
	if (pvg_read_file(path, 4096, &s, NULL) < 0)
		return false;
	/* after the last ')': state (field 3), then field 22 is the 20th */
	char *p = strrchr(s, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return false;
	p += 2;
	for (int field = 3; p && field < 22; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	return p && strtoull(p, NULL, 10) == start_ticks;
}
