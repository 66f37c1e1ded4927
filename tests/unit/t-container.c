/* SPDX-License-Identifier: MIT */
/*
 * Namespaces and containers: the NSpid and cgroup parsers on the text real kernels and
 * engines write (podman 4.3 with cgroupfs on this machine's cgroup v1, docker, containerd
 * and CRI-O under Kubernetes, cgroup v2), corrupt variants, and the adapters against a real
 * child process in a new pid namespace.
 */
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include "formats/container.h"
#include "sys/gpu-procs.h"
#include "sys/ns.h"
#include "util/hash.h"
#include "tap.h"

#define ID "b63f34392eb26a19bd054b2318563e0adfc277d0c3396ce1e4262610e9423c40"

static void nspid_levels_outermost_first(void)
{
	static const char status[] = "Name:\tpython3\nState:\tS (sleeping)\nTgid:\t22210\n"
				     "Pid:\t22210\nPPid:\t22199\nNSpid:\t22210\t57\n"
				     "NSpgid:\t22210\t1\n";
	struct pvg_nspid n;
	CHECK_INT(pvg_nspid_parse(status, sizeof(status) - 1, &n), 0);
	CHECK_INT(n.n, 2);
	CHECK_INT(n.pid[0], 22210);
	CHECK_INT(pvg_nspid_inner(&n), 57);
	static const char host[] = "Pid:\t1037\nNSpid:\t1037\n";
	CHECK_INT(pvg_nspid_parse(host, sizeof(host) - 1, &n), 0);
	CHECK_INT(n.n, 1);
	CHECK_INT(pvg_nspid_inner(&n), 1037);
}

