/* SPDX-License-Identifier: MIT */
/* Opening what another user controls; see untrusted.h. */
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "util/untrusted.h"

#define MAX_LINKS 40
/* how long the child that opens as the service's user may take (a path on a hung NFS
 * mount must not hang the run) */
#define AS_USER_TIMEOUT_MS 10000

/* ---- identity --------------------------------------------------------------------------- */

int pvg_effective_caps(uint64_t *eff)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	*eff = (uint64_t)d[1].effective << 32 | d[0].effective;
	return 0;
}

bool pvg_root_without_cap(int cap)
{
	uint64_t eff = 0;
	return geteuid() == 0 && pvg_effective_caps(&eff) == 0 && !(eff & (1ull << cap));
}

enum { MISSING_SETGID = 1, MISSING_SETUID = 2 };

/* Which of the capabilities that taking on another user needs this process lacks. */
static unsigned missing_setid_caps(void)
{
	uint64_t eff = 0;
	if (pvg_effective_caps(&eff) < 0)
		return MISSING_SETGID | MISSING_SETUID;
	return (eff & (1ull << CAP_SETGID) ? 0u : MISSING_SETGID) |
	       (eff & (1ull << CAP_SETUID) ? 0u : MISSING_SETUID);
}

static bool has_effective_caps(void)
{
	uint64_t eff = 0;
	return pvg_effective_caps(&eff) < 0 || eff;
}

static int gid_cmp(const void *a, const void *b)
{
	gid_t x = *(const gid_t *)a, y = *(const gid_t *)b;
	return x < y ? -1 : x > y;
}

/* v[0..n) and gid, sorted, each once: the groups a file's group is checked against (the
 * kernel's in_group_p: the fsgid or a supplementary group). */
static size_t group_set(gid_t *v, size_t n, gid_t gid)
{
	v[n++] = gid;
	qsort(v, n, sizeof(gid_t), gid_cmp);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (k == 0 || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

/* Is this process already exactly the user of c: its real, effective, saved and file-system
 * uid c->uid, the same four gids c->gid, and the same groups (the supplementary groups with
 * the gid, as sets: a list that repeats the gid, as a container's first process may have and
 * a process exec'd into it not, grants nothing more)? Then no identity change is needed, and
 * none is tried (setgroups needs CAP_SETGID even to set the same list). */
static bool already_user(const struct pvg_creds *c)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0)
		return false;
	/* an invalid id changes nothing and returns the current one */
	uid_t fsu = (uid_t)setfsuid((uid_t)-1);
	gid_t fsg = (gid_t)setfsgid((gid_t)-1);
	if (ru != c->uid || eu != c->uid || su != c->uid || fsu != c->uid || rg != c->gid ||
	    eg != c->gid || sg != c->gid || fsg != c->gid || c->n_groups > PVG_CREDS_MAX_GROUPS)
		return false;
	gid_t mine[PVG_CREDS_MAX_GROUPS + 1], theirs[PVG_CREDS_MAX_GROUPS + 1];
	int n = getgroups(PVG_CREDS_MAX_GROUPS, mine);
	if (n < 0)
		return false; /* more groups than any service's list can hold: not the same */
	memcpy(theirs, c->groups, c->n_groups * sizeof(gid_t));
	size_t a = group_set(mine, (size_t)n, c->gid), b = group_set(theirs, c->n_groups, c->gid);
	return a == b && memcmp(mine, theirs, a * sizeof(gid_t)) == 0;
}

bool pvg_untrusted_use_openat2(void)
{
	const char *e = getenv("PROVGATE_NO_OPENAT2");
	return !(e && strcmp(e, "1") == 0);
}

