/* SPDX-License-Identifier: MIT */
/* Build-log parser and gate 1's decision, on the real logs in tests/fixtures/buildlog. */
#include <fcntl.h>
#include <sys/stat.h>

#include "01-build-log.h"
#include "core/config.h"
#include "tap.h"

static char dir[] = "/tmp/pvg-t-buildlog.XXXXXX";

static char *fixture_text(const char *name)
{
	const char *src = getenv("PVG_SRC");
	_cleanup_free_ char *p = pvg_asprintf("%s/tests/fixtures/buildlog/%s", src ? src : ".", name);
	char *text = NULL;
	size_t len;
	if (pvg_read_file(p, 1 << 20, &text, &len) < 0) {
		printf("#   cannot read %s\n", p);
		return pvg_strdup("");
	}
	return text;
}

/* Joins fixtures (and literal text given as "=text") into one log. */
static char *log_of(const char *const *parts)
{
	char *all = pvg_strdup("");
	for (size_t i = 0; parts[i]; i++) {
		_cleanup_free_ char *t = parts[i][0] == '=' ? pvg_strdup(parts[i] + 1)
							    : fixture_text(parts[i]);
		char *n = pvg_asprintf("%s%s", all, t);
		free(all);
		all = n;
	}
	return all;
}

static void parse_text(struct pvg_buildlog *log, const char *text)
{
	pvg_buildlog_init(log);
	pvg_buildlog_feed(log, text, strlen(text));
	pvg_buildlog_finish(log);
}

/* Replaces every occurrence of a by b. */
static char *replace(const char *s, const char *a, const char *b)
{
	char *out = pvg_strdup("");
	const char *p = s, *q;
	while ((q = strstr(p, a))) {
		char *n = pvg_asprintf("%s%.*s%s", out, (int)(q - p), p, b);
		free(out);
		out = n;
		p = q + strlen(a);
	}
	char *n = pvg_asprintf("%s%s", out, p);
	free(out);
	return n;
}

