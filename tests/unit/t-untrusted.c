/* SPDX-License-Identifier: MIT */
/* lib/util/untrusted: the one open of what another user controls, with openat2 and with the
 * walk that kernels before 5.6 get (each case runs both ways). */
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/un.h>

#include "tap.h"
#include "util/untrusted.h"

static char root[] = "/tmp/pvg-untrusted.XXXXXX";
static int root_fd = -1;

static void put(const char *rel, const char *text)
{
	_cleanup_free_ char *p = pvg_path_join(root, rel);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void link_at(const char *target, const char *rel)
{
	_cleanup_free_ char *p = pvg_path_join(root, rel);
	(void)!symlink(target, p);
}

static void setup(void)
{
	if (!mkdtemp(root))
		abort();
	_cleanup_free_ char *etc = pvg_path_join(root, "etc");
	_cleanup_free_ char *logs = pvg_path_join(root, "var");
	mkdir(etc, 0755);
	mkdir(logs, 0755);
	put("etc/zone", "inside\n");
	put("var/app.log", "line\n");
	link_at("/etc/zone", "var/abs-link");          /* absolute: means ROOT/etc/zone */
	link_at("../../../../../etc/zone", "var/dotdot"); /* ".." stops at the root */
	link_at("/proc/self/root/etc/passwd", "var/magic");
	link_at("/etc/passwd", "var/host-passwd");     /* the host's, not the root's: absent */
	link_at("loop2", "var/loop1");
	link_at("loop1", "var/loop2");
	link_at("../etc/zone/", "var/slash-link");
	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static int open_in(const char *path, uint64_t max, struct pvg_untrusted_file *f)
{
	const struct pvg_untrusted how = { .root_fd = root_fd, .max_size = max };
	return pvg_open_untrusted(path, &how, f);
}

static char *read_fd_text(int fd)
{
	char *buf = NULL;
	size_t len;
	if (pvg_read_fd(fd, 4096, &buf, &len) < 0)
		return pvg_strdup("");
	return buf;
}

static void both_ways(void (*fn)(void))
{
	unsetenv("PROVGATE_NO_OPENAT2");
	fn();
	setenv("PROVGATE_NO_OPENAT2", "1", 1);
	fn();
	unsetenv("PROVGATE_NO_OPENAT2");
}

static void links_resolve_inside_the_root_(void)
{
	struct pvg_untrusted_file f;
	static const char *const inside[] = { "/var/abs-link", "var/dotdot", "/../../etc/zone",
					      "/var/../etc/./zone" };
	for (size_t i = 0; i < ARRAY_SIZE(inside); i++) {
		int fd = open_in(inside[i], 0, &f);
		CHECK(fd >= 0);
		if (fd >= 0) {
			_cleanup_free_ char *t = read_fd_text(fd);
			CHECK_STR(t, "inside\n");
			close(fd);
		}
	}
	/* the host's /etc/passwd is not the root's */
	CHECK_INT(open_in("/var/host-passwd", 0, &f), -ENOENT);
	CHECK_INT(open_in("/var/loop1", 0, &f), -ELOOP);
	/* a trailing slash wants a folder, in the path or in a link's target (fuzz-resolve) */
	CHECK_INT(open_in("etc/zone/", 0, &f), -ENOTDIR);
	CHECK_INT(open_in("var/abs-link/", 0, &f), -ENOTDIR);
	CHECK_INT(open_in("var/slash-link", 0, &f), -ENOTDIR);
	CHECK_INT(open_in("etc/", 0, &f), -EISDIR);
	/* a name of PATH_MAX bytes or more is refused whatever it holds, as openat2 does */
	char *longp = pvg_xcalloc(PATH_MAX + 16, 1);
	while (strlen(longp) < PATH_MAX)
		strcat(longp, "etc/../");
	strcat(longp, "etc/zone");
	CHECK_INT(open_in(longp, 0, &f), -ENAMETOOLONG);
	free(longp);
}
static void links_resolve_inside_the_root(void) { both_ways(links_resolve_inside_the_root_); }

static void magic_links_are_refused(void)
{
	struct pvg_untrusted_file f;
	/* a link whose text names /proc/self/root is text, resolved inside the root, where no
	 * /proc is */
	unsetenv("PROVGATE_NO_OPENAT2");
	CHECK_INT(open_in("/var/magic", 0, &f), -ENOENT);
	setenv("PROVGATE_NO_OPENAT2", "1", 1);
	CHECK_INT(open_in("/var/magic", 0, &f), -ENOENT);
	/* a real magic link on the way (/proc/self/root): openat2 refuses it; the walk reads
	 * it as "/", the root it resolves in (here /proc), which has no etc/passwd */
	_cleanup_close_ int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	const struct pvg_untrusted how = { .root_fd = proc };
	unsetenv("PROVGATE_NO_OPENAT2");
	CHECK_INT(pvg_open_untrusted("/self/root/etc/passwd", &how, &f), -ELOOP);
	CHECK_INT(f.refused, PVG_REFUSED_LINK);
	setenv("PROVGATE_NO_OPENAT2", "1", 1);
	CHECK_INT(pvg_open_untrusted("/self/root/etc/passwd", &how, &f), -ENOENT);
	unsetenv("PROVGATE_NO_OPENAT2");
}

static void devices_fifos_sockets_dirs_are_refused_unopened_(void)
{
	struct pvg_untrusted_file f;
	const struct pvg_untrusted host = { .root_fd = -1 };
	/* /dev/null: opening it is harmless, so seeing it refused shows the check */
	CHECK_INT(pvg_open_untrusted("/dev/null", &host, &f), -ENODEV);
	CHECK_INT(f.refused, PVG_REFUSED_DEVICE);
	CHECK(S_ISCHR(f.st.st_mode));
	_cleanup_free_ char *fifo = pvg_path_join(root, "var/fifo");
	mkfifo(fifo, 0600);
	CHECK_INT(open_in("/var/fifo", 0, &f), -ENXIO); /* no writer: would block if opened */
	CHECK_INT(f.refused, PVG_REFUSED_FIFO);
	_cleanup_free_ char *sock = pvg_path_join(root, "var/sock");
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) == 0) {
		CHECK_INT(open_in("/var/sock", 0, &f), -ENXIO);
		CHECK_INT(f.refused, PVG_REFUSED_SOCKET);
	}
	close(s);
	unlink(sock);
	unlink(fifo);
	CHECK_INT(open_in("/var", 0, &f), -EISDIR);
	CHECK_INT(f.refused, PVG_REFUSED_DIRECTORY);
	/* a link to a device inside the root is the device */
	link_at("/dev/null", "dev-null-link");
	_cleanup_free_ char *devdir = pvg_path_join(root, "dev");
	mkdir(devdir, 0755);
	CHECK(open_in("/dev-null-link", 0, &f) < 0); /* the root has no /dev/null */
	_cleanup_free_ char *l = pvg_path_join(root, "dev-null-link");
	unlink(l);
}
static void devices_fifos_sockets_dirs_are_refused_unopened(void)
{
	both_ways(devices_fifos_sockets_dirs_are_refused_unopened_);
}

