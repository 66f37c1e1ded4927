/* SPDX-License-Identifier: MIT */
/* lib/core/discover.c: what provgate init finds, through pvg_discover without the CLI, on
 * trees made here from real fixtures (hipcc build logs of tests/fixtures/buildlog, a hipcc
 * code object library of tests/fixtures/codeobj) and a /proc stand-in for the service. No
 * GPU is asked: $PROVGATE_SYSFS is an empty folder (NVML is not there either). */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "core/discover.h"

static char dir[] = "/tmp/pvg-t-discover.XXXXXX";
static const char *src;

static void mkdirs(const char *path)
{
	_cleanup_free_ char *cmd = pvg_asprintf("mkdir -p '%s'", path);
	if (system(cmd) != 0)
		abort();
}

static void copy(const char *from, const char *to)
{
	_cleanup_free_ char *cmd = pvg_asprintf("cp '%s' '%s'", from, to);
	if (system(cmd) != 0)
		abort();
}

static void write_text(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	fwrite(text, 1, len, f);
	fclose(f);
}

/* mtime seconds ago */
static void age(const char *path, int seconds)
{
	struct timespec t[2];
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= seconds;
	t[1] = t[0];
	if (utimensat(AT_FDCWD, path, t, 0) != 0)
		abort();
}

static bool has_line(const struct pvg_strv *v, const char *part)
{
	for (size_t i = 0; i < v->n; i++)
		if (strstr(v->v[i], part))
			return true;
	return false;
}

static char *fixture(const char *rel)
{
	return pvg_asprintf("%s/tests/fixtures/%s", src, rel);
}

/* Two GPU build logs, each linking _ext_C.abi3.so beside it: the newer wins; a newer log
 * that compiles no GPU code, and one whose link output is not there, do not. */
static void newest_gpu_build_log_and_its_artifact_are_taken(void)
{
	_cleanup_free_ char *root = pvg_path_join(dir, "two-logs");
	_cleanup_free_ char *old_dir = pvg_path_join(root, "old");
	_cleanup_free_ char *new_dir = pvg_path_join(root, "new");
	_cleanup_free_ char *gone_dir = pvg_path_join(root, "gone");
	mkdirs(old_dir);
	mkdirs(new_dir);
	mkdirs(gone_dir);
	_cleanup_free_ char *log90a = fixture("buildlog/hip-gfx90a.log");
	_cleanup_free_ char *log936 = fixture("buildlog/hip-gfx936.log");
	_cleanup_free_ char *so936 = fixture("codeobj/hip-gfx936.so");
	_cleanup_free_ char *so906 = fixture("codeobj/hip-gfx906.so");
	_cleanup_free_ char *old_log = pvg_path_join(old_dir, "build.log");
	_cleanup_free_ char *new_log = pvg_path_join(new_dir, "build.log");
	_cleanup_free_ char *gone_log = pvg_path_join(gone_dir, "build.log");
	_cleanup_free_ char *old_so = pvg_path_join(old_dir, "_ext_C.abi3.so");
	_cleanup_free_ char *new_so = pvg_path_join(new_dir, "_ext_C.abi3.so");
	_cleanup_free_ char *notes = pvg_path_join(root, "notes.log");
	copy(log90a, old_log);
	copy(so906, old_so);
	copy(log936, new_log);
	copy(so936, new_so);
	copy(log90a, gone_log); /* links an _ext_C.abi3.so that is not there */
	write_text(notes, "cc -o tool tool.c\n", 18);
	age(old_log, 300);
	age(new_log, 200);
	age(gone_log, 100);
	age(notes, 10);

	struct pvg_discovery d;
	pvg_discover(root, root /* a /proc without processes */, &d);
	CHECK_STR(d.build_log, new_log);
	CHECK_STR(d.artifact, new_so);
	CHECK_STR(pvg_discovery_rel(&d, d.build_log), "new/build.log");
	CHECK(has_line(&d.notes, "build log new/build.log (the newest that compiles GPU code)"));
	/* the other log's artifact has the same name: with no service to say which copy is
	 * installed, it is taken for the installed copy, and the arch is read from it */
	CHECK_STR(d.installed, old_so);
	CHECK_STR(d.arch, "gfx906");
	CHECK(d.workdir == NULL);
	CHECK(has_line(&d.todo, "source.repo: no git checkout"));
	CHECK(has_line(&d.todo, "service.match: no running process maps _ext_C.abi3.so"));
	pvg_discovery_clear(&d);
}

/* The service maps the copy pip put in a venv: the install is its Python module, resolved by
 * the venv's python. */
