/* SPDX-License-Identifier: MIT */
/* Build-log parser and gate 1's decision, on the real logs in tests/fixtures/buildlog. */
#include <fcntl.h>
#include <sys/stat.h>

#include "01-build-log.h"
#include "core/config.h"
#include "formats/codeobj/codeobj.h"
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

/* A verbose log whose link of the artifact leaves the changed source's object out: the log
 * shows every input, so the object is in no output (today's check passed it). */
static void object_left_out_of_the_link_fails(void)
{
	_cleanup_free_ char *base = log_of((const char *[]){ "hipify-edit.log", "hip-gfx936.log", NULL });
	_cleanup_free_ char *t = replace(base, "CMakeFiles/_ext_C.dir/csrc/kern.hip.o CMakeFiles",
					 "CMakeFiles");
	touch("csrc/kern.cu", 1000);
	const char *const changed[] = { "csrc/kern.cu" };
	struct outcome o = decide(t, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.not-linked");
	o = decide(base, "gfx936", changed, 1);
	CHECK_INT(o.status, PVG_PASS);
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

/* ---- several artifacts: tests/fixtures/buildlog/make-multi.sh ------------------------------ */

static char *multi_path(const char *name)
{
	const char *src = getenv("PVG_SRC");
	return pvg_asprintf("%s/tests/fixtures/buildlog/multi/%s", src ? src : ".", name);
}

static char *multi_text(const char *name, size_t *len)
{
	_cleanup_free_ char *p = multi_path(name);
	char *text = NULL;
	size_t n = 0;
	if (pvg_read_file(p, 64 << 20, &text, &n) < 0) {
		printf("#   cannot read %s\n", p);
		text = pvg_strdup("");
	}
	if (len)
		*len = n;
	return text;
}

/* The outputs an object is linked into, as "a.so,b.so". */
static char *outputs_of(const struct pvg_linkgraph *g, const char *obj)
{
	size_t idx[8];
	size_t n = pvg_linkgraph_outputs_of(g, obj, NULL, idx, 8);
	char *all = pvg_strdup("");
	for (size_t i = 0; i < n; i++) {
		char *j = pvg_asprintf("%s%s%s", all, i ? "," : "", pvg_basename(g->links[idx[i]].output));
		free(all);
		all = j;
	}
	return all;
}

static void ninja_log_links_objects_into_outputs(void)
{
	_cleanup_free_ char *t = multi_text("ninja.log", NULL);
	struct pvg_buildlog log;
	parse_text(&log, t);
	CHECK(log.dirs.n == 1 && strcmp(log.dirs.v[0], "/src/ext/build") == 0);
	struct pvg_linkgraph g;
	pvg_linkgraph_build(&log, &g);
	CHECK_INT(g.n_compiles, 6);
	CHECK_INT(g.n_links, 5); /* libpvgutil.a and four shared objects */
	CHECK_INT(g.n_shared, 4);
	CHECK(!g.any_unknown);
	const struct pvg_link_step *ar = pvg_linkgraph_output(&g, "libpvgutil.a");
	CHECK(ar && ar->kind == PVG_LINK_ARCHIVE && ar->n_inputs == 1);
	const struct pvg_link_step *a = pvg_linkgraph_output(&g, "_a_C.so");
	CHECK(a && a->kind == PVG_LINK_SHARED && a->n_inputs == 2 && a->inputs_known);
	_cleanup_free_ char *o1 = outputs_of(&g, "CMakeFiles/_a_C.dir/csrc/a/a_kern.hip.o");
	CHECK_STR(o1, "_a_C.so");
	/* through the archive, linked on into _b_C.so */
	_cleanup_free_ char *o2 = outputs_of(&g, "CMakeFiles/pvgutil.dir/csrc/util/util.cpp.o");
	CHECK_STR(o2, "_b_C.so");
	/* absolute and relative spellings of one object */
	_cleanup_free_ char *o3 = outputs_of(&g, "/src/ext/build/CMakeFiles/_c_C.dir/csrc/c/c_kern.hip.o");
	CHECK_STR(o3, "_c_C.so");
	_cleanup_free_ char *o4 = outputs_of(&g, "CMakeFiles/_x_C.dir/csrc/a/a_kern.hip.o");
	CHECK_STR(o4, "");
	char target[64];
	CHECK(pvg_cmake_target_of("CMakeFiles/_moe_C.dir/csrc/moe/x.hip.o", target, sizeof(target)));
	CHECK_STR(target, "_moe_C");
	CHECK(!pvg_cmake_target_of("obj/CMakeFilesX/a.o", target, sizeof(target)));
	pvg_linkgraph_done(&g);
	pvg_buildlog_done(&log);
}

static void make_and_torch_logs_link_objects_into_outputs(void)
{
	_cleanup_free_ char *t = multi_text("make.log", NULL);
	struct pvg_buildlog log;
	parse_text(&log, t);
	struct pvg_linkgraph g;
	pvg_linkgraph_build(&log, &g);
	CHECK_INT(g.n_compiles, 6);
	CHECK_INT(g.n_shared, 4);
	_cleanup_free_ char *o1 = outputs_of(&g, "CMakeFiles/pvgutil.dir/csrc/util/util.cpp.o");
	CHECK_STR(o1, "_b_C.so");
	/* the non-verbose "Linking ..." line comes first; the command that follows is the last
	 * step and has the inputs */
	const struct pvg_link_step *b = pvg_linkgraph_output(&g, "_b_C.so");
	CHECK(b && b->inputs_known && b->n_inputs == 2);
	CHECK(!g.any_unknown);
	pvg_linkgraph_done(&g);
	pvg_buildlog_done(&log);

	_cleanup_free_ char *tt = multi_text("torch.log", NULL);
	if (!*tt) {
		printf("# torch.log was not made here (make-multi.sh says why)\n");
		return;
	}
	parse_text(&log, tt);
	pvg_linkgraph_build(&log, &g);
	CHECK_INT(g.n_compiles, 2);
	CHECK_INT(g.n_shared, 2);
	_cleanup_free_ char *o2 = outputs_of(&g, "/src/ext/build/temp.linux-x86_64-cpython-311/csrc/t/t2.o");
	CHECK_STR(o2, "_t2_C.cpython-311-x86_64-linux-gnu.so");
	pvg_linkgraph_done(&g);
	pvg_buildlog_done(&log);
}

struct art_cfg {
	const char *name, *file, *arch;
	const char *glob; /* one compiled glob, or NULL */
};

/* Gate 1's decision on a multi fixture log with the given artifacts. */
static struct outcome decide_multi(const char *text, const struct art_cfg *ac, size_t n_arts,
				   const char *const *changed, size_t n, const char *deps_name,
				   const char *depfile_root, cJSON **evidence)
{
	struct pvg_buildlog log;
	parse_text(&log, text);
	struct pvg_buildlog_artifact arts[8];
	struct pvg_strv globs[8];
	char *gv[8][2];
	for (size_t i = 0; i < n_arts; i++) {
		gv[i][0] = (char *)ac[i].glob;
		gv[i][1] = NULL;
		globs[i] = (struct pvg_strv){ .v = gv[i], .n = ac[i].glob ? 1 : 0 };
		arts[i] = (struct pvg_buildlog_artifact){ .name = ac[i].name, .build = ac[i].file,
							  .file = ac[i].file, .arch = ac[i].arch,
							  .compiled = &globs[i] };
	}
	struct pvg_ninja_deps deps;
	bool have_deps = false;
	if (deps_name) {
		size_t len;
		_cleanup_free_ char *bytes = multi_text(deps_name, &len);
		have_deps = pvg_ninja_deps_parse((const uint8_t *)bytes, len, &deps) == 0;
		CHECK(have_deps);
	}
	const char *roots[] = { depfile_root };
	struct pvg_result res = { .evidence = cJSON_CreateObject() };
	struct pvg_buildlog_request req = {
		.log = &log, .changed = changed, .n_changed = n, .workdir = dir,
		.arch = ac[0].arch, .cuda = false, .artifact_name = ac[0].file,
		.arts = arts, .n_arts = n_arts,
		.ninja_deps = have_deps ? &deps : NULL, .deps_root = "/src/ext/build",
		.roots = depfile_root ? roots : NULL, .n_roots = depfile_root ? 1 : 0,
	};
	struct outcome o = { .status = pvg_buildlog_check(&req, &res) };
	for (size_t i = 0; i < res.n_problems; i++) {
		size_t l = strlen(o.codes);
		snprintf(o.codes + l, sizeof(o.codes) - l, "%s%s", l ? " " : "", res.problems[i].code);
		if (getenv("PVG_TEST_VERBOSE"))
			printf("#   %s: %s [%s]\n", res.problems[i].code, res.problems[i].message,
			       res.problems[i].hint ? res.problems[i].hint : "");
	}
	if (evidence)
		*evidence = cJSON_Duplicate(res.evidence, true);
	pvg_result_reset(&res);
	if (have_deps)
		pvg_ninja_deps_done(&deps);
	pvg_buildlog_done(&log);
	return o;
}

static const struct art_cfg ab[] = {
	{ "_a_C", "_a_C.so", "gfx90a", NULL },
	{ "_b_C", "_b_C.so", "gfx90a:xnack-", NULL },
};

static void two_configured_extensions_in_one_log_pass(void)
{
	_cleanup_free_ char *t = multi_text("ninja.log", NULL);
	const char *const changed[] = { "csrc/a/a_kern.hip", "csrc/b/b_kern.hip", "csrc/util/util.cpp" };
	cJSON *ev = NULL;
	struct outcome o = decide_multi(t, ab, 2, changed, 3, NULL, NULL, &ev);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_STR(o.codes, "");
	/* evidence: per artifact, and where each source was found linked */
	cJSON *arts = cJSON_GetObjectItem(ev, "artifacts");
	CHECK(cJSON_GetArraySize(arts) == 2);
	cJSON *f2 = cJSON_GetArrayItem(cJSON_GetObjectItem(ev, "files"), 2);
	cJSON *into = cJSON_GetArrayItem(cJSON_GetObjectItem(f2, "linked_into"), 0);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(into, "artifact")), "_b_C");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(into, "by")), "link line");
	cJSON_Delete(ev);
	/* the make VERBOSE=1 and the ninja logs say the same */
	_cleanup_free_ char *m = multi_text("make.log", NULL);
	o = decide_multi(m, ab, 2, changed, 3, NULL, NULL, NULL);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_STR(o.codes, "");
}

