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
	CHECK_STR(d.match, "ext.serve"); /* the entry point, not the command line */
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

/* A /proc stand-in entry: stat (comm, ppid), cmdline (NUL-separated, len bytes), the maps
 * line of a mapped file (NULL: none), the working folder, and fds: "N>target" symlinks with,
 * for regular files, fdinfo flags "N>target@flags". */
static void fake_proc(const char *procfs, int pid, const char *comm, int ppid, const char *cmdline,
		      size_t len, const char *mapped, const char *cwd, const char *const *fds)
{
	_cleanup_free_ char *d = pvg_asprintf("%s/%d", procfs, pid);
	_cleanup_free_ char *fd = pvg_asprintf("%s/fd", d);
	_cleanup_free_ char *fdinfo = pvg_asprintf("%s/fdinfo", d);
	mkdirs(fd);
	mkdirs(fdinfo);
	_cleanup_free_ char *stat = pvg_asprintf("%d (%s) S %d %d %d 0 -1 4194304 0 0 0 0 0 0 0 0 20 "
						 "0 1 0 100 0 0\n", pid, comm, ppid, pid, pid);
	_cleanup_free_ char *stat_path = pvg_path_join(d, "stat");
	write_text(stat_path, stat, strlen(stat));
	_cleanup_free_ char *cmd_path = pvg_path_join(d, "cmdline");
	write_text(cmd_path, cmdline, len);
	_cleanup_free_ char *maps = mapped ? pvg_asprintf("7f0000000000-7f0000100000 r-xp 00000000 "
							  "08:01 1234                       %s\n",
							  mapped)
					   : pvg_strdup("");
	_cleanup_free_ char *maps_path = pvg_path_join(d, "maps");
	write_text(maps_path, maps, strlen(maps));
	if (cwd) {
		_cleanup_free_ char *l = pvg_path_join(d, "cwd");
		if (symlink(cwd, l) != 0)
			abort();
	}
	for (size_t i = 0; fds && fds[i]; i++) {
		_cleanup_free_ char *spec = pvg_strdup(fds[i]);
		char *gt = strchr(spec, '>');
		*gt = '\0';
		char *at = strchr(gt + 1, '@');
		if (at)
			*at = '\0';
		_cleanup_free_ char *l = pvg_asprintf("%s/%s", fd, spec);
		if (symlink(gt + 1, l) != 0)
			abort();
		_cleanup_free_ char *info = pvg_asprintf("%s/%s", fdinfo, spec);
		_cleanup_free_ char *text = pvg_asprintf("pos:\t0\nflags:\t%s\nmnt_id:\t1\n",
							 at ? at + 1 : "0100000");
		write_text(info, text, strlen(text));
	}
}

/* A tree with a build log and its artifact, installed under inst/: root/procfs is the /proc
 * stand-in, with a listening socket of inode 5555 on port 8000 in net/tcp. */
static char *service_tree(const char *name, char **procfs, char **installed)
{
	char *root = pvg_path_join(dir, name);
	_cleanup_free_ char *build = pvg_path_join(root, "build");
	_cleanup_free_ char *inst = pvg_path_join(root, "inst");
	_cleanup_free_ char *logs = pvg_path_join(root, "logs");
	*procfs = pvg_asprintf("%s-proc", root);
	_cleanup_free_ char *net = pvg_path_join(*procfs, "net");
	mkdirs(build);
	mkdirs(inst);
	mkdirs(logs);
	mkdirs(net);
	_cleanup_free_ char *log = fixture("buildlog/hip-gfx936.log");
	_cleanup_free_ char *so = fixture("codeobj/hip-gfx936.so");
	_cleanup_free_ char *blog = pvg_path_join(build, "build.log");
	_cleanup_free_ char *bso = pvg_path_join(build, "_ext_C.abi3.so");
	*installed = pvg_path_join(inst, "_ext_C.abi3.so");
	copy(log, blog);
	copy(so, bso);
	copy(so, *installed);
	const char *tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
			  "retrnsmt   uid  timeout inode\n"
			  "   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 "
			  "00000000     0        0 5555 1 0000000000000000 100 0 0 10 0\n";
	_cleanup_free_ char *tcp_path = pvg_path_join(net, "tcp");
	write_text(tcp_path, tcp, strlen(tcp));
	return root;
}

/* vLLM's processes: the API server ("vllm serve", holding the port) and its engine, whose
 * title setproctitle wrote over its arguments ("VLLM::EngineCore_DP0"), and a stale engine of
 * an earlier run (ppid 1) that maps the same file. init takes the engine whose tree owns the
 * port, matches it by its title without the rank, and names every VLLM:: process its family,
 * so that gate 5 finds the stale one; the arguments of either run are in neither. */
static void service_is_found_by_title_and_port(void)
{
	_cleanup_free_ char *procfs = NULL, *inst = NULL;
	_cleanup_free_ char *root = service_tree("title", &procfs, &inst);
	static const char api[] = "/venv/bin/python3\0/venv/bin/vllm\0serve\0/models/llama\0"
				  "--port\0008000\0";
	static const char engine[] = "VLLM::EngineCore_DP0\0\0\0\0\0\0\0\0";
	static const char stale[] = "VLLM::EngineCore\0\0\0\0\0\0\0\0\0";
	const char *api_fds[] = { "3>socket:[5555]", NULL };
	/* the stale one first in /proc's order, and the newer one: neither decides */
	fake_proc(procfs, 100, "python3", 1, api, sizeof(api) - 1, NULL, root, api_fds);
	fake_proc(procfs, 90, "VLLM::EngineCor", 1, stale, sizeof(stale) - 1, inst, root, NULL);
	fake_proc(procfs, 101, "VLLM::EngineCor", 100, engine, sizeof(engine) - 1, inst, root, NULL);

	struct pvg_discovery d;
	pvg_discover(root, procfs, &d);
	CHECK_INT(d.service.pid, 101);
	CHECK_STR(d.match, "VLLM::EngineCore");
	CHECK_INT(d.family.n, 2);
	CHECK_STR(d.family.n ? d.family.v[0] : "", "VLLM::");
	CHECK_STR(d.family.n > 1 ? d.family.v[1] : "", "vllm serve");
	CHECK_INT(d.port, 8000);
	CHECK(has_line(&d.notes, "1 other process of that kind maps _ext_C.abi3.so outside its "
				 "tree (pid 90); it was taken for owning the port"));
	pvg_discovery_clear(&d);
}

