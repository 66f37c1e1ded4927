/* SPDX-License-Identifier: MIT */
/*
 * Process discovery through libproc2 (procps-ng 4.0). One reap per run: every later question
 * (which process is the target, which are its descendants, who is a stale service process) is
 * answered from that snapshot, so that every question sees one view of the system.
 * libproc2 always reads the real /proc; the text readers take a procfs root.
 */
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <sys/stat.h>

#include <libproc2/pids.h>

#include "sys/maps.h"
#include "sys/procs.h"
#include "util/thread.h"

/* Only items from stat and cmdline: asking for a uid makes libproc2 read status too, a
 * third file per process; the uid is taken from /proc/<pid> for the few processes reported. */
enum { I_PID, I_PPID, I_BEGAN, I_STATE, I_CMD, I_CMDLINE };
static enum pids_item items[] = { PIDS_ID_PID, PIDS_ID_PPID, PIDS_TICS_BEGAN,
				  PIDS_STATE,  PIDS_CMD,     PIDS_CMDLINE };

/* The processes libproc2 lists are those of the real /proc, whatever pvg_procfs_root() says:
 * what is read about them to complete the snapshot (owner, executable) comes from there too. */
#define LIBPROC2_ROOT "/proc"

static void pids_unrefp(struct pids_info **i)
{
	if (*i)
		procps_pids_unref(i);
}

static int cmp_proc(const void *a, const void *b)
{
	const struct pvg_proc *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

const struct pvg_proc *pvg_targets_find(const struct pvg_targets *t, pid_t pid)
{
	struct pvg_proc key = { .pid = pid };
	if (!t || !t->procs)
		return NULL;
	return bsearch(&key, t->procs, t->n, sizeof(*t->procs), cmp_proc);
}

bool pvg_targets_in_tree(const struct pvg_targets *t, pid_t pid)
{
	const struct pvg_proc *p = pvg_targets_find(t, pid);
	return p && p->in_tree;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

bool pvg_targets_tree_has_ns_pid(const struct pvg_targets *t, pid_t pid)
{
	return t && t->n_tree_ns_pids &&
	       bsearch(&pid, t->tree_ns_pids, t->n_tree_ns_pids, sizeof(pid_t), cmp_pid);
}

void pvg_targets_free(void *ptr)
{
	struct pvg_targets *t = ptr;
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->procs[i].cmdline);
	free(t->procs);
	pvg_msg_clear(&t->msg);
	free(t->targets);
	free(t->strays);
	free(t->tree_ns_pids);
	free(t);
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static bool text_matches(const char *text, const char *pattern)
{
	if (!text)
		return false;
	if (has_glob(pattern))
		return fnmatch(pattern, text, 0) == 0;
	return strstr(text, pattern) != NULL;
}

bool pvg_proc_matches(const struct pvg_proc *p, const char *pattern)
{
	if (!pattern[0])
		return false;
	if (text_matches(p->cmdline, pattern) || text_matches(p->comm, pattern))
		return true;
	/* The kernel cuts comm to 15 bytes: "VLLM::EngineCore" shows as "VLLM::EngineCor". Only
	 * a pattern that can be a process name (no space, no '/') is compared with the cut
	 * name; "VLLM::EngineCore --tag x" is about the command line. */
	size_t cl = strlen(p->comm);
	return cl == 15 && strlen(pattern) > 15 && !has_glob(pattern) &&
	       !strpbrk(pattern, " \t/") && strncmp(pattern, p->comm, 15) == 0;
}

bool pvg_proc_matches_any(const struct pvg_proc *p, const struct pvg_strv *patterns)
{
	for (size_t i = 0; i < patterns->n; i++)
		if (pvg_proc_matches(p, patterns->v[i]))
			return true;
	return false;
}

void pvg_proc_format_start(const struct pvg_proc *p, char *out, size_t size)
{
	pvg_format_time(p->start.tv_sec, p->start.tv_nsec, out, size);
}

/* Is p provgate: this process, or another run of the same program under its own name? */
static bool is_provgate(const struct pvg_proc *p, const struct stat *self_exe,
			const char *self_comm)
{
	if (p->pid == getpid())
		return true;
	if (!self_exe || strcmp(p->comm, self_comm) != 0)
		return false;
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), LIBPROC2_ROOT "/%d/exe", (int)p->pid);
	return stat(path, &st) == 0 && st.st_dev == self_exe->st_dev &&
	       st.st_ino == self_exe->st_ino;
}