static void changed_source_in_an_unconfigured_output_fails(void)
{
	_cleanup_free_ char *t = multi_text("ninja.log", NULL);
	const char *const changed[] = { "csrc/a/a_kern.hip", "csrc/c/c_kern.hip" };
	struct outcome o = decide_multi(t, ab, 2, changed, 2, NULL, NULL, NULL);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.unverified-artifact");
	/* one artifact configured: the other extension's source is not proven by it either */
	const char *const moe[] = { "csrc/b/b_kern.hip" };
	o = decide_multi(t, ab, 1, moe, 1, NULL, NULL, NULL);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.unverified-artifact");
}

static void every_configured_artifact_needs_its_link_step(void)
{
	_cleanup_free_ char *t = multi_text("ninja.log", NULL);
	/* the log without _b_C's link: an incremental build that changed only _a_C's source
	 * need not relink _b_C */
	_cleanup_free_ char *cut = replace(t, "-o _b_C.so", "-o _other.so");
	const char *const changed[] = { "csrc/a/a_kern.hip" };
	struct outcome o = decide_multi(cut, ab, 2, changed, 1, NULL, NULL, NULL);
	CHECK_INT(o.status, PVG_PASS);
	/* but a changed source of _b_C is then linked into no configured artifact */
	const char *const both[] = { "csrc/a/a_kern.hip", "csrc/b/b_kern.hip" };
	o = decide_multi(cut, ab, 2, both, 2, NULL, NULL, NULL);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK(strstr(o.codes, "build-log.unverified-artifact") != NULL);
	/* and a log that links none of the artifacts is no build of them */
	_cleanup_free_ char *none = replace(cut, "-o _a_C.so", "-o _another.so");
	o = decide_multi(none, ab, 2, changed, 1, NULL, NULL, NULL);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK(strstr(o.codes, "build-log.no-link") != NULL);
	/* a source compiled after its artifact's last link */
	_cleanup_free_ char *late = pvg_asprintf(
		"%s[12/12] /usr/bin/hipcc -x hip --offload-arch=gfx90a -o "
		"CMakeFiles/_a_C.dir/csrc/a/a_kern.hip.o -c /src/ext/csrc/a/a_kern.hip\n", t);
	o = decide_multi(late, ab, 2, changed, 1, NULL, NULL, NULL);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.not-relinked");
}

