/* SPDX-License-Identifier: MIT */
/*
 * The environment readers: build-ids of real ELF files against readelf, corrupt ELF variants
 * made from a real one, environ filtering and redaction, the host and GPU readers on fixture
 * trees (one copied from the H200 machine), a real child process read as a service, profiler
 * classification, and compare on malformed documents (never a crash, always a refusal).
 */
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "core/compare.h"
#include "environment.h"
#include "sys/environment.h"
#include "tap.h"

/* the source tree (tests/run exports it), for the fixtures */
static const char *src_dir(void)
{
	const char *s = getenv("PVG_SRC");
	return s && s[0] ? s : ".";
}

/* readelf -n's "Build ID: ..." of a file, or "" */
static void readelf_build_id(const char *path, char *out, size_t size)
{
	char cmd[1024];
	out[0] = '\0';
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null | sed -n 's/.*Build ID: //p'", path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	if (fgets(out, (int)size, p))
		out[strcspn(out, "\n")] = '\0';
	pclose(p);
}

static int build_id_of_path(const char *path, char hex[PVG_BUILD_ID_HEX])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = pvg_build_id_fd(fd, hex);
	close(fd);
	return r;
}

static void build_id_matches_readelf_on_real_files(void)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	exe[n > 0 ? n : 0] = '\0';
	const char *files[] = { exe, "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/ls" };
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char want[256], hex[PVG_BUILD_ID_HEX];
		readelf_build_id(files[i], want, sizeof(want));
		if (!want[0])
			continue; /* not on this system */
		CHECK_INT(build_id_of_path(files[i], hex), 0);
		CHECK_STR(hex, want);
	}
}

/* A real ELF file's bytes in memory, to corrupt. */
static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc((size_t)n);
	*len = fread(b, 1, (size_t)n, f);
	fclose(f);
	return b;
}

static int build_id_of_bytes(const unsigned char *b, size_t len, char hex[PVG_BUILD_ID_HEX])
{
	int fd = memfd_create("elf", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, b, len) != (ssize_t)len) {
		close(fd);
		return -EIO;
	}
	int r = pvg_build_id_fd(fd, hex);
	close(fd);
	return r;
}

static void corrupt_elf_variants_are_refused_not_crashed(void)
{
	size_t len = 0;
	_cleanup_free_ unsigned char *b = slurp("/proc/self/exe", &len);
	CHECK(b && len > 4096);
	if (!b)
		return;
	char hex[PVG_BUILD_ID_HEX], want[256];
	readelf_build_id("/proc/self/exe", want, sizeof(want));
	CHECK_INT(build_id_of_bytes(b, len, hex), want[0] ? 0 : -ENOENT);

	/* not ELF at all, and an empty file */
	const unsigned char text[] = "#!/bin/sh\necho hi\n";
	CHECK_INT(build_id_of_bytes(text, sizeof(text) - 1, hex), -ENOEXEC);
	CHECK_INT(build_id_of_bytes(text, 0, hex), -ENOEXEC);
	/* cut inside the ELF header */
	CHECK_INT(build_id_of_bytes(b, 40, hex), -EINVAL);
	/* cut after the program headers: the note segment is missing */
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
	size_t after_ph = eh->e_phoff + (size_t)eh->e_phnum * eh->e_phentsize;
	int r = build_id_of_bytes(b, after_ph, hex);
	CHECK(r == -EINVAL || r == -ENOENT);

	_cleanup_free_ unsigned char *c = malloc(len);
	/* program header entry size that is not Elf64_Phdr's */
	memcpy(c, b, len);
	((Elf64_Ehdr *)c)->e_phentsize = 7;
	CHECK_INT(build_id_of_bytes(c, len, hex), -EINVAL);
	/* program headers far beyond the file */
	memcpy(c, b, len);
	((Elf64_Ehdr *)c)->e_phoff = (Elf64_Off)len * 4;
	CHECK(build_id_of_bytes(c, len, hex) < 0);
	/* every PT_NOTE renamed: an ELF file without a build-id */
	memcpy(c, b, len);
	Elf64_Phdr *ph = (Elf64_Phdr *)(c + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_NOTE)
			ph[i].p_type = PT_NULL;
	CHECK_INT(build_id_of_bytes(c, len, hex), -ENOENT);
	/* a note whose descriptor size runs past its segment */
	memcpy(c, b, len);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_NOTE && ph[i].p_offset + 12 <= len) {
			uint32_t *nh = (uint32_t *)(c + ph[i].p_offset);
			nh[1] = 0x7fffffff;
		}
	CHECK_INT(build_id_of_bytes(c, len, hex), -EINVAL);
}

