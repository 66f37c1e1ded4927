/* SPDX-License-Identifier: MIT */
#include "core/config.h"
#include "tap.h"

static int parse(const char *text, struct pvg_config **out, struct pvg_error *err)
{
	struct pvg_config *cfg = pvg_config_new();
	cfg->dir = pvg_strdup("/exp");
	memset(err, 0, sizeof(*err));
	int r = pvg_config_parse(cfg, text, strlen(text), "t.json", err);
	if (r < 0) {
		pvg_config_free(cfg);
		*out = NULL;
	} else {
		*out = cfg;
	}
	return r;
}

static void full_spec_example_loads(void)
{
	const char *text =
		"{ // experiment notes\n"
		"  \"name\": \"page832-llmm1\", \"arch\": \"gfx936\",\n"
		"  /* block comment with \"quotes\" */\n"
		"  \"build\": {\"log\": \"logs/build.log\", \"artifact\": \"b/_rocm_C.abi3.so\",\n"
		"            \"max_unsupported_calls\": 0},\n"
		"  \"source\": {\"repo\": \".\", \"baseline\": \"origin/main\", \"include_uncommitted\": true,\n"
		"     \"compiled\": [\"csrc/**\"],\n"
		"     \"install_map\": [{\"from\": \"vllm/\", \"to\": \"/opt/venv/vllm/\"}],\n"
		"     \"ignore\": [\"docs/**\", \"http://x//y\"]},\n"
		"  \"install\": {\"artifact\": \"/opt/x.so\", \"python_module\": \"vllm._rocm_C\", \"python\": \"/opt/venv/bin/python3\"},\n"
		"  \"service\": {\"match\": [\"VLLM::EngineCore\"], \"port\": 8000, \"family\": [\"VLLM::\"]},\n"
		"  \"code_object\": {\"require_kernels\": [\"wvSplitK\"]},\n"
		"  \"markers\": {\"log\": \"logs/server.log\", \"prefix\": \"DCU_KERNEL_DIAG\",\n"
		"     \"require\": [{\"selected\": \"True\", \"shape\": \"(4096, 5120)\"}], \"min_count\": 2,\n"
		"     \"forbid\": [\"fallback\"], \"facts\": [\"block size = 832\"]}\n"
		"}\n";
	struct pvg_config *cfg;
	struct pvg_error err;
	int r = parse(text, &cfg, &err);
	CHECK_INT(r, 0);
	if (r < 0) {
		printf("#   %s\n", err.message);
		return;
	}
	CHECK_STR(cfg->arch, "gfx936");
	CHECK_STR(cfg->build.log, "/exp/logs/build.log");
	CHECK_STR(cfg->source.repo, "/exp");
	CHECK_STR(cfg->source.ignore.v[1], "http://x//y");
	CHECK_STR(cfg->source.install_map[0].to, "/opt/venv/vllm/");
	CHECK_INT(cfg->service.port, 8000);
	CHECK_INT(cfg->service.pid, -1);
	CHECK_INT(cfg->markers.min_count, 2);
	CHECK_INT(cfg->markers.n_require, 1);
	CHECK_STR(cfg->markers.require[0].kv[1].value, "(4096, 5120)");
	CHECK_STR(cfg->install.python, "/opt/venv/bin/python3");
	pvg_config_free(cfg);
}

static void expect_error(const char *text, const char *needle)
{
	struct pvg_config *cfg;
	struct pvg_error err;
	int r = parse(text, &cfg, &err);
	CHECK(r < 0);
	if (!strstr(err.message, needle)) {
		printf("#   message \"%s\" lacks \"%s\"\n", err.message, needle);
		tap_case_failed = 1;
	}
	pvg_config_free(cfg);
}

static void unknown_keys_are_named(void)
{
	expect_error("{\"bulid\": {}}", "unknown key \"bulid\"");
	expect_error("{\"build\": {\"artefact\": \"x\"}}", "unknown key \"build.artefact\"");
	expect_error("{\"source\": {\"install_map\": [{\"from\": \"a\", \"to\": \"b\", \"mode\": 1}]}}",
		     "source.install_map[0].mode");
}

static void wrong_types_are_named(void)
{
	expect_error("{\"service\": {\"port\": \"8000\"}}", "service.port: expected an integer");
	expect_error("{\"service\": {\"port\": 70000}}", "service.port");
	expect_error("{\"build\": {\"max_unsupported_calls\": -1}}", "build.max_unsupported_calls");
	expect_error("{\"build\": {\"max_unsupported_calls\": 1.5}}", "build.max_unsupported_calls");
	/* found by fuzz-config: a huge number must be refused, not converted */
	expect_error("{\"service\": {\"port\": 1e300}}", "service.port");
	expect_error("{\"service\": {\"pid\": -1e300}}", "service.pid");
	/* the fuzzer's own input: an integer literal far past any port, then a comment */
	expect_error("{\"name\":\"x\",\"service\":{\"port\":5555555555555555555555555555550}} // ",
		     "service.port");
	expect_error("{\"source\": {\"include_uncommitted\": 1}}", "expected true or false");
	expect_error("{\"markers\": {\"facts\": [\"a\", 3]}}", "markers.facts[1]");
	expect_error("{\"arch\": \"gfx 936\"}", "not a known GPU architecture");
	expect_error("{\"build\": []}", "build: expected an object");
	expect_error("[1]", "expected an object");
	expect_error("{\"name\": \"a\", \"name\": \"b\"}", "key given twice");
}