/* The real hipcc build has _a_C for gfx90a (xnack any), _b_C gfx90a:xnack-, _c_C
 * gfx90a:sramecc+:xnack-, _d_C gfx90a:xnack+. */
static void target_ids_follow_llvm_in_compile_lines(void)
{
	_cleanup_free_ char *t = multi_text("ninja.log", NULL);
	static const struct {
		const char *file, *src, *arch;
		enum pvg_status want;
	} cases[] = {
		{ "_a_C.so", "csrc/a/a_kern.hip", "gfx90a", PVG_PASS },
		{ "_a_C.so", "csrc/a/a_kern.hip", "gfx90a:xnack-", PVG_PASS }, /* any serves off */
		{ "_a_C.so", "csrc/a/a_kern.hip", "gfx90a:xnack+", PVG_PASS }, /* ... and on */
		{ "_a_C.so", "csrc/a/a_kern.hip", "gfx90a:sramecc+:xnack-", PVG_PASS },
		{ "_a_C.so", "csrc/a/a_kern.hip", "gfx906", PVG_FAIL },
		{ "_b_C.so", "csrc/b/b_kern.hip", "gfx90a", PVG_PASS },
		{ "_b_C.so", "csrc/b/b_kern.hip", "gfx90a:xnack-", PVG_PASS },
		{ "_b_C.so", "csrc/b/b_kern.hip", "gfx90a:xnack+", PVG_FAIL },
		{ "_c_C.so", "csrc/c/c_kern.hip", "gfx90a:sramecc+:xnack-", PVG_PASS },
		{ "_c_C.so", "csrc/c/c_kern.hip", "gfx90a:xnack-", PVG_PASS },
		{ "_c_C.so", "csrc/c/c_kern.hip", "gfx90a:sramecc-", PVG_FAIL },
		{ "_c_C.so", "csrc/c/c_kern.hip", "gfx90a:xnack+", PVG_FAIL },
		{ "_d_C.so", "csrc/d/d_kern.hip", "gfx90a:xnack+", PVG_PASS },
		{ "_d_C.so", "csrc/d/d_kern.hip", "gfx90a:xnack-", PVG_FAIL },
		{ "_d_C.so", "csrc/d/d_kern.hip", "gfx90a", PVG_PASS },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct art_cfg one = { "x", cases[i].file, cases[i].arch, NULL };
		const char *const changed[] = { cases[i].src };
		struct outcome o = decide_multi(t, &one, 1, changed, 1, NULL, NULL, NULL);
		if (o.status != cases[i].want)
			printf("#   %s for %s: %s (%s)\n", cases[i].file, cases[i].arch,
			       pvg_status_name(o.status), o.codes);
		CHECK_INT(o.status, cases[i].want);
		CHECK_STR(o.codes, cases[i].want == PVG_PASS ? "" : "build-log.wrong-arch");
	}
}

