/* SPDX-License-Identifier: MIT */
/* The /proc/<pid>/maps parser: real maps of this process, and hand-made corrupt lines. */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "sys/maps.h"
#include "tap.h"

static void parses_every_kind_of_line(void)
{
	static const char text[] =
		"55d0c0a00000-55d0c0a02000 r--p 00000000 fe:00 1234   /usr/bin/cat\n"
		"7f0000000000-7f0000001000 r-xp 00001000 08:01 99     /opt/my dir/lib x.so (deleted)\n"
		"7f0000002000-7f0000003000 rw-p 00000000 00:00 0 \n"
		"7f0000004000-7f0000005000 rw-p 00000000 00:00 0\n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0      [stack]\n"
		"7f0000006000-7f0000007000 rw-s 00000000 00:01 4096   /dev/zero (deleted)\n"
		"7f0000008000-7f0000009000 r--p 00000000 00:00 0      [anon:glibc malloc]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0   [vsyscall]\n";
	struct pvg_maps m;
	size_t bad;
	CHECK_INT(pvg_maps_parse(text, sizeof(text) - 1, &m, &bad), 0);
	CHECK_INT(m.n, 8);
	if (m.n != 8)
		return;
	CHECK_STR(m.m[0].path, "/usr/bin/cat");
	CHECK_INT(m.m[0].kind, PVG_MAPPING_FILE);
	CHECK_INT(m.m[0].dev_major, 0xfe);
	CHECK_INT(m.m[0].inode, 1234);
	CHECK_STR(m.m[1].path, "/opt/my dir/lib x.so");
	CHECK(m.m[1].deleted);
	CHECK_INT(m.m[1].offset, 0x1000);
	CHECK_STR(m.m[1].perms, "r-xp");
	CHECK_INT(m.m[2].kind, PVG_MAPPING_ANON);
	CHECK(m.m[2].path == NULL);
	CHECK_INT(m.m[3].kind, PVG_MAPPING_ANON);
	CHECK_INT(m.m[4].kind, PVG_MAPPING_SPECIAL);
	CHECK_STR(m.m[4].path, "[stack]");
	CHECK(m.m[5].deleted);
	CHECK_STR(m.m[6].path, "[anon:glibc malloc]");
	CHECK(m.m[7].start == 0xffffffffff600000ull);
	pvg_maps_clear(&m);
}

static void rejects_corrupt_lines(void)
{
	static const char *const bad_lines[] = {
		"garbage\n",
		"7f00-7e00 r--p 00000000 fe:00 1 /x\n",          /* end before start */
		"7f00-7f01 r--q 00000000 fe:00 1 /x\n",          /* perms */
		"7f00-7f01 r--p 0000zz00 fe:00 1 /x\n",          /* offset */
		"7f00-7f01 r--p 00000000 fe00 1 /x\n",           /* device */
		"7f00-7f01 r--p 00000000 fe:00 x /x\n",          /* inode */
		"7f00-7f01 r--p 00000000 fe:00 99999999999999999999999 /x\n", /* inode overflow */
		"11112222333344445-7f01 r--p 0 fe:00 1 /x\n",    /* 17 hex digits */
		"7f00-7f01 r--p",                                /* truncated */
		"7f00-",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad_lines); i++) {
		struct pvg_maps m;
		size_t bad = 0;
		char *text = pvg_asprintf("7f00-7f01 r--p 00000000 fe:00 1 /ok\n%s", bad_lines[i]);
		int r = pvg_maps_parse(text, strlen(text), &m, &bad);
		if (r != -EINVAL || bad != 2)
			printf("#   line %zu: r=%d bad=%zu\n", i, r, bad);
		CHECK_INT(r, -EINVAL);
		CHECK_INT(bad, 2);
		CHECK(m.m == NULL && m.n == 0);
		free(text);
	}
}

static void empty_text_has_no_mappings(void)
{
	struct pvg_maps m;
	CHECK_INT(pvg_maps_parse("", 0, &m, NULL), 0);
	CHECK_INT(m.n, 0);
	CHECK_INT(pvg_maps_parse("\n\n", 2, &m, NULL), 0);
	CHECK_INT(m.n, 0);
}

