/* SPDX-License-Identifier: MIT */
/*
 * Process discovery through libproc2 (procps-ng 4): one pass over /proc per run (libproc2 reads
 * each process's stat while our threads read its command line and fds), and every later
 * question (which process is the target, which are its descendants, who is a stale service
 * process) is answered from that snapshot, so that every question sees one view of the
 * system. libproc2 always reads the real /proc; the text readers take a procfs root.
 */
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>

#include <libproc2/pids.h>

#include "formats/proc-stat.h"
#include "sys/maps.h"
#include "sys/net-tcp.h"
#include "sys/procs.h"
#include "util/thread.h"

/* The processes listed are those of the real /proc, whatever pvg_procfs_root() says: what is
 * read about them to complete the snapshot (owner, executable) comes from there too. */
#define SNAPSHOT_ROOT "/proc"

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

/* What a snapshot's process owns. */
static void proc_clear(struct pvg_proc *p)
{
	free(p->cmdline);
	free(p->sockets);
	for (uint32_t k = 0; k < p->n_devices; k++)
		free(p->devices[k]);
	free(p->devices);
}

void pvg_targets_free(void *ptr)
{
	struct pvg_targets *t = ptr;
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		proc_clear(&t->procs[i]);
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
	snprintf(path, sizeof(path), SNAPSHOT_ROOT "/%d/exe", (int)p->pid);
	return stat(path, &st) == 0 && st.st_dev == self_exe->st_dev &&
	       st.st_ino == self_exe->st_ino;
}

/* ---- the snapshot: libproc2 reads every process's stat, our threads its cmdline and fds ----- */

/* What libproc2 reads of each process: its stat line, and the owner of its /proc folder (which
 * it stats anyway). Nothing from status, a third and costlier file per process. */
enum { I_PID, I_PPID, I_STATE, I_BEGAN, I_CMD, I_EUID };
static enum pids_item pids_items[] = { PIDS_ID_PID,     PIDS_ID_PPID, PIDS_STATE,
				       PIDS_TICS_BEGAN, PIDS_CMD,     PIDS_ID_EUID };

static void pids_unrefp(struct pids_info **info)
{
	if (*info)
		procps_pids_unref(info);
}

/* What our threads read of one process: its cmdline, and its fds when asked. */
struct proc_read {
	int procfd;
	bool fds;                      /* read every process's fds too */
	const struct pvg_strv *devices; /* and keep the ones matching these */
	char buf[4096];
};

static void read_fds(struct proc_read *rd, struct pvg_proc *p);

