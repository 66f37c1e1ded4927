/* SPDX-License-Identifier: MIT */
/*
 * /proc/<pid>/maps lines: "START-END PERMS OFFSET MAJ:MIN INODE [PATH]". The path runs to the
 * end of the line and may hold spaces; the kernel escapes only '\n' (as "\012") and appends
 * " (deleted)" when the file was unlinked after it was mapped.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "sys/maps.h"

static bool hex_field(const char **p, const char *end, uint64_t *v, char stop)
{
	uint64_t x = 0;
	const char *s = *p;
	int digits = 0;
	while (s < end && *s != stop) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return false;
		if (++digits > 16)
			return false;
		x = x << 4 | (uint64_t)d;
		s++;
	}
	if (digits == 0 || s == end)
		return false;
	*v = x;
	*p = s + 1; /* past the stop byte */
	return true;
}

static bool dec_field(const char **p, const char *end, uint64_t *v)
{
	uint64_t x = 0;
	const char *s = *p;
	int digits = 0;
	while (s < end && *s >= '0' && *s <= '9') {
		if (++digits > 20 || x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (digits == 0)
		return false;
	*v = x;
	*p = s;
	return true;
}

static int parse_line(const char *s, const char *end, struct pvg_mapping *m)
{
	uint64_t maj, min;
	memset(m, 0, sizeof(*m));
	if (!hex_field(&s, end, &m->start, '-') || !hex_field(&s, end, &m->end, ' '))
		return -EINVAL;
	if (m->end < m->start || end - s < 5 || s[4] != ' ')
		return -EINVAL;
	memcpy(m->perms, s, 4);
	for (int i = 0; i < 4; i++)
		if (!m->perms[i] || !strchr("rwxps-", m->perms[i]))
			return -EINVAL;
	s += 5;
	if (!hex_field(&s, end, &m->offset, ' ') || !hex_field(&s, end, &maj, ':') ||
	    !hex_field(&s, end, &min, ' ') || maj > UINT32_MAX || min > UINT32_MAX)
		return -EINVAL;
	m->dev_major = (unsigned)maj;
	m->dev_minor = (unsigned)min;
	if (!dec_field(&s, end, &m->inode))
		return -EINVAL;
	if (s < end && *s != ' ')
		return -EINVAL;
	while (s < end && *s == ' ')
		s++;
	size_t plen = (size_t)(end - s);
	if (plen == 0) {
		m->kind = PVG_MAPPING_ANON;
		return 0;
	}
	static const char deleted[] = " (deleted)";
	if (s[0] == '/') {
		m->kind = PVG_MAPPING_FILE;
		if (plen > sizeof(deleted) - 1 &&
		    memcmp(s + plen - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1) == 0) {
			m->deleted = true;
			plen -= sizeof(deleted) - 1;
		}
	} else {
		m->kind = PVG_MAPPING_SPECIAL;
	}
	/* input need not be NUL-terminated: copy exactly plen bytes */
	m->path = pvg_xcalloc(plen + 1, 1);
	memcpy(m->path, s, plen);
	return 0;
}

void pvg_maps_clear(struct pvg_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++)
		free(maps->m[i].path);
	free(maps->m);
	maps->m = NULL;
	maps->n = 0;
}

int pvg_maps_parse(const char *text, size_t len, struct pvg_maps *out, size_t *bad_line)
{
	size_t cap = 0, line = 0;
	const char *p = text, *end = text + len;
	out->m = NULL;
	out->n = 0;
	if (bad_line)
		*bad_line = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		line++;
		if (le > p) {
			if (out->n == cap) {
				cap = cap ? cap * 2 : 64;
				out->m = pvg_xrealloc(out->m, cap, sizeof(*out->m));
			}
			int r = parse_line(p, le, &out->m[out->n]);
			if (r < 0) {
				if (bad_line)
					*bad_line = line;
				pvg_maps_clear(out);
				return r;
			}
			out->n++;
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int pvg_read_proc_text(const char *path, size_t max, char **out, size_t *len)
{
	/* /proc files report size 0: grow as we read, up to max. */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	*out = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	size_t cap = 16384, have = 0;
	_cleanup_free_ char *buf = pvg_xcalloc(cap + 1, 1);
	for (;;) {
		if (have == cap) {
			if (cap >= max)
				return -EFBIG;
			cap = cap * 2 > max ? max : cap * 2;
			buf = pvg_xrealloc(buf, cap + 1, 1);
		}
		ssize_t r = read(fd, buf + have, cap - have);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		have += (size_t)r;
	}
	buf[have] = '\0';
	*len = have;
	*out = TAKE_PTR(buf);
	return 0;
}

int pvg_maps_read(const char *procfs, pid_t pid, struct pvg_maps *out)
{
	_cleanup_free_ char *path = pvg_asprintf("%s/%d/maps", procfs, (int)pid);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	out->m = NULL;
	out->n = 0;
	int r = pvg_read_proc_text(path, PVG_MAPS_MAX_BYTES, &text, &len);
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

bool pvg_mapping_is_file(const char *procfs, pid_t pid, const struct pvg_mapped_file *f,
			 const char *path, const struct stat *st, bool *quirk)
{
	*quirk = false;
	if (f->inode != (uint64_t)st->st_ino)
		return false;
	if (makedev(f->dev_major, f->dev_minor) == st->st_dev)
		return true;
	/* Same inode number, other device: overlayfs shows the real (upper or lower) device in
	 * maps, btrfs a per-subvolume anonymous device. Ask the mapping itself, else the fs. */
	struct pvg_mapping m = { .start = f->first_start, .end = f->first_end };
	_cleanup_free_ char *mf = pvg_map_files_path(procfs, pid, &m);
	struct stat ms;
	if (stat(mf, &ms) == 0 && ms.st_ino == st->st_ino && ms.st_dev == st->st_dev) {
		*quirk = true;
		return true;
	}
	struct statfs sfs;
	if (statfs(path, &sfs) == 0 &&
	    ((unsigned long)sfs.f_type == OVERLAYFS_MAGIC || (unsigned long)sfs.f_type == BTRFS_MAGIC)) {
		*quirk = true;
		return true;
	}
	return false;
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
			f->stat_err = errno;
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
