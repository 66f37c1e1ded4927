/* SPDX-License-Identifier: MIT */
#include "core/config.h"
#include "formats/jsonc.h"
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

/* One config for every node of a job: {node} in paths and service patterns. */
static void placeholders_expand_per_node(void)
{
	const char *text =
		"{\"name\": \"run-{node}\",\n"
		" \"build\": {\"log\": \"logs/build.log\", \"artifact\": \"b/x.so\"},\n"
		" \"source\": {\"install_map\": [{\"from\": \"v/\", \"to\": \"site-{node}/v/\"}]},\n"
		" \"install\": {\"artifact\": \"/opt/{node}/x.so\"},\n"
		" \"service\": {\"match\": [\"ray::RayWorkerWrapper {{{node}}}\"], \"pidfile\": \"run/{node}.pid\",\n"
		"             \"family\": [\"raylet\", \"{host}\"]},\n"
		" \"markers\": {\"log\": \"logs/ray-{node}-{job}.log\", \"prefix\": \"P\",\n"
		"     \"forbid\": [\"{node} stays literal in log patterns\"]}}\n";
	setenv("SLURMD_NODENAME", "gpu07", 1);
	setenv("SLURM_JOB_ID", "41", 1);
	struct pvg_config *cfg;
	struct pvg_error err;
	int r = parse(text, &cfg, &err);
	CHECK_INT(r, 0);
	if (r == 0) {
		CHECK_STR(cfg->name, "run-gpu07");
		CHECK_STR(cfg->build.log, "/exp/logs/build.log");
		CHECK_STR(cfg->install.artifact, "/opt/gpu07/x.so");
		CHECK_STR(cfg->source.install_map[0].to, "/exp/site-gpu07/v/");
		CHECK_STR(cfg->service.match.v[0], "ray::RayWorkerWrapper {gpu07}");
		CHECK_STR(cfg->service.pidfile, "/exp/run/gpu07.pid");
		CHECK(strchr(cfg->service.family.v[1], '{') == NULL);
		CHECK_STR(cfg->markers.log, "/exp/logs/ray-gpu07-41.log");
		CHECK_STR(cfg->markers.forbid.v[0], "{node} stays literal in log patterns");
		pvg_config_free(cfg);
	} else {
		printf("#   %s\n", err.message);
	}
	/* the same override from the command line */
	cfg = pvg_config_new();
	CHECK_INT(pvg_config_override(cfg, "install.artifact", "/x/{node}.so", &err), 0);
	CHECK_STR(cfg->install.artifact, "/x/gpu07.so");
	pvg_config_free(cfg);

	/* an unknown placeholder is a config error naming it */
	r = parse("{\"install\": {\"artifact\": \"/opt/{nodename}/x.so\"}}", &cfg, &err);
	CHECK_INT(r, -EINVAL);
	CHECK(strstr(err.message, "install.artifact") != NULL);
	CHECK(strstr(err.message, "{nodename}") != NULL);
	CHECK(strstr(err.message, "{node}") != NULL);
	r = parse("{\"service\": {\"match\": [\"ok\", \"x{bad\"]}}", &cfg, &err);
	CHECK_INT(r, -EINVAL);
	CHECK(strstr(err.message, "service.match[1]") != NULL);
	/* a known one without a value here says why */
	unsetenv("SLURM_JOB_ID");
	r = parse("{\"markers\": {\"log\": \"l/{job}.log\"}}", &cfg, &err);
	CHECK_INT(r, -EINVAL);
	CHECK(strstr(err.message, "SLURM_JOB_ID") != NULL);
	/* a SLURMD_NODENAME that cannot stand in a path fails where {node} is used, only */
	setenv("SLURMD_NODENAME", "a/b", 1);
	r = parse("{\"install\": {\"artifact\": \"/opt/{node}/x.so\"}}", &cfg, &err);
	CHECK_INT(r, -EINVAL);
	CHECK(strstr(err.message, "SLURMD_NODENAME") != NULL);
	r = parse("{\"install\": {\"artifact\": \"/opt/x.so\"}}", &cfg, &err);
	CHECK_INT(r, 0);
	if (r == 0)
		pvg_config_free(cfg);
	unsetenv("SLURMD_NODENAME");
}

