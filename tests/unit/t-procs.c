/* SPDX-License-Identifier: MIT */
/* Process discovery (the snapshot of /proc), with real child processes. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "core/config.h"
#include "formats/proc-stat.h"
#include "sys/witness.h"
#include "tap.h"

static void stat_and_cmdline_text(void)
{
	struct pvg_proc_stat st;
	const char *line = "4242 (a) b) (c) S 17 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 "
			   "987654 12345678 250 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 "
			   "1 0 0 0 0 0\n";
	CHECK_INT(pvg_proc_stat_parse(line, strlen(line), &st), 0);
	CHECK_STR(st.comm, "a) b) (c");
	CHECK_INT(st.state, 'S');
	CHECK_INT(st.ppid, 17);
	CHECK_INT(st.start_ticks, 987654);
	const char *longname = "1 (0123456789abcdefXYZ) R 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 77";
	CHECK_INT(pvg_proc_stat_parse(longname, strlen(longname), &st), 0);
	CHECK_STR(st.comm, "0123456789abcde");
	CHECK_INT(st.start_ticks, 77);
	/* cut before the start time, no comm, nothing after the name */
	const char *cut = "1 (x) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0";
	CHECK_INT(pvg_proc_stat_parse(cut, strlen(cut), &st), -EBADMSG);
	CHECK_INT(pvg_proc_stat_parse("1 x S 0", 7, &st), -EBADMSG);
	CHECK_INT(pvg_proc_stat_parse("1 (x)", 5, &st), -EBADMSG);
	CHECK_INT(pvg_proc_stat_parse("", 0, &st), -EBADMSG);
	/* a number no 64 bits hold is not the kernel's text: refused, never wrapped (a start
	 * time of 2^64 + 5 would otherwise read as 5) */
	const char *big = "1 (x) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 18446744073709551621";
	CHECK_INT(pvg_proc_stat_parse(big, strlen(big), &st), -EBADMSG);
	const char *max = "1 (x) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 18446744073709551615";
	CHECK_INT(pvg_proc_stat_parse(max, strlen(max), &st), 0);
	CHECK(st.start_ticks == UINT64_MAX);
	const char *ppid = "1 (x) S 99999999999999999999999 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 7";
	CHECK_INT(pvg_proc_stat_parse(ppid, strlen(ppid), &st), -EBADMSG);
	char cl[] = "python3\0-m\0vllm\tserve\0\0";
	char *t = pvg_cmdline_text(cl, sizeof(cl) - 1);
	CHECK_STR(t, "python3 -m vllm?serve");
	free(t);
	CHECK(pvg_cmdline_text("\0\0", 2) == NULL);
	CHECK(pvg_cmdline_text("", 0) == NULL);
}

static void pattern_matches_cut_comm(void)
{
	struct pvg_proc p = { .cmdline = "python3 -m vllm.entrypoints", .comm = "VLLM::EngineCor" };
	CHECK(pvg_proc_matches(&p, "VLLM::EngineCore"));
	CHECK(pvg_proc_matches(&p, "VLLM::"));
	CHECK(pvg_proc_matches(&p, "vllm.entry"));
	CHECK(pvg_proc_matches(&p, "python3 -m *"));
	CHECK(pvg_proc_matches(&p, "VLLM::EngineCorX")); /* what the cut comm cannot tell */
	CHECK(!pvg_proc_matches(&p, "VLLM::EngineCXre"));
	/* a pattern with a space is about the command line, not the name */
	CHECK(!pvg_proc_matches(&p, "VLLM::EngineCore --tag x"));
	CHECK(!pvg_proc_matches(&p, "VLLM::Worker"));
	CHECK(!pvg_proc_matches(&p, ""));
	struct pvg_proc shortc = { .cmdline = NULL, .comm = "VLLM::Engine" };
	CHECK(!pvg_proc_matches(&shortc, "VLLM::EngineCore")); /* a 12-byte comm is not cut */
}