static void touch(const char *rel, time_t when)
{
	_cleanup_free_ char *p = pvg_asprintf("%s/%s", dir, rel);
	for (char *slash = p + strlen(dir) + 1; (slash = strchr(slash, '/')); slash++) {
		*slash = '\0';
		mkdir(p, 0755);
		*slash = '/';
	}
	int fd = open(p, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
	struct timespec ts[2] = { { when, 0 }, { when, 0 } };
	utimensat(AT_FDCWD, p, ts, 0);
}

struct outcome {
	enum pvg_status status;
	char codes[512];
};

static struct outcome decide(const char *text, const char *arch, const char *const *changed,
			     size_t n)
{
	struct pvg_buildlog log;
	parse_text(&log, text);
	struct pvg_result res = { .evidence = cJSON_CreateObject() };
	struct pvg_buildlog_request req = {
		.log = &log,
		.changed = changed,
		.n_changed = n,
		.workdir = dir,
		.arch = arch,
		.cuda = pvg_arch_is_cuda(arch),
		.artifact_name = "_ext_C.abi3.so",
		.max_unsupported_calls = 0,
	};
	struct outcome o = { .status = pvg_buildlog_check(&req, &res) };
	for (size_t i = 0; i < res.n_problems; i++) {
		size_t l = strlen(o.codes);
		snprintf(o.codes + l, sizeof(o.codes) - l, "%s%s", l ? " " : "", res.problems[i].code);
		if (getenv("PVG_TEST_VERBOSE"))
			printf("#   %s: %s\n", res.problems[i].code, res.problems[i].message);
	}
	pvg_result_reset(&res);
	pvg_buildlog_done(&log);
	return o;
}

static const char *const kern[] = { "csrc/kern.cu", "csrc/kern.cuh" };

static void parses_real_hipify_output(void)
{
	_cleanup_free_ char *t = fixture_text("hipify-first.log");
	struct pvg_buildlog log;
	parse_text(&log, t);
	CHECK_INT(log.n_hipify, 5);
	CHECK_STR(log.hipify[0].src, "/src/ext/csrc/ops.cu");
	CHECK_STR(log.hipify[0].dst, "/src/ext/csrc/ops.hip");
	CHECK_INT(log.hipify[0].status, PVG_HIPIFY_OK);
	CHECK_INT(log.hipify[3].status, PVG_HIPIFY_SKIPPED_ALREADY);
	CHECK_INT(log.hipify[4].status, PVG_HIPIFY_SKIPPED_NO_CHANGES);
	CHECK_INT(log.unsupported_calls, 0);
	CHECK_INT(log.kernel_launches, 2);
	CHECK_INT(log.n_errors + log.n_failed, 0);
	pvg_buildlog_done(&log);
}

static void parses_real_ninja_hipcc_log(void)
{
	_cleanup_free_ char *t = fixture_text("hip-gfx90a.log");
	struct pvg_buildlog log;
	parse_text(&log, t);
	CHECK_INT(log.n_commands, 4);
	CHECK_INT(log.ninja_step, 4);
	CHECK_INT(log.ninja_total, 4);
	CHECK(log.n_commands == 4 && log.commands[1].compile && !log.commands[3].compile);
	/* ninja's order varies between runs: find kern.hip's line */
	size_t kern_lines = 0;
	for (size_t i = 0; i < log.n_commands; i++)
		if (log.commands[i].compile && pvg_command_mentions(log.commands[i].text, "csrc/kern.hip")) {
			kern_lines++;
			CHECK(!pvg_command_mentions(log.commands[i].text, "csrc/ops.hip"));
			CHECK(!pvg_command_mentions(log.commands[i].text, "/other/csrc/kern.hip"));
			CHECK(pvg_command_mentions(log.commands[i].text, "/src/ext/csrc/kern.hip"));
		}
	CHECK_INT(kern_lines, 1);
	pvg_buildlog_done(&log);
}

static void ansi_and_crlf_are_stripped(void)
{
	const char *t = "\x1b[1m/s/csrc/a.cu -> /s/csrc/a.hip [ok]\x1b[0m\r\n"
			"\x1b[31mFAILED: \x1b[0mCMakeFiles/x.o\r\n"
			"[1/2] hipcc --offload-arch=gfx936 -c /s/csrc/a.hip -o a.o\r\n"
			"\x1b[1m/s/csrc/a.hip:3:1: \x1b[0;1;31merror: \x1b[0mexpected ';'\r\n";
	struct pvg_buildlog log;
	parse_text(&log, t);
	CHECK_INT(log.n_lines, 4);
	CHECK_INT(log.n_hipify, 1);
	CHECK(log.n_hipify == 1 && strcmp(log.hipify[0].dst, "/s/csrc/a.hip") == 0);
	CHECK_INT(log.n_failed, 1);
	CHECK_INT(log.n_errors, 1);
	CHECK_INT(log.n_commands, 1);
	CHECK(log.n_commands == 1 && log.commands[0].text[strlen(log.commands[0].text) - 1] == 'o');
	pvg_buildlog_done(&log);
}

static void indented_and_ignored_lines_are_read(void)
{
	const char *t = "  /b/csrc/a.cu -> /b/csrc/a.hip [ok]\n"
			"  /b/csrc/a.hip -> None [ignored, input is hipified output]\n"
			"  /b/csrc/b.cu -> /b/csrc/b.hip [skipped, some new reason]\n"
			"  /b/csrc/c.cu -> /b/csrc/c.hip [maybe]\n"
			"  [3/9] FAILED: x.o\n";
	struct pvg_buildlog log;
	parse_text(&log, t);
	CHECK_INT(log.n_hipify, 3);
	CHECK(log.n_hipify == 3 && log.hipify[1].status == PVG_HIPIFY_IGNORED);
	CHECK(log.n_hipify == 3 && log.hipify[2].status == PVG_HIPIFY_SKIPPED_OTHER);
	CHECK_INT(log.n_failed, 1);
	CHECK_INT(log.ninja_step, 3);
	pvg_buildlog_done(&log);
}

static void arch_flags_are_recognised(void)
{
	char *seen = NULL;
	CHECK(pvg_command_has_arch("hipcc --offload-arch=gfx936:sramecc+:xnack- -c a.hip", "gfx936",
				   false, &seen));
	CHECK_STR(seen, "gfx936:sramecc+:xnack-");
	free(seen);
	CHECK(!pvg_command_has_arch("hipcc --offload-arch=gfx90a:xnack- -c a.hip", "gfx90a:xnack+",
				    false, &seen));
	free(seen);
	CHECK(pvg_command_has_arch("clang --offload-arch gfx90a,gfx936 -c a.hip", "gfx936", false,
				   &seen));
	CHECK_STR(seen, "gfx90a,gfx936");
	free(seen);
	CHECK(!pvg_command_has_arch("hipcc --offload-arch=gfx9360 -c a.hip", "gfx936", false, &seen));
	free(seen);
	CHECK(pvg_command_has_arch("nvcc --generate-code=arch=compute_90,code=[compute_90,sm_90] -c a.cu",
				   "sm_90", true, &seen));
	CHECK_STR(seen, "compute_90,sm_90");
	free(seen);
	CHECK(pvg_command_has_arch("nvcc -arch=sm_90 -c a.cu", "sm_90", true, &seen));
	free(seen);
	CHECK(pvg_command_has_arch("nvcc -arch sm_90 -c a.cu", "sm_90", true, &seen));
	free(seen);
	/* PTX only is not code for sm_90 */
	CHECK(!pvg_command_has_arch("nvcc -gencode arch=compute_90,code=compute_90 -c a.cu", "sm_90",
				    true, &seen));
	CHECK_STR(seen, "compute_90");
	free(seen);
	CHECK(!pvg_command_has_arch("nvcc -gencode arch=compute_90a,code=sm_90a -c a.cu", "sm_90",
				    true, &seen));
	free(seen);
	CHECK(!pvg_command_has_arch("g++ -c a.cpp", "sm_90", true, &seen));
	CHECK(seen == NULL);
}

static void fresh_hipify_and_gfx936_build_passes(void)
{
	/* kern.cu re-hipified [ok]; kern.cuh skipped with a hipified copy newer than it */
	touch("csrc/kern.cu", 1000);
	touch("csrc/kern.cuh", 1000);
	touch("csrc/kern_hip.cuh", 2000);
	_cleanup_free_ char *t = log_of((const char *[]){ "hipify-edit.log", "hip-gfx936.log", NULL });
	struct outcome o = decide(t, "gfx936", kern, 2);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_STR(o.codes, "");
}

static void skipped_hipify_of_changed_file_fails(void)
{
	/* hipify-rerun: kern.cu [skipped, already hipified] while kern.hip is older */
	touch("csrc/kern.cu", 3000);
	touch("csrc/kern.hip", 2000);
	_cleanup_free_ char *t = log_of((const char *[]){ "hipify-rerun.log", "hip-gfx936.log", NULL });
	const char *const changed[] = { "csrc/kern.cu" };
	struct outcome o = decide(t, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.stale-hipify");
	/* the same skip with a hipified file newer than the source is fine */
	touch("csrc/kern.hip", 4000);
	o = decide(t, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_PASS);
}

/* vLLM hipifies a copy in its build folder: the hipified file named by the log is compared. */
static void skip_checks_the_hipified_file_the_log_names(void)
{
	touch("csrc/kern.cu", 3000);
	touch("csrc/kern.hip", 4000); /* a newer copy in the checkout must not hide the stale one */
	touch("build/tmp/csrc/kern.hip", 2000);
	_cleanup_free_ char *t = pvg_asprintf(
		"%s/build/tmp/csrc/kern.cu -> %s/build/tmp/csrc/kern.hip [skipped, already hipified]\n"
		"[1/2] /opt/rocm/llvm/bin/clang++ -x hip --offload-arch=gfx936:sramecc+:xnack- -c "
		"%s/build/tmp/csrc/kern.hip -o CMakeFiles/_ext_C.dir/csrc/kern.hip.o\n"
		"[2/2] Linking HIP shared module _ext_C.abi3.so\n",
		dir, dir, dir);
	const char *const changed[] = { "csrc/kern.cu" };
	struct outcome o = decide(t, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.stale-hipify");
	touch("build/tmp/csrc/kern.hip", 5000);
	o = decide(t, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_STR(o.codes, "");
}

static void source_edited_after_the_build_fails(void)
{
	touch("csrc/kern.cu", 9000);
	_cleanup_free_ char *t = log_of((const char *[]){ "hipify-edit.log", "hip-gfx936.log", NULL });
	const char *const changed[] = { "csrc/kern.cu" };
	struct pvg_buildlog log;
	parse_text(&log, t);
	struct pvg_result res = { .evidence = cJSON_CreateObject() };
	struct pvg_buildlog_request req = {
		.log = &log, .changed = changed, .n_changed = 1, .workdir = dir, .arch = "gfx936",
		.artifact_name = "_ext_C.abi3.so", .artifact_mtime = { 8000, 0 },
	};
	CHECK_INT(pvg_buildlog_check(&req, &res), PVG_FAIL);
	CHECK(res.n_problems == 1 && strcmp(res.problems[0].code, "build-log.source-newer") == 0);
	pvg_result_reset(&res);
	res.evidence = cJSON_CreateObject();
	req.artifact_mtime.tv_sec = 9001;
	CHECK_INT(pvg_buildlog_check(&req, &res), PVG_PASS);
	pvg_result_reset(&res);
	pvg_buildlog_done(&log);
	touch("csrc/kern.cu", 1000);
}

static void changed_cuda_file_without_hipify_line_fails(void)
{
	_cleanup_free_ char *t = log_of((const char *[]){ "hipify-edit.log", "hip-gfx936.log", NULL });
	const char *const changed[] = { "csrc/new_kernel.cu", "csrc/new_kernel.cuh" };
	struct outcome o = decide(t, "gfx936", changed, 2);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.not-hipified build-log.no-compile-line build-log.not-hipified");
}

static void hipify_without_permissions_fails(void)
{
	_cleanup_free_ char *base = log_of((const char *[]){ "hipify-edit.log", "hip-gfx936.log", NULL });
	_cleanup_free_ char *t = replace(base, "/src/ext/csrc/kern.cu -> /src/ext/csrc/kern.hip [ok]",
					 "/src/ext/csrc/kern.cu -> /src/ext/csrc/kern.cu [skipped, no permissions]");
	const char *const changed[] = { "csrc/kern.cu" };
	struct outcome o = decide(t, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK(strstr(o.codes, "build-log.hipify-no-permissions") != NULL);
}

static void unsupported_calls_fail(void)
{
	_cleanup_free_ char *t =
		log_of((const char *[]){ "hipify-unsupported.log", "hip-gfx936.log", NULL });
	touch("csrc/kern.cu", 1000);
	touch("csrc/kern.hip", 2000);
	const char *const changed[] = { "csrc/kern.cu" };
	struct outcome o = decide(t, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.unsupported-calls");
}

static void wrong_or_missing_arch_fails(void)
{
	_cleanup_free_ char *t = log_of((const char *[]){ "hipify-edit.log", "hip-gfx90a.log", NULL });
	const char *const changed[] = { "csrc/kern.cu" };
	struct outcome o = decide(t, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.wrong-arch");
	_cleanup_free_ char *none = replace(t, "--offload-arch=gfx90a", "");
	o = decide(none, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.missing-arch");
	/* the untouched ops.hip compile line does not matter */
	_cleanup_free_ char *one = replace(t, "--offload-arch=gfx90a -MD -MT CMakeFiles/_ext_C.dir/csrc/kern",
					   "--offload-arch=gfx936 -MD -MT CMakeFiles/_ext_C.dir/csrc/kern");
	o = decide(one, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_PASS);
}

static void no_relink_fails(void)
{
	_cleanup_free_ char *base = log_of((const char *[]){ "hipify-edit.log", "hip-gfx936.log", NULL });
	char *link = strstr(base, "[4/4]");
	CHECK(link != NULL);
	if (link)
		*link = '\0';
	const char *const changed[] = { "csrc/kern.cu" };
	struct outcome o = decide(base, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.no-link");
	/* "ninja: no work to do." is no link either */
	o = decide("ninja: Entering directory `build'\nninja: no work to do.\n", "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_FAIL);
}

static void failures_in_the_log_fail(void)
{
	_cleanup_free_ char *t = log_of((const char *[]){
		"hipify-edit.log", "hip-gfx936.log",
		"=[5/6] /usr/bin/hipcc -x hip --offload-arch=gfx936 -c /src/ext/csrc/extra.hip -o x.o\n"
		"FAILED: CMakeFiles/_ext_C.dir/csrc/extra.hip.o\n"
		"/src/ext/csrc/extra.hip:3:1: error: unknown type name 'foo'\n",
		NULL });
	const char *const changed[] = { "csrc/kern.cu" };
	struct outcome o = decide(t, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.failed-step build-log.compiler-error");
}

static void cuda_build_checks_gencode(void)
{
	_cleanup_free_ char *t = fixture_text("cuda-sm90.log");
	const char *const changed[] = { "csrc/kern.cu", "csrc/kern.cuh" };
	struct outcome o = decide(t, "sm_90", changed, 2);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_STR(o.codes, "");
	o = decide(t, "sm_80", changed, 2);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.wrong-arch");
	_cleanup_free_ char *arch = replace(t, "-gencode arch=compute_90,code=sm_90", "-arch=sm_90");
	o = decide(arch, "sm_90", changed, 2);
	CHECK_INT(o.status, PVG_PASS);
}

static void empty_log_is_not_a_pass(void)
{
	const char *const changed[] = { "csrc/kern.cu" };
	struct outcome o = decide("", "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.empty-log");
	o = decide("\n\n   \r\n", "gfx936", changed, 1);
	CHECK_STR(o.codes, "build-log.empty-log");
	o = decide("hello\nworld\n", "gfx936", changed, 1);
	CHECK_STR(o.codes, "build-log.empty-log");
}

static void non_verbose_log_has_no_compile_line(void)
{
	const char *t = "/src/ext/csrc/kern.cu -> /src/ext/csrc/kern.hip [ok]\n"
			"[1/2] Building CXX object CMakeFiles/_ext_C.dir/csrc/kern.hip.o\n"
			"[2/2] Linking CXX shared library _ext_C.abi3.so\n";
	const char *const changed[] = { "csrc/kern.cu" };
	struct outcome o = decide(t, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.no-compile-line");
}

static void garbage_and_huge_lines_do_not_crash(void)
{
	size_t big = 10u << 20;
	char *buf = malloc(big + 4096);
	srand(7);
	for (size_t i = 0; i < 4096; i++)
		buf[i] = (char)(rand() & 0xff);
	memset(buf + 4096, 'x', big);
	/* a hipify-looking tail on the 10 MB line, then one real line */
	memcpy(buf + 4096 + big - 40, " -> /a.hip [ok]", 15);
	struct pvg_buildlog log;
	pvg_buildlog_init(&log);
	for (size_t off = 0; off < big + 4096; off += 65536)
		pvg_buildlog_feed(&log, buf + off, big + 4096 - off < 65536 ? big + 4096 - off : 65536);
	const char *tail = "\n/src/ext/csrc/kern.cu -> /src/ext/csrc/kern.hip [ok]\n";
	pvg_buildlog_feed(&log, tail, strlen(tail));
	pvg_buildlog_finish(&log);
	CHECK(log.n_overlong >= 1);
	CHECK(log.n_binary >= 1);
	CHECK_INT(log.n_hipify, 1);
	pvg_buildlog_done(&log);
	free(buf);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(parses_real_hipify_output);
	RUN(parses_real_ninja_hipcc_log);
	RUN(ansi_and_crlf_are_stripped);
	RUN(indented_and_ignored_lines_are_read);
	RUN(arch_flags_are_recognised);
	RUN(fresh_hipify_and_gfx936_build_passes);
	RUN(skipped_hipify_of_changed_file_fails);
	RUN(skip_checks_the_hipified_file_the_log_names);
	RUN(source_edited_after_the_build_fails);
	RUN(changed_cuda_file_without_hipify_line_fails);
	RUN(hipify_without_permissions_fails);
	RUN(unsupported_calls_fail);
	RUN(wrong_or_missing_arch_fails);
	RUN(no_relink_fails);
	RUN(failures_in_the_log_fail);
	RUN(cuda_build_checks_gencode);
	RUN(empty_log_is_not_a_pass);
	RUN(non_verbose_log_has_no_compile_line);
	RUN(garbage_and_huge_lines_do_not_crash);
	_cleanup_free_ char *cmd = pvg_asprintf("rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	TAP_EXIT();
}