/* Reads a small /proc file (relative to procfd) into buf: its length, or -errno. */
static ssize_t read_small(int procfd, const char *name, char *buf, size_t size)
{
	int fd = openat(procfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	while (got < size) {
		ssize_t r = read(fd, buf + got, size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		got += (size_t)r;
		/* procfs hands over the whole of a short file in one read; only a full buffer
		 * may have more behind it */
		if (got < size)
			break;
	}
	close(fd);
	return (ssize_t)got;
}

static void read_cmdline(struct proc_read *rd, struct pvg_proc *p)
{
	char name[32];
	snprintf(name, sizeof(name), "%d/cmdline", (int)p->pid);
	ssize_t n = read_small(rd->procfd, name, rd->buf, sizeof(rd->buf));
	if (n == (ssize_t)sizeof(rd->buf)) {
		/* a long command line: read it whole */
		_cleanup_free_ char *path = pvg_asprintf(SNAPSHOT_ROOT "/%s", name);
		_cleanup_free_ char *whole = NULL;
		size_t len = 0;
		if (pvg_read_file(path, 1u << 20, &whole, &len) == 0)
			p->cmdline = pvg_cmdline_text(whole, len);
		return;
	}
	if (n > 0)
		p->cmdline = pvg_cmdline_text(rd->buf, (size_t)n);
}

/* The command line is read here, byte for byte: libproc2's cuts arguments at newlines too
 * (PIDS_CMDLINE_V) or escapes them for a terminal (PIDS_CMDLINE), and patterns match bytes. */
static void read_rest(struct proc_read *rd, struct pvg_proc *p)
{
	read_cmdline(rd, p);
	if (rd->fds)
		read_fds(rd, p);
}

/* libproc2 shows the name escaped for a terminal: a control byte as '.' or '?', and outside a
 * UTF-8 locale any byte above ASCII as '?'. Patterns and the report take the kernel's bytes, so
 * a name that shows either character is read from stat (the same process: same start). */
static void set_comm(struct proc_read *rd, struct pvg_proc *p, const char *shown)
{
	snprintf(p->comm, sizeof(p->comm), "%s", shown ? shown : "");
	if (!strpbrk(p->comm, ".?"))
		return;
	char name[32];
	struct pvg_proc_stat st;
	snprintf(name, sizeof(name), "%d/stat", (int)p->pid);
	ssize_t n = read_small(rd->procfd, name, rd->buf, sizeof(rd->buf));
	if (n > 0 && pvg_proc_stat_parse(rd->buf, (size_t)n, &st) == 0 &&
	    st.start_ticks == p->start_ticks)
		memcpy(p->comm, st.comm, sizeof(p->comm));
}

/* One pass: libproc2 reaps every process's stat on the calling thread while the other
 * threads list /proc themselves and read the command lines and fds, chunk by chunk; the
 * calling thread joins them when the reap is done. Only the calling thread uses libproc2: its
 * readers keep 256 KiB of buffers per thread that nothing frees, lost when a thread exits. */
struct snapshot_pass {
	struct proc_read rd_template;
	pthread_mutex_t list_lock; /* the first thread to take it lists */
	bool listed;
	int list_err;
	struct pvg_proc *procs; /* our listing, sorted by pid */
	size_t n;
	atomic_size_t next;     /* the first process of the next chunk */
	struct pids_info *info;
	struct pids_fetch *reaped;
	int reap_err;
};

struct snapshot_job {
	struct snapshot_pass *pass;
	bool reap;
};

enum { SNAPSHOT_CHUNK = 64 };

static int list_pids(int procfd, struct pvg_proc **procs, size_t *n);

static void snapshot_job(void *arg)
{
	struct snapshot_job *job = arg;
	struct snapshot_pass *pass = job->pass;
	if (job->reap) {
		errno = 0;
		pass->reaped = procps_pids_reap(pass->info, PIDS_FETCH_TASKS_ONLY);
		if (!pass->reaped)
			pass->reap_err = errno ? -errno : -ESRCH;
	}
	pthread_mutex_lock(&pass->list_lock);
	if (!pass->listed) {
		pass->list_err = list_pids(pass->rd_template.procfd, &pass->procs, &pass->n);
		pass->listed = true;
	}
	pthread_mutex_unlock(&pass->list_lock);
	struct proc_read *rd = pvg_xcalloc(1, sizeof(*rd));
	*rd = pass->rd_template;
	for (;;) {
		size_t from = atomic_fetch_add(&pass->next, SNAPSHOT_CHUNK);
		if (from >= pass->n)
			break;
		size_t to = from + SNAPSHOT_CHUNK < pass->n ? from + SNAPSHOT_CHUNK : pass->n;
		for (size_t i = from; i < to; i++)
			read_rest(rd, &pass->procs[i]);
	}
	free(rd);
}

/* How many threads a pass over n processes gets: reading /proc is system time spent in the
 * kernel per file, which spreads over the CPUs; a few hundred processes are not worth one. */
static size_t pass_threads(size_t n)
{
	size_t k = pvg_cpus_usable();
	if (k > PVG_MAX_JOB_THREADS)
		k = PVG_MAX_JOB_THREADS;
	if (k > n / 512 + 1)
		k = n / 512 + 1;
	return k;
}

/* Our listing of /proc: the processes whose command lines and fds the threads read. */
static int list_pids(int procfd, struct pvg_proc **procs, size_t *n)
{
	DIR *d = fdopendir(dup(procfd));
	if (!d)
		return -errno;
	size_t cap = 1024;
	*procs = pvg_xcalloc(cap, sizeof(**procs));
	*n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end || pid <= 0)
			continue;
		if (*n == cap) {
			*procs = pvg_xrealloc(*procs, cap * 2, sizeof(**procs));
			memset(*procs + cap, 0, cap * sizeof(**procs));
			cap *= 2;
		}
		(*procs)[(*n)++].pid = (pid_t)pid;
	}
	closedir(d);
	qsort(*procs, *n, sizeof(**procs), cmp_proc);
	return 0;
}