/* Two engines in two trees, both mapping the build's bytes, neither owning a port: which one
 * is the service is not guessed; both are listed in a TODO and service.match is left out. */
static void ambiguous_service_is_listed_not_guessed(void)
{
	_cleanup_free_ char *procfs = NULL, *inst = NULL;
	_cleanup_free_ char *root = service_tree("ambiguous", &procfs, &inst);
	static const char a[] = "/usr/bin/python3\0serve_a.py\0--tag\0a\0";
	static const char b[] = "/usr/bin/python3\0serve_b.py\0--tag\0b\0";
	fake_proc(procfs, 300, "python3", 1, a, sizeof(a) - 1, inst, root, NULL);
	fake_proc(procfs, 301, "python3", 1, b, sizeof(b) - 1, inst, root, NULL);

	struct pvg_discovery d;
	pvg_discover(root, procfs, &d);
	CHECK(d.match == NULL);
	CHECK_INT(d.service.pid, 0);
	CHECK(has_line(&d.todo, "service: 2 processes in different trees map _ext_C.abi3.so and "
				"nothing tells which is the service"));
	CHECK(has_line(&d.todo, "pid 300 (serve_a.py, no port"));
	CHECK(has_line(&d.todo, "pid 301 (serve_b.py, no port"));
	pvg_discovery_clear(&d);
}

/* The service's stdout is a file, but its log is the one its command line names
 * (--log-file logs/server.log, relative to its folder): that one, even before it holds a
 * marker line; with markers, the file it holds open for appending comes before its stdout. */
static void log_is_the_one_the_command_line_names(void)
{
	_cleanup_free_ char *procfs = NULL, *inst = NULL;
	_cleanup_free_ char *root = service_tree("named-log", &procfs, &inst);
	_cleanup_free_ char *out = pvg_path_join(root, "service.out");
	_cleanup_free_ char *server = pvg_path_join(root, "logs/server.log");
	write_text(out, "starting\n", 9);
	write_text(server, "INFO starting\n", 14);
	static const char cmd[] = "/usr/bin/python3\0svc.py\0--log-level\0INFO\0--log-file\0"
				  "logs/server.log\0";
	_cleanup_free_ char *fd1 = pvg_asprintf("1>%s", out);
	const char *fds[] = { fd1, NULL };
	fake_proc(procfs, 400, "python3", 1, cmd, sizeof(cmd) - 1, inst, root, fds);

	struct pvg_discovery d;
	pvg_discover(root, procfs, &d);
	CHECK_STR(d.service_log, server);
	CHECK(has_line(&d.notes, "markers.log logs/server.log: its command line names it (no "
				 "marker line in it yet)"));
	CHECK_STR(d.match, "svc.py");
	pvg_discovery_clear(&d);

	/* a file it appends to (O_WRONLY|O_APPEND in fdinfo) that holds marker lines, named
	 * nowhere: before its stdout */
	_cleanup_free_ char *procfs2 = NULL, *inst2 = NULL;
	_cleanup_free_ char *root2 = service_tree("written-log", &procfs2, &inst2);
	_cleanup_free_ char *out2 = pvg_path_join(root2, "service.out");
	_cleanup_free_ char *diag = pvg_path_join(root2, "logs/diag.txt");
	_cleanup_free_ char *model = pvg_path_join(root2, "logs/weights.txt");
	write_text(out2, "starting\n", 9);
	const char *marker = "INFO DCU_KERNEL_DIAG selected=True shape=(4096, 5120)\n";
	write_text(diag, marker, strlen(marker));
	write_text(model, marker, strlen(marker)); /* read-only: no log */
	static const char cmd2[] = "/usr/bin/python3\0svc.py\0";
	_cleanup_free_ char *o1 = pvg_asprintf("1>%s", out2);
	_cleanup_free_ char *o3 = pvg_asprintf("3>%s@0100000", model);
	_cleanup_free_ char *o4 = pvg_asprintf("4>%s@0102001", diag);
	const char *fds2[] = { o1, o3, o4, NULL };
	fake_proc(procfs2, 401, "python3", 1, cmd2, sizeof(cmd2) - 1, inst2, root2, fds2);
	pvg_discover(root2, procfs2, &d);
	CHECK_STR(d.service_log, diag);
	CHECK_STR(d.prefix, "DCU_KERNEL_DIAG");
	CHECK(has_line(&d.notes, "markers.log logs/diag.txt: the service holds it open for "
				 "writing, and it holds marker lines"));
	pvg_discovery_clear(&d);
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
	RUN(service_is_found_by_title_and_port);
	RUN(ambiguous_service_is_listed_not_guessed);
	RUN(log_is_the_one_the_command_line_names);
	_cleanup_free_ char *rm = pvg_asprintf("rm -rf '%s'", dir);
	if (system(rm) != 0)
		return 1;
	TAP_EXIT();
}