/* "artifacts" (SPEC §9): several extensions of one tree, each entry checked as its own. */
static void artifacts_list_loads(void)
{
	const char *text =
		"{\"arch\": \"gfx90a\",\n"
		" \"build\": {\"log\": \"logs/build.log\"},\n"
		" \"install\": {\"python\": \"/opt/venv/bin/python3\"},\n"
		" \"artifacts\": [\n"
		"  {\"name\": \"_rocm_C\", \"build\": \"cmake-build-rocm/_rocm_C.abi3.so\",\n"
		"   \"install\": \"/opt/venv/site/vllm/_rocm_C.abi3.so\", \"compiled\": [\"csrc/rocm/**\"],\n"
		"   \"require_kernels\": [\"wvSplitK\"]},\n"
		"  {\"name\": \"_moe_C\", \"build\": \"cmake-build-rocm/_moe_C.abi3.so\",\n"
		"   \"python_module\": \"vllm._moe_C\", \"arch\": \"gfx90a:xnack-\"},\n"
		"  {\"name\": \"_C\", \"build\": \"/b/_C.abi3.so\", \"install\": \"site/_C.abi3.so\"}]}\n";
	struct pvg_config *cfg;
	struct pvg_error err;
	int r = parse(text, &cfg, &err);
	CHECK_INT(r, 0);
	if (r < 0) {
		printf("#   %s\n", err.message);
		return;
	}
	CHECK_INT(cfg->n_artifacts, 3);
	size_t n = 0;
	struct pvg_artifact *v = pvg_config_artifacts(cfg, &n);
	CHECK_INT(n, 3);
	if (n == 3) {
		CHECK_STR(v[0].name, "_rocm_C");
		/* relative paths are the config folder's, absolute ones stay */
		CHECK_STR(v[0].build, "/exp/cmake-build-rocm/_rocm_C.abi3.so");
		CHECK_STR(v[0].install, "/opt/venv/site/vllm/_rocm_C.abi3.so");
		CHECK(v[0].python_module == NULL);
		CHECK_INT(v[0].compiled.n, 1);
		CHECK_STR(v[0].compiled.v[0], "csrc/rocm/**");
		CHECK_INT(v[0].require_kernels.n, 1);
		CHECK_STR(v[0].require_kernels.v[0], "wvSplitK");
		CHECK_STR(pvg_artifact_arch(cfg, &v[0]), "gfx90a");
		CHECK_STR(v[1].python_module, "vllm._moe_C");
		CHECK(v[1].install == NULL);
		CHECK_INT(v[1].compiled.n, 0);
		CHECK_INT(v[1].require_kernels.n, 0);
		CHECK_STR(pvg_artifact_arch(cfg, &v[1]), "gfx90a:xnack-");
		CHECK_STR(v[2].build, "/b/_C.abi3.so");
		CHECK_STR(v[2].install, "/exp/site/_C.abi3.so");
	}
	free(v);
	/* a flag cannot say which entry it means */
	CHECK(pvg_config_override(cfg, "build.artifact", "/x.so", &err) < 0);
	CHECK(strstr(err.message, "the config lists \"artifacts\"") != NULL);
	CHECK(pvg_config_override(cfg, "install.artifact", "/x.so", &err) < 0);
	CHECK(pvg_config_override(cfg, "install.python_module", "a.b", &err) < 0);
	CHECK(cfg->build.artifact == NULL && cfg->install.artifact == NULL);
	/* the other flags still work */
	CHECK_INT(pvg_config_override(cfg, "arch", "gfx906", &err), 0);
	pvg_config_free(cfg);
}

/* The single form is a list of one; no artifact at all is a list of none. */
static void single_form_is_a_list_of_one(void)
{
	struct pvg_config *cfg;
	struct pvg_error err;
	int r = parse("{\"build\": {\"artifact\": \"b/_rocm_C.abi3.so\"},\n"
		      " \"install\": {\"python_module\": \"vllm._rocm_C\"},\n"
		      " \"code_object\": {\"require_kernels\": [\"wvSplitK\", \"k2\"]}}",
		      &cfg, &err);
	CHECK_INT(r, 0);
	if (r < 0)
		return;
	CHECK_INT(cfg->n_artifacts, 0);
	size_t n = 0;
	struct pvg_artifact *v = pvg_config_artifacts(cfg, &n);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK(v[0].name == NULL);
		CHECK_STR(v[0].build, "/exp/b/_rocm_C.abi3.so");
		CHECK(v[0].install == NULL);
		CHECK_STR(v[0].python_module, "vllm._rocm_C");
		CHECK_INT(v[0].require_kernels.n, 2);
		CHECK(pvg_artifact_arch(cfg, &v[0]) == NULL);
	}
	free(v);
	/* the single form still takes the flags */
	CHECK_INT(pvg_config_override(cfg, "install.artifact", "/i/_rocm_C.abi3.so", &err), 0);
	pvg_config_free(cfg);

	char name[64];
	pvg_artifact_default_name("/b/_rocm_C.abi3.so", name, sizeof(name));
	CHECK_STR(name, "_rocm_C");
	pvg_artifact_default_name("libx", name, sizeof(name));
	CHECK_STR(name, "libx");
	pvg_artifact_default_name(NULL, name, sizeof(name));
	CHECK_STR(name, "artifact");

	CHECK_INT(parse("{\"arch\": \"gfx90a\"}", &cfg, &err), 0);
	v = pvg_config_artifacts(cfg, &n);
	CHECK_INT(n, 0);
	CHECK(v == NULL);
	pvg_config_free(cfg);
}