/* child: names itself, forks a grandchild, both wait on a pipe to die */
static pid_t spawn_tree(const char *name, int *release_fd, pid_t *grandchild)
{
	int ready[2], release[2];
	CHECK(pipe(ready) == 0 && pipe(release) == 0);
	pid_t c = fork();
	if (c == 0) {
		close(ready[0]);
		close(release[1]);
		prctl(PR_SET_NAME, name, 0, 0, 0);
		pid_t g = fork();
		if (g == 0) {
			char b;
			(void)!read(release[0], &b, 1);
			_exit(0);
		}
		(void)!write(ready[1], &g, sizeof(g));
		char b;
		(void)!read(release[0], &b, 1);
		waitpid(g, NULL, 0);
		_exit(0);
	}
	close(ready[1]);
	close(release[0]);
	CHECK(read(ready[0], grandchild, sizeof(*grandchild)) == sizeof(*grandchild));
	close(ready[0]);
	*release_fd = release[1];
	return c;
}

static void selects_by_pid_and_builds_tree(void)
{
	int rel;
	pid_t g;
	pid_t c = spawn_tree("VLLM::EngineCore", &rel, &g);
	struct pvg_config *cfg = pvg_config_new();
	cfg->service.pid = c;
	struct pvg_targets *t = NULL;
	CHECK_INT(pvg_targets_scan(&cfg->service, &t), 0);
	CHECK_INT(t->err, 0);
	CHECK_INT(t->primary, c);
	CHECK_INT(t->root, c); /* the parent (this test) is not a service process */
	CHECK(pvg_targets_in_tree(t, c));
	CHECK(pvg_targets_in_tree(t, g));
	CHECK(!pvg_targets_in_tree(t, getpid()));
	const struct pvg_proc *p = pvg_targets_find(t, c);
	CHECK(p != NULL);
	if (p) {
		CHECK_STR(p->comm, "VLLM::EngineCor");
		CHECK_INT(p->ppid, getpid());
		CHECK_INT(p->uid, geteuid());
		/* started within the last minute */
		CHECK(p->start.tv_sec <= time(NULL) && p->start.tv_sec > time(NULL) - 60);
	}
	pvg_targets_free(t);
	pvg_config_free(cfg);
	close(rel);
	waitpid(c, NULL, 0);
}

static void dead_pid_is_not_running(void)
{
	pid_t c = fork();
	if (c == 0)
		_exit(0);
	waitpid(c, NULL, 0);
	struct pvg_config *cfg = pvg_config_new();
	cfg->service.pid = c;
	struct pvg_targets *t = NULL;
	CHECK_INT(pvg_targets_scan(&cfg->service, &t), 0);
	CHECK_INT(t->err, -ESRCH);
	CHECK(t->msg.text && strstr(t->msg.text, "not running"));
	pvg_targets_free(t);
	pvg_config_free(cfg);
}

static void self_is_never_a_target(void)
{
	struct pvg_config *cfg = pvg_config_new();
	cfg->service.pid = getpid();
	struct pvg_targets *t = NULL;
	CHECK_INT(pvg_targets_scan(&cfg->service, &t), 0);
	CHECK_INT(t->err, -ESRCH);
	pvg_targets_free(t);
	pvg_config_free(cfg);
}

static void match_picks_newest_and_marks_family(void)
{
	char name[16];
	snprintf(name, sizeof(name), "pvgt%d", (int)getpid() % 100000);
	int rel1, rel2;
	pid_t g1, g2;
	pid_t c1 = spawn_tree(name, &rel1, &g1);
	usleep(20000); /* two clock ticks apart */
	pid_t c2 = spawn_tree(name, &rel2, &g2);
	struct pvg_config *cfg = pvg_config_new();
	cfg->service.match.v = pvg_xcalloc(1, sizeof(char *));
	cfg->service.match.v[0] = pvg_strdup(name);
	cfg->service.match.n = 1;
	struct pvg_targets *t = NULL;
	CHECK_INT(pvg_targets_scan(&cfg->service, &t), 0);
	CHECK_INT(t->err, 0);
	/* children and grandchildren all carry the name; the newest tree's top wins */
	CHECK_INT(t->primary, c2);
	CHECK(pvg_targets_in_tree(t, g2));
	CHECK(!pvg_targets_in_tree(t, c1));
	CHECK_INT(t->n_strays, 2);
	CHECK(pvg_targets_find(t, c1) && pvg_targets_find(t, c1)->family);
	pvg_targets_free(t);
	pvg_config_free(cfg);
	close(rel1);
	close(rel2);
	waitpid(c1, NULL, 0);
	waitpid(c2, NULL, 0);
}