static void note_parser_finds_gnu_build_id_only(void)
{
	/* a hand-made segment: an ABI tag note, then the build-id (big-endian words too) */
	unsigned char seg[64] = { 0 };
	uint32_t le[] = { 4, 16, NT_GNU_ABI_TAG };
	memcpy(seg, le, 12);
	memcpy(seg + 12, "GNU", 4);
	uint32_t le2[] = { 4, 4, NT_GNU_BUILD_ID };
	memcpy(seg + 32, le2, 12);
	memcpy(seg + 44, "GNU", 4);
	memcpy(seg + 48, "\xde\xad\xbe\xef", 4);
	unsigned char id[PVG_BUILD_ID_MAX];
	CHECK_INT(pvg_elf_find_build_id(seg, 52, false, id), 4);
	CHECK(memcmp(id, "\xde\xad\xbe\xef", 4) == 0);
	/* the same bytes read big-endian are nonsense sizes: refused */
	CHECK_INT(pvg_elf_find_build_id(seg, 52, true, id), -EINVAL);
	/* "GNU" with another type, and another owner with the build-id type: none */
	memcpy(seg + 44, "XYZ", 4);
	CHECK_INT(pvg_elf_find_build_id(seg, 52, false, id), 0);
	/* too short for a header */
	CHECK_INT(pvg_elf_find_build_id(seg, 8, false, id), 0);
}

static void environ_keeps_steering_variables_and_redacts_secrets(void)
{
	static const char env[] = "PATH=/usr/bin\0VLLM_USE_V1=1\0HIP_VISIBLE_DEVICES=0,1\0"
				  "HF_TOKEN=abc\0VLLM_API_KEY=sekrit\0CUDA_PASSWORD_FILE=/x\0"
				  "VLLM_USE_V1=0\0NOEQUALS\0=novalue\0LD_PRELOAD=/lib/libfoo.so\0"
				  "TORCH_BAD=\xff\xfe\0NCCL_DEBUG=INFO";
	struct pvg_env_var *v;
	size_t n;
	pvg_environ_parse(env, sizeof(env) - 1, &v, &n);
	CHECK_INT(n, 7);
	if (n == 7) {
		CHECK_STR(v[0].name, "CUDA_PASSWORD_FILE");
		CHECK_STR(v[0].value, "<redacted>");
		CHECK_STR(v[1].name, "HIP_VISIBLE_DEVICES");
		CHECK_STR(v[2].name, "LD_PRELOAD");
		CHECK_STR(v[3].name, "NCCL_DEBUG");
		CHECK_STR(v[3].value, "INFO"); /* the last one, without its NUL */
		CHECK_STR(v[4].name, "TORCH_BAD");
		CHECK_STR(v[4].value, "\\xff\\xfe");
		CHECK_STR(v[5].name, "VLLM_API_KEY");
		CHECK(v[5].redacted);
		CHECK_STR(v[6].name, "VLLM_USE_V1");
		CHECK_STR(v[6].value, "1"); /* the first of two, as getenv */
	}
	pvg_env_vars_free(v, n);
	CHECK(!pvg_env_name_steers("VLLM_", 5)); /* a bare prefix is not a name */
	CHECK(pvg_env_name_steers("ROCR_VISIBLE_DEVICES", 20));
}