const char *pvg_refusal_text(enum pvg_refusal r)
{
	switch (r) {
	case PVG_REFUSED_NONE:
		return "a regular file";
	case PVG_REFUSED_DEVICE:
		return "a device node";
	case PVG_REFUSED_FIFO:
		return "a FIFO";
	case PVG_REFUSED_SOCKET:
		return "a socket";
	case PVG_REFUSED_DIRECTORY:
		return "a directory";
	case PVG_REFUSED_TOO_BIG:
		return "larger than the bound";
	case PVG_REFUSED_OWNER:
		return "owned by another user";
	case PVG_REFUSED_LINK:
		return "reached through a link it may not follow";
	case PVG_REFUSED_USER:
		return "not readable by the service's user";
	case PVG_REFUSED_KERNEL_FS:
		return "a kernel interface file (procfs, sysfs, ...), not data";
	case PVG_REFUSED_IDENTITY:
		switch (missing_setid_caps()) {
		case MISSING_SETUID | MISSING_SETGID:
			return "not opened: provgate lacks CAP_SETUID and CAP_SETGID, and cannot "
			       "take on the service's user to open it";
		case MISSING_SETUID:
			return "not opened: provgate lacks CAP_SETUID, and cannot take on the "
			       "service's user to open it";
		case MISSING_SETGID:
			return "not opened: provgate lacks CAP_SETGID, and cannot take on the "
			       "service's user to open it";
		}
		return "not opened: provgate could not take on the service's user to open it";
	}
	return "refused";
}

const char *pvg_refusal_hint(enum pvg_refusal r, const char *otherwise)
{
	if (r != PVG_REFUSED_IDENTITY)
		return otherwise;
	switch (missing_setid_caps()) {
	case MISSING_SETUID | MISSING_SETGID:
		return "give provgate CAP_SETUID and CAP_SETGID, with which it opens the service's "
		       "files as the service's user (Kubernetes: securityContext.capabilities.add: "
		       "[SETUID, SETGID]; podman/docker: --cap-add SETUID --cap-add SETGID), or run "
		       "it as the service's user with the same groups";
	case MISSING_SETUID:
		return "give provgate CAP_SETUID, with which it opens the service's files as the "
		       "service's user (Kubernetes: securityContext.capabilities.add: [SETUID]; "
		       "podman/docker: --cap-add SETUID), or run it as the service's user with the "
		       "same groups";
	case MISSING_SETGID:
		return "give provgate CAP_SETGID, with which it opens the service's files as the "
		       "service's user (Kubernetes: securityContext.capabilities.add: [SETGID]; "
		       "podman/docker: --cap-add SETGID), or run it as the service's user with the "
		       "same groups";
	}
	return "run provgate as root with CAP_SETUID and CAP_SETGID in the service's user "
	       "namespace, or as the service's user with the same groups";
}

const char *pvg_refusal_word(enum pvg_refusal r)
{
	static const char *const words[] = { "", "device", "fifo", "socket", "directory",
					     "too-big", "owner", "link", "denied",
					     "kernel-file", "identity" };
	return (size_t)r < ARRAY_SIZE(words) ? words[r] : "refused";
}

/* ---- resolution ----------------------------------------------------------------------- */

/* openat2 inside root: symlinks and ".." never leave it, magic links are refused. */
static int resolve_openat2(int root_fd, const char *path, int flags)
{
	while (*path == '/')
		path++;
	struct open_how how = { .flags = (uint64_t)(flags | O_PATH | O_CLOEXEC),
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	long fd;
	do
		fd = syscall(SYS_openat2, root_fd, *path ? path : ".", &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN);
	return fd < 0 ? -errno : (int)fd;
}

/* Appends the components of path to the work list (stack of pending components, pushed in
 * reverse so that the first pops first). A trailing slash is a "." after the last component:
 * as for the kernel, "file/" (or a link to "file/") must then be a folder (ENOTDIR). */
static int push_components(struct pvg_strv *todo, const char *path)
{
	_cleanup_free_ char *copy = pvg_strdup(path);
	char *parts[PATH_MAX / 2];
	size_t n = 0;
	char *save = NULL;
	bool slash = *path && path[strlen(path) - 1] == '/';
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (n == ARRAY_SIZE(parts) - 1)
			return -ENAMETOOLONG;
		parts[n++] = c;
	}
	if (slash && n)
		parts[n++] = (char *)".";
	while (n > 0)
		pvg_strv_push(todo, pvg_strdup(parts[--n]));
	return 0;
}

static char *strv_pop(struct pvg_strv *v)
{
	if (v->n == 0)
		return NULL;
	char *s = v->v[--v->n];
	v->v[v->n] = NULL;
	return s;
}