/* Gate 6's matching (pvg_codeobj_matches_arch) on the code objects hipcc wrote for the same
 * four libraries: the same rule as gate 1's compile lines. */
static void target_ids_follow_llvm_in_code_objects(void)
{
	static const struct {
		const char *file, *arch;
		bool want;
	} cases[] = {
		{ "_a_C.so", "gfx90a", true },
		{ "_a_C.so", "gfx90a:xnack-", true },
		{ "_a_C.so", "gfx90a:xnack+", true },
		{ "_a_C.so", "gfx90a:sramecc+:xnack-", true },
		{ "_a_C.so", "gfx906", false },
		{ "_b_C.so", "gfx90a", true },
		{ "_b_C.so", "gfx90a:xnack-", true },
		{ "_b_C.so", "gfx90a:xnack+", false },
		{ "_c_C.so", "gfx90a:sramecc+:xnack-", true },
		{ "_c_C.so", "gfx90a:xnack-", true },
		{ "_c_C.so", "gfx90a:sramecc-", false },
		{ "_c_C.so", "gfx90a:xnack+", false },
		{ "_d_C.so", "gfx90a:xnack+", true },
		{ "_d_C.so", "gfx90a:xnack-", false },
		{ "_d_C.so", "gfx90a", true },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ char *p = multi_path(cases[i].file);
		struct pvg_codeobj_set *set = NULL;
		CHECK_INT(pvg_codeobj_scan_path(p, &(struct pvg_codeobj_opts){ 0 }, &set), 0);
		if (!set)
			continue;
		size_t amd = 0;
		bool match = false;
		for (size_t k = 0; k < set->n_objs; k++) {
			const struct pvg_code_object *co = &set->objs[k];
			if (co->kind != PVG_CO_AMDGPU)
				continue;
			amd++;
			CHECK(!co->error && !co->mismatch);
			match |= pvg_codeobj_matches_arch(co, cases[i].arch);
		}
		CHECK_INT(amd, 1);
		if (match != cases[i].want)
			printf("#   %s for %s: %d\n", cases[i].file, cases[i].arch, match);
		CHECK(match == cases[i].want);
		pvg_codeobj_set_free(set);
	}
	/* the strings themselves */
	CHECK(pvg_target_compatible("gfx90a:xnack-", "gfx90a"));
	CHECK(!pvg_target_compatible("gfx90a:xnack-", "gfx90a:xnack+"));
	CHECK(!pvg_target_compatible("gfx90a", "sm_90"));
	CHECK(!pvg_target_compatible(NULL, "gfx90a"));
}