/* A pidfile older than the process it names was not written by it: the pid was reused. */
static void pidfile_older_than_process_is_reuse(void)
{
	int rel;
	pid_t g;
	pid_t c = spawn_tree("pvg-reuse", &rel, &g);
	char path[] = "/tmp/pvg-t-procs-pidfile.XXXXXX";
	int fd = mkstemp(path);
	dprintf(fd, "%d\n", (int)c);
	close(fd);
	struct pvg_config *cfg = pvg_config_new();
	cfg->service.pidfile = pvg_strdup(path);
	struct pvg_targets *t = NULL;
	CHECK_INT(pvg_targets_scan(&cfg->service, &t), 0);
	CHECK_INT(t->err, 0); /* written after the start: fine */
	pvg_targets_free(t);
	struct timespec old[2] = { { time(NULL) - 3600, 0 }, { time(NULL) - 3600, 0 } };
	CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
	CHECK_INT(pvg_targets_scan(&cfg->service, &t), 0);
	CHECK_INT(t->err, -ESRCH);
	CHECK(t->msg.text && strstr(t->msg.text, "reused"));
	pvg_targets_free(t);
	pvg_config_free(cfg);
	unlink(path);
	close(rel);
	waitpid(c, NULL, 0);
}

/* stat's comm is counted from its last ')': a name with spaces and parentheses does not
 * shift the ppid or the start time; the command line's NULs are spaces, control bytes '?' */
static void odd_names_and_command_lines_are_read(void)
{
	int rel;
	pid_t g;
	pid_t c = spawn_tree("a) (b) Z 1 2", &rel, &g);
	struct pvg_config *cfg = pvg_config_new();
	cfg->service.pid = c;
	struct pvg_targets *t = NULL;
	CHECK_INT(pvg_targets_scan(&cfg->service, &t), 0);
	const struct pvg_proc *p = pvg_targets_find(t, c);
	const struct pvg_proc *me = pvg_targets_find(t, getpid());
	CHECK(p != NULL && me != NULL);
	if (p && me) {
		CHECK_STR(p->comm, "a) (b) Z 1 2");
		CHECK_INT(p->ppid, getpid());
		CHECK(!p->zombie);
		CHECK(p->start_ticks >= me->start_ticks);
		/* the forked child's command line is this test's: its own argv[0] */
		CHECK(me->cmdline && strstr(me->cmdline, "t-procs"));
		CHECK(p->cmdline && me->cmdline && strcmp(p->cmdline, me->cmdline) == 0);
	}
	pvg_targets_free(t);
	pvg_config_free(cfg);
	close(rel);
	waitpid(c, NULL, 0);
}

/* The name and the command line keep the kernel's bytes: libproc2 shows a control byte in
 * the name as '.' or '?' and cuts arguments at newlines, and patterns match bytes. */
static void names_and_command_lines_keep_their_bytes(void)
{
	int rel;
	pid_t g;
	pid_t c = spawn_tree("n\x01.\xc3\xa9?x", &rel, &g);
	int ready[2];
	CHECK(pipe(ready) == 0);
	pid_t e = fork();
	if (e == 0) {
		close(ready[0]);
		fcntl(ready[1], F_SETFD, FD_CLOEXEC);
		char *argv[] = { "sl\neep\x01\xc3\xa9", "60", NULL };
		execv("/bin/sleep", argv);
		_exit(127);
	}
	close(ready[1]);
	char b;
	CHECK(read(ready[0], &b, 1) == 0); /* closed by the exec */
	close(ready[0]);
	struct pvg_config *cfg = pvg_config_new();
	cfg->service.pid = c;
	struct pvg_targets *t = NULL;
	CHECK_INT(pvg_targets_scan(&cfg->service, &t), 0);
	const struct pvg_proc *p = pvg_targets_find(t, c);
	const struct pvg_proc *x = pvg_targets_find(t, e);
	CHECK(p != NULL && x != NULL);
	if (p)
		CHECK_STR(p->comm, "n\x01.\xc3\xa9?x");
	if (x) {
		CHECK_STR(x->comm, "sleep");
		CHECK_STR(x->cmdline, "sl?eep?\xc3\xa9 60");
	}
	pvg_targets_free(t);
	pvg_config_free(cfg);
	kill(e, SIGKILL);
	waitpid(e, NULL, 0);
	close(rel);
	waitpid(c, NULL, 0);
}