static void artifacts_errors_name_the_entry(void)
{
	/* both forms at once: one of them would go unchecked */
	expect_error("{\"build\": {\"artifact\": \"a.so\"}, \"artifacts\": [{\"name\": \"a\", \"build\": \"b.so\"}]}",
		     "build.artifact: the config lists \"artifacts\"; move build.artifact into the artifacts[] entry");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"b.so\"}], \"install\": {\"artifact\": \"/i.so\"}}",
		     "install.artifact: the config lists \"artifacts\"");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"b.so\"}], \"install\": {\"python_module\": \"v.a\"}}",
		     "install.python_module: the config lists \"artifacts\"");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"b.so\"}], \"code_object\": {\"require_kernels\": [\"k\"]}}",
		     "code_object.require_kernels: the config lists \"artifacts\"");
	/* the keys every entry shares stay where they are */
	struct pvg_config *cfg;
	struct pvg_error err;
	int r = parse("{\"build\": {\"log\": \"l\", \"max_unsupported_calls\": 1},\n"
		      " \"install\": {\"python\": \"py\"}, \"code_object\": {},\n"
		      " \"artifacts\": [{\"name\": \"a\", \"build\": \"b.so\"}]}", &cfg, &err);
	CHECK_INT(r, 0);
	if (r == 0)
		pvg_config_free(cfg);
	else
		printf("#   %s\n", err.message);
	/* an empty list, or not a list of objects */
	expect_error("{\"artifacts\": []}", "artifacts: expected a non-empty array of objects");
	expect_error("{\"artifacts\": []}", "got an empty array");
	expect_error("{\"artifacts\": {\"name\": \"a\"}}", "artifacts: expected a non-empty array");
	expect_error("{\"artifacts\": [\"_rocm_C.abi3.so\"]}", "artifacts[0]");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"b.so\"}],\n \"artifacts\": [{\"name\": \"c\", \"build\": \"d.so\"}]}",
		     "key given twice");
	/* what an entry needs */
	expect_error("{\"artifacts\": [{\"build\": \"b.so\"}]}", "artifacts[0]: needs \"name\"");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"a.so\"}, {\"name\": \"b\"}]}",
		     "artifacts[1]: needs \"build\"");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"a.so\", \"install\": \"/i.so\",\n"
		     " \"python_module\": \"v.a\"}]}",
		     "artifacts[0]: both \"install\" and \"python_module\" name the installed file");
	expect_error("{\"artifacts\": [{\"name\": \"\", \"build\": \"a.so\"}]}", "artifacts[0].name");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": 3}]}", "artifacts[0].build");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"a.so\", \"arch\": \"gfx9OA\"}]}",
		     "did you mean \"gfx90a\"?");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"a.so\", \"require_kernels\": [\"k\", 1]}]}",
		     "artifacts[0].require_kernels[1]");
	/* every entry is another artifact: names, builds, installs and modules are unique */
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"a.so\"}, {\"name\": \"a\", \"build\": \"b.so\"}]}",
		     "artifacts[1].name: the same as artifacts[0]'s (\"a\")");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"x/a.so\"}, {\"name\": \"b\", \"build\": \"/exp/x/a.so\"}]}",
		     "artifacts[1].build: the same as artifacts[0]'s");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"a.so\", \"install\": \"/s/a.so\"},\n"
		     " {\"name\": \"b\", \"build\": \"b.so\"},\n"
		     " {\"name\": \"c\", \"build\": \"c.so\", \"install\": \"/s/a.so\"}]}",
		     "artifacts[2].install: the same as artifacts[0]'s");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"a.so\", \"python_module\": \"v._C\"},\n"
		     " {\"name\": \"b\", \"build\": \"b.so\", \"python_module\": \"v._C\"}]}",
		     "artifacts[1].python_module: the same as artifacts[0]'s");
	/* an unknown key inside an entry: its path, position and the closest key */
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"a.so\"},\n  {\"name\": \"b\", \"build\": \"b.so\", \"instal\": \"/i.so\"}]}",
		     "t.json:2:34: unknown key \"artifacts[1].instal\", did you mean \"install\"?");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"a.so\", \"require_kernel\": [\"k\"]}]}",
		     "did you mean \"require_kernels\"?");
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"a.so\", \"log\": \"l\"}]}",
		     "unknown key \"artifacts[0].log\"");
	/* a misspelt top-level key is pointed at "artifacts" */
	expect_error("{\"artefacts\": []}", "did you mean \"artifacts\"?");
}