static void sizes_are_checked_before_reading(void)
{
	_cleanup_free_ char *p = pvg_path_join(root, "var/sparse");
	int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, (off_t)1 << 40) == 0); /* 1 TiB, no disk used */
	CHECK(pwrite(fd, "x", 1, 4096) == 1);
	close(fd);
	struct pvg_untrusted_file f;
	CHECK_INT(open_in("/var/sparse", 16ull << 30, &f), -EFBIG);
	CHECK_INT(f.refused, PVG_REFUSED_TOO_BIG);
	CHECK_INT(f.st.st_size, (off_t)1 << 40);
	fd = open_in("/var/sparse", 0, &f);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(lseek(fd, 4096, SEEK_SET) == 4096);
		uint64_t data = pvg_data_bytes(fd, (uint64_t)f.st.st_size);
		CHECK(data < (1u << 20)); /* one block or so: the rest is a hole */
		CHECK(lseek(fd, 0, SEEK_CUR) == 4096); /* where the caller left it */
		close(fd);
	}
	/* pvg_read_file refuses a file over its bound from the size, unread */
	char *buf = NULL;
	CHECK_INT(pvg_read_file(p, 1u << 20, &buf, NULL), -EFBIG);
	CHECK(buf == NULL);
	unlink(p);
}

static void one_name_below_a_folder_never_follows_a_link(void)
{
	_cleanup_close_ int dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *var = pvg_path_join(root, "var");
	_cleanup_close_ int vfd = open(var, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const struct pvg_untrusted how = { .root_fd = -1 };
	struct pvg_untrusted_file f;
	int fd = pvg_openat_untrusted(vfd, "app.log", &how, &f);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK_INT(pvg_openat_untrusted(vfd, "abs-link", &how, &f), -ELOOP);
	CHECK_INT(f.refused, PVG_REFUSED_LINK);
	CHECK_INT(pvg_openat_untrusted(vfd, "../etc/zone", &how, &f), -EINVAL);
	CHECK_INT(pvg_openat_untrusted(vfd, "..", &how, &f), -EINVAL);
}

static void owner_is_checked_when_asked(void)
{
	const struct pvg_untrusted how = { .root_fd = root_fd, .has_want_uid = true,
					   .want_uid = getuid() + 1 };
	struct pvg_untrusted_file f;
	CHECK_INT(pvg_open_untrusted("/etc/zone", &how, &f), -EPERM);
	CHECK_INT(f.refused, PVG_REFUSED_OWNER);
	const struct pvg_untrusted mine = { .root_fd = root_fd, .has_want_uid = true,
					    .want_uid = getuid() };
	int fd = pvg_open_untrusted("/etc/zone", &mine, &f);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
}

static void as_the_service_user_reads_only_what_it_could(void)
{
	if (geteuid() != 0) {
		printf("# not root: the as-user open is checked by the hostile scenario tests\n");
		return;
	}
	_cleanup_free_ char *secret = pvg_path_join(root, "etc/secret");
	put("etc/secret", "root only\n");
	chmod(secret, 0600);
	chmod(root, 0755);
	const struct pvg_creds nobody = { .uid = 65534, .gid = 65534, .n_groups = 0 };
	const struct pvg_untrusted how = { .root_fd = root_fd, .as = &nobody };
	struct pvg_untrusted_file f;
	CHECK_INT(pvg_open_untrusted("/etc/secret", &how, &f), -EACCES);
	CHECK_INT(f.refused, PVG_REFUSED_USER);
	int fd = pvg_open_untrusted("/etc/zone", &how, &f);
	CHECK(fd >= 0);
	if (fd >= 0) {
		_cleanup_free_ char *t = read_fd_text(fd);
		CHECK_STR(t, "inside\n");
		close(fd);
	}
	/* the child's checks hold as well: a device is refused, not opened */
	const struct pvg_untrusted host = { .root_fd = -1, .as = &nobody };
	CHECK_INT(pvg_open_untrusted("/dev/null", &host, &f), -ENODEV);
	CHECK_INT(f.refused, PVG_REFUSED_DEVICE);
}

/* ---- who the opener is: what a forked test process made of itself reports back ---- */

struct opened {
	int ok;       /* the test process could make itself what was asked */
	int r;        /* pvg_open_untrusted's answer (a descriptor is closed: 1) */
	int refused;
	char text[256], hint[512], data[64];
};

static bool set_caps(uint32_t eff0)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	memset(d, 0, sizeof(d));
	d[0].effective = d[0].permitted = eff0;
	return syscall(SYS_capset, &h, d) == 0;
}

