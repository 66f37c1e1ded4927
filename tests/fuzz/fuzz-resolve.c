/* SPDX-License-Identifier: MIT */
/* libFuzzer target: lib/util/untrusted.c's component-by-component walk (what kernels before
 * 5.6 get: PROVGATE_NO_OPENAT2=1) against openat2 RESOLVE_IN_ROOT as the oracle. The input
 * is a small tree, made once per input under /tmp and removed after, and the paths looked up
 * in it, one line each:
 *   d PATH           a folder             f PATH    a file (one byte)
 *   l PATH TARGET    a symbolic link (TARGET: the rest of the line, any bytes)
 *   p PATH           a FIFO
 *   ? PATH           open PATH for reading inside the tree's root (the rest of the line)
 *   D PATH           the same, wanting a folder
 * The tree's entries are made with plain names under real folders (never through a link).
 * For each lookup both resolutions must give the same result (the same -errno, and for a
 * file opened or refused by its type the same device and inode), and whatever is reached is
 * one of the tree's own inodes: never the file beside the root, nor anything else. */
/* Built by tests/fuzz/build.sh. */
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>

#include "util/untrusted.h"

#define MAX_ENTRIES 24
#define MAX_LOOKUPS 8

struct inode {
	dev_t dev;
	ino_t ino;
};
static struct inode tree[MAX_ENTRIES + 1];
static size_t n_tree;

static void remember(int dir, const char *name)
{
	struct stat st;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && n_tree < ARRAY_SIZE(tree))
		tree[n_tree++] = (struct inode){ st.st_dev, st.st_ino };
}

static bool in_tree(const struct stat *st)
{
	for (size_t i = 0; i < n_tree; i++)
		if (tree[i].dev == st->st_dev && tree[i].ino == st->st_ino)
			return true;
	return false;
}

/* The folder that holds path's last component, reached through real folders only (no link,
 * no "." or ".."); *name is that component. -1 when path is not such a path. */
static int parent_of(int root, char *path, char **name)
{
	int dir = dup(root);
	char *save = NULL, *c = strtok_r(path, "/", &save);
	if (!c) {
		close(dir);
		return -1;
	}
	for (char *next; (next = strtok_r(NULL, "/", &save)); c = next) {
		int sub = strcmp(c, ".") && strcmp(c, "..")
				  ? openat(dir, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
				  : -1;
		close(dir);
		if (sub < 0)
			return -1;
		dir = sub;
	}
	if (!strcmp(c, ".") || !strcmp(c, "..")) {
		close(dir);
		return -1;
	}
	*name = c;
	return dir;
}

static void make(int root, char kind, char *path, const char *target)
{
	char *name;
	int dir = parent_of(root, path, &name);
	if (dir < 0)
		return;
	int fd;
	/* O_PATH folders: the *at calls below take them */
	switch (kind) {
	case 'd':
		if (mkdirat(dir, name, 0755) == 0)
			remember(dir, name);
		break;
	case 'f':
		fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			(void)!write(fd, "x", 1);
			close(fd);
			remember(dir, name);
		}
		break;
	case 'l':
		if (symlinkat(target, dir, name) == 0)
			remember(dir, name);
		break;
	case 'p':
		if (mkfifoat(dir, name, 0644) == 0)
			remember(dir, name);
		break;
	}
	close(dir);
}

/* One lookup: 0 and the inode, or -errno (and the inode of what was refused by its type). */
static int lookup(int root, const char *path, bool want_dir, bool walk, struct stat *st)
{
	if (walk)
		setenv("PROVGATE_NO_OPENAT2", "1", 1);
	else
		unsetenv("PROVGATE_NO_OPENAT2");
	const struct pvg_untrusted how = { .root_fd = root, .want_dir = want_dir };
	struct pvg_untrusted_file f;
	int fd = pvg_open_untrusted(path, &how, &f);
	memset(st, 0, sizeof(*st));
	if (fd >= 0) {
		if (fstat(fd, st) < 0)
			__builtin_trap();
		close(fd);
		return 0;
	}
	if (f.refused != PVG_REFUSED_NONE && f.refused != PVG_REFUSED_LINK)
		*st = f.st;
	return fd;
}

static int rm(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = pvg_xcalloc(size + 1, 1);
	memcpy(text, data, size);
	char base[] = "/tmp/pvg-fuzz-resolve-XXXXXX";
	if (!mkdtemp(base))
		__builtin_trap();
	/* base/outside is what an escape would reach; base/r is the root */
	char *rpath = pvg_asprintf("%s/r", base), *outside = pvg_asprintf("%s/outside", base);
	if (mkdir(rpath, 0755) < 0 || close(open(outside, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) < 0)
		__builtin_trap();
	int root = open(rpath, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		__builtin_trap();
	n_tree = 0;
	remember(AT_FDCWD, rpath);
	struct {
		char *path;
		bool want_dir;
	} lookups[MAX_LOOKUPS];
	size_t n_lookups = 0, n_entries = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char kind = line[0];
		if (!kind || line[1] != ' ')
			continue;
		char *rest = line + 2;
		if ((kind == '?' || kind == 'D') && n_lookups < MAX_LOOKUPS) {
			lookups[n_lookups].path = rest;
			lookups[n_lookups++].want_dir = kind == 'D';
		} else if (strchr("dflp", kind) && n_entries < MAX_ENTRIES) {
			n_entries++;
			char *target = "";
			if (kind == 'l') {
				char *sp = strchr(rest, ' ');
				if (!sp)
					continue;
				*sp = '\0';
				target = sp + 1;
			}
			make(root, kind, rest, target);
		}
	}
	for (size_t i = 0; i < n_lookups; i++) {
		struct stat a, b;
		int ra = lookup(root, lookups[i].path, lookups[i].want_dir, false, &a);
		int rb = lookup(root, lookups[i].path, lookups[i].want_dir, true, &b);
		if (ra != rb) {
			fprintf(stderr, "fuzz-resolve: \"%s\": openat2 %d (%s), walk %d (%s)\n",
				lookups[i].path, ra, strerror(-ra), rb, strerror(-rb));
			__builtin_trap();
		}
		if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
			fprintf(stderr, "fuzz-resolve: \"%s\": openat2 and walk reach other inodes\n",
				lookups[i].path);
			__builtin_trap();
		}
		if ((a.st_ino && !in_tree(&a)) || (b.st_ino && !in_tree(&b))) {
			fprintf(stderr, "fuzz-resolve: \"%s\" reached outside the root\n",
				lookups[i].path);
			__builtin_trap();
		}
	}
	close(root);
	if (nftw(base, rm, 16, FTW_DEPTH | FTW_PHYS) < 0)
		__builtin_trap();
	free(rpath);
	free(outside);
	free(text);
	return 0;
}