static void venv_install_mapped_by_the_service(void)
{
	_cleanup_free_ char *root = pvg_path_join(dir, "venv-tree");
	_cleanup_free_ char *build = pvg_path_join(root, "build");
	_cleanup_free_ char *site = pvg_path_join(root, "venv/lib/python3.11/site-packages/ext");
	_cleanup_free_ char *bin = pvg_path_join(root, "venv/bin");
	_cleanup_free_ char *proc = pvg_path_join(dir, "proc/4242");
	mkdirs(build);
	mkdirs(site);
	mkdirs(bin);
	mkdirs(proc);
	_cleanup_free_ char *log = fixture("buildlog/hip-gfx936.log");
	_cleanup_free_ char *so = fixture("codeobj/hip-gfx936.so");
	_cleanup_free_ char *blog = pvg_path_join(build, "build.log");
	_cleanup_free_ char *bso = pvg_path_join(build, "_ext_C.abi3.so");
	_cleanup_free_ char *iso = pvg_path_join(site, "_ext_C.abi3.so");
	_cleanup_free_ char *py = pvg_path_join(bin, "python3");
	_cleanup_free_ char *cfg = pvg_path_join(root, "venv/pyvenv.cfg");
	copy(log, blog);
	copy(so, bso);
	copy(so, iso);
	write_text(py, "#!/bin/sh\n", 10);
	write_text(cfg, "home = /usr/bin\n", 16);
	/* the service: a process that maps the venv's copy */
	_cleanup_free_ char *maps = pvg_asprintf("7f0000000000-7f0000100000 r-xp 00000000 08:01 "
						 "1234                       %s\n", iso);
	_cleanup_free_ char *maps_path = pvg_path_join(proc, "maps");
	_cleanup_free_ char *stat_path = pvg_path_join(proc, "stat");
	_cleanup_free_ char *cmd_path = pvg_path_join(proc, "cmdline");
	write_text(maps_path, maps, strlen(maps));
	const char *stat = "4242 (python3) S 1 4242 4242 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 "
			   "100 0 0\n";
	write_text(stat_path, stat, strlen(stat));
	write_text(cmd_path, "python3\0-m\0ext.serve\0", 21);
	_cleanup_free_ char *procfs = pvg_path_join(dir, "proc");

	struct pvg_discovery d;
	pvg_discover(root, procfs, &d);
	CHECK_STR(d.build_log, blog);
	CHECK_STR(d.artifact, bso);
	CHECK_INT(d.service.pid, 4242);
	CHECK_INT(d.n_mappers, 1);
	CHECK_STR(d.match, "python3 -m ext.serve");
	CHECK_STR(d.installed, iso);
	CHECK_STR(d.python_module, "ext._ext_C");
	CHECK_STR(d.python, py);
	CHECK(has_line(&d.notes, "install.python_module ext._ext_C, resolved by "
				 "venv/bin/python3 (a venv)"));
	CHECK_STR(d.arch, "gfx936");
	CHECK(has_line(&d.todo, "markers.log: the service writes no regular file"));
	pvg_discovery_clear(&d);

	/* root's venv says nothing more; handed to another user, init says that provgate only
	 * reads it (SPEC §11) */
	CHECK(chmod(py, 0755) == 0);
	pvg_discover(root, procfs, &d);
	CHECK(!has_line(&d.notes, "can be changed by"));
	pvg_discovery_clear(&d);
	if (geteuid() == 0) {
		_cleanup_free_ char *venv = pvg_path_join(root, "venv");
		CHECK(chown(venv, 65534, 65534) == 0);
		pvg_discover(root, procfs, &d);
		CHECK(has_line(&d.notes, "install.python venv/bin/python3 can be changed by "));
		CHECK(has_line(&d.notes, "uid 65534, through venv: provgate never runs it") ||
		      has_line(&d.notes, "(uid 65534), through venv: provgate never runs it"));
		pvg_discovery_clear(&d);
	}
}

int main(void)
{
	src = getenv("PVG_SRC");
	if (!src || !mkdtemp(dir)) {
		printf("not ok - PVG_SRC (the source tree) is not set\n");
		return 1;
	}
	_cleanup_free_ char *sysfs = pvg_path_join(dir, "sys");
	mkdirs(sysfs);
	setenv("PROVGATE_SYSFS", sysfs, 1);
	RUN(newest_gpu_build_log_and_its_artifact_are_taken);
	RUN(venv_install_mapped_by_the_service);
	_cleanup_free_ char *rm = pvg_asprintf("rm -rf '%s'", dir);
	if (system(rm) != 0)
		return 1;
	TAP_EXIT();
}