/* become: 0 stays root with every capability but those in drop; else that uid and gid with
 * no groups and only the capabilities in keep */
struct opener {
	uid_t uid;
	uint32_t drop, keep;
};

static struct opened open_as(const struct opener *who, const char *path,
			     const struct pvg_creds *as)
{
	struct opened o;
	memset(&o, 0, sizeof(o));
	int p[2];
	if (pipe(p) < 0)
		return o;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		bool ok = true;
		if (who->uid == 0) {
			struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
			struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
			ok = syscall(SYS_capget, &h, d) == 0;
			d[0].effective &= ~who->drop;
			d[0].permitted &= ~who->drop;
			ok = ok && syscall(SYS_capset, &h, d) == 0;
		} else {
			ok = prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == 0 && setgroups(0, NULL) == 0 &&
			     setresgid(who->uid, who->uid, who->uid) == 0 &&
			     setresuid(who->uid, who->uid, who->uid) == 0 && set_caps(who->keep);
		}
		o.ok = ok;
		if (ok) {
			const struct pvg_untrusted how = { .root_fd = root_fd, .as = as };
			struct pvg_untrusted_file f;
			int fd = pvg_open_untrusted(path, &how, &f);
			o.r = fd >= 0 ? 1 : fd;
			o.refused = f.refused;
			snprintf(o.text, sizeof(o.text), "%s", pvg_refusal_text(f.refused));
			snprintf(o.hint, sizeof(o.hint), "%s", pvg_refusal_hint(f.refused, "-"));
			if (fd >= 0) {
				ssize_t n = read(fd, o.data, sizeof(o.data) - 1);
				o.data[n > 0 ? n : 0] = '\0';
			}
		}
		(void)!write(p[1], &o, sizeof(o));
		_exit(0);
	}
	close(p[1]);
	if (pid > 0 && read(p[0], &o, sizeof(o)) != (ssize_t)sizeof(o))
		memset(&o, 0, sizeof(o));
	close(p[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return o;
}

/* A root without CAP_SETUID/CAP_SETGID (a Kubernetes sidecar given SYS_PTRACE alone) cannot
 * take on the service's user: the file is refused, naming what is missing, and never read
 * with root's rights instead (not even one the user could read). */
static void without_setuid_setgid_nothing_is_read_as_root(void)
{
	if (geteuid() != 0) {
		printf("# not root: checked by the container scenario tests\n");
		return;
	}
	chmod(root, 0755);
	const struct pvg_creds user = { .uid = 65534, .gid = 65534, .n_groups = 0 };
	const struct opener both = { .uid = 0, .drop = (1u << CAP_SETUID) | (1u << CAP_SETGID) };
	struct opened o = open_as(&both, "/etc/zone", &user);
	CHECK_INT(o.ok, 1);
	CHECK_INT(o.r, -EPERM);
	CHECK_INT(o.refused, PVG_REFUSED_IDENTITY);
	CHECK_STR(o.data, "");
	CHECK(strstr(o.text, "lacks CAP_SETUID and CAP_SETGID") != NULL);
	CHECK(strstr(o.hint, "capabilities.add: [SETUID, SETGID]") != NULL);
	CHECK_STR(pvg_refusal_word(PVG_REFUSED_IDENTITY), "identity");
	/* one of them: that one is named (setgroups and setresgid pass, setresuid fails) */
	const struct opener no_uid = { .uid = 0, .drop = 1u << CAP_SETUID };
	o = open_as(&no_uid, "/etc/zone", &user);
	CHECK_INT(o.r, -EPERM);
	CHECK_INT(o.refused, PVG_REFUSED_IDENTITY);
	CHECK(strstr(o.text, "lacks CAP_SETUID,") != NULL);
	CHECK(strstr(o.hint, "[SETUID]") != NULL);
	const struct opener no_gid = { .uid = 0, .drop = 1u << CAP_SETGID };
	o = open_as(&no_gid, "/etc/zone", &user);
	CHECK_INT(o.refused, PVG_REFUSED_IDENTITY);
	CHECK(strstr(o.text, "lacks CAP_SETGID,") != NULL);
	/* with both, the same open is the user's */
	const struct opener full = { .uid = 0 };
	o = open_as(&full, "/etc/zone", &user);
	CHECK_INT(o.r, 1);
	CHECK_STR(o.data, "inside\n");
}

/* provgate run as the service's own user: exactly that user (uids, gids, groups) opens in
 * place, with no identity change (which would need CAP_SETGID even to set the same groups);
 * any difference is never skipped, and what capabilities it has are not lent to the open. */
static void the_services_own_user_opens_without_a_change(void)
{
	if (geteuid() != 0) {
		printf("# not root: cannot become another user to check it\n");
		return;
	}
	chmod(root, 0755);
	_cleanup_free_ char *mine = pvg_path_join(root, "etc/mine");
	put("etc/mine", "the user's\n");
	chmod(mine, 0600);
	(void)!chown(mine, 65534, 65534);
	_cleanup_free_ char *secret = pvg_path_join(root, "etc/root-only");
	put("etc/root-only", "root's\n");
	chmod(secret, 0600);
	const struct pvg_creds same = { .uid = 65534, .gid = 65534, .n_groups = 0 };
	const struct opener user = { .uid = 65534 };
	struct opened o = open_as(&user, "/etc/mine", &same);
	CHECK_INT(o.ok, 1);
	CHECK_INT(o.r, 1);
	CHECK_STR(o.data, "the user's\n");
	o = open_as(&user, "/etc/root-only", &same);
	CHECK_INT(o.r, -EACCES);
	CHECK_INT(o.refused, PVG_REFUSED_USER);
	/* the gid repeated among the groups (a container's first process may have it so, a
	 * process exec'd into it not) grants nothing more: the same user */
	const struct pvg_creds gid_listed = { .uid = 65534, .gid = 65534, .n_groups = 1,
					      .groups = { 65534 } };
	o = open_as(&user, "/etc/mine", &gid_listed);
	CHECK_INT(o.r, 1);
	/* another group list, or another gid: not the same user, and it cannot become it */
	const struct pvg_creds other_groups = { .uid = 65534, .gid = 65534, .n_groups = 1,
						.groups = { 100 } };
	o = open_as(&user, "/etc/mine", &other_groups);
	CHECK_INT(o.r, -EPERM);
	CHECK_INT(o.refused, PVG_REFUSED_IDENTITY);
	CHECK_STR(o.data, "");
	const struct pvg_creds other_gid = { .uid = 65534, .gid = 100, .n_groups = 0 };
	o = open_as(&user, "/etc/mine", &other_gid);
	CHECK_INT(o.refused, PVG_REFUSED_IDENTITY);
	const struct pvg_creds other_uid = { .uid = 65533, .gid = 65534, .n_groups = 0 };
	o = open_as(&user, "/etc/mine", &other_uid);
	CHECK_INT(o.refused, PVG_REFUSED_IDENTITY);
	/* the same user holding CAP_DAC_READ_SEARCH and CAP_DAC_OVERRIDE: the open drops them,
	 * and root's file stays the service user's to be refused */
	const struct opener strong = { .uid = 65534,
				       .keep = (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_DAC_OVERRIDE) };
	o = open_as(&strong, "/etc/root-only", &same);
	CHECK_INT(o.ok, 1);
	CHECK_INT(o.r, -EACCES);
	CHECK_INT(o.refused, PVG_REFUSED_USER);
	CHECK_STR(o.data, "");
	o = open_as(&strong, "/etc/mine", &same);
	CHECK_INT(o.r, 1);
	CHECK_STR(o.data, "the user's\n");
}

/* A root service reads what its own capabilities let it: its CapEff is kept for the open
 * (where provgate holds it too), so CAP_DAC_OVERRIDE reads another user's 0600 file, and a
 * root service without the DAC capabilities (a container that drops them) gets nothing more
 * through provgate than it could open itself. */
static void a_root_service_opens_with_its_own_capabilities(void)
{
	if (geteuid() != 0) {
		printf("# not root: cannot hold the capabilities to check it\n");
		return;
	}
	chmod(root, 0755);
	_cleanup_free_ char *theirs = pvg_path_join(root, "etc/nobodys");
	put("etc/nobodys", "nobody's\n");
	chmod(theirs, 0600);
	(void)!chown(theirs, 65534, 65534);
	const struct opener full = { .uid = 0 };
	const uint64_t dac = (1ull << CAP_DAC_OVERRIDE) | (1ull << CAP_DAC_READ_SEARCH);
	const struct pvg_creds all = { .uid = 0, .gid = 0, .cap_eff = ~0ull, .have_caps = true };
	struct opened o = open_as(&full, "/etc/nobodys", &all);
	CHECK_INT(o.r, 1);
	CHECK_STR(o.data, "nobody's\n");
	const struct pvg_creds no_dac = { .uid = 0, .gid = 0, .cap_eff = ~dac, .have_caps = true };
	o = open_as(&full, "/etc/nobodys", &no_dac);
	CHECK_INT(o.r, -EACCES);
	CHECK_STR(o.data, "");
	/* capabilities not known: root's own */
	const struct pvg_creds unknown = { .uid = 0, .gid = 0 };
	o = open_as(&full, "/etc/nobodys", &unknown);
	CHECK_INT(o.r, 1);
	/* the service's capabilities are not ours to add: provgate without DAC keeps without */
	const struct opener weak = { .uid = 0, .drop = (uint32_t)dac };
	o = open_as(&weak, "/etc/nobodys", &all);
	CHECK_INT(o.r, -EACCES);
	/* and the status file gives them: a process whose bounding set lost the DAC ones */
	pid_t pid = fork();
	if (pid == 0) {
		for (int cap = CAP_DAC_OVERRIDE; cap <= CAP_DAC_READ_SEARCH; cap++)
			(void)prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	struct pvg_creds c;
	int r = -1;
	for (int i = 0; i < 200; i++) { /* its CapEff is the new one once it has run exec */
		r = pvg_proc_creds("/proc", pid, &c);
		if (r == 0 && c.have_caps && !(c.cap_eff & dac))
			break;
		usleep(10000);
	}
	CHECK_INT(r, 0);
	CHECK_INT(c.have_caps, 1);
	CHECK_INT((c.cap_eff & dac) != 0, 0);
	CHECK_INT((c.cap_eff & (1ull << CAP_SYS_PTRACE)) != 0, 1);
	o = open_as(&full, "/etc/nobodys", &c);
	CHECK_INT(o.r, -EACCES);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void kernel_files_are_refused_from_the_service_side(void)
{
	/* /proc/kmsg's kind: a path the service named never reaches procfs or sysfs, while
	 * provgate's own reads of /proc text (no root, no creds) still do */
	_cleanup_close_ int host = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	const struct pvg_untrusted in_root = { .root_fd = host };
	struct pvg_untrusted_file f;
	CHECK_INT(pvg_open_untrusted("/proc/version", &in_root, &f), -ENODEV);
	CHECK_INT(f.refused, PVG_REFUSED_KERNEL_FS);
	CHECK_INT(pvg_open_untrusted("/sys/kernel/uevent_seqnum", &in_root, &f), -ENODEV);
	/* a host path the service's user can change (a file of their venv) is theirs too */
	const struct pvg_untrusted theirs = { .root_fd = -1, .service_side = true };
	CHECK_INT(pvg_open_untrusted("/proc/version", &theirs, &f), -ENODEV);
	CHECK_INT(f.refused, PVG_REFUSED_KERNEL_FS);
	const struct pvg_untrusted own = { .root_fd = -1 };
	int fd = pvg_open_untrusted("/proc/version", &own, &f);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	_cleanup_close_ int proc = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK_INT(pvg_openat_untrusted(proc, "status", &own, &f), -ENODEV);
}

static void creds_come_from_the_status_file(void)
{
	struct pvg_creds c;
	CHECK_INT(pvg_proc_creds("/proc", getpid(), &c), 0);
	CHECK_INT(c.uid, geteuid());
	CHECK_INT(c.gid, getegid());
	CHECK_INT(pvg_proc_creds("/proc", 0x3fffffff, &c), -ESRCH);
}

int main(void)
{
	setup();
	RUN(links_resolve_inside_the_root);
	RUN(magic_links_are_refused);
	RUN(devices_fifos_sockets_dirs_are_refused_unopened);
	RUN(sizes_are_checked_before_reading);
	RUN(one_name_below_a_folder_never_follows_a_link);
	RUN(owner_is_checked_when_asked);
	RUN(as_the_service_user_reads_only_what_it_could);
	RUN(without_setuid_setgid_nothing_is_read_as_root);
	RUN(the_services_own_user_opens_without_a_change);
	RUN(a_root_service_opens_with_its_own_capabilities);
	RUN(kernel_files_are_refused_from_the_service_side);
	RUN(creds_come_from_the_status_file);
	_cleanup_free_ char *cmd = pvg_asprintf("rm -rf '%s'", root);
	(void)!system(cmd);
	TAP_EXIT();
}