static int snapshot(struct pvg_targets *t)
{
	_cleanup_(pids_unrefp) struct pids_info *info = NULL;
	int r = procps_pids_new(&info, items, (int)ARRAY_SIZE(items));
	if (r < 0)
		return r;
	struct timespec rt, bt;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_BOOTTIME, &bt);
	int64_t boot_ns = ((int64_t)rt.tv_sec - bt.tv_sec) * 1000000000 + (rt.tv_nsec - bt.tv_nsec);
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0)
		hz = 100;
	t->tick_ns = 1000000000L / hz;

	struct pids_fetch *f = procps_pids_reap(info, PIDS_FETCH_TASKS_ONLY);
	if (!f)
		return errno ? -errno : -EIO;
	int total = f->counts ? f->counts->total : 0;
	t->procs = pvg_xcalloc(total > 0 ? (size_t)total : 1, sizeof(*t->procs));
	for (int i = 0; i < total; i++) {
		struct pids_stack *s = f->stacks[i];
		struct pvg_proc *p = &t->procs[t->n];
		p->pid = PIDS_VAL(I_PID, s_int, s, info);
		p->ppid = PIDS_VAL(I_PPID, s_int, s, info);
		p->uid = (uid_t)-1;
		p->start_ticks = PIDS_VAL(I_BEGAN, ull_int, s, info);
		p->zombie = PIDS_VAL(I_STATE, s_ch, s, info) == 'Z';
		if (p->pid <= 0)
			continue;
		int64_t ns = boot_ns + (int64_t)(p->start_ticks * (uint64_t)t->tick_ns);
		p->start.tv_sec = (time_t)(ns / 1000000000);
		p->start.tv_nsec = (long)(ns % 1000000000);
		/* strings are NULL for a process that exited while it was read */
		const char *comm = PIDS_VAL(I_CMD, str, s, info);
		const char *cmdline = PIDS_VAL(I_CMDLINE, str, s, info);
		if (comm)
			snprintf(p->comm, sizeof(p->comm), "%s", comm);
		/* libproc2 shows "-" or the bracketed comm when there is no command line */
		if (cmdline && cmdline[0] && strcmp(cmdline, "-") != 0 &&
		    !(cmdline[0] == '[' && comm && strlen(cmdline) == strlen(comm) + 2 &&
		      strncmp(cmdline + 1, comm, strlen(comm)) == 0))
			p->cmdline = pvg_strdup(cmdline);
		t->n++;
	}
	qsort(t->procs, t->n, sizeof(*t->procs), cmp_proc);
	return 0;
}

static void add_pid(pid_t **v, size_t *n, pid_t pid)
{
	*v = pvg_xrealloc(*v, *n + 1, sizeof(**v));
	(*v)[(*n)++] = pid;
}

/* pid from a pidfile: a decimal number, optional whitespace around it. */
static int read_pidfile(const char *path, pid_t *pid, struct timespec *mtime, char **why)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	struct stat st;
	int r = pvg_read_file(path, 64, &text, &len);
	if (r < 0) {
		*why = pvg_asprintf("pidfile %s cannot be read: %s", path,
				    r == -EFBIG ? "longer than a pid" : strerror(-r));
		return r == -EACCES || r == -EPERM ? -EACCES : r == -ENOENT ? -ENOENT : -EINVAL;
	}
	if (stat(path, &st) == 0)
		*mtime = st.st_mtim;
	char *s = text, *end;
	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	errno = 0;
	long v = strtol(s, &end, 10);
	while (end && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
		end++;
	if (errno || end == s || *end || v <= 0 || v > 0x3fffffff) {
		_cleanup_free_ char *shown = pvg_utf8_sanitize(text, strnlen(text, 40));
		*why = pvg_asprintf("pidfile %s does not hold a pid: \"%s\"", path, shown);
		return -EINVAL;
	}
	*pid = (pid_t)v;
	return 0;
}