static void nspid_rejects_corrupt_lines(void)
{
	struct pvg_nspid n;
	static const char none[] = "Name:\tx\nPid:\t5\n";
	CHECK_INT(pvg_nspid_parse(none, sizeof(none) - 1, &n), -ENOENT);
	static const char *bad[] = { "NSpid:\n", "NSpid:\t12x\n", "NSpid:\t0\n",
				     "NSpid:\t99999999999\n", "NSpid:\t-4\n" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK_INT(pvg_nspid_parse(bad[i], strlen(bad[i]), &n), -EINVAL);
	/* more levels than the kernel allows (32) */
	char deep[512] = "NSpid:";
	for (int i = 0; i < 40; i++)
		snprintf(deep + strlen(deep), sizeof(deep) - strlen(deep), "\t%d", i + 1);
	CHECK_INT(pvg_nspid_parse(deep, strlen(deep), &n), -EINVAL);
	/* not NUL-terminated: the length bounds the read */
	static const char cut[] = "NSpid:\t4242\t7";
	CHECK_INT(pvg_nspid_parse(cut, 11, &n), 0);
	CHECK_INT(n.n, 1);
	CHECK_INT(n.pid[0], 4242);
}

static void cgroup_names_the_container(void)
{
	struct pvg_container c;
	/* podman 4.3.1, cgroupfs manager, cgroup v1 (captured on this machine) */
	static const char podman[] = "9:name=systemd:/libpod_parent/libpod-" ID "\n"
				     "8:pids:/libpod_parent/libpod-" ID "\n"
				     "4:memory:/libpod_parent/libpod-" ID "\n"
				     "0::/\n";
	CHECK_INT(pvg_cgroup_container(podman, sizeof(podman) - 1, &c), 1);
	CHECK_STR(c.engine, "podman");
	CHECK_STR(c.id, ID);
	CHECK(!c.conmon);
	static const char conmon[] = "0::/libpod_parent/libpod-conmon-" ID "\n";
	CHECK_INT(pvg_cgroup_container(conmon, sizeof(conmon) - 1, &c), 1);
	CHECK(c.conmon);
	static const char podman_systemd[] = "0::/machine.slice/libpod-" ID ".scope/container\n";
	CHECK_INT(pvg_cgroup_container(podman_systemd, sizeof(podman_systemd) - 1, &c), 1);
	CHECK_STR(c.engine, "podman");
	static const char docker_v1[] = "12:cpu,cpuacct:/docker/" ID "\n";
	CHECK_INT(pvg_cgroup_container(docker_v1, sizeof(docker_v1) - 1, &c), 1);
	CHECK_STR(c.engine, "docker");
	CHECK_STR(c.id, ID);
	static const char docker_v2[] = "0::/system.slice/docker-" ID ".scope\n";
	CHECK_INT(pvg_cgroup_container(docker_v2, sizeof(docker_v2) - 1, &c), 1);
	CHECK_STR(c.engine, "docker");
	static const char k8s[] =
		"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-"
		"pod1f2e3d4c_5b6a_7980_a1b2_c3d4e5f60718.slice/cri-containerd-" ID ".scope\n";
	CHECK_INT(pvg_cgroup_container(k8s, sizeof(k8s) - 1, &c), 1);
	CHECK_STR(c.engine, "containerd");
	CHECK_STR(c.pod, "1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718");
	static const char k8s_v1[] =
		"4:memory:/kubepods/besteffort/pod0a1b2c3d-0000-4000-8000-000000000001/" ID "\n";
	CHECK_INT(pvg_cgroup_container(k8s_v1, sizeof(k8s_v1) - 1, &c), 1);
	CHECK_STR(c.engine, "containerd");
	CHECK_STR(c.pod, "0a1b2c3d-0000-4000-8000-000000000001");
	static const char crio[] = "0::/kubepods.slice/crio-" ID ".scope\n";
	CHECK_INT(pvg_cgroup_container(crio, sizeof(crio) - 1, &c), 1);
	CHECK_STR(c.engine, "cri-o");
}

static void cgroup_without_container(void)
{
	struct pvg_container c;
	/* this machine's own process, and a private cgroup namespace */
	static const char host[] = "9:name=systemd:/\n4:memory:/process_api/69236824a8a1bf2e92a07252c3b70305\n0::/\n";
	CHECK_INT(pvg_cgroup_container(host, sizeof(host) - 1, &c), 0);
	static const char user[] = "0::/user.slice/user-1000.slice/session-2.scope\n";
	CHECK_INT(pvg_cgroup_container(user, sizeof(user) - 1, &c), 0);
	/* an id one digit short is not an id */
	static const char shortid[] = "0::/docker/b63f34392eb26a19bd054b2318563e0adfc277d0c3396ce1e4262610e9423c4\n";
	CHECK_INT(pvg_cgroup_container(shortid, sizeof(shortid) - 1, &c), 0);
	static const char *bad[] = { "", "garbage\n", "x:cpu:/docker\n", "1:cpu\n", "\x01\x02:/a" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK_INT(pvg_cgroup_container(bad[i], strlen(bad[i]), &c), -EINVAL);
}

static void ns_links(void)
{
	uint64_t ino = 0;
	CHECK_INT(pvg_ns_link_parse("pid:[4026531836]", "pid", &ino), 0);
	CHECK_INT(ino, PVG_PIDNS_INIT_INO);
	CHECK_INT(pvg_ns_link_parse("net:[4026531836]", "pid", &ino), -EINVAL);
	CHECK_INT(pvg_ns_link_parse("pid:[]", "pid", &ino), -EINVAL);
	CHECK_INT(pvg_ns_link_parse("pid:[12]x", "pid", &ino), -EINVAL);
	CHECK_INT(pvg_ns_link_parse("pid:[99999999999999999999999]", "pid", &ino), -EINVAL);
}

/* A real child in a new pid namespace: the parent sees it at two levels, [pid, 1]. */
static void child_in_new_pid_namespace(void)
{
	if (geteuid() != 0) {
		printf("# not root: new pid namespaces need CAP_SYS_ADMIN\n");
		return;
	}
	int ready[2];
	CHECK(pipe(ready) == 0);
	pid_t mid = fork();
	if (mid == 0) {
		if (unshare(CLONE_NEWPID) != 0)
			_exit(3);
		pid_t c = fork(); /* pid 1 of the new namespace */
		if (c == 0) {
			pause();
			_exit(0);
		}
		char buf[16];
		int n = snprintf(buf, sizeof(buf), "%d", (int)c);
		(void)!write(ready[1], buf, (size_t)n);
		waitpid(c, NULL, 0);
		_exit(0);
	}
	char buf[32] = "";
	ssize_t got = 0;
	for (int i = 0; i < 100 && got < 1; i++) {
		ssize_t r = read(ready[0], buf + got, sizeof(buf) - 1 - (size_t)got);
		if (r <= 0)
			break;
		got += r;
	}
	pid_t child = (pid_t)atoi(buf);
	CHECK(child > 0);
	struct pvg_nspid n;
	CHECK_INT(pvg_proc_nspid("/proc", child, &n), 0);
	CHECK_INT(n.n, 2);
	CHECK_INT(n.pid[0], child);
	CHECK_INT(pvg_nspid_inner(&n), 1);
	struct pvg_ns_ids mine, its;
	CHECK_INT(pvg_ns_read("/proc", 0, &mine), 0);
	CHECK_INT(pvg_ns_read("/proc", child, &its), 0);
	CHECK(its.pid != 0 && its.pid != mine.pid);
	CHECK(its.mnt == mine.mnt && its.net == mine.net);
	kill(child, SIGKILL);
	waitpid(mid, NULL, 0);
	close(ready[0]);
	close(ready[1]);
	CHECK_INT(pvg_proc_nspid("/proc", child, &n), -ESRCH);
}

static void self_view_on_this_machine(void)
{
	struct pvg_self_view v;
	CHECK_INT(pvg_self_view_read("/proc", "/", &v), 0);
	/* the kernel's own answer, compared with what readlink says */
	char link[64] = "";
	ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
	CHECK(n > 0);
	CHECK_INT(v.in_container, strcmp(link, "pid:[4026531836]") != 0);
}

static void kfd_list_from_a_sysfs_tree(void)
{
	char tmpl[] = "/tmp/pvg-kfd.XXXXXX";
	char *root = mkdtemp(tmpl);
	CHECK(root != NULL);
	if (!root)
		return;
	char *cmd = pvg_asprintf("mkdir -p %s/class/kfd/kfd/proc/4242 %s/class/kfd/kfd/proc/17 "
				 "%s/class/kfd/kfd/proc/notapid",
				 root, root, root);
	CHECK(system(cmd) == 0);
	free(cmd);
	struct pvg_gpu_procs g;
	char *why = NULL;
	CHECK_INT(pvg_gpu_procs_read(root, false, &g, &why), 0);
	CHECK_STR(g.source, "kfd");
	CHECK_INT(g.n, 2);
	if (g.n == 2) {
		CHECK_INT(g.pids[0], 17);
		CHECK_INT(g.pids[1], 4242);
	}
	pvg_gpu_procs_clear(&g);
	free(why);
	/* no driver list at all: -ENOENT and a reason, never an empty list */
	char *none = pvg_asprintf("%s/none", root);
	CHECK_INT(pvg_gpu_procs_read(none, false, &g, &why), -ENOENT);
	CHECK(why && strstr(why, "kfd"));
	free(why);
	free(none);
	cmd = pvg_asprintf("rm -rf %s", root);
	CHECK(system(cmd) == 0);
	free(cmd);
}

/* A podman 4.3 container's mountinfo as this machine's kernel wrote it (its root line
 * recorded from /proc/PID/mountinfo of a container of the test image), with the mounts a
 * container has after it. */
#define STORE "/tmp/pvg-ctr.snhIIT/store/overlay"
static const char podman_mountinfo[] =
	"77 50 0:40 / / rw,relatime - overlay overlay rw,lowerdir=" STORE
	"/l/CVES46SVLEGIGYXTSPL23GBFSK,upperdir=" STORE
	"/8031bb04edde0ec84acff90f5a30eded2ce7044a44ffb19acbfa627feb319232/diff,workdir=" STORE
	"/8031bb04edde0ec84acff90f5a30eded2ce7044a44ffb19acbfa627feb319232/work,uuid=on\n"
	"78 77 0:42 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
	"79 77 0:43 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n"
	"80 77 8:1 /usr /usr ro,relatime master:1 - ext4 /dev/sda1 rw,errors=remount-ro\n";

static void mountinfo_root_of_a_podman_container(void)
{
	struct pvg_rootfs r;
	CHECK_INT(pvg_mountinfo_root(podman_mountinfo, sizeof(podman_mountinfo) - 1, &r), 1);
	CHECK_STR(r.fstype, "overlay");
	CHECK_STR(r.source, "overlay");
	CHECK_STR(r.lowerdir, STORE "/l/CVES46SVLEGIGYXTSPL23GBFSK");
	pvg_rootfs_clear(&r);
	/* two lower layers, a path with a space (octal-escaped by the kernel) and an escaped
	 * comma (overlay's own escape); a later mount at "/" is the one the process sees */
	static const char stacked[] =
		"20 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		"30 20 0:50 / / rw shared:5 - overlay overlay rw,lowerdir=/s/l/A:/s\\040x/l/B\\,c,"
		"upperdir=/s/u/diff,workdir=/s/u/work\n";
	CHECK_INT(pvg_mountinfo_root(stacked, sizeof(stacked) - 1, &r), 1);
	CHECK_STR(r.fstype, "overlay");
	CHECK_STR(r.lowerdir, "/s/l/A:/s x/l/B\\,c");
	pvg_rootfs_clear(&r);
	static const char host[] = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n";
	CHECK_INT(pvg_mountinfo_root(host, sizeof(host) - 1, &r), 1);
	CHECK_STR(r.fstype, "ext4");
	CHECK_STR(r.source, "/dev/sda1");
	CHECK(r.lowerdir == NULL);
	pvg_rootfs_clear(&r);
}

static void mountinfo_rejects_other_text(void)
{
	struct pvg_rootfs r;
	static const char noroot[] = "78 77 0:42 / /proc rw - proc proc rw\n";
	CHECK_INT(pvg_mountinfo_root(noroot, sizeof(noroot) - 1, &r), 0);
	static const char *bad[] = { "", "0::/\n", "12:pids:/docker/x\n",
				     "77 50 0:40 / / rw,relatime overlay overlay rw\n",
				     "77 50 0:40 / / rw - overlay\n", "x y z a b c - d e f\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_INT(pvg_mountinfo_root(bad[i], strlen(bad[i]), &r), -EINVAL);
		CHECK(r.source == NULL && r.lowerdir == NULL);
	}
}

/* A procfs and an engine's storage laid out as podman and docker leave them: l/ links to
 * "../ID/diff", docker's per-container "-init" layer first. */
static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void rootfs_layers_name_the_image(void)
{
	char tmpl[] = "/tmp/pvg-rootfs.XXXXXX";
	char *t = mkdtemp(tmpl);
	CHECK(t != NULL);
	if (!t)
		return;
	char *cmd = pvg_asprintf(
		"set -e; cd %s; mkdir -p proc/101 proc/102 proc/103 proc/104 store/l "
		"store/img1/diff store/img2/diff store/c1-init/diff store/c2-init/diff; "
		"ln -s ../img1/diff store/l/AAA; ln -s ../img2/diff store/l/BBB; "
		"ln -s ../c1-init/diff store/l/III; ln -s ../c2-init/diff store/l/JJJ",
		t);
	CHECK(system(cmd) == 0);
	free(cmd);
	const char *lower[] = {
		"/store/l/III:/store/l/AAA:/store/l/BBB", /* docker: container 1 of image (1, 2) */
		"/store/l/JJJ:/store/l/AAA:/store/l/BBB", /* docker: container 2 of the same image */
		"/store/l/AAA",                          /* another image */
		"/store/l/ZZZ:/store/img2/diff",          /* a link this view cannot read */
	};
	for (int i = 0; i < 4; i++) {
		char *p = pvg_asprintf("%s/proc/%d/mountinfo", t, 101 + i);
		char *m = pvg_asprintf("7 1 0:40 / / rw - overlay overlay rw,lowerdir=%s,upperdir="
				       "/store/u%d/diff,workdir=/store/u%d/work\n",
				       lower[i], i, i);
		write_file(p, m);
		free(p);
		free(m);
	}
	char *procfs = pvg_asprintf("%s/proc", t);
	struct pvg_rootfs_id a, b, c, d;
	CHECK_INT(pvg_proc_rootfs(procfs, t, 101, &a), 1);
	CHECK_INT(pvg_proc_rootfs(procfs, t, 102, &b), 1);
	CHECK_INT(pvg_proc_rootfs(procfs, t, 103, &c), 1);
	CHECK_INT(pvg_proc_rootfs(procfs, t, 104, &d), 1);
	CHECK_STR(a.fstype, "overlay");
	CHECK_INT(a.layers, 2); /* the -init layer is left out */
	CHECK_INT(a.unresolved, 0);
	CHECK_STR(a.sha256, b.sha256); /* two containers of one image */
	CHECK(strcmp(a.sha256, c.sha256) != 0);
	CHECK_INT(c.layers, 1);
	/* sha256("img1\nimg2\n"), the layer directories the links name */
	char want[65];
	pvg_sha256_hex("img1\nimg2\n", 10, want);
	CHECK_STR(a.sha256, want);
	CHECK_INT(d.layers, 2);
	CHECK_INT(d.unresolved, 1);
	CHECK_INT(pvg_proc_rootfs(procfs, t, 999, &d), -ESRCH);
	free(procfs);
	cmd = pvg_asprintf("rm -rf %s", t);
	CHECK(system(cmd) == 0);
	free(cmd);
}

int main(void)
{
	RUN(nspid_levels_outermost_first);
	RUN(nspid_rejects_corrupt_lines);
	RUN(cgroup_names_the_container);
	RUN(cgroup_without_container);
	RUN(ns_links);
	RUN(child_in_new_pid_namespace);
	RUN(self_view_on_this_machine);
	RUN(kfd_list_from_a_sysfs_tree);
	RUN(mountinfo_root_of_a_podman_container);
	RUN(mountinfo_rejects_other_text);
	RUN(rootfs_layers_name_the_image);
	TAP_EXIT();
}
