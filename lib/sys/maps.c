/* SPDX-License-Identifier: MIT */
/*
 * A process's mappings, read through the procfs root, and its mapped files compared with
 * what their paths name now (dev, inode, ctime; overlayfs' device numbers tolerated).
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "sys/maps.h"

int pvg_maps_read(const char *procfs, pid_t pid, struct pvg_maps *out)
{
	_cleanup_free_ char *path = pvg_asprintf("%s/%d/maps", procfs, (int)pid);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	out->m = NULL;
	out->n = 0;
	int r = pvg_read_file(path, PVG_MAPS_MAX_BYTES, &text, &len);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	/* A process that exited between open and read shows an empty maps file: so does a
	 * kernel thread. Either way there is nothing mapped to verify. */
	return pvg_maps_parse(text, len, out, NULL);
}

char *pvg_map_files_path(const char *procfs, pid_t pid, const struct pvg_mapping *m)
{
	return pvg_asprintf("%s/%d/map_files/%" PRIx64 "-%" PRIx64, procfs, (int)pid, m->start,
			    m->end);
}

/* ---- mapped files --------------------------------------------------------------------------- */

#define OVERLAYFS_MAGIC 0x794c7630
#define BTRFS_MAGIC 0x9123683e

int pvg_maps_id_of_fd(int fd, struct pvg_maps_id *out)
{
	*out = (struct pvg_maps_id){ 0 };
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	long page = sysconf(_SC_PAGESIZE);
	size_t len = page > 0 ? (size_t)page : 4096;
	/* a page past the end of a short (or empty) file maps too: only its line is read */
	void *at = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (at == MAP_FAILED)
		return -errno;
	_cleanup_free_ char *text = NULL;
	size_t n = 0;
	struct pvg_maps maps = { 0 };
	int r = pvg_read_file("/proc/self/maps", PVG_MAPS_MAX_BYTES, &text, &n);
	if (r == 0)
		r = pvg_maps_parse(text, n, &maps, NULL);
	munmap(at, len);
	if (r < 0)
		return r;
	r = -ENOENT;
	for (size_t i = 0; i < maps.n; i++) {
		const struct pvg_mapping *m = &maps.m[i];
		if (m->start != (uint64_t)(uintptr_t)at || m->kind != PVG_MAPPING_FILE)
			continue;
		out->known = true;
		out->dev_major = m->dev_major;
		out->dev_minor = m->dev_minor;
		out->inode = m->inode;
		r = 0;
	}
	pvg_maps_clear(&maps);
	struct statfs sfs;
	if (r == 0 && fstatfs(fd, &sfs) == 0)
		out->shared_numbers = (unsigned long)sfs.f_type == BTRFS_MAGIC;
	return r;
}

enum pvg_same_file pvg_mapping_same_file(const char *procfs, pid_t pid,
					 const struct pvg_mapped_file *f, const char *path,
					 const struct stat *st, const struct pvg_maps_id *ref)
{
	if (f->inode == (uint64_t)st->st_ino && makedev(f->dev_major, f->dev_minor) == st->st_dev)
		return PVG_SAME_FILE;
	/* The mapping itself: its link names the file it maps, whatever numbers maps shows. */
	struct pvg_mapping m = { .start = f->first_start, .end = f->first_end };
	_cleanup_free_ char *mf = pvg_map_files_path(procfs, pid, &m);
	struct stat ms;
	if (stat(mf, &ms) == 0)
		return ms.st_ino == st->st_ino && ms.st_dev == st->st_dev ? PVG_SAME_FILE_QUIRK
									   : PVG_OTHER_FILE;
	if (ref) {
		if (!ref->known || f->inode != ref->inode || f->dev_major != ref->dev_major ||
		    f->dev_minor != ref->dev_minor)
			return PVG_OTHER_FILE;
		return ref->shared_numbers ? PVG_SAME_NUMBERS : PVG_SAME_FILE_QUIRK;
	}
	/* Same inode number, other device: overlayfs (before Linux 6.7) shows the real (upper
	 * or lower) device in maps, btrfs its file system's device. A guess, for messages. */
	struct statfs sfs;
	if (f->inode == (uint64_t)st->st_ino && statfs(path, &sfs) == 0 &&
	    ((unsigned long)sfs.f_type == OVERLAYFS_MAGIC || (unsigned long)sfs.f_type == BTRFS_MAGIC))
		return PVG_SAME_FILE_QUIRK;
	return PVG_OTHER_FILE;
}

