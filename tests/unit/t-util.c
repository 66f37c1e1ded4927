/* SPDX-License-Identifier: MIT */
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

int main(void)
{
	RUN(glob_double_star_spans_folders);
	RUN(glob_single_star_stays_in_component);
	RUN(glob_survives_pathological_patterns);
	RUN(utf8_sanitize_escapes_invalid_bytes);
	RUN(json_strings_are_sanitized_and_u64_are_strings);
	RUN(path_join_resolves_relative_against_folder);
	TAP_EXIT();
}