/* No GPU driver in procfs/devices: the built-in device globs need not be matched. */
static void gpu_globs_only_where_a_driver_is_registered(void)
{
	char dir[] = "/tmp/pvg-t-procs.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *path = pvg_asprintf("%s/devices", dir);
	unsetenv("PROVGATE_GPU_DEVICES");
	CHECK(pvg_gpu_device_globs_live(dir) != NULL); /* no list: cannot tell */
	FILE *f = fopen(path, "w");
	fputs("Character devices:\n  1 mem\n  4 tty\n 10 misc\n\nBlock devices:\n  8 sd\n", f);
	fclose(f);
	CHECK(pvg_gpu_device_globs_live(dir) == NULL);
	const char *drivers[] = { "195 nvidia-frontend", "511 nvidia-uvm", "226 drm", "237 kfd" };
	for (size_t i = 0; i < ARRAY_SIZE(drivers); i++) {
		f = fopen(path, "w");
		fprintf(f, "Character devices:\n  1 mem\n%s\n\nBlock devices:\n  8 sd\n", drivers[i]);
		fclose(f);
		CHECK(pvg_gpu_device_globs_live(dir) == pvg_gpu_device_globs());
	}
	/* a block device of that name is no GPU */
	f = fopen(path, "w");
	fputs("Character devices:\n  1 mem\n\nBlock devices:\n226 drm\n", f);
	fclose(f);
	CHECK(pvg_gpu_device_globs_live(dir) == NULL);
	/* the user's own globs are always matched */
	setenv("PROVGATE_GPU_DEVICES", "/tmp/gpu*", 1);
	CHECK(pvg_gpu_device_globs_live(dir) != NULL);
	unsetenv("PROVGATE_GPU_DEVICES");
	unlink(path);
	rmdir(dir);
	free(path);
}

static int cmp_hit(const void *x, const void *y)
{
	const struct pvg_fd_holder *a = x, *b = y;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->socket_inode != b->socket_inode)
		return a->socket_inode < b->socket_inode ? -1 : 1;
	return 0;
}

/* Whose fds a scan reads (lib/sys/procs.c): not provgate's, no zombie's, no kernel thread's */
static bool fds_wanted(const struct pvg_proc *p)
{
	return !p->self && !p->zombie && p->pid != 2 && p->ppid != 2;
}

/* p in t's listing: the same pid, started at the same tick; NULL when not there */
static const struct pvg_proc *same_proc(const struct pvg_targets *t, const struct pvg_proc *p)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->procs[i].pid == p->pid)
			return t->procs[i].start_ticks == p->start_ticks ? &t->procs[i] : NULL;
	return NULL;
}

/* The snapshot's own fd pass answers the fd scan as the separate walk does: a child listening
 * on a socket and holding a "device" is found by both, with the same hits. */