static void header_change_needs_every_consumer_relinked(void)
{
	_cleanup_free_ char *t = multi_text("ninja.log", NULL);
	const char *const changed[] = { "csrc/shared.h" };
	/* .ninja_deps: a_kern and b_kern include it */
	cJSON *ev = NULL;
	struct outcome o = decide_multi(t, ab, 2, changed, 1, "ninja_deps", NULL, &ev);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_STR(o.codes, "");
	cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(ev, "files"), 0);
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(f, "consumers")), 2);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(f, "consumers_from")), ".ninja_deps");
	cJSON_Delete(ev);
	/* only _a_C configured: _b_C.so also holds the header's code */
	o = decide_multi(t, ab, 1, changed, 1, "ninja_deps", NULL, NULL);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.unverified-artifact");
	/* both configured, and the log did not recompile b_kern (a build of _a_C only, plus an
	 * older link of _b_C) */
	_cleanup_free_ char *no_b = replace(t, "-c /src/ext/csrc/b/b_kern.hip", "-c /src/ext/csrc/b/other.hip");
	_cleanup_free_ char *no_b2 = replace(no_b, "-o CMakeFiles/_b_C.dir/csrc/b/b_kern.hip.o", "-o CMakeFiles/_b_C.dir/csrc/b/other.hip.o");
	o = decide_multi(no_b2, ab, 2, changed, 1, "ninja_deps", NULL, NULL);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.not-recompiled");
	/* make's depfiles say the same */
	_cleanup_free_ char *m = multi_text("make.log", NULL);
	_cleanup_free_ char *root = multi_path("make-deps");
	o = decide_multi(m, ab, 1, changed, 1, NULL, root, NULL);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.codes, "build-log.unverified-artifact");
	o = decide_multi(m, ab, 2, changed, 1, NULL, root, &ev);
	CHECK_INT(o.status, PVG_PASS);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(ev, "files"), 0);
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(f, "consumers")), 2);
	cJSON_Delete(ev);
	/* no dependency information: said so, and the artifacts are required linked */
	o = decide_multi(t, ab, 2, changed, 1, NULL, NULL, &ev);
	CHECK_INT(o.status, PVG_PASS);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(ev, "files"), 0);
	CHECK(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(f, "consumers")) ?: "", "unknown") != NULL);
	cJSON_Delete(ev);
}

static void non_verbose_links_are_unverifiable_unless_globs_decide(void)
{
	/* verbose compile lines, CMake's non-verbose link lines (as with response files) */
	_cleanup_free_ char *t = multi_text("ninja.log", NULL);
	_cleanup_free_ char *t1 = replace(t, ": && /usr/bin/hipcc -fPIC   --offload-arch=gfx90a -shared -Wl,-soname,_a_C.so -o _a_C.so CMakeFiles/_a_C.dir/csrc/a/a_kern.hip.o CMakeFiles/_a_C.dir/csrc/a/a_bind.cpp.o   && :",
					  "Linking CXX shared library _a_C.so");
	_cleanup_free_ char *t2 = replace(t1, "-o _b_C.so CMakeFiles/_b_C.dir/csrc/b/b_kern.hip.o  libpvgutil.a", "-o _b_C.so @CMakeFiles/_b_C.rsp");
	/* CMake's object folder still names the target */
	const char *const changed[] = { "csrc/a/a_kern.hip", "csrc/b/b_kern.hip" };
	cJSON *ev = NULL;
	struct outcome o = decide_multi(t2, ab, 2, changed, 2, NULL, NULL, &ev);
	CHECK_INT(o.status, PVG_PASS);
	cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(ev, "files"), 0);
	cJSON *into = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "linked_into"), 0);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(into, "by")), "cmake target");
	cJSON_Delete(ev);
	/* objects outside CMake's folders: unverifiable, unless the compiled globs decide */
	_cleanup_free_ char *t3 = replace(t2, "CMakeFiles/_a_C.dir/", "obj/");
	const char *const a[] = { "csrc/a/a_kern.hip" };
	o = decide_multi(t3, ab, 2, a, 1, NULL, NULL, NULL);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(o.codes, "build-log.link-inputs-unknown");
	const struct art_cfg globbed[] = {
		{ "_a_C", "_a_C.so", "gfx90a", "csrc/a/**" },
		{ "_b_C", "_b_C.so", "gfx90a:xnack-", "csrc/b/**" },
	};
	o = decide_multi(t3, globbed, 2, a, 1, NULL, NULL, &ev);
	CHECK_INT(o.status, PVG_PASS);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(ev, "files"), 0);
	into = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "linked_into"), 0);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(into, "by")), "compiled globs");
	cJSON_Delete(ev);
	/* one artifact configured while the log links several shared objects: unverifiable */
	o = decide_multi(t3, ab, 1, a, 1, NULL, NULL, NULL);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
}