bool pvg_mapping_is_file(const char *procfs, pid_t pid, const struct pvg_mapped_file *f,
			 const char *path, const struct stat *st, bool *quirk)
{
	enum pvg_same_file s = pvg_mapping_same_file(procfs, pid, f, path, st, NULL);
	*quirk = s == PVG_SAME_FILE_QUIRK;
	return s != PVG_OTHER_FILE;
}

void pvg_mapped_files_clear(struct pvg_mapped_files *files)
{
	for (size_t i = 0; i < files->n; i++)
		free(files->f[i].path);
	free(files->f);
	files->f = NULL;
	files->n = 0;
}

void pvg_mapped_files_build(const char *procfs, pid_t pid, const struct pvg_maps *maps,
			    const struct timespec *start, long tick_ns,
			    struct pvg_mapped_files *out)
{
	out->f = NULL;
	out->n = 0;
	for (size_t i = 0; i < maps->n; i++) {
		const struct pvg_mapping *m = &maps->m[i];
		if (m->kind != PVG_MAPPING_FILE)
			continue;
		struct pvg_mapped_file *f = NULL;
		for (size_t k = 0; k < out->n && !f; k++)
			if (out->f[k].inode == m->inode && out->f[k].dev_major == m->dev_major &&
			    out->f[k].dev_minor == m->dev_minor && out->f[k].deleted == m->deleted &&
			    strcmp(out->f[k].path, m->path) == 0)
				f = &out->f[k];
		if (f) {
			f->n_mappings++;
			continue;
		}
		out->f = pvg_xrealloc(out->f, out->n + 1, sizeof(*out->f));
		f = &out->f[out->n++];
		*f = (struct pvg_mapped_file){
			.path = pvg_strdup(m->path),
			.deleted = m->deleted,
			.dev_major = m->dev_major,
			.dev_minor = m->dev_minor,
			.inode = m->inode,
			.first_start = m->start,
			.first_end = m->end,
			.n_mappings = 1,
		};
	}
	int64_t start_ns = start ? (int64_t)start->tv_sec * 1000000000 + start->tv_nsec : 0;
	for (size_t i = 0; i < out->n; i++) {
		struct pvg_mapped_file *f = &out->f[i];
		struct stat st;
		for (size_t k = 0; k < out->n; k++)
			if (k != i && strcmp(out->f[k].path, f->path) != 0 &&
			    strcmp(pvg_basename(out->f[k].path), pvg_basename(f->path)) == 0)
				f->duplicate = true;
		/* the path as the process sees it: in its own mount namespace, through its root
		 * (another user's process cannot be entered: then the path as provgate sees it) */
		_cleanup_free_ char *in_ns = pvg_asprintf("%s/%d/root%s", procfs, (int)pid, f->path);
		int sr = stat(in_ns, &st);
		int se = sr < 0 ? errno : 0;
		if (se == EACCES || se == EPERM || se == ENOENT) {
			/* ENOENT: the path is gone there, or a fixture tree has no root links */
			_cleanup_free_ char *root = pvg_asprintf("%s/%d/root", procfs, (int)pid);
			struct stat rs;
			if (se != ENOENT || lstat(root, &rs) < 0)
				sr = stat(f->path, &st);
			else
				errno = se;
		}
		if (sr < 0) {
			f->stat_err = -errno;
			f->replaced = !f->deleted; /* a deleted file is reported as such */
			continue;
		}
		f->now_dev = (uint64_t)st.st_dev;
		f->now_ino = (uint64_t)st.st_ino;
		f->now_ctime = st.st_ctim;
		if (f->deleted)
			continue;
		if (!pvg_mapping_is_file(procfs, pid, f, f->path, &st, &f->dev_quirk)) {
			f->replaced = true;
			continue;
		}
		if (start) {
			int64_t c = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
			/* the start time is cut to a clock tick: [start, start + tick) */
			if (c >= start_ns + tick_ns)
				f->overwritten = true;
			else if (c >= start_ns)
				f->ctime_close = true;
		}
	}
}