static int64_t ts_ns(struct timespec ts)
{
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* in_tree for every process: walk up from each one until the root, pid 0, or a process
 * already decided. Memoized, so the whole table costs O(n log n). */
static void mark_tree(struct pvg_targets *t)
{
	enum { UNKNOWN, IN, OUT };
	_cleanup_free_ unsigned char *state = pvg_xcalloc(t->n ? t->n : 1, 1);
	_cleanup_free_ size_t *path = pvg_xcalloc(t->n ? t->n : 1, sizeof(size_t));
	for (size_t i = 0; i < t->n; i++) {
		size_t depth = 0, k = i;
		unsigned char verdict = OUT;
		for (;;) {
			if (state[k] != UNKNOWN) {
				verdict = state[k];
				break;
			}
			if (t->procs[k].pid == t->root) {
				verdict = IN;
				break;
			}
			path[depth++] = k;
			const struct pvg_proc *parent = pvg_targets_find(t, t->procs[k].ppid);
			/* depth bound: a ppid cycle cannot happen, but a snapshot is not atomic */
			if (!parent || parent == &t->procs[k] || depth >= t->n)
				break;
			k = (size_t)(parent - t->procs);
		}
		for (size_t d = 0; d < depth; d++)
			state[path[d]] = verdict;
		if (state[i] == UNKNOWN)
			state[i] = verdict;
	}
	for (size_t i = 0; i < t->n; i++)
		t->procs[i].in_tree = state[i] == IN;
}

static void fill_uids(struct pvg_targets *t)
{
	char path[64];
	struct stat st;
	for (size_t i = 0; i < t->n; i++) {
		struct pvg_proc *p = &t->procs[i];
		if (!(p->family || p->matched || p->in_tree))
			continue;
		snprintf(path, sizeof(path), LIBPROC2_ROOT "/%d", (int)p->pid);
		if (stat(path, &st) == 0)
			p->uid = st.st_uid;
	}
}

/* Namespaces and own-namespace pids of the tree, the selected and the service processes. A
 * process whose NSpid cannot be read (a kernel before 4.1, or gone) keeps pid as its
 * own-namespace pid when it shares provgate's pid namespace or its namespace cannot be read
 * either. */
static void fill_ns(struct pvg_targets *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct pvg_proc *p = &t->procs[i];
		if (!(p->family || p->matched || p->in_tree) || p->ns_pid)
			continue;
		(void)pvg_ns_read("/proc", p->pid, &p->ns);
		struct pvg_nspid n;
		if (pvg_proc_nspid("/proc", p->pid, &n) == 0)
			p->ns_pid = pvg_nspid_inner(&n);
		else if (!p->ns.pid || p->ns.pid == t->self_pidns)
			p->ns_pid = p->pid; /* provgate's namespace (or gone: as it was seen) */
	}
	for (size_t i = 0; i < t->n; i++)
		if (t->procs[i].in_tree && t->procs[i].ns_pid)
			add_pid(&t->tree_ns_pids, &t->n_tree_ns_pids, t->procs[i].ns_pid);
	if (t->n_tree_ns_pids)
		qsort(t->tree_ns_pids, t->n_tree_ns_pids, sizeof(pid_t), cmp_pid);
}

static bool kernel_thread(const struct pvg_proc *p)
{
	return p->pid == 2 || p->ppid == 2;
}

/*
 * A pidfile's pid is a pid of the namespace its writer ran in: a service in a container
 * writes 1 or 57, which on the host is init or a kernel thread. Every process whose pid in
 * its own namespace is that number is a candidate (a process of provgate's namespace is one
 * when its pid is the number); one that started after the pidfile was written did not
 * write it; among several, the service processes (service.family / match) are kept.
 */