static void ninja_deps_log_is_read_and_bounded(void)
{
	size_t len;
	_cleanup_free_ char *bytes = multi_text("ninja_deps", &len);
	struct pvg_ninja_deps d;
	CHECK_INT(pvg_ninja_deps_parse((const uint8_t *)bytes, len, &d), 0);
	CHECK(!d.damaged);
	CHECK_INT(d.n_recs, 6); /* the six objects */
	struct pvg_strv out = { 0 };
	pvg_ninja_deps_dependents(&d, "csrc/shared.h", &out);
	CHECK_INT(out.n, 2);
	pvg_strv_clear(&out);
	pvg_ninja_deps_dependents(&d, "csrc/c/c_kern.hip", &out);
	CHECK(out.n == 1 && strcmp(out.v[0], "CMakeFiles/_c_C.dir/csrc/c/c_kern.hip.o") == 0);
	pvg_strv_clear(&out);
	pvg_ninja_deps_dependents(&d, "shared.h", &out); /* whole components only */
	CHECK_INT(out.n, 2);
	pvg_strv_clear(&out);
	pvg_ninja_deps_dependents(&d, "red.h", &out);
	CHECK_INT(out.n, 0);
	pvg_ninja_deps_done(&d);
	/* cut in the middle of a record: what came before is kept, and it says so */
	CHECK_INT(pvg_ninja_deps_parse((const uint8_t *)bytes, len - 3, &d), 0);
	CHECK(d.damaged);
	pvg_ninja_deps_done(&d);
	/* not a deps log */
	CHECK_INT(pvg_ninja_deps_parse((const uint8_t *)"# ninja log v5\n", 15, &d), -EBADMSG);
	bytes[12] = 9; /* version 9 */
	CHECK_INT(pvg_ninja_deps_parse((const uint8_t *)bytes, len, &d), -EBADMSG);
	/* a record naming a node that does not exist */
	uint8_t bad[32] = "# ninjadeps\n";
	uint32_t v = 4, head = 0x80000000u | 12, out_id = 5;
	memcpy(bad + 12, &v, 4);
	memcpy(bad + 16, &head, 4);
	memcpy(bad + 20, &out_id, 4);
	CHECK_INT(pvg_ninja_deps_parse(bad, 32, &d), 0);
	CHECK(d.damaged && d.n_recs == 0);
	pvg_ninja_deps_done(&d);

	size_t nl;
	_cleanup_free_ char *text = multi_text("ninja_log", &nl);
	int64_t ns = 0;
	CHECK_INT(pvg_ninja_log_find(text, nl, "_b_C.so", &ns), 1);
	CHECK(ns > 1000000000000000000LL); /* nanoseconds */
	CHECK_INT(pvg_ninja_log_find(text, nl, "_x_C.so", &ns), 0);
	CHECK_INT(pvg_ninja_log_find("x", 1, "_b_C.so", &ns), -EBADMSG);
	const char *depfile = "CMakeFiles/a.o: /s/csrc/a.cpp \\\n  /s/csrc/shared.h /s/x\\ y.h\n"
			      "/s/csrc/shared.h:\n";
	CHECK(pvg_depfile_mentions(depfile, strlen(depfile), "csrc/shared.h"));
	CHECK(pvg_depfile_mentions(depfile, strlen(depfile), "x y.h"));
	CHECK(!pvg_depfile_mentions(depfile, strlen(depfile), "csrc/a.o"));
	CHECK(!pvg_depfile_mentions(depfile, strlen(depfile), "hared.h"));
}