/* One config for every node: placeholders in each entry's build and installed file. */
static void artifacts_placeholders_expand(void)
{
	setenv("SLURMD_NODENAME", "gpu03", 1);
	struct pvg_config *cfg;
	struct pvg_error err;
	int r = parse("{\"artifacts\": [{\"name\": \"_moe_C\", \"build\": \"b-{node}/_moe_C.abi3.so\",\n"
		      "  \"install\": \"/local/{node}/vllm/_moe_C.abi3.so\"},\n"
		      " {\"name\": \"_C\", \"build\": \"b/_C.abi3.so\", \"install\": \"/local/{{x}}/_C.abi3.so\"}]}",
		      &cfg, &err);
	CHECK_INT(r, 0);
	if (r == 0) {
		CHECK_STR(cfg->artifacts[0].build, "/exp/b-gpu03/_moe_C.abi3.so");
		CHECK_STR(cfg->artifacts[0].install, "/local/gpu03/vllm/_moe_C.abi3.so");
		CHECK_STR(cfg->artifacts[1].install, "/local/{x}/_C.abi3.so");
		pvg_config_free(cfg);
	} else {
		printf("#   %s\n", err.message);
	}
	/* the same per-node file on two entries is still one file */
	expect_error("{\"artifacts\": [{\"name\": \"a\", \"build\": \"a.so\", \"install\": \"/l/{node}.so\"},\n"
		     " {\"name\": \"b\", \"build\": \"b.so\", \"install\": \"/l/gpu03.so\"}]}",
		     "artifacts[1].install: the same as artifacts[0]'s");
	r = parse("{\"artifacts\": [{\"name\": \"a\", \"build\": \"a.so\", \"install\": \"/l/{nodename}/a.so\"}]}",
		  &cfg, &err);
	CHECK_INT(r, -EINVAL);
	CHECK(strstr(err.message, "artifacts[0].install") != NULL);
	CHECK(strstr(err.message, "{nodename}") != NULL);
	/* names are literal: a report calls the artifact what the config says */
	r = parse("{\"artifacts\": [{\"name\": \"x{node}\", \"build\": \"a.so\"}]}", &cfg, &err);
	CHECK_INT(r, 0);
	if (r == 0) {
		CHECK_STR(cfg->artifacts[0].name, "x{node}");
		pvg_config_free(cfg);
	}
	unsetenv("SLURMD_NODENAME");
}

/* formats/jsonc.c, which the loader's messages use: comments blanked with lines kept, and the
 * position of a dotted path's key or value. */
static void jsonc_blanks_comments_and_finds_paths(void)
{
	char text[] = "// top\n{ \"a\": /* x */ {\"b\": [1, {\"c\": \"/*\"}]}}";
	size_t len = strlen(text), bad = 0, off = 0;
	CHECK_INT(pvg_jsonc_strip_comments(text, len, &bad), 0);
	CHECK(strncmp(text, "      \n{", 8) == 0);
	CHECK(strstr(text, "\"/*\"") != NULL); /* in a string: not a comment */
	CHECK(pvg_jsonc_find(text, len, "a.b[1].c", true, &off));
	CHECK(strncmp(text + off, "\"/*\"", 4) == 0);
	CHECK(pvg_jsonc_find(text, len, "a", false, &off));
	int line, col;
	pvg_jsonc_line_col(text, off, &line, &col);
	CHECK_INT(line, 2);
	CHECK_INT(col, 3);
	CHECK(!pvg_jsonc_find(text, len, "a.b[2]", true, &off));
	char open[] = "{} /* never";
	CHECK_INT(pvg_jsonc_strip_comments(open, strlen(open), &bad), -EINVAL);
	CHECK(bad == 3);
}

int main(void)
{
	RUN(jsonc_blanks_comments_and_finds_paths);
	RUN(full_spec_example_loads);
	RUN(unknown_keys_are_named);
	RUN(wrong_types_are_named);
	RUN(malformed_json_and_trailing_garbage);
	RUN(arch_forms);
	RUN(errors_carry_line_and_column);
	RUN(misspelt_keys_get_a_suggestion);
	RUN(arch_names_are_checked_against_known_targets);
	RUN(overrides_use_flag_semantics);
	RUN(placeholders_expand_per_node);
	RUN(artifacts_list_loads);
	RUN(single_form_is_a_list_of_one);
	RUN(artifacts_errors_name_the_entry);
	RUN(artifacts_placeholders_expand);
	TAP_EXIT();
}