/* Joins what libproc2 reaped with our listing, by pid: a process libproc2 did not see exited
 * (its cmdline read, if any, is dropped); one it saw that our listing did not was born
 * between the two listings and is read here. */
static void join_reaped(struct pvg_targets *t, struct snapshot_pass *pass, struct proc_read *rd)
{
	struct pids_fetch *f = pass->reaped;
	int total = f->counts ? f->counts->total : 0;
	_cleanup_free_ bool *seen = pvg_xcalloc(pass->n ? pass->n : 1, sizeof(bool));
	t->procs = pvg_xcalloc((size_t)(total > 0 ? total : 1), sizeof(*t->procs));
	for (int i = 0; i < total; i++) {
		struct pids_stack *s = f->stacks[i];
		struct pvg_proc key = { .pid = PIDS_VAL(I_PID, s_int, s, pass->info) };
		if (key.pid <= 0)
			continue;
		struct pvg_proc *listed = bsearch(&key, pass->procs, pass->n, sizeof(key), cmp_proc);
		struct pvg_proc *p = &t->procs[t->n++];
		if (listed) {
			*p = *listed;
			seen[listed - pass->procs] = true;
		} else {
			*p = key;
			read_rest(rd, p);
		}
		p->ppid = PIDS_VAL(I_PPID, s_int, s, pass->info);
		p->zombie = PIDS_VAL(I_STATE, s_ch, s, pass->info) == 'Z';
		p->start_ticks = PIDS_VAL(I_BEGAN, ull_int, s, pass->info);
		p->uid = PIDS_VAL(I_EUID, u_int, s, pass->info);
		set_comm(rd, p, PIDS_VAL(I_CMD, str, s, pass->info));
	}
	for (size_t i = 0; i < pass->n; i++)
		if (!seen[i])
			proc_clear(&pass->procs[i]);
}