static void malformed_json_and_trailing_garbage(void)
{
	expect_error("{\"name\": }", "t.json:1:");
	expect_error("{\"name\": \"x\"} xyz", "unexpected content after the JSON object");
	expect_error("{\"name\": \"x\"}\n}", "t.json:2:1");
	expect_error("{ /* never closed", "comment is never closed");
	expect_error("", "malformed JSON");
	expect_error("{\"name\": \"x\",\n  ", "t.json:2:3: malformed JSON: the text ends early");
	expect_error("{\"name\": }", "malformed JSON near \"}\"");
}

static void errors_carry_line_and_column(void)
{
	const char *text = "{\n  \"name\": \"x\",\n  // a note\n  \"build\": {\n"
			   "    \"artifact\": \"a.so\",\n    \"artefact\": \"b.so\"\n  },\n"
			   "  \"service\": { \"port\": \"8000\" }\n}\n";
	expect_error(text, "t.json:6:5: unknown key \"build.artefact\", did you mean \"artifact\"?");
	const char *t2 = "{\"service\": {\"match\": [\"a\"],\n \"port\": \"8000\"}}";
	expect_error(t2, "t.json:2:10: service.port: expected an integer");
	const char *t3 = "{\"markers\": {\"require\": [{\"a\": \"b\"},\n  {\"selected\": 1}]}}";
	expect_error(t3, "t.json:2:16: markers.require[1].selected: expected a string");
	const char *t4 = "{\"markers\": {\"facts\": [\"a\",\n /* c */ 3]}}";
	expect_error(t4, "t.json:2:10: markers.facts[1]");
	const char *t5 = "{\"name\": \"a\",\n\"name\": \"b\"}";
	expect_error(t5, "t.json:1:2: name: key given twice");
}

static void misspelt_keys_get_a_suggestion(void)
{
	expect_error("{\"bulid\": {}}", "unknown key \"bulid\", did you mean \"build\"?");
	expect_error("{\"markers\": {\"min_cuont\": 2}}", "did you mean \"min_count\"?");
	expect_error("{\"build\": {\"prefix\": \"X\"}}", "(\"prefix\" is a key of section \"markers\")");
	expect_error("{\"service\": {\"arch\": \"gfx936\"}}", "(\"arch\" is a top-level key)");
	expect_error("{\"zzzzzz\": 1}", "unknown key \"zzzzzz\" (known here:");
}

static void arch_names_are_checked_against_known_targets(void)
{
	expect_error("{\"arch\": \"gfx9OA\"}", "did you mean \"gfx90a\"?");
	expect_error("{\"arch\": \"gfx1234\"}", "\"gfx1234\" is not a known GPU architecture");
	expect_error("{\"arch\": \"sm_91\"}", "did you mean \"sm_90\"?");
	expect_error("{\"arch\": \"sm_75a\"}", "not a known GPU architecture");
	expect_error("{\"arch\": \"compute_90\"}", "virtual (PTX) architecture; arch names the GPU's real one: sm_90");
	expect_error("{\"arch\": \"gfx90a:xnak-\"}", "a target feature must be xnack or sramecc");
	CHECK(pvg_arch_valid("gfx936"));
	CHECK(pvg_arch_valid("gfx942:sramecc+:xnack-"));
	CHECK(pvg_arch_valid("gfx1201"));
	CHECK(pvg_arch_valid("gfx11-generic"));
	CHECK(pvg_arch_valid("sm_100a"));
	CHECK(pvg_arch_valid("sm_120"));
	CHECK(!pvg_arch_valid("sm_80a"));
	CHECK(!pvg_arch_valid("gfx936:"));
	/* $schema is allowed (editors), any string */
	struct pvg_config *cfg;
	struct pvg_error err;
	CHECK_INT(parse("{\"$schema\": \"/usr/share/provgate/config.schema.json\", \"arch\": \"gfx936\"}", &cfg, &err), 0);
	pvg_config_free(cfg);
}

static void arch_forms(void)
{
	CHECK(pvg_arch_valid("gfx936"));
	CHECK(pvg_arch_valid("gfx90a:xnack-"));
	CHECK(pvg_arch_valid("gfx90a:sramecc+:xnack-"));
	CHECK(pvg_arch_valid("sm_90"));
	CHECK(pvg_arch_valid("sm_90a"));
	CHECK(!pvg_arch_valid("sm_"));
	CHECK(!pvg_arch_valid("gfx90a:xnack"));
	CHECK(!pvg_arch_valid("compute_90"));
	CHECK(pvg_arch_is_cuda("sm_80"));
}

static void overrides_use_flag_semantics(void)
{
	struct pvg_config *cfg = pvg_config_new();
	struct pvg_error err = { { 0 } };
	CHECK_INT(pvg_config_override(cfg, "service.port", "8001", &err), 0);
	CHECK_INT(cfg->service.port, 8001);
	CHECK(pvg_config_override(cfg, "service.port", "80x", &err) < 0);
	CHECK(pvg_config_override(cfg, "arch", "gfx", &err) < 0);
	CHECK(pvg_config_override(cfg, "nope.key", "1", &err) < 0);
	CHECK_INT(pvg_config_override(cfg, "build.artifact", "/a/b.so", &err), 0);
	CHECK_STR(cfg->build.artifact, "/a/b.so");
	pvg_config_free(cfg);
}

int main(void)
{
	RUN(full_spec_example_loads);
	RUN(unknown_keys_are_named);
	RUN(wrong_types_are_named);
	RUN(malformed_json_and_trailing_garbage);
	RUN(arch_forms);
	RUN(errors_carry_line_and_column);
	RUN(misspelt_keys_get_a_suggestion);
	RUN(arch_names_are_checked_against_known_targets);
	RUN(overrides_use_flag_semantics);
	TAP_EXIT();
}