/* A .ninja_log's mtime is a number from a file: one that no 64-bit count of nanoseconds holds
 * is an error, never a wrap or undefined behaviour (the fuzzer's 19 digits). */
static int ninja_log_time(const char *mtime, int64_t *ns)
{
	_cleanup_free_ char *text =
		pvg_asprintf("# ninja log v5\n1\t2\t%s\t_a_C.so\tdeadbeef\n", mtime);
	*ns = -1;
	return pvg_ninja_log_find(text, strlen(text), "_a_C.so", ns);
}

static void ninja_log_times_past_2262_are_refused(void)
{
	int64_t ns;
	CHECK_INT(ninja_log_time("1796161293674377884", &ns), 1);
	CHECK_INT(ns, 1796161293674377884LL);
	CHECK_INT(ninja_log_time("9223372036854775807", &ns), 1); /* the last that fits */
	CHECK_INT(ns, INT64_MAX);
	CHECK_INT(ninja_log_time("9223372036854775808", &ns), -ERANGE);
	CHECK_INT(ns, -1);
	CHECK_INT(ninja_log_time("9999999999999999999", &ns), -ERANGE);
	CHECK_INT(ninja_log_time("99999999999999999999999999999999999999", &ns), -ERANGE);
	/* seconds (below 10^12) become nanoseconds, up to 2262-04-11 */
	CHECK_INT(ninja_log_time("1700000000", &ns), 1);
	CHECK_INT(ns, 1700000000000000000LL);
	CHECK_INT(ninja_log_time("9223372036", &ns), 1);
	CHECK_INT(ns, 9223372036000000000LL);
	CHECK_INT(ninja_log_time("9223372037", &ns), -ERANGE);
	CHECK_INT(ninja_log_time("999999999999", &ns), -ERANGE);
	CHECK_INT(ninja_log_time("1000000000000", &ns), 1);
	CHECK_INT(ns, 1000000000000LL);
	/* leading zeros are no overflow */
	CHECK_INT(ninja_log_time("00000000000000000000001700000000", &ns), 1);
	CHECK_INT(ns, 1700000000000000000LL);
	/* another output's impossible time is not this output's business */
	const char *other = "# ninja log v5\n1\t2\t99999999999999999999\t_b_C.so\tx\n"
			    "1\t2\t1700000000\t_a_C.so\tx\n";
	CHECK_INT(pvg_ninja_log_find(other, strlen(other), "_a_C.so", &ns), 1);
	CHECK_INT(ns, 1700000000000000000LL);
	/* the line of the fuzzer's input (tests/fuzz/crashes) that overflowed: 73764376472 s */
	static const char crash[] = "# ninja log v0.1\n11844\t16833\t179616472\t_a_C.so\taab9\n"
				    "17987\t22140\t73764376472\t_a_C.so\taab9b92e4dabc9eb\n";
	CHECK_INT(pvg_ninja_log_find(crash, sizeof(crash) - 1, "_a_C.so", &ns), -ERANGE);
}

/* Host-only compiles: a host compiler on a C/C++ file with no device flag. */
/* bash's xtrace: "+ cmd" (one "+" per nesting level) is the command; "+ cd /abs" names the
 * folder the script runs in (tests/fixtures/buildlog/tee-hipcc.log) */
static void set_x_trace_lines_are_commands(void)
{
	_cleanup_free_ char *text = fixture_text("tee-hipcc.log");
	struct pvg_buildlog log;
	parse_text(&log, text);
	CHECK(log.n_commands == 2);
	CHECK(log.n_commands == 2 && strncmp(log.commands[0].text, "hipcc -x hip", 12) == 0);
	CHECK(log.n_commands == 2 && log.commands[0].compile && !log.commands[1].compile);
	CHECK(log.dirs.n == 1 && strcmp(log.dirs.v[0], "/src/ext") == 0);
	size_t line = 0;
	CHECK(pvg_buildlog_links(&log, "_ext_C.so", &line) && line == 3);
	pvg_buildlog_done(&log);
	parse_text(&log, "++ dirname ./build.sh\n+++ g++ -c a.cpp -o a.o\n+ cd build\n"
			 "+cd /nope\n");
	CHECK(log.n_commands == 1 && strcmp(log.commands[0].text, "g++ -c a.cpp -o a.o") == 0);
	CHECK(log.dirs.n == 0); /* a relative cd names no folder */
	pvg_buildlog_done(&log);
}

