/* SPDX-License-Identifier: MIT */
/* provgate init's look around: git through libgit2, processes through /proc text. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <git2.h>

#include "formats/maps.h"
#include "formats/net-tcp.h"
#include "sys/maps.h"
#include "sys/net-tcp.h"
#include "sys/probe.h"
#include "sys/procs.h"

static bool ref_exists(git_repository *repo, const char *name)
{
	git_object *o = NULL;
	if (git_revparse_single(&o, repo, name) < 0)
		return false;
	git_object_free(o);
	return true;
}

int pvg_probe_git(const char *dir, char **workdir, char **baseline, char **branch)
{
	*workdir = *baseline = *branch = NULL;
	git_libgit2_init();
	git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
	git_repository *repo = NULL;
	int ret = 0;
	if (git_repository_open_ext(&repo, dir, 0, NULL) < 0 || git_repository_is_bare(repo)) {
		ret = -ENOTDIR;
		goto out;
	}
	const char *wd = git_repository_workdir(repo);
	size_t wl = strlen(wd);
	*workdir = pvg_asprintf("%.*s", (int)(wl > 1 && wd[wl - 1] == '/' ? wl - 1 : wl), wd);
	git_reference *head = NULL;
	if (git_repository_head(&head, repo) == 0 && git_reference_is_branch(head))
		*branch = pvg_strdup(git_reference_shorthand(head));
	git_reference_free(head);
	/* origin/HEAD names the remote's default branch */
	git_reference *oh = NULL;
	if (git_reference_lookup(&oh, repo, "refs/remotes/origin/HEAD") == 0 &&
	    git_reference_type(oh) == GIT_REFERENCE_SYMBOLIC) {
		const char *t = git_reference_symbolic_target(oh);
		if (strncmp(t, "refs/remotes/", 13) == 0 && ref_exists(repo, t))
			*baseline = pvg_strdup(t + 13);
	}
	git_reference_free(oh);
	static const char *const guesses[] = { "origin/main", "origin/master", "main", "master" };
	for (size_t i = 0; !*baseline && i < ARRAY_SIZE(guesses); i++) {
		if (*branch && strcmp(*branch, guesses[i]) == 0)
			continue; /* the change's own branch is no baseline */
		if (ref_exists(repo, guesses[i]))
			*baseline = pvg_strdup(guesses[i]);
	}
out:
	git_repository_free(repo);
	git_libgit2_shutdown();
	return ret;
}

void pvg_probe_proc_clear(struct pvg_probe_proc *p)
{
	free(p->cmdline);
	free(p->mapped);
	pvg_strv_clear(&p->argv);
	memset(p, 0, sizeof(*p));
}

void pvg_probe_procs_clear(struct pvg_probe_procs *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		pvg_probe_proc_clear(&ps->p[i]);
	free(ps->p);
	ps->p = NULL;
	ps->n = 0;
}

int pvg_probe_proc_read(const char *procfs, pid_t pid, struct pvg_probe_proc *out)
{
	memset(out, 0, sizeof(*out));
	out->pid = pid;
	_cleanup_free_ char *path = pvg_asprintf("%s/%d/stat", procfs, (int)pid);
	_cleanup_free_ char *stat = NULL;
	size_t len;
	int r = pvg_read_file(path, 4096, &stat, &len);
	if (r < 0)
		return r;
	/* "pid (comm) S ppid ...": comm may hold spaces and parentheses; the last ')' ends it */
	char *open = strchr(stat, '('), *close = strrchr(stat, ')');
	if (!open || !close || close < open)
		return -EINVAL;
	snprintf(out->comm, sizeof(out->comm), "%.*s", (int)(close - open - 1), open + 1);
	char state;
	int ppid;
	if (sscanf(close + 1, " %c %d", &state, &ppid) != 2)
		return -EINVAL;
	out->ppid = ppid;
	free(path);
	path = pvg_asprintf("%s/%d/cmdline", procfs, (int)pid);
	_cleanup_free_ char *cmd = NULL;
	if (pvg_read_file(path, 64u << 10, &cmd, &len) == 0 && len) {
		for (size_t at = 0; at < len && out->argv.n < 64;) {
			size_t n = strnlen(cmd + at, len - at);
			pvg_strv_push(&out->argv, pvg_utf8_sanitize(cmd + at, n));
			at += n + 1;
		}
		for (size_t i = 0; i + 1 < len; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		while (len && (cmd[len - 1] == '\0' || cmd[len - 1] == ' '))
			cmd[--len] = '\0';
		out->cmdline = pvg_utf8_sanitize(cmd, len);
	}
	return 0;
}

int pvg_probe_mappers(const char *procfs, const char *name, struct pvg_probe_procs *out)
{
	out->p = NULL;
	out->n = 0;
	DIR *d = opendir(procfs);
	if (!d)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid_t pid = (pid_t)atoi(de->d_name);
		if (pid == getpid())
			continue;
		struct pvg_maps maps = { 0 };
		if (pvg_maps_read(procfs, pid, &maps) < 0)
			continue; /* another user's process, or gone */
		const struct pvg_mapping *hit = NULL;
		for (size_t i = 0; i < maps.n && !hit; i++)
			if (maps.m[i].path && strcmp(pvg_basename(maps.m[i].path), name) == 0)
				hit = &maps.m[i];
		if (hit) {
			struct pvg_probe_proc p;
			if (pvg_probe_proc_read(procfs, pid, &p) == 0) {
				p.mapped = pvg_strdup(hit->path);
				p.deleted = hit->deleted;
				out->p = pvg_xrealloc(out->p, out->n + 1, sizeof(*out->p));
				out->p[out->n++] = p;
			}
		}
		pvg_maps_clear(&maps);
	}
	closedir(d);
	return 0;
}