/* The same without openat2 (kernels before 5.6): one component at a time, O_PATH|O_NOFOLLOW,
 * a link read and resolved again from the root when absolute, ".." never above the root. The
 * folders walked are kept so that ".." goes back to the folder we came from, not to what the
 * name ".." means on disk (which a swapped folder could change). */
static int resolve_walk(int root_fd, const char *path, int flags)
{
	_cleanup_(pvg_strv_clear) struct pvg_strv todo = { 0 };
	int stack[PATH_MAX / 2];
	size_t depth = 0;
	/* the name openat2 would be given (leading slashes dropped): the kernel refuses one of
	 * PATH_MAX bytes or more, however few components it has */
	while (*path == '/')
		path++;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	int r = push_components(&todo, path);
	if (r < 0)
		return r;
	int cur = openat(root_fd, ".", O_PATH | O_CLOEXEC | O_DIRECTORY);
	if (cur < 0)
		return -errno;
	int links = 0;
	for (;;) {
		_cleanup_free_ char *c = strv_pop(&todo);
		if (!c)
			break;
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			if (depth > 0) {
				close(cur);
				cur = stack[--depth];
			}
			continue;
		}
		int next = openat(cur, c, O_PATH | O_CLOEXEC | O_NOFOLLOW);
		if (next < 0) {
			r = -errno;
			goto out;
		}
		struct stat st;
		if (fstat(next, &st) < 0) {
			r = -errno;
			close(next);
			goto out;
		}
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t l = readlinkat(next, "", target, sizeof(target) - 1);
			close(next);
			if (l < 0) {
				r = -errno;
				goto out;
			}
			target[l] = '\0';
			if (++links > MAX_LINKS) {
				r = -ELOOP;
				goto out;
			}
			if (target[0] == '/') {
				while (depth > 0) {
					close(cur);
					cur = stack[--depth];
				}
			}
			r = push_components(&todo, target);
			if (r < 0)
				goto out;
			continue;
		}
		if (todo.n > 0 && !S_ISDIR(st.st_mode)) {
			close(next);
			r = -ENOTDIR;
			goto out;
		}
		if (depth == ARRAY_SIZE(stack)) {
			close(next);
			r = -ENAMETOOLONG;
			goto out;
		}
		stack[depth++] = cur;
		cur = next;
	}
	(void)flags;
	while (depth > 0)
		close(stack[--depth]);
	return cur;
out:
	close(cur);
	while (depth > 0)
		close(stack[--depth]);
	return r;
}

/* An O_PATH descriptor of path: inside root_fd when it is >= 0, else as named (links
 * followed unless nofollow). */