static void environ_redacts_every_secret_looking_name_in_any_case(void)
{
	static const char *const secret[] = {
		"VLLM_HF_TOKEN", "HIP_API_KEY", "CUDA_SECRET", "TORCH_PASSWORD", "NCCL_PASSWD",
		"VLLM_CREDENTIALS_FILE", "TRITON_AUTH_HEADER", "ROCM_PRIVATE_KEY_PATH",
		"VLLM_COOKIE", "TORCH_SESSION_ID", "vllm_oauth_bearer", "Vllm_Session", "NCCL_passwd",
	};
	for (size_t i = 0; i < ARRAY_SIZE(secret); i++) {
		CHECK(pvg_env_name_secret(secret[i], strlen(secret[i])));
		if (!pvg_env_name_secret(secret[i], strlen(secret[i])))
			printf("#   %s is not redacted\n", secret[i]);
	}
	static const char *const plain[] = { "VLLM_ATTENTION_BACKEND", "HIP_VISIBLE_DEVICES",
					     "NCCL_DEBUG", "TORCH_CUDA_ARCH_LIST", "VLLM_USE_V1" };
	for (size_t i = 0; i < ARRAY_SIZE(plain); i++)
		CHECK(!pvg_env_name_secret(plain[i], strlen(plain[i])));
	/* the name's length bounds the match: a word past it does not count */
	CHECK(!pvg_env_name_secret("VLLM_SESSION", 8));
	/* and through the environ reader, the value never reaches the report */
	static const char env[] = "VLLM_USE_V1=1\0NCCL_IB_AUTH=hunter2\0TORCH_Cookie=c=1\0"
				  "HIP_PRIVATE_PATH=/k\0CUDA_SESSION=s\0VLLM_CREDENTIAL=x\0"
				  "ROCM_PASSWD=p";
	struct pvg_env_var *v;
	size_t n;
	pvg_environ_parse(env, sizeof(env) - 1, &v, &n);
	CHECK_INT(n, 7);
	for (size_t i = 0; i < n; i++) {
		bool plain_var = strcmp(v[i].name, "VLLM_USE_V1") == 0;
		CHECK(v[i].redacted == !plain_var);
		CHECK_STR(v[i].value, plain_var ? "1" : "<redacted>");
	}
	pvg_env_vars_free(v, n);
}

static void host_and_gpu_read_from_fixture_trees(void)
{
	char tmp[] = "/tmp/pvg-env-XXXXXX";
	CHECK(mkdtemp(tmp) != NULL);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/proc/sys/kernel/random %s/etc && echo 0123abcd > %s/etc/machine-id && "
		 "echo 1b2c-boot > %s/proc/sys/kernel/random/boot_id && echo node7 > "
		 "%s/proc/sys/kernel/hostname && echo 6.1.0-test > %s/proc/sys/kernel/osrelease && "
		 "cp -r %s/tests/fixtures/environment/h200/proc/driver %s/proc/",
		 tmp, tmp, tmp, tmp, tmp, tmp, src_dir(), tmp);
	CHECK_INT(system(cmd), 0);
	char proc[512], etc[512], kfd[512];
	snprintf(proc, sizeof(proc), "%s/proc", tmp);
	snprintf(etc, sizeof(etc), "%s/etc", tmp);
	snprintf(kfd, sizeof(kfd), "%s/tests/fixtures/environment/kfd/sys", src_dir());
	struct pvg_roots roots = { .procfs = proc, .sysfs = kfd, .etc = etc };
	struct pvg_host_facts h;
	pvg_host_facts_read(&roots, &h);
	CHECK_STR(h.machine_id.value, "0123abcd");
	CHECK_STR(h.boot_id.value, "1b2c-boot");
	CHECK_STR(h.hostname.value, "node7");
	CHECK_STR(h.kernel.value, "6.1.0-test");
	pvg_host_facts_clear(&h);

	struct pvg_gpu_facts g;
	pvg_gpu_facts_read(&roots, &g);
	CHECK(g.amdgpu_loaded);
	CHECK_STR(g.amdgpu_version.value, "6.3.6-1718217.22.04");
	CHECK(g.nvidia_version.value && strstr(g.nvidia_version.value, "580.159.04"));
	CHECK(g.nvidia_version.value && !strchr(g.nvidia_version.value, '\n'));
	CHECK_INT(g.ids.n, 2);
	if (g.ids.n == 2) {
		/* the CPU node has no identity; the UUID is nvidia-smi's on that machine */
		CHECK_STR(g.ids.v[0], "kfd:9860431479427330106");
		CHECK_STR(g.ids.v[1], "nvidia:GPU-7762ec38-2067-0cff-3049-203a32948ecd");
	}
	CHECK_INT(g.ids_err, 0);
	pvg_gpu_facts_clear(&g);

	/* nothing there: absent, never invented */
	struct pvg_roots none = { .procfs = etc, .sysfs = etc, .etc = proc };
	pvg_gpu_facts_read(&none, &g);
	CHECK(!g.amdgpu_loaded && !g.amdgpu_version.value && !g.amdgpu_version.err);
	CHECK(!g.nvidia_version.value && !g.nvidia_version.err);
	CHECK_INT(g.ids.n, 0);
	pvg_gpu_facts_clear(&g);
	pvg_host_facts_read(&none, &h);
	CHECK(!h.machine_id.value && !h.boot_id.value && !h.boot_id.err);
	pvg_host_facts_clear(&h);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	CHECK_INT(system(cmd), 0);
}