static int snapshot(struct pvg_targets *t, bool fds, const struct pvg_strv *devices)
{
	struct timespec rt, bt;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_BOOTTIME, &bt);
	int64_t boot_ns = ((int64_t)rt.tv_sec - bt.tv_sec) * 1000000000 + (rt.tv_nsec - bt.tv_nsec);
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0)
		hz = 100;
	t->tick_ns = 1000000000L / hz;

	_cleanup_close_ int procfd = open(SNAPSHOT_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0)
		return -errno;
	_cleanup_(pids_unrefp) struct pids_info *info = NULL;
	int r = procps_pids_new(&info, pids_items, (int)ARRAY_SIZE(pids_items));
	if (r < 0)
		return r;
	struct snapshot_pass pass = {
		.rd_template = { .procfd = procfd, .fds = fds, .devices = devices },
		.list_lock = PTHREAD_MUTEX_INITIALIZER,
		.info = info,
	};
	atomic_init(&pass.next, 0);

	/* before the listing, the kernel's count of tasks (threads too) stands for the processes */
	struct sysinfo si;
	size_t n_jobs = pass_threads(sysinfo(&si) == 0 ? si.procs : 0);
	struct snapshot_job jobs[PVG_MAX_JOB_THREADS];
	for (size_t j = 0; j < n_jobs; j++)
		jobs[j] = (struct snapshot_job){ &pass, j == 0 };
	/* job 0 runs on the calling thread: the one that reaps */
	pvg_run_jobs(snapshot_job, jobs, n_jobs, sizeof(jobs[0]));
	if (!pass.reaped || pass.list_err < 0) {
		for (size_t i = 0; i < pass.n; i++)
			proc_clear(&pass.procs[i]);
		free(pass.procs);
		return pass.list_err < 0 ? pass.list_err : pass.reap_err;
	}
	struct proc_read *rd = pvg_xcalloc(1, sizeof(*rd));
	*rd = pass.rd_template;
	join_reaped(t, &pass, rd);
	free(rd);
	free(pass.procs);

	for (size_t i = 0; i < t->n; i++) {
		struct pvg_proc *p = &t->procs[i];
		int64_t ns = boot_ns + (int64_t)(p->start_ticks * (uint64_t)t->tick_ns);
		p->start.tv_sec = (time_t)(ns / 1000000000);
		p->start.tv_nsec = (long)(ns % 1000000000);
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

/* libproc2 gives every process's owner (it stats each /proc folder), but the snapshot names
 * it for the service's processes only (procs.h): the others keep (uid_t)-1. */
static void fill_uids(struct pvg_targets *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct pvg_proc *p = &t->procs[i];
		if (!(p->family || p->matched || p->in_tree))
			p->uid = (uid_t)-1;
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

struct port_sockets {
	const struct pvg_tcp_table *listeners;
	bool found;
};

static bool holds_listener(void *opaque, int dirfd, int fd, const char *link)
{
	struct port_sockets *ps = opaque;
	(void)dirfd;
	(void)fd;
	if (strncmp(link, "socket:[", 8) != 0)
		return true;
	uint64_t ino = strtoull(link + 8, NULL, 10);
	for (size_t i = 0; i < ps->listeners->n && !ps->found; i++)
		ps->found = ps->listeners->s[i].inode == ino;
	return !ps->found;
}

/* Does p, or one of its ancestors, listen on port (in its own network namespace: a
 * container's API server holds the port in its netns)? */
static bool tree_owns_port(const struct pvg_targets *t, const struct pvg_proc *p, uint16_t port)
{
	for (int depth = 0; p && depth < 16 && p->pid > 1; depth++) {
		char root[64];
		snprintf(root, sizeof(root), SNAPSHOT_ROOT "/%d", (int)p->pid);
		struct pvg_tcp_table listeners = { 0 };
		bool found = false;
		if (pvg_net_tcp_listeners(root, port, &listeners) == 0 && listeners.n) {
			struct port_sockets ps = { .listeners = &listeners };
			(void)pvg_proc_fds(SNAPSHOT_ROOT, p->pid, holds_listener, &ps);
			found = ps.found;
		}
		pvg_tcp_table_clear(&listeners);
		if (found)
			return true;
		if (p->ppid == p->pid)
			break;
		p = pvg_targets_find(t, p->ppid);
	}
	return false;
}

static void select_targets(const struct pvg_service_spec *svc, struct pvg_targets *t)
{
	struct stat self_exe_st;
	bool have_self = stat(SNAPSHOT_ROOT "/self/exe", &self_exe_st) == 0;
	pid_t self = getpid();
	const struct pvg_proc *me = pvg_targets_find(t, self);
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
		if (p->pid == self)
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
		size_t n_matched = 0;
		for (size_t i = 0; i < t->n; i++) {
			struct pvg_proc *p = &t->procs[i];
			if (p->self || p->zombie || !pvg_proc_matches_any(p, &svc->match))
				continue;
			p->matched = true;
			n_matched++;
			if (!newest || p->start_ticks > newest->start_ticks ||
			    (p->start_ticks == newest->start_ticks && p->pid > newest->pid))
				newest = p;
		}
		/* Several matches (a stale engine beside the live one): the live service is the
		 * one whose tree owns service.port, even when the stale one is newer; the newest
		 * only when no tree, or none but its own, says. */
		if (n_matched > 1 && svc->port > 0 && svc->port <= 65535 &&
		    !tree_owns_port(t, newest, (uint16_t)svc->port)) {
			const struct pvg_proc *owner = NULL;
			for (size_t i = 0; i < t->n; i++) {
				const struct pvg_proc *p = &t->procs[i];
				if (!p->matched || p == newest ||
				    (owner && (p->start_ticks < owner->start_ticks ||
					       (p->start_ticks == owner->start_ticks && p->pid < owner->pid))))
					continue;
				if (tree_owns_port(t, p, (uint16_t)svc->port))
					owner = p;
			}
			if (owner)
				newest = owner;
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

static int targets_scan(const struct pvg_service_spec *svc, bool fds,
			const struct pvg_strv *devices, struct pvg_targets **out)
{
	struct pvg_targets *t = pvg_xcalloc(1, sizeof(*t));
	uint64_t t0 = pvg_now_ns();
	int r = snapshot(t, fds, devices);
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
	t->fds_read = fds;
	t->fd_devices = devices;
	t->scan_ns = pvg_now_ns() - t0;
	*out = t;
	return 0;
}

int pvg_targets_scan(const struct pvg_service_spec *svc, struct pvg_targets **out)
{
	return targets_scan(svc, false, NULL, out);
}

int pvg_targets_scan_fds(const struct pvg_service_spec *svc, const struct pvg_strv *devices,
			 struct pvg_targets **out)
{
	return targets_scan(svc, true, devices, out);
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

const struct pvg_strv *pvg_gpu_device_globs_live(const char *procfs)
{
	const struct pvg_strv *globs = pvg_gpu_device_globs();
	const char *env = getenv("PROVGATE_GPU_DEVICES");
	if (env && env[0])
		return globs;
	_cleanup_free_ char *path = pvg_asprintf("%s/devices", procfs);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (pvg_read_file(path, 64u << 10, &text, &len) < 0)
		return globs; /* cannot tell: match them */
	bool chr = false, listed = false;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (strncmp(line, "Character devices:", 18) == 0) {
			chr = listed = true;
			continue;
		}
		if (strncmp(line, "Block devices:", 14) == 0)
			chr = false;
		unsigned major;
		char name[64];
		if (!chr || sscanf(line, " %u %63s", &major, name) != 2)
			continue;
		if (strncmp(name, "nvidia", 6) == 0 || strcmp(name, "kfd") == 0 ||
		    strcmp(name, "drm") == 0)
			return globs;
	}
	return listed ? NULL : globs; /* no list of drivers at all: cannot tell */
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

/* Whose fds a scan reads: not provgate's, no zombie's, no kernel thread's (they hold no
 * files). */
static bool fds_wanted(const struct pvg_proc *p)
{
	return !p->self && !p->zombie && !kernel_thread(p);
}

/* Counts what reading p's fds gave (0 or -errno): denied (another user, no privilege),
 * scanned, or gone (-ENOENT: it exited since the listing). True when they were read. */
static bool fds_outcome(struct pvg_fd_scan *out, const struct pvg_proc *p, int r)
{
	if (r == -EACCES || r == -EPERM)
		add_pid(&out->denied, &out->n_denied, p->pid);
	else if (r == 0)
		out->n_scanned++;
	return r == 0;
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

/* Calls fn for each descriptor in the open fd folder dfd (see pvg_proc_fds). */
static int fds_in(int dfd, pvg_fd_fn fn, void *opaque)
{
	char link[4096];
	/* getdents64 on the folder itself: opendir would fstat it and read in pieces */
	union {
		struct dirent64 d;
		char b[8192];
	} ents;
	for (;;) {
		ssize_t n = getdents64(dfd, ents.b, sizeof(ents.b));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *de = (struct dirent64 *)(ents.b + off);
			off += de->d_reclen;
			if (de->d_name[0] < '0' || de->d_name[0] > '9')
				continue;
			ssize_t l = readlinkat(dfd, de->d_name, link, sizeof(link) - 1);
			if (l <= 0)
				continue;
			link[l] = '\0';
			if (!fn(opaque, dfd, atoi(de->d_name), link))
				return 0;
		}
		/* procfs fills the buffer with every descriptor that fits: room left over for
		 * several more entries means the listing is complete (an entry is <= 32 bytes) */
		if ((size_t)n + 256 <= sizeof(ents.b))
			break;
	}
	return 0;
}

int pvg_proc_fds(const char *procfs, pid_t pid, pvg_fd_fn fn, void *opaque)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/%d/fd", procfs, (int)pid);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	return fds_in(dfd, fn, opaque);
}

/* ---- the snapshot's own fd pass ------------------------------------------------------------- */

struct fd_keep {
	struct pvg_proc *p;
	const struct pvg_strv *devices;
	size_t cap_sockets;
};

static bool keep_fd(void *opaque, int dirfd, int fd, const char *link)
{
	struct fd_keep *k = opaque;
	struct pvg_proc *p = k->p;
	(void)dirfd;
	(void)fd;
	if (strncmp(link, "socket:[", 8) == 0) {
		uint64_t ino = strtoull(link + 8, NULL, 10);
		if (p->n_sockets == k->cap_sockets) {
			k->cap_sockets = k->cap_sockets ? 2 * k->cap_sockets : 4;
			p->sockets = pvg_xrealloc(p->sockets, k->cap_sockets, sizeof(*p->sockets));
		}
		p->sockets[p->n_sockets++] = ino;
	} else if (k->devices && link[0] == '/' && device_matches(k->devices, link)) {
		p->devices = pvg_xrealloc(p->devices, p->n_devices + 1, sizeof(*p->devices));
		p->devices[p->n_devices++] = pvg_strdup(link);
	}
	return true;
}

static void read_fds(struct proc_read *rd, struct pvg_proc *p)
{
	if (p->pid <= 0 || kernel_thread(p))
		return; /* kernel threads hold no files */
	char name[32];
	snprintf(name, sizeof(name), "%d/fd", (int)p->pid);
	_cleanup_close_ int dfd = openat(rd->procfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		p->fds_err = -errno;
		return;
	}
	struct fd_keep k = { p, rd->devices, 0 };
	p->fds_err = fds_in(dfd, keep_fd, &k);
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
		if (!fds_wanted(p) || (!want_dev && job->n_inodes == 0))
			continue;
		struct fd_match m = { job, out, p, want_dev };
		fds_outcome(out, p, pvg_proc_fds(job->procfs, p->pid, match_fd, &m));
	}
}

/* pvg_fd_scan from the fds the snapshot read, with the same rules as the walk below */
static int fd_scan_read(const struct pvg_targets *t, const uint64_t *inodes, size_t n_inodes,
			const struct pvg_strv *devices, struct pvg_fd_scan *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!fds_wanted(p) || (!devices && n_inodes == 0) || !fds_outcome(out, p, p->fds_err))
			continue;
		for (uint32_t k = 0; k < p->n_sockets && n_inodes; k++)
			for (size_t m = 0; m < n_inodes; m++)
				if (p->sockets[k] == inodes[m]) {
					add_hit(out, p, inodes[m], NULL);
					break;
				}
		for (uint32_t k = 0; devices && k < p->n_devices; k++)
			add_hit(out, p, 0, p->devices[k]);
	}
	return 0;
}

int pvg_fd_scan(const char *procfs, const struct pvg_targets *t, const uint64_t *inodes,
		size_t n_inodes, const struct pvg_strv *devices, struct pvg_fd_scan *out)
{
	if (t->fds_read && strcmp(procfs, SNAPSHOT_ROOT) == 0 &&
	    (!devices || devices == t->fd_devices))
		return fd_scan_read(t, inodes, n_inodes, devices, out);
	/* readlink per fd of every process is the cost, system time that spreads over the CPUs */
	struct fd_scan_job jobs[PVG_MAX_JOB_THREADS];
	size_t n_jobs = pass_threads(t->n);
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