static struct pvg_proc *resolve_pidfile(struct pvg_targets *t, pid_t pid, const char *pidfile,
					struct timespec mtime)
{
	struct pvg_proc **cand = NULL;
	size_t n = 0, reused = 0;
	for (size_t i = 0; i < t->n; i++) {
		struct pvg_proc *p = &t->procs[i];
		if (p->zombie || kernel_thread(p))
			continue;
		pid_t own = 0;
		struct pvg_ns_ids ns;
		if (pvg_ns_read("/proc", p->pid, &ns) < 0 || ns.pid == t->self_pidns || !ns.pid) {
			own = p->pid;
		} else {
			struct pvg_nspid np;
			if (pvg_proc_nspid("/proc", p->pid, &np) == 0)
				own = pvg_nspid_inner(&np);
		}
		if (own != pid)
			continue;
		if (mtime.tv_sec && ts_ns(p->start) > ts_ns(mtime) + t->tick_ns) {
			reused++;
			continue;
		}
		cand = pvg_xrealloc(cand, n + 1, sizeof(*cand));
		cand[n++] = p;
	}
	if (n > 1) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (cand[i]->family && !cand[i]->self)
				cand[k++] = cand[i];
		if (k)
			n = k;
	}
	/* still several: the writer sees the pidfile at that path in its own mount namespace
	 * (a process of another container usually does not) */
	struct stat pf;
	_cleanup_free_ char *abs = n > 1 ? realpath(pidfile, NULL) : NULL;
	if (abs && stat(abs, &pf) == 0) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			_cleanup_free_ char *via = pvg_asprintf("/proc/%d/root%s", (int)cand[i]->pid, abs);
			struct stat st;
			int r = stat(via, &st) == 0 ? 0 : -errno;
			/* a root provgate may not enter could see it: that one stays a candidate */
			if ((r == 0 && st.st_dev == pf.st_dev && st.st_ino == pf.st_ino) ||
			    r == -EACCES || r == -EPERM)
				cand[k++] = cand[i];
		}
		if (k)
			n = k;
	}
	struct pvg_proc *found = n == 1 ? cand[0] : NULL;
	if (n > 1) {
		t->err = -ENOTUNIQ;
		t->msg.text = pvg_asprintf("pidfile %s names pid %d, which is the pid of %zu processes in "
				      "different pid namespaces that all see the pidfile (first %d and %d "
				      "in provgate's view)",
				      pidfile, (int)pid, n, (int)cand[0]->pid, (int)cand[1]->pid);
	} else if (!n) {
		t->err = -ESRCH;
		t->msg.text = reused ? pvg_asprintf("pidfile %s names pid %d, but that process started "
					       "after the pidfile was written: the pid was reused",
					       pidfile, (int)pid)
				: pvg_asprintf("pidfile %s names pid %d, which is not running (in "
					       "any pid namespace provgate can see)",
					       pidfile, (int)pid);
	}
	free(cand);
	return found;
}

static void select_targets(const struct pvg_service_spec *svc, struct pvg_targets *t)
{
	struct stat self_exe_st;
	bool have_self = stat(LIBPROC2_ROOT "/self/exe", &self_exe_st) == 0;
	const struct pvg_proc *me = pvg_targets_find(t, getpid());
	const char *self_comm = me ? me->comm : "";

	for (size_t i = 0; i < t->n; i++) {
		struct pvg_proc *p = &t->procs[i];
		bool fam = pvg_proc_matches_any(p, &svc->family) ||
			   pvg_proc_matches_any(p, &svc->match);
		if (p->zombie)
			fam = false; /* holds nothing: no memory, no port, no device */
		if (fam && is_provgate(p, have_self ? &self_exe_st : NULL, self_comm)) {
			p->self = true;
			fam = false;
		}
		if (p->pid == getpid())
			p->self = true;
		p->family = fam;
	}

	if (svc->pid > 0 || svc->pidfile) {
		pid_t pid = (pid_t)svc->pid;
		struct timespec pidfile_mtime = { 0 };
		t->how = svc->pid > 0 ? PVG_SELECT_PID : PVG_SELECT_PIDFILE;
		if (t->how == PVG_SELECT_PIDFILE) {
			int r = read_pidfile(svc->pidfile, &pid, &pidfile_mtime, &t->msg.text);
			if (r < 0) {
				t->err = r;
				return;
			}
		}
		struct pvg_proc *p;
		if (t->how == PVG_SELECT_PIDFILE) {
			p = resolve_pidfile(t, pid, svc->pidfile, pidfile_mtime);
			if (!p)
				return;
			pid = p->pid;
		} else if (!(p = (struct pvg_proc *)pvg_targets_find(t, pid))) {
			t->err = -ESRCH;
			t->msg.text = pvg_asprintf("service.pid %d is not running", (int)pid);
			return;
		}
		if (p->self) {
			t->err = -ESRCH;
			t->msg.text = pvg_asprintf("pid %d is provgate itself", (int)pid);
			return;
		}
		p->matched = true;
		t->primary = pid;
	} else if (svc->match.n) {
		t->how = PVG_SELECT_MATCH;
		const struct pvg_proc *newest = NULL;
		for (size_t i = 0; i < t->n; i++) {
			struct pvg_proc *p = &t->procs[i];
			if (p->self || p->zombie || !pvg_proc_matches_any(p, &svc->match))
				continue;
			p->matched = true;
			if (!newest || p->start_ticks > newest->start_ticks ||
			    (p->start_ticks == newest->start_ticks && p->pid > newest->pid))
				newest = p;
		}
		if (!newest) {
			t->err = -ESRCH;
			t->msg.text = pvg_asprintf("no process matches service.match (%zu pattern%s, "
					      "first \"%s\")",
					      svc->match.n, svc->match.n == 1 ? "" : "s",
					      svc->match.v[0]);
			return;
		}
		/* The newest match is the live service; within its tree prefer the topmost match,
		 * so that a worker never stands for the engine. */
		const struct pvg_proc *top = newest;
		for (const struct pvg_proc *q = pvg_targets_find(t, newest->ppid); q;
		     q = pvg_targets_find(t, q->ppid)) {
			if (q->matched)
				top = q;
			if (q->pid <= 1 || q->ppid == q->pid)
				break;
		}
		t->primary = top->pid;
	} else {
		t->err = -EDESTADDRREQ;
		t->msg.text = pvg_strdup("none of service.pid, service.pidfile, service.match is set");
		return;
	}

	/* The tree's root: climb while the parent is a service process, so that the API server
	 * and the engine's siblings belong to it (vllm serve -> EngineCore -> workers). */
	const struct pvg_proc *root = pvg_targets_find(t, t->primary);
	for (;;) {
		const struct pvg_proc *parent = pvg_targets_find(t, root->ppid);
		/* pid 1 is the service's own top process in a container's pid namespace; the
		 * host's init is never a service process */
		if (!parent || parent == root || parent->ppid == parent->pid || parent->self ||
		    !(parent->family || parent->matched))
			break;
		root = parent;
	}
	t->root = root->pid;
	mark_tree(t);

	add_pid(&t->targets, &t->n_targets, t->primary);
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!p->matched || p->pid == t->primary)
			continue;
		if (p->in_tree)
			add_pid(&t->targets, &t->n_targets, p->pid);
		else
			add_pid(&t->strays, &t->n_strays, p->pid);
	}
}

