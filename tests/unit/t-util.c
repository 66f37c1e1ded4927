/* SPDX-License-Identifier: MIT */
#include <sys/wait.h>

#include "util/util.h"
#include "tap.h"

static void glob_double_star_spans_folders(void)
{
	CHECK(pvg_glob_match("csrc/**", "csrc/rocm/skinny_gemms.cu"));
	CHECK(pvg_glob_match("docs/**", "docs/a.md"));
	CHECK(!pvg_glob_match("docs/**", "docsx/a.md"));
	CHECK(pvg_glob_match("**/*.md", "README.md"));
	CHECK(pvg_glob_match("**/*.md", "a/b/c.md"));
	CHECK(!pvg_glob_match("**/*.md", "a/b/c.mdx"));
	CHECK(pvg_glob_match(".github/**", ".github/workflows/ci.yml"));
}

static void glob_single_star_stays_in_component(void)
{
	CHECK(pvg_glob_match("csrc/*.cu", "csrc/a.cu"));
	CHECK(!pvg_glob_match("csrc/*.cu", "csrc/rocm/a.cu"));
	CHECK(pvg_glob_match("csrc/?.cu", "csrc/a.cu"));
	CHECK(!pvg_glob_match("csrc/?.cu", "csrc/ab.cu"));
	CHECK(pvg_glob_match("csrc/[ab].cu", "csrc/b.cu"));
	CHECK(!pvg_glob_match("csrc/[!ab].cu", "csrc/b.cu"));
	CHECK(pvg_glob_match("vllm/", "vllm/_custom_ops.py"));
	CHECK(!pvg_glob_match("vllm/", "vllm2/x.py"));
	CHECK(pvg_glob_match("a.py", "a.py"));
	CHECK(!pvg_glob_match("a.py", "b/a.py"));
}

static void glob_survives_pathological_patterns(void)
{
	char pat[200], path[200];
	memset(pat, 0, sizeof(pat));
	for (int i = 0; i < 30; i++)
		strcat(pat, "*a");
	memset(path, 'a', 150);
	path[150] = 'b';
	path[151] = '\0';
	CHECK(!pvg_glob_match(pat, path)); /* must return, not run for ages */
	CHECK(!pvg_glob_match("[", "a"));
	CHECK(pvg_glob_match("[", "["));
}

static void utf8_sanitize_escapes_invalid_bytes(void)
{
	char *s = pvg_utf8_sanitize("a\xff" "b\xc3\xa9\x1b[31m", 10);
	CHECK_STR(s, "a\\xffbé\\x1b[31m");
	free(s);
	s = pvg_utf8_sanitize("\xe2\x82", 2); /* truncated sequence */
	CHECK_STR(s, "\\xe2\\x82");
	free(s);
	s = pvg_utf8_sanitize("\xed\xa0\x80", 3); /* surrogate */
	CHECK_STR(s, "\\xed\\xa0\\x80");
	free(s);
}

static void json_strings_are_sanitized_and_u64_are_strings(void)
{
	cJSON *o = cJSON_CreateObject();
	pvg_json_add_str(o, "p", "/tmp/\xfe.so");
	pvg_json_add_u64(o, "big", UINT64_MAX);
	char *txt = cJSON_PrintUnformatted(o);
	CHECK_STR(txt, "{\"p\":\"/tmp/\\\\xfe.so\",\"big\":\"18446744073709551615\"}");
	free(txt);
	cJSON_Delete(o);
}

static void path_join_resolves_relative_against_folder(void)
{
	char *p = pvg_path_join("/etc/exp", "logs/build.log");
	CHECK_STR(p, "/etc/exp/logs/build.log");
	free(p);
	p = pvg_path_join("/etc/exp/", "./x");
	CHECK_STR(p, "/etc/exp/x");
	free(p);
	p = pvg_path_join("/etc/exp", "/abs");
	CHECK_STR(p, "/abs");
	free(p);
	p = pvg_path_join("/etc/exp", ".");
	CHECK_STR(p, "/etc/exp");
	free(p);
}

/* A pipe hands over what was written so far: the loop reads on to the length asked or the
 * end, and says how much came. */
static void read_full_reads_past_short_reads(void)
{
	int p[2];
	CHECK_INT(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		for (int i = 0; i < 5; i++) {
			if (write(p[1], "abcd", 4) != 4)
				_exit(1);
			usleep(2000);
		}
		_exit(0);
	}
	close(p[1]);
	char buf[32] = { 0 };
	CHECK_INT((int)pvg_read_full(p[0], buf, 12), 12);
	CHECK(memcmp(buf, "abcdabcdabcd", 12) == 0);
	CHECK_INT((int)pvg_read_full(p[0], buf, sizeof(buf)), 8); /* fewer: the end */
	CHECK_INT((int)pvg_read_full(p[0], buf, sizeof(buf)), 0);
	close(p[0]);
	waitpid(pid, NULL, 0);
	CHECK_INT((int)pvg_read_full(-1, buf, 1), -EBADF);

	char path[] = "/tmp/t-util-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_INT((int)write(fd, "0123456789", 10), 10);
	CHECK_INT((int)pvg_pread_full(fd, buf, 4, 3), 4);
	CHECK(memcmp(buf, "3456", 4) == 0);
	CHECK_INT((int)pvg_pread_full(fd, buf, 8, 6), 4);
	CHECK_INT((int)lseek(fd, 0, SEEK_CUR), 10); /* pread leaves the offset */
	close(fd);
	unlink(path);
}

static void edit_distance_counts_swaps_and_folds_case(void)
{
	CHECK(pvg_edit_distance("gfx90a", "gfx90a") == 0);
	CHECK(pvg_edit_distance("GFX9OA", "gfx90a") == 1);
	CHECK(pvg_edit_distance("artifcat", "artifact") == 1); /* a swap of neighbours */
	CHECK(pvg_edit_distance("", "abc") == 3);
	char longname[70];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CHECK(pvg_edit_distance(longname, "a") == SIZE_MAX);
}

static void fail_writes_the_reason_when_asked(void)
{
	char why[8];
	CHECK_INT(pvg_fail(why, sizeof(why), -EINVAL, "bad %d", 12345678), -EINVAL);
	CHECK(strcmp(why, "bad 123") == 0); /* cut to the buffer */
	CHECK_INT(pvg_fail(NULL, 0, -ENOENT, "unused"), -ENOENT);
}

int main(void)
{
	RUN(read_full_reads_past_short_reads);
	RUN(edit_distance_counts_swaps_and_folds_case);
	RUN(fail_writes_the_reason_when_asked);
	RUN(glob_double_star_spans_folders);
	RUN(glob_single_star_stays_in_component);
	RUN(glob_survives_pathological_patterns);
	RUN(utf8_sanitize_escapes_invalid_bytes);
	RUN(json_strings_are_sanitized_and_u64_are_strings);
	RUN(path_join_resolves_relative_against_folder);
	TAP_EXIT();
}