static void a_real_child_is_read_as_a_service(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		/* held across exec, as a GPU device would be */
		if (open("/dev/null", O_RDONLY) < 0)
			_exit(3);
		char *argv[] = { "sleep", "30", NULL };
		char *envp[] = { "VLLM_ATTENTION_BACKEND=FLASH_ATTN", "HOME=/nowhere",
				 "HF_TOKEN=x", "CUDA_INJECTION64_PATH=/opt/nsys/libToolsInjection64.so",
				 NULL };
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	/* until the child is sleep(1) with libc mapped: the kernel names the new exe before it
	 * has set up the new arguments and environment, and the loader maps libc only after
	 * exec has returned, so a mapped libc means both are there */
	char exe_path[64], exe[256], maps_path[64];
	snprintf(exe_path, sizeof(exe_path), "/proc/%d/exe", (int)pid);
	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", (int)pid);
	for (int i = 0; i < 2000; i++) {
		ssize_t n = readlink(exe_path, exe, sizeof(exe) - 1);
		bool mapped = false;
		if (n > 0 && (exe[n] = '\0', strstr(exe, "sleep"))) {
			_cleanup_free_ char *maps = NULL;
			size_t len = 0;
			mapped = pvg_read_file(maps_path, 1u << 20, &maps, &len) == 0 &&
				 strstr(maps, "/libc.so");
		}
		if (mapped)
			break;
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	struct pvg_roots roots = { .procfs = "/proc", .sysfs = "/sys", .etc = "/etc" };
	struct pvg_service_facts s;
	CHECK_INT(pvg_service_facts_read(&roots, pid, true, &s), 0);
	CHECK_INT(s.argv.n, 2);
	if (s.argv.n == 2)
		CHECK_STR(s.argv.v[1], "30");
	CHECK_INT(s.n_env, 2);
	if (s.n_env == 2) {
		CHECK_STR(s.env[0].name, "CUDA_INJECTION64_PATH");
		CHECK_STR(s.env[1].value, "FLASH_ATTN");
	}
	CHECK(s.ns[PVG_NS_MNT].ino && s.ns[PVG_NS_MNT].shared);
	bool libc = false;
	for (size_t i = 0; i < s.n_objects; i++) {
		if (!strstr(s.objects[i].path, "/libc.so"))
			continue;
		char want[256];
		readelf_build_id(s.objects[i].path, want, sizeof(want));
		CHECK_STR(s.objects[i].build_id, want);
		libc = true;
	}
	CHECK(libc);
	struct pvg_strv attached = { 0 }, libs = { 0 };
	pvg_profilers_find(&s, &attached, &libs);
	CHECK_INT(attached.n, 1); /* the injection variable */
	if (attached.n)
		CHECK(strstr(attached.v[0], "CUDA_INJECTION64_PATH=") != NULL);
	pvg_strv_clear(&attached);
	pvg_strv_clear(&libs);
	pvg_service_facts_clear(&s);

	char *null_glob[] = { "/dev/null" };
	struct pvg_strv globs = { null_glob, 1 }, held = { 0 };
	CHECK_INT(pvg_held_devices("/proc", &pid, 1, &globs, &held), 0);
	CHECK_INT(held.n, 1);
	pvg_strv_clear(&held);

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK_INT(pvg_service_facts_read(&roots, pid, true, &s), -ESRCH);
}

/* A maps text in a fixture procfs (root -> /): a GPU driver's device mapping is not a shared
 * object and is never opened; a library is read through the process's root. */
static void device_mappings_are_not_shared_objects(void)
{
	char tmp[] = "/tmp/pvg-envmaps-XXXXXX";
	CHECK(mkdtemp(tmp) != NULL);
	const char *libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	struct stat dn, lc;
	CHECK_INT(stat("/dev/null", &dn), 0);
	if (stat(libc, &lc) != 0)
		return;
	char dir[512], path[600], root[600];
	snprintf(dir, sizeof(dir), "%s/4242", tmp);
	CHECK_INT(mkdir(dir, 0755), 0);
	snprintf(root, sizeof(root), "%s/root", dir);
	CHECK_INT(symlink("/", root), 0);
	snprintf(path, sizeof(path), "%s/maps", dir);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	/* as the NVIDIA driver's mappings look: the device file, with its inode */
	fprintf(f, "7f0000000000-7f0000200000 rw-s 00000000 00:05 %lu /dev/null\n",
		(unsigned long)dn.st_ino);
	fprintf(f, "7f0000400000-7f0000428000 r--p 00000000 fe:01 %lu %s\n",
		(unsigned long)lc.st_ino, libc);
	fprintf(f, "7f0000428000-7f00005bd000 r-xp 00028000 fe:01 %lu %s\n",
		(unsigned long)lc.st_ino, libc);
	fclose(f);
	snprintf(path, sizeof(path), "%s/cmdline", dir);
	f = fopen(path, "w");
	static const char argv_area[] = "python3\0serve.py\0\0\0"; /* a retitle's zero padding */
	fwrite(argv_area, 1, sizeof(argv_area) - 1, f);
	fclose(f);
	struct pvg_roots roots = { .procfs = tmp, .sysfs = tmp, .etc = tmp };
	struct pvg_service_facts s;
	CHECK_INT(pvg_service_facts_read(&roots, 4242, true, &s), 0);
	CHECK_INT(s.argv.n, 2);
	CHECK_INT(s.n_mappings, 3);
	CHECK_INT(s.n_objects, 1);
	if (s.n_objects == 1) {
		char want[256];
		readelf_build_id(libc, want, sizeof(want));
		CHECK_STR(s.objects[0].path, libc);
		CHECK_STR(s.objects[0].build_id, want);
	}
	CHECK(s.env_err < 0); /* no environ in the tree: unreadable, said so */
	pvg_service_facts_clear(&s);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	CHECK_INT(system(cmd), 0);
}

static void profiler_libraries_are_told_from_tools(void)
{
	CHECK_INT(pvg_profiler_library("/opt/nsys/target-linux-x64/libToolsInjection64.so"),
		  PVG_PROFILER_TOOL);
	CHECK_INT(pvg_profiler_library("/usr/local/cuda/lib64/libnvperf_host.so"), PVG_PROFILER_TOOL);
	CHECK_INT(pvg_profiler_library("/opt/rocm/lib/librocprofiler-sdk-tool.so.0"),
		  PVG_PROFILER_TOOL);
	CHECK_INT(pvg_profiler_library("/opt/rocm/lib/librocprofiler64.so.1"), PVG_PROFILER_TOOL);
	CHECK_INT(pvg_profiler_library("/venv/nvidia/cuda_cupti/lib/libcupti.so.12"),
		  PVG_PROFILER_LIBRARY);
	CHECK_INT(pvg_profiler_library("/opt/rocm/lib/libroctracer64.so.4"), PVG_PROFILER_LIBRARY);
	CHECK_INT(pvg_profiler_library("/opt/rocm/lib/librocprofiler-sdk.so.0"),
		  PVG_PROFILER_LIBRARY);
	CHECK_INT(pvg_profiler_library("/usr/lib/libcuda.so.1"), PVG_PROFILER_NONE);
	CHECK_INT(pvg_profiler_library("/usr/lib/libnvToolsExt.so.1"), PVG_PROFILER_NONE);

	struct pvg_env_var env[] = {
		{ "HSA_TOOLS_LIB", "", false },  /* set but empty: nothing injected */
		{ "LD_PRELOAD", "/lib/libjemalloc.so:/opt/x/libcupti.so /lib/libfoo.so", false },
	};
	struct pvg_service_facts s = { .pid = 42, .env = env, .n_env = 2 };
	struct pvg_strv attached = { 0 };
	pvg_profilers_find(&s, &attached, NULL);
	CHECK_INT(attached.n, 1);
	if (attached.n)
		CHECK_STR(attached.v[0], "pid 42 has LD_PRELOAD=/opt/x/libcupti.so");
	pvg_strv_clear(&attached);
}

static void compare_refuses_malformed_documents(void)
{
	static const char *const docs[] = {
		"{\"schema\":\"provgate.report/1\"}",
		"{\"schema\":\"provgate.report/1\",\"environment\":[]}",
		"{\"schema\":\"provgate.report/1\",\"environment\":{\"service\":5,\"host\":\"x\"}}",
		"{\"schema\":\"provgate.report/1\",\"certified\":true,\"phase\":\"live\","
		"\"gates\":{\"a\":1},\"environment\":{\"service\":{\"tree\":{\"a\":[1,2]},"
		"\"shared_objects\":[1,\"x\",{\"path\":5}],\"env\":[1],\"namespaces\":\"n\","
		"\"cgroup\":{\"z\":0},\"pid\":-3},\"benchmark\":{\"inputs\":{\"k\":{}}}}}",
		"{\"schema\":\"provgate.report/1\",\"exec\":{\"state\":7},\"after\":{\"gates\":3},"
		"\"gates\":[{\"id\":7,\"evidence\":{\"facts\":[{\"fact\":\"=\",\"live\":true},"
		"{\"fact\":\"a:b:c\"},7]}}],\"environment\":{\"service\":{\"tree\":[{\"cmdline\":"
		"[\"--x\",\"-\",\"--y=\",5]}]}}}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(docs); i++)
		for (size_t k = 0; k < ARRAY_SIZE(docs); k++) {
			cJSON *a = cJSON_Parse(docs[i]), *b = cJSON_Parse(docs[k]);
			struct pvg_compare_input ai = { "a.json", a, NULL, NULL }, bi = { "b.json", b, NULL, NULL };
			const char *decl[] = { "fact.*", "service.args.--x" };
			struct pvg_compare c;
			CHECK_INT(pvg_compare_reports(&ai, &bi, decl, 2, &c), 0);
			CHECK(!c.like_for_like);
			CHECK(c.n_problems > 0);
			cJSON *j = pvg_compare_json(&c, decl, 2);
			CHECK(j != NULL);
			cJSON_Delete(j);
			pvg_compare_clear(&c);
			cJSON_Delete(a);
			cJSON_Delete(b);
		}
	struct pvg_compare_input none = { "x.json", NULL, "not valid JSON at byte 3", NULL };
	struct pvg_compare c;
	pvg_compare_reports(&none, &none, NULL, 0, &c);
	CHECK_INT(c.n_problems, 2);
	if (c.n_problems)
		CHECK_STR(c.problems[0].code, "compare.bad-report");
	pvg_compare_clear(&c);
}

/* A report's pid is a number from a file: one no pid can be (2^32 + 1, 1e300, which no long
 * holds) is unknown, never converted with undefined behaviour or cut to another pid. */
static void compare_reads_only_pids_that_can_be(void)
{
	static const char *const pids[] = { "4294967297", "1e300", "-1e300", "0", "4194305" };
	for (size_t i = 0; i < ARRAY_SIZE(pids) + 1; i++) {
		_cleanup_free_ char *doc = pvg_asprintf(
			"{\"schema\":\"provgate.report/1\",\"environment\":{\"service\":"
			"{\"pid\":%s}}}", i < ARRAY_SIZE(pids) ? pids[i] : "4242");
		cJSON *a = cJSON_Parse(doc);
		struct pvg_compare_input ai = { "a.json", a, NULL, NULL };
		struct pvg_compare c;
		CHECK_INT(pvg_compare_reports(&ai, &ai, NULL, 0, &c), 0);
		CHECK_INT(c.baseline.pid, i < ARRAY_SIZE(pids) ? -1 : 4242);
		CHECK_INT(c.candidate.pid, i < ARRAY_SIZE(pids) ? -1 : 4242);
		pvg_compare_clear(&c);
		cJSON_Delete(a);
	}
}

int main(void)
{
	RUN(build_id_matches_readelf_on_real_files);
	RUN(corrupt_elf_variants_are_refused_not_crashed);
	RUN(note_parser_finds_gnu_build_id_only);
	RUN(environ_keeps_steering_variables_and_redacts_secrets);
	RUN(environ_redacts_every_secret_looking_name_in_any_case);
	RUN(host_and_gpu_read_from_fixture_trees);
	RUN(a_real_child_is_read_as_a_service);
	RUN(device_mappings_are_not_shared_objects);
	RUN(profiler_libraries_are_told_from_tools);
	RUN(compare_refuses_malformed_documents);
	RUN(compare_reads_only_pids_that_can_be);
	TAP_EXIT();
}
