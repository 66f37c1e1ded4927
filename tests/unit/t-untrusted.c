/* SPDX-License-Identifier: MIT */
/* lib/util/untrusted: the one open of what another user controls, with openat2 and with the
 * walk that kernels before 5.6 get (each case runs both ways). */
#include <fcntl.h>
#include <limits.h>
#include <sys/socket.h>
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
	RUN(kernel_files_are_refused_from_the_service_side);
	RUN(creds_come_from_the_status_file);
	_cleanup_free_ char *cmd = pvg_asprintf("rm -rf '%s'", root);
	(void)!system(cmd);
	TAP_EXIT();
}