static void snapshot_fds_answer_like_the_walk(void)
{
	char dev[] = "/tmp/pvg-t-procs-dev.XXXXXX";
	int dfd = mkstemp(dev);
	CHECK(dfd >= 0);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(s, 1) == 0);
	struct stat st;
	CHECK(fstat(s, &st) == 0);
	uint64_t ino = st.st_ino;
	int rel;
	pid_t g;
	pid_t c = spawn_tree("pvg-fd-holder", &rel, &g); /* inherits the socket and the file */
	close(s);
	close(dfd);
	setenv("PROVGATE_GPU_DEVICES", dev, 1);
	const struct pvg_strv *devs = pvg_gpu_device_globs();
	struct pvg_config *cfg = pvg_config_new();
	cfg->service.pid = c;
	struct pvg_targets *walk = NULL, *pass = NULL;
	CHECK_INT(pvg_targets_scan(&cfg->service, &walk), 0);
	CHECK_INT(pvg_targets_scan_fds(&cfg->service, devs, &pass), 0);
	CHECK(!walk->fds_read && pass->fds_read);
	struct pvg_fd_scan fw, fp;
	CHECK_INT(pvg_fd_scan("/proc", walk, &ino, 1, devs, &fw), 0);
	CHECK_INT(pvg_fd_scan("/proc", pass, &ino, 1, devs, &fp), 0);
	/* the child and the grandchild: the socket and the file each */
	size_t sock_c = 0, dev_c = 0;
	for (size_t i = 0; i < fp.n_hits; i++) {
		bool ours = fp.hits[i].pid == c || fp.hits[i].pid == g;
		sock_c += ours && fp.hits[i].socket_inode == ino;
		dev_c += ours && fp.hits[i].path && strcmp(fp.hits[i].path, dev) == 0;
		CHECK(fp.hits[i].in_tree == ours);
	}
	CHECK_INT(sock_c, 2);
	CHECK_INT(dev_c, 2);
	CHECK_INT(fp.n_hits, fw.n_hits);
	/* a process's hits in any order: sockets and devices apart */
	qsort(fp.hits, fp.n_hits, sizeof(*fp.hits), cmp_hit);
	qsort(fw.hits, fw.n_hits, sizeof(*fw.hits), cmp_hit);
	for (size_t i = 0; i < fp.n_hits && i < fw.n_hits; i++) {
		CHECK_INT(fp.hits[i].pid, fw.hits[i].pid);
		CHECK_INT(fp.hits[i].socket_inode, fw.hits[i].socket_inode);
		CHECK((fp.hits[i].path == NULL) == (fw.hits[i].path == NULL));
	}
	/* the processes that exist in both snapshots were read by both: those that still live
	 * now (so lived when each read them) count alike; the counts differ by no more than the
	 * processes that started or ended in between (other work on the machine) */
	size_t changed = 0, both_read = 0;
	for (size_t i = 0; i < walk->n; i++) {
		const struct pvg_proc *p = &walk->procs[i];
		if (!fds_wanted(p))
			continue;
		const struct pvg_proc *q = same_proc(pass, p);
		if (!q || !pvg_witness_proc_alive("/proc", p->pid, p->start_ticks)) {
			changed++;
			continue;
		}
		CHECK(q->fds_err == 0 || q->fds_err == -EACCES || q->fds_err == -EPERM);
		both_read += q->fds_err == 0;
	}
	for (size_t i = 0; i < pass->n; i++)
		changed += fds_wanted(&pass->procs[i]) && !same_proc(walk, &pass->procs[i]);
	CHECK(fw.n_scanned >= both_read && fp.n_scanned >= both_read);
	CHECK(fp.n_scanned + changed >= fw.n_scanned && fw.n_scanned + changed >= fp.n_scanned);
	CHECK(fp.n_denied + changed >= fw.n_denied && fw.n_denied + changed >= fp.n_denied);
	/* sockets only, when the device globs differ from the pass's: the walk again */
	struct pvg_fd_scan fo;
	CHECK_INT(pvg_fd_scan("/proc", pass, &ino, 1, NULL, &fo), 0);
	CHECK_INT(fo.n_hits, 2);
	pvg_fd_scan_clear(&fo);
	pvg_fd_scan_clear(&fw);
	pvg_fd_scan_clear(&fp);
	pvg_targets_free(walk);
	pvg_targets_free(pass);
	pvg_config_free(cfg);
	unsetenv("PROVGATE_GPU_DEVICES");
	close(rel);
	waitpid(c, NULL, 0);
	unlink(dev);
}

int main(void)
{
	RUN(pattern_matches_cut_comm);
	RUN(stat_and_cmdline_text);
	RUN(selects_by_pid_and_builds_tree);
	RUN(dead_pid_is_not_running);
	RUN(self_is_never_a_target);
	RUN(match_picks_newest_and_marks_family);
	RUN(pidfile_older_than_process_is_reuse);
	RUN(odd_names_and_command_lines_are_read);
	RUN(names_and_command_lines_keep_their_bytes);
	RUN(gpu_globs_only_where_a_driver_is_registered);
	RUN(snapshot_fds_answer_like_the_walk);
	TAP_EXIT();
}