static void hip_compiles_are_recognised(void)
{
	CHECK(pvg_command_hip_compile("hipcc -x hip --offload-arch=gfx90a -c a.cu -o a.o") ==
	      PVG_HIP_COMPILE_X_HIP);
	CHECK(pvg_command_hip_compile("clang++ -xhip -c a.cu") == PVG_HIP_COMPILE_X_HIP);
	CHECK(pvg_command_hip_compile("cd /b && ccache /opt/rocm/bin/hipcc -c a.cu") ==
	      PVG_HIP_COMPILE_HIPCC);
	CHECK(pvg_command_hip_compile("/usr/local/cuda/bin/nvcc -c a.cu") == PVG_HIP_COMPILE_NO);
	CHECK(pvg_command_hip_compile("clang++ -x cuda -c a.cu") == PVG_HIP_COMPILE_NO);
	CHECK(pvg_command_hip_compile("nvcc -c a.cu -o hipcc") == PVG_HIP_COMPILE_NO);
	CHECK(pvg_command_hip_compile("") == PVG_HIP_COMPILE_NO);
}

static void host_only_compiles(void)
{
	CHECK(pvg_command_host_only("/usr/bin/c++ -fPIC -O2 -c /x/csrc/bind.cpp -o b.o", "csrc/bind.cpp"));
	CHECK(pvg_command_host_only("[1/3] ccache /usr/bin/x86_64-linux-gnu-g++-12 -c a.cc", "a.cc"));
	CHECK(pvg_command_host_only("cd /b && CCACHE_DIR=/c clang++-15 -std=c++17 -c a.cpp", "a.cpp"));
	CHECK(pvg_command_host_only("gcc -x c -c a.c", "a.c"));
	/* device compilers and device flags */
	CHECK(!pvg_command_host_only("/usr/bin/hipcc -fPIC -c a.cpp", "a.cpp"));
	CHECK(!pvg_command_host_only("/usr/local/cuda/bin/nvcc -c a.cpp", "a.cpp"));
	CHECK(!pvg_command_host_only("clang++ -x hip -c a.cpp", "a.cpp"));
	CHECK(!pvg_command_host_only("clang++ -xhip -c a.cpp", "a.cpp"));
	CHECK(!pvg_command_host_only("clang++ --offload-arch=gfx90a -c a.cpp", "a.cpp"));
	CHECK(!pvg_command_host_only("clang++ --cuda-gpu-arch=sm_90 -c a.cpp", "a.cpp"));
	CHECK(!pvg_command_host_only("g++ -c a.cpp && hipcc -c b.hip", "b.hip"));
	CHECK(!pvg_command_host_only("amdclang++ -c a.cpp", "a.cpp"));
	CHECK(!pvg_command_host_only("clang-offload-bundler -c a.cpp", "a.cpp"));
	/* device sources are never host-only */
	CHECK(!pvg_command_host_only("g++ -c a.cu", "a.cu"));
	CHECK(!pvg_command_host_only("c++ -c a.hip", "csrc/a.hip"));
	CHECK(!pvg_command_host_only("", "a.cpp"));
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(parses_real_hipify_output);
	RUN(host_only_compiles);
	RUN(set_x_trace_lines_are_commands);
	RUN(hip_compiles_are_recognised);
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
	RUN(object_left_out_of_the_link_fails);
	RUN(cuda_build_checks_gencode);
	RUN(empty_log_is_not_a_pass);
	RUN(non_verbose_log_has_no_compile_line);
	RUN(garbage_and_huge_lines_do_not_crash);
	RUN(ninja_log_links_objects_into_outputs);
	RUN(make_and_torch_logs_link_objects_into_outputs);
	RUN(two_configured_extensions_in_one_log_pass);
	RUN(changed_source_in_an_unconfigured_output_fails);
	RUN(every_configured_artifact_needs_its_link_step);
	RUN(target_ids_follow_llvm_in_compile_lines);
	RUN(target_ids_follow_llvm_in_code_objects);
	RUN(header_change_needs_every_consumer_relinked);
	RUN(non_verbose_links_are_unverifiable_unless_globs_decide);
	RUN(ninja_deps_log_is_read_and_bounded);
	RUN(ninja_log_times_past_2262_are_refused);
	_cleanup_free_ char *cmd = pvg_asprintf("rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	TAP_EXIT();
}