/* A real file with a space in its name, mapped by this process and then unlinked. */
static void reads_own_maps_with_deleted_file_with_spaces(void)
{
	char dir[] = "/tmp/pvg-t-maps.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char *path = pvg_asprintf("%s/lib with space.so", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, 8192) == 0);
	void *p = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(p != MAP_FAILED);
	struct stat st;
	fstat(fd, &st);
	close(fd);
	unlink(path);
	rmdir(dir);

	struct pvg_maps m;
	CHECK_INT(pvg_maps_read("/proc", getpid(), &m), 0);
	bool found = false;
	for (size_t i = 0; i < m.n; i++) {
		if (m.m[i].start != (uint64_t)(uintptr_t)p)
			continue;
		found = true;
		CHECK_STR(m.m[i].path, path);
		CHECK(m.m[i].deleted);
		CHECK_INT(m.m[i].inode, st.st_ino);
		CHECK_INT(m.m[i].end - m.m[i].start, 8192);
	}
	CHECK(found);

	struct pvg_mapped_files files;
	struct timespec start = { 0, 0 };
	pvg_mapped_files_build("/proc", getpid(), &m, &start, 10000000, &files);
	found = false;
	for (size_t i = 0; i < files.n; i++)
		if (strcmp(files.f[i].path, path) == 0) {
			found = true;
			CHECK(files.f[i].deleted);
			CHECK(!files.f[i].replaced);
		}
	CHECK(found);
	pvg_mapped_files_clear(&files);
	pvg_maps_clear(&m);
	munmap(p, 8192);
	free(path);
}

static void gone_process_is_esrch(void)
{
	struct pvg_maps m;
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	int status;
	waitpid(child, &status, 0);
	CHECK_INT(pvg_maps_read("/proc", child, &m), -ESRCH);
}

/* Real maps text, cut and flipped at random: a clean result or -EINVAL, never a crash. */
static void mutated_real_maps_never_crash(void)
{
	char *text = NULL;
	size_t len = 0;
	CHECK_INT(pvg_read_file("/proc/self/maps", 1 << 20, &text, &len), 0);
	CHECK(len > 0);
	srand(4242);
	int clean = 0, rejected = 0;
	for (int round = 0; round < 3000 && len; round++) {
		char *copy = malloc(len);
		memcpy(copy, text, len);
		size_t cut = (size_t)rand() % len + 1;
		for (int k = 0; k < 1 + rand() % 4; k++)
			copy[(size_t)rand() % cut] = (char)(rand() % 256);
		struct pvg_maps m;
		size_t bad;
		int r = pvg_maps_parse(copy, cut, &m, &bad);
		CHECK(r == 0 || r == -EINVAL);
		if (r == 0) {
			clean++;
			for (size_t i = 0; i < m.n; i++)
				CHECK(m.m[i].end >= m.m[i].start);
			pvg_maps_clear(&m);
		} else {
			rejected++;
			CHECK(bad >= 1);
		}
		free(copy);
	}
	CHECK(clean > 0 && rejected > 0);
	free(text);
}

/* The numbers maps shows for a file, from a page of it mapped here: those of this process's
 * own executable's mapping; nothing for what is no regular file. Unmapped afterwards. */
static void maps_id_is_what_maps_shows_for_the_file(void)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	struct stat st;
	CHECK_INT(fstat(fd, &st), 0);
	struct pvg_maps_id id;
	CHECK_INT(pvg_maps_id_of_fd(fd, &id), 0);
	CHECK(id.known);
	CHECK(id.inode == (uint64_t)st.st_ino);
	struct pvg_maps m;
	CHECK_INT(pvg_maps_read("/proc", getpid(), &m), 0);
	size_t exe = 0, same = 0;
	for (size_t i = 0; i < m.n; i++) {
		if (m.m[i].kind != PVG_MAPPING_FILE || m.m[i].inode != (uint64_t)st.st_ino)
			continue;
		exe++;
		same += m.m[i].dev_major == id.dev_major && m.m[i].dev_minor == id.dev_minor;
	}
	CHECK(exe > 0);
	CHECK(same == exe);
	pvg_maps_clear(&m);
	/* no mapping of it is left behind: as many as before */
	CHECK_INT(pvg_maps_id_of_fd(fd, &id), 0);
	CHECK_INT(pvg_maps_read("/proc", getpid(), &m), 0);
	size_t after = 0;
	for (size_t i = 0; i < m.n; i++)
		after += m.m[i].kind == PVG_MAPPING_FILE && m.m[i].inode == (uint64_t)st.st_ino;
	CHECK(after == exe);
	pvg_maps_clear(&m);
	close(fd);
	int p[2];
	CHECK_INT(pipe(p), 0);
	CHECK_INT(pvg_maps_id_of_fd(p[0], &id), -EINVAL);
	CHECK(!id.known);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	RUN(parses_every_kind_of_line);
	RUN(rejects_corrupt_lines);
	RUN(empty_text_has_no_mappings);
	RUN(reads_own_maps_with_deleted_file_with_spaces);
	RUN(gone_process_is_esrch);
	RUN(mutated_real_maps_never_crash);
	RUN(maps_id_is_what_maps_shows_for_the_file);
	TAP_EXIT();
}