int pvg_targets_scan(const struct pvg_service_spec *svc, struct pvg_targets **out)
{
	struct pvg_targets *t = pvg_xcalloc(1, sizeof(*t));
	uint64_t t0 = pvg_now_ns();
	int r = snapshot(t);
	if (r < 0) {
		pvg_targets_free(t);
		return r;
	}
	struct pvg_ns_ids self;
	if (pvg_ns_read("/proc", 0, &self) == 0)
		t->self_pidns = self.pid;
	select_targets(svc, t);
	fill_uids(t);
	fill_ns(t);
	t->scan_ns = pvg_now_ns() - t0;
	*out = t;
	return 0;
}

/* ---- file descriptors ----------------------------------------------------------------------- */

const struct pvg_strv *pvg_gpu_device_globs(void)
{
	static char *defaults[] = { "/dev/kfd", "/dev/dri/renderD*", "/dev/nvidia*" };
	static struct pvg_strv from_env, builtin = { defaults, ARRAY_SIZE(defaults) };
	static char *env_copy;
	const char *env = getenv("PROVGATE_GPU_DEVICES");
	if (!env || !env[0])
		return &builtin;
	if (!env_copy || strcmp(env_copy, env) != 0) {
		/* kept for the life of the process; the variable does not change during a run */
		free(from_env.v);
		free(env_copy);
		env_copy = pvg_strdup(env);
		from_env.v = NULL;
		from_env.n = 0;
		size_t parts = 1;
		for (const char *c = env; *c; c++)
			parts += *c == ':';
		from_env.v = pvg_xcalloc(parts, sizeof(char *));
		char *save = NULL;
		/* pointers into env_copy, split in place */
		for (char *tok = strtok_r(env_copy, ":", &save); tok;
		     tok = strtok_r(NULL, ":", &save))
			from_env.v[from_env.n++] = tok;
	}
	return &from_env;
}

static bool device_matches(const struct pvg_strv *devices, const char *path)
{
	for (size_t i = 0; i < devices->n; i++)
		if (fnmatch(devices->v[i], path, FNM_PATHNAME) == 0)
			return true;
	return false;
}

void pvg_fd_scan_clear(struct pvg_fd_scan *s)
{
	for (size_t i = 0; i < s->n_hits; i++)
		free(s->hits[i].path);
	free(s->hits);
	free(s->denied);
	memset(s, 0, sizeof(*s));
}