struct sockets {
	uint64_t *ino;
	size_t n;
};

static bool collect_socket(void *opaque, int dirfd, int fd, const char *link)
{
	struct sockets *s = opaque;
	(void)dirfd;
	(void)fd;
	if (strncmp(link, "socket:[", 8) == 0 && s->n < 4096) {
		s->ino = pvg_xrealloc(s->ino, s->n + 1, sizeof(*s->ino));
		s->ino[s->n++] = strtoull(link + 8, NULL, 10);
	}
	return true;
}

uint16_t pvg_probe_listen_port(const char *procfs, pid_t pid)
{
	struct sockets s = { 0 };
	if (pvg_proc_fds(procfs, pid, collect_socket, &s) < 0 || !s.n) {
		free(s.ino);
		return 0;
	}
	struct pvg_tcp_table t = { 0 };
	uint16_t best = 0;
	if (pvg_net_tcp_listeners(procfs, 0, &t) == 0)
		for (size_t i = 0; i < t.n; i++)
			for (size_t k = 0; k < s.n; k++)
				if (t.s[i].inode == s.ino[k] && (!best || t.s[i].port < best))
					best = t.s[i].port;
	pvg_tcp_table_clear(&t);
	free(s.ino);
	return best;
}

struct log_scan {
	struct pvg_strv out_fd; /* stdout / stderr */
	struct pvg_strv logs;   /* open *.log files */
};

static bool find_log(void *opaque, int dirfd, int fd, const char *link)
{
	struct log_scan *l = opaque;
	if (link[0] != '/' || strncmp(link, "/dev/", 5) == 0 || strstr(link, " (deleted)"))
		return true;
	struct stat st;
	char name[16];
	snprintf(name, sizeof(name), "%d", fd);
	if (fstatat(dirfd, name, &st, 0) < 0 || !S_ISREG(st.st_mode))
		return true;
	size_t n = strlen(link);
	if (fd == 1 || fd == 2)
		pvg_strv_add_unique(&l->out_fd, link);
	else if (n > 4 && strcmp(link + n - 4, ".log") == 0 && l->logs.n < 16)
		pvg_strv_add_unique(&l->logs, link);
	return true;
}

void pvg_probe_log_paths(const char *procfs, pid_t pid, struct pvg_strv *out)
{
	struct log_scan l = { 0 };
	(void)pvg_proc_fds(procfs, pid, find_log, &l);
	for (int k = 0; k < 2; k++) {
		struct pvg_strv *v = k ? &l.logs : &l.out_fd;
		for (size_t i = 0; i < v->n; i++) {
			pvg_strv_add_unique(out, v->v[i]);
			free(v->v[i]);
		}
		free(v->v);
	}
}

struct written_scan {
	int fd[16];
	char *path[16];
	size_t n;
};

static bool find_written(void *opaque, int dirfd, int fd, const char *link)
{
	struct written_scan *w = opaque;
	if (fd < 3 || link[0] != '/' || strncmp(link, "/dev/", 5) == 0 ||
	    strstr(link, " (deleted)"))
		return true;
	struct stat st;
	char name[16];
	snprintf(name, sizeof(name), "%d", fd);
	if (fstatat(dirfd, name, &st, 0) < 0 || !S_ISREG(st.st_mode))
		return true;
	w->fd[w->n] = fd;
	w->path[w->n++] = pvg_strdup(link);
	return w->n < ARRAY_SIZE(w->fd);
}

void pvg_probe_written_files(const char *procfs, pid_t pid, struct pvg_strv *out)
{
	struct written_scan w = { 0 };
	(void)pvg_proc_fds(procfs, pid, find_written, &w);
	for (size_t i = 0; i < w.n; i++) {
		/* "flags:\t0102001": octal open flags; read-only files (a loaded model, a
		 * library) are no log */
		_cleanup_free_ char *info = pvg_asprintf("%s/%d/fdinfo/%d", procfs, (int)pid, w.fd[i]);
		_cleanup_free_ char *text = NULL;
		size_t len;
		const char *f = NULL;
		if (pvg_read_file(info, 4096, &text, &len) == 0)
			f = strstr(text, "flags:");
		unsigned long flags = f ? strtoul(f + 6, NULL, 8) : 0;
		if (f && ((flags & O_ACCMODE) == O_WRONLY || (flags & O_APPEND)))
			pvg_strv_add_unique(out, w.path[i]);
		free(w.path[i]);
	}
}

char *pvg_probe_cwd(const char *procfs, pid_t pid)
{
	_cleanup_free_ char *link = pvg_asprintf("%s/%d/cwd", procfs, (int)pid);
	char buf[PATH_MAX];
	ssize_t n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0 || buf[0] != '/')
		return NULL;
	buf[n] = '\0';
	return pvg_strdup(buf);
}