static int resolve(const struct pvg_untrusted *how, int dir_fd, const char *path)
{
	if (dir_fd >= 0) {
		/* one component below an open folder: no link is followed at all */
		if (!*path || strchr(path, '/') || strcmp(path, ".") == 0 || strcmp(path, "..") == 0)
			return -EINVAL;
		int fd = openat(dir_fd, path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
		return fd < 0 ? -errno : fd;
	}
	if (how->root_fd >= 0) {
		if (pvg_untrusted_use_openat2()) {
			int fd = resolve_openat2(how->root_fd, path, 0);
			if (fd != -ENOSYS)
				return fd;
		}
		return resolve_walk(how->root_fd, path, 0);
	}
	int fd = open(path, O_PATH | O_CLOEXEC | (how->nofollow ? O_NOFOLLOW : 0));
	return fd < 0 ? -errno : fd;
}

static enum pvg_refusal refusal_of(const struct stat *st, bool want_dir)
{
	if (S_ISREG(st->st_mode))
		return want_dir ? PVG_REFUSED_DIRECTORY : PVG_REFUSED_NONE;
	if (S_ISDIR(st->st_mode))
		return want_dir ? PVG_REFUSED_NONE : PVG_REFUSED_DIRECTORY;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		return PVG_REFUSED_DEVICE;
	if (S_ISFIFO(st->st_mode))
		return PVG_REFUSED_FIFO;
	if (S_ISSOCK(st->st_mode))
		return PVG_REFUSED_SOCKET;
	return PVG_REFUSED_LINK; /* a link left unfollowed (nofollow, or one name below a dir) */
}

static int refusal_errno(enum pvg_refusal r)
{
	switch (r) {
	case PVG_REFUSED_NONE:
		return 0;
	case PVG_REFUSED_DEVICE:
		return -ENODEV;
	case PVG_REFUSED_FIFO:
	case PVG_REFUSED_SOCKET:
		return -ENXIO;
	case PVG_REFUSED_DIRECTORY:
		return -EISDIR;
	case PVG_REFUSED_TOO_BIG:
		return -EFBIG;
	case PVG_REFUSED_OWNER:
		return -EPERM;
	case PVG_REFUSED_LINK:
		return -ELOOP;
	case PVG_REFUSED_USER:
		return -EACCES;
	case PVG_REFUSED_KERNEL_FS:
		return -ENODEV;
	case PVG_REFUSED_IDENTITY:
		return -EPERM;
	}
	return -EINVAL;
}

/* File systems whose files are the kernel's interfaces: a read (or an open) acts. */
static bool kernel_fs(int fd)
{
	static const unsigned long types[] = { PROC_SUPER_MAGIC, SYSFS_MAGIC, DEBUGFS_MAGIC,
					       TRACEFS_MAGIC, SECURITYFS_MAGIC, 0x62656570 /* configfs */,
					       BPF_FS_MAGIC, CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
					       0x6e736673 /* nsfs */, 0x42494e4d /* binfmt_misc */,
					       PSTOREFS_MAGIC, EFIVARFS_MAGIC };
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return true; /* cannot tell: treat as the kernel's */
	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		if ((unsigned long)sf.f_type == types[i])
			return true;
	return false;
}

/* Resolve, check, reopen: the whole open with the rights of the calling process. */
static int open_checked(const struct pvg_untrusted *how, int dir_fd, const char *path,
			struct pvg_untrusted_file *out)
{
	memset(out, 0, sizeof(*out));
	int pfd = resolve(how, dir_fd, path);
	if (pfd < 0) {
		if (pfd == -ELOOP || pfd == -EXDEV)
			out->refused = PVG_REFUSED_LINK;
		return pfd == -EXDEV ? -ELOOP : pfd;
	}
	_cleanup_close_ int path_fd = pfd;
	if (fstat(path_fd, &out->st) < 0)
		return -errno;
	out->refused = refusal_of(&out->st, how->want_dir);
	bool service_side = dir_fd >= 0 || how->root_fd >= 0 || how->as || how->service_side;
	if (out->refused == PVG_REFUSED_NONE && service_side && kernel_fs(path_fd))
		out->refused = PVG_REFUSED_KERNEL_FS;
	if (out->refused == PVG_REFUSED_NONE && how->has_want_uid && out->st.st_uid != how->want_uid)
		out->refused = PVG_REFUSED_OWNER;
	if (out->refused == PVG_REFUSED_NONE && !how->want_dir && how->max_size &&
	    (uint64_t)out->st.st_size > how->max_size)
		out->refused = PVG_REFUSED_TOO_BIG;
	if (out->refused != PVG_REFUSED_NONE)
		return refusal_errno(out->refused);
	/* The same inode, opened for reading: through the descriptor, not the path again, so a
	 * name swapped since the fstat cannot put a device under it. */
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", path_fd);
	int fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
				    (how->want_dir ? O_DIRECTORY : 0));
	if (fd < 0) {
		int e = -errno;
		if (e == -EACCES || e == -EPERM)
			out->refused = PVG_REFUSED_USER;
		return e;
	}
	struct stat again;
	if (fstat(fd, &again) < 0 || again.st_dev != out->st.st_dev ||
	    again.st_ino != out->st.st_ino) {
		/* /proc/self is not this process's (a foreign /proc mounted over it) */
		close(fd);
		return -EXDEV;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

/* ---- as the service's user ------------------------------------------------------------ */

/* what the child sends back beside the descriptor */
struct as_user_answer {
	struct pvg_untrusted_file f;
	int err;
	bool identity; /* err is from setgroups/setresgid/setresuid: nothing was opened */
};

static void close_others(int keep_a, int keep_b)
{
	/* nothing of ours (reports being written, the root's descriptors) reaches the child's
	 * new identity */
	long max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = 3; fd < max; fd++)
		if (fd != keep_a && fd != keep_b)
			close(fd);
}

static _Noreturn void as_user_child(int sock, const struct pvg_untrusted *how, int dir_fd,
				    const char *path, bool change)
{
	struct as_user_answer a = { 0 };
	int keep = dir_fd >= 0 ? dir_fd : how->root_fd;
	close_others(sock, keep);
	const struct pvg_creds *c = how->as;
	/* raw syscalls: the forked child of a threaded parent has one thread, and glibc's
	 * set*id would try to signal the others */
	if (change && (syscall(SYS_setgroups, c->n_groups, c->groups) < 0 ||
		       syscall(SYS_setresgid, c->gid, c->gid, c->gid) < 0 ||
		       syscall(SYS_setresuid, c->uid, c->uid, c->uid) < 0)) {
		/* never opened with our own rights instead: the caller is told why */
		a.err = -errno;
		a.identity = true;
		(void)!write(sock, &a, sizeof(a));
		_exit(1);
	}
	/* the service's own capabilities and no more: a uid 0 target keeps ours through the
	 * calls above, and so does our own uid with capabilities of its own. A change to
	 * another uid has cleared them; a root service keeps those of its CapEff we hold (its
	 * CAP_DAC_OVERRIDE reads what it reads, and one it lacks is not lent). */
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	memset(caps, 0, sizeof(caps));
	if (c->have_caps && syscall(SYS_capget, &h, caps) == 0) {
		for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++) {
			caps[i].permitted &= (uint32_t)(c->cap_eff >> (32 * i));
			caps[i].effective = caps[i].permitted;
			caps[i].inheritable = 0;
		}
	} else {
		memset(caps, 0, sizeof(caps));
	}
	h.version = _LINUX_CAPABILITY_VERSION_3;
	h.pid = 0;
	if (syscall(SYS_capset, &h, caps) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		a.err = -errno;
		(void)!write(sock, &a, sizeof(a));
		_exit(1);
	}
	/* open_checked sees no creds but must still treat the path as the service's */
	int fd = open_checked(how, dir_fd, path, &a.f);
	a.err = fd < 0 ? fd : 0;
	struct msghdr msg = { 0 };
	struct iovec iov = { .iov_base = &a, .iov_len = sizeof(a) };
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	char cbuf[CMSG_SPACE(sizeof(int))];
	if (fd >= 0) {
		memset(cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	_exit(sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 ? 1 : 0);
}

static int open_as_user(const struct pvg_untrusted *how, int dir_fd, const char *path,
			bool change, struct pvg_untrusted_file *out)
{
	memset(out, 0, sizeof(*out));
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(sv[0]);
		close(sv[1]);
		return e;
	}
	if (pid == 0) {
		close(sv[0]);
		as_user_child(sv[1], how, dir_fd, path, change);
	}
	close(sv[1]);
	_cleanup_close_ int sock = sv[0];
	int fd = -1, r;
	struct pollfd p = { .fd = sock, .events = POLLIN };
	int pr;
	do
		pr = poll(&p, 1, AS_USER_TIMEOUT_MS);
	while (pr < 0 && errno == EINTR);
	if (pr <= 0) {
		kill(pid, SIGKILL);
		r = pr == 0 ? -ETIMEDOUT : -errno;
	} else {
		struct as_user_answer a;
		memset(&a, 0, sizeof(a));
		struct msghdr msg = { 0 };
		struct iovec iov = { .iov_base = &a, .iov_len = sizeof(a) };
		char cbuf[CMSG_SPACE(sizeof(int))];
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		ssize_t n;
		do
			n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
		while (n < 0 && errno == EINTR);
		for (struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; cm;
		     cm = CMSG_NXTHDR(&msg, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
				memcpy(&fd, CMSG_DATA(cm), sizeof(int));
		if (n != (ssize_t)sizeof(a)) {
			r = n < 0 ? -errno : -EPROTO;
		} else if (a.identity) {
			memset(out, 0, sizeof(*out));
			out->refused = PVG_REFUSED_IDENTITY;
			r = refusal_errno(PVG_REFUSED_IDENTITY);
		} else {
			*out = a.f;
			r = a.err;
			if (r == 0 && fd < 0)
				r = -EPROTO;
		}
		if (r < 0 && fd >= 0) {
			close(fd);
			fd = -1;
		}
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if ((r == -EACCES || r == -EPERM) && out->refused != PVG_REFUSED_IDENTITY) {
		if (out->refused == PVG_REFUSED_NONE)
			out->refused = PVG_REFUSED_USER;
		r = -EACCES;
	}
	return r < 0 ? r : fd;
}

static int open_any(const char *path, int dir_fd, const struct pvg_untrusted *how,
		    struct pvg_untrusted_file *out)
{
	struct pvg_untrusted_file scratch;
	if (!out)
		out = &scratch;
	if (!how->as)
		return open_checked(how, dir_fd, path, out);
	/* root reads a root service's files as itself, where the service's own capabilities
	 * pass DAC as ours do (CAP_DAC_OVERRIDE, in Docker's and podman's default set too, or
	 * capabilities not known); a root service without it gets only what its capabilities
	 * give, in the child */
	if (geteuid() == 0 && how->as->uid == 0 && how->as->gid == 0 &&
	    (!how->as->have_caps || (how->as->cap_eff & (1ull << CAP_DAC_OVERRIDE))))
		return open_checked(how, dir_fd, path, out);
	/* already exactly that user: no identity to change (with no capability, nothing to
	 * drop either); else the child changes it, or refuses where it cannot */
	bool same = already_user(how->as);
	if (same && !has_effective_caps())
		return open_checked(how, dir_fd, path, out);
	return open_as_user(how, dir_fd, path, !same, out);
}

int pvg_open_untrusted(const char *path, const struct pvg_untrusted *how,
		       struct pvg_untrusted_file *out)
{
	return open_any(path, -1, how, out);
}

int pvg_openat_untrusted(int dir_fd, const char *name, const struct pvg_untrusted *how,
			 struct pvg_untrusted_file *out)
{
	if (dir_fd < 0)
		return -EBADF;
	return open_any(name, dir_fd, how, out);
}

/* ---- the bounded whole-file readers of util.h ---------------------------------------- */

int pvg_open_regular(const char *path, struct stat *st)
{
	/* O_PATH first: a device named here is never opened, not even to be refused */
	const struct pvg_untrusted how = { .root_fd = -1 };
	struct pvg_untrusted_file f;
	int fd = pvg_open_untrusted(path, &how, &f);
	*st = f.st;
	if (fd >= 0 || fd == -EISDIR)
		return fd;
	if (f.refused == PVG_REFUSED_DEVICE || f.refused == PVG_REFUSED_FIFO ||
	    f.refused == PVG_REFUSED_SOCKET)
		return -EINVAL;
	return fd;
}

int pvg_read_file(const char *path, size_t max, char **out, size_t *len)
{
	*out = NULL;
	if (len)
		*len = 0;
	struct stat st;
	_cleanup_close_ int fd = pvg_open_regular(path, &st);
	if (fd < 0)
		return fd;
	/* a size over the bound is refused unread (a sparse file costs no disk to make
	 * huge); /proc text says 0 and is bounded while it is read */
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	return pvg_read_fd(fd, max, out, len);
}

/* The loop of both: read(2) from the fd's offset, or pread(2) at off when positioned. */
static ssize_t read_loop(int fd, void *buf, size_t len, bool positioned, uint64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = positioned ? pread(fd, (char *)buf + got, len - got, (off_t)(off + got))
				       : read(fd, (char *)buf + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

ssize_t pvg_read_full(int fd, void *buf, size_t len)
{
	return read_loop(fd, buf, len, false, 0);
}

ssize_t pvg_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	return read_loop(fd, buf, len, true, off);
}

int pvg_read_fd(int fd, size_t max, char **out, size_t *len)
{
	*out = NULL;
	if (len)
		*len = 0;
	/* /proc files report size 0: start small and grow as we read, up to max */
	size_t cap = max < 16384 ? max : 16384, have = 0;
	_cleanup_free_ char *buf = pvg_xcalloc(cap + 1, 1);
	for (;;) {
		if (have == cap && cap < max) {
			cap = cap * 2 > max ? max : cap * 2;
			buf = pvg_xrealloc(buf, cap + 1, 1);
		}
		if (have == max) {
			/* one more byte tells "exactly max" from "too big" */
			char c;
			if (pvg_read_full(fd, &c, 1) > 0)
				return -EFBIG;
			break;
		}
		ssize_t r = pvg_read_full(fd, buf + have, cap - have);
		if (r < 0)
			return (int)r;
		have += (size_t)r;
		if (have < cap)
			break; /* the end of the file */
	}
	buf[have] = '\0';
	*out = TAKE_PTR(buf);
	if (len)
		*len = have;
	return 0;
}

/* ---- sizes ------------------------------------------------------------------------------ */

/* Counts without moving fd's offset (pread-style callers and read callers alike). */
static uint64_t data_bytes(int fd, uint64_t size)
{
	uint64_t data = 0;
	off_t pos = 0;
	/* a file of a million extents is read as it is: counting stops there */
	for (int extents = 0; (uint64_t)pos < size && extents < (1 << 20); extents++) {
		off_t d = lseek(fd, pos, SEEK_DATA);
		if (d < 0)
			return errno == ENXIO ? data : size; /* ENXIO: only a hole is left */
		off_t h = lseek(fd, d, SEEK_HOLE);
		if (h < 0)
			return size;
		if ((uint64_t)h > size)
			h = (off_t)size;
		data += (uint64_t)(h - d);
		pos = h;
		if (h <= d)
			break;
	}
	if ((uint64_t)pos < size)
		return size;
	return data;
}

uint64_t pvg_data_bytes(int fd, uint64_t size)
{
	off_t at = lseek(fd, 0, SEEK_CUR);
	uint64_t data = data_bytes(fd, size);
	if (at >= 0)
		(void)lseek(fd, at, SEEK_SET);
	return data;
}

/* ---- credentials ------------------------------------------------------------------------ */

int pvg_proc_creds(const char *procfs, pid_t pid, struct pvg_creds *out)
{
	memset(out, 0, sizeof(*out));
	_cleanup_free_ char *path = pvg_asprintf("%s/%d/status", procfs, (int)pid);
	_cleanup_free_ char *text = NULL;
	int r = pvg_read_file(path, 1u << 16, &text, NULL);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	bool have_uid = false, have_gid = false;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		unsigned long v[4];
		if (strncmp(line, "Uid:", 4) == 0 &&
		    sscanf(line + 4, "%lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) == 4 &&
		    v[3] <= UINT32_MAX) {
			out->uid = (uid_t)v[3]; /* the file-system uid decides what it may open */
			have_uid = true;
		} else if (strncmp(line, "Gid:", 4) == 0 &&
			   sscanf(line + 4, "%lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) == 4 &&
			   v[3] <= UINT32_MAX) {
			out->gid = (gid_t)v[3];
			have_gid = true;
		} else if (strncmp(line, "CapEff:", 7) == 0) {
			char *end;
			errno = 0;
			unsigned long long v64 = strtoull(line + 7, &end, 16);
			if (end != line + 7 && !errno) {
				out->cap_eff = (uint64_t)v64;
				out->have_caps = true;
			}
		} else if (strncmp(line, "Groups:", 7) == 0) {
			char *p = line + 7, *end;
			for (;;) {
				errno = 0;
				unsigned long g = strtoul(p, &end, 10);
				if (end == p)
					break;
				if (errno || g > UINT32_MAX)
					return -EINVAL;
				if (out->n_groups == PVG_CREDS_MAX_GROUPS)
					return -E2BIG;
				out->groups[out->n_groups++] = (gid_t)g;
				p = end;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return have_uid && have_gid ? 0 : -EINVAL;
}

int pvg_proc_open_as(const char *procfs, pid_t pid, const char *path, bool dir, uint64_t max,
		     enum pvg_refusal *refused)
{
	_cleanup_free_ char *base = pvg_asprintf("%s/%d/%s", procfs, (int)pid,
						 path[0] == '/' ? "root" : "cwd");
	_cleanup_close_ int root = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	struct pvg_creds creds;
	/* its user's rights, also where that user is ours: the open compares all of the
	 * identity, not the uid alone */
	bool as_user = pvg_proc_creds(procfs, pid, &creds) == 0;
	const struct pvg_untrusted how = { .root_fd = root, .want_dir = dir, .max_size = max,
					   .as = as_user ? &creds : NULL };
	struct pvg_untrusted_file f = { 0 };
	int fd = pvg_open_untrusted(path, &how, &f);
	if (refused)
		*refused = f.refused;
	return fd;
}