static void add_hit(struct pvg_fd_scan *s, const struct pvg_proc *p, uint64_t inode,
		    const char *path)
{
	pid_t pid = p->pid;
	s->hits = pvg_xrealloc(s->hits, s->n_hits + 1, sizeof(*s->hits));
	s->hits[s->n_hits++] = (struct pvg_fd_holder){
		.pid = pid,
		.in_tree = p->in_tree,
		.socket_inode = inode,
		.path = path ? pvg_strdup(path) : NULL,
	};
}

struct fd_scan_job {
	const char *procfs;
	const struct pvg_targets *t;
	const uint64_t *inodes;
	size_t n_inodes;
	const struct pvg_strv *devices;
	size_t from, to;
	struct pvg_fd_scan out;
};

int pvg_proc_fds(const char *procfs, pid_t pid, pvg_fd_fn fn, void *opaque)
{
	char dir[512];
	char link[4096];
	snprintf(dir, sizeof(dir), "%s/%d/fd", procfs, (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		ssize_t n = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!fn(opaque, dirfd(d), atoi(de->d_name), link))
			break;
	}
	closedir(d);
	return 0;
}

struct fd_match {
	const struct fd_scan_job *job;
	struct pvg_fd_scan *out;
	const struct pvg_proc *p;
	bool want_dev;
};

static bool match_fd(void *opaque, int dirfd, int fd, const char *link)
{
	struct fd_match *m = opaque;
	(void)dirfd;
	(void)fd;
	if (m->job->n_inodes && strncmp(link, "socket:[", 8) == 0) {
		uint64_t ino = strtoull(link + 8, NULL, 10);
		for (size_t k = 0; k < m->job->n_inodes; k++)
			if (m->job->inodes[k] == ino) {
				add_hit(m->out, m->p, ino, NULL);
				break;
			}
	} else if (m->want_dev && link[0] == '/' && device_matches(m->job->devices, link)) {
		add_hit(m->out, m->p, 0, link);
	}
	return true;
}

static void fd_scan_range(void *arg)
{
	struct fd_scan_job *job = arg;
	const struct pvg_targets *t = job->t;
	struct pvg_fd_scan *out = &job->out;
	for (size_t i = job->from; i < job->to; i++) {
		const struct pvg_proc *p = &t->procs[i];
		bool want_dev = job->devices != NULL;
		if (p->self || p->zombie || (!want_dev && job->n_inodes == 0))
			continue;
		if (p->pid == 2 || p->ppid == 2)
			continue; /* kernel threads hold no files */
		struct fd_match m = { job, out, p, want_dev };
		int r = pvg_proc_fds(job->procfs, p->pid, match_fd, &m);
		if (r == -EACCES || r == -EPERM)
			add_pid(&out->denied, &out->n_denied, p->pid);
		else if (r == 0)
			out->n_scanned++;
		/* -ENOENT: it exited since the snapshot */
	}
}

int pvg_fd_scan(const char *procfs, const struct pvg_targets *t, const uint64_t *inodes,
		size_t n_inodes, const struct pvg_strv *devices, struct pvg_fd_scan *out)
{
	/* readlink per fd of every process is the cost: a few threads overlap the syscalls */
	enum { MAX_THREADS = 4 };
	struct fd_scan_job jobs[MAX_THREADS];
	size_t n_jobs = t->n < 256 ? 1 : MAX_THREADS;
	memset(out, 0, sizeof(*out));
	for (size_t j = 0; j < n_jobs; j++) {
		jobs[j] = (struct fd_scan_job){
			.procfs = procfs,
			.t = t,
			.inodes = inodes,
			.n_inodes = n_inodes,
			.devices = devices,
			.from = t->n * j / n_jobs,
			.to = t->n * (j + 1) / n_jobs,
		};
	}
	pvg_run_jobs(fd_scan_range, jobs, n_jobs, sizeof(jobs[0]));
	/* merge in pid order */
	for (size_t j = 0; j < n_jobs; j++) {
		struct pvg_fd_scan *s = &jobs[j].out;
		for (size_t k = 0; k < s->n_hits; k++) {
			out->hits = pvg_xrealloc(out->hits, out->n_hits + 1, sizeof(*out->hits));
			out->hits[out->n_hits++] = s->hits[k];
		}
		for (size_t k = 0; k < s->n_denied; k++)
			add_pid(&out->denied, &out->n_denied, s->denied[k]);
		out->n_scanned += s->n_scanned;
		free(s->hits);
		free(s->denied);
	}
	return 0;
}
