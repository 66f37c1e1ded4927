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
	TAP_EXIT();
}
