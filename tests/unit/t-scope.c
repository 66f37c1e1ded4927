/* SPDX-License-Identifier: MIT */
/* Classification of changed paths (lib/sys/scope.c): precedence and install locations. */
#include "core/config.h"
#include "tap.h"

static struct pvg_config *config(const char *source_json)
{
	struct pvg_config *cfg = pvg_config_new();
	cfg->dir = pvg_strdup("/exp");
	struct pvg_error err = { 0 };
	_cleanup_free_ char *text = pvg_asprintf("{\"source\": %s}", source_json);
	if (pvg_config_parse(cfg, text, strlen(text), "t.json", &err) < 0) {
		printf("#   config: %s\n", err.message);
		tap_case_failed = 1;
	}
	return cfg;
}

static void expect(const struct pvg_config *cfg, const char *path, enum pvg_scope_class cls,
		   const char *install)
{
	char *where = (char *)"unset";
	enum pvg_scope_class got = pvg_scope_classify(&cfg->source, path, &where);
	if (got != cls) {
		printf("#   %s: class %s, expected %s\n", path, pvg_scope_class_name(got),
		       pvg_scope_class_name(cls));
		tap_case_failed = 1;
	}
	if (install)
		CHECK_STR(where, install);
	else
		CHECK(where == NULL);
	free(where);
}

static const char *spec_source =
	"{\"compiled\": [\"csrc/**\"],"
	" \"install_map\": [{\"from\": \"vllm/\", \"to\": \"/opt/sp/vllm/\"}],"
	" \"ignore\": [\"docs/**\", \"tests/**\", \"**/*.md\", \".github/**\"]}";

static void spec_example_classes(void)
{
	struct pvg_config *cfg = config(spec_source);
	expect(cfg, "csrc/rocm/skinny_gemms.cu", PVG_SCOPE_COMPILED, NULL);
	expect(cfg, "vllm/model_executor/layers/utils.py", PVG_SCOPE_MAPPED,
	       "/opt/sp/vllm/model_executor/layers/utils.py");
	expect(cfg, "docs/source/index.md", PVG_SCOPE_IGNORED, NULL);
	expect(cfg, "tests/kernels/test_gemm.py", PVG_SCOPE_IGNORED, NULL);
	expect(cfg, "README.md", PVG_SCOPE_IGNORED, NULL);
	expect(cfg, "setup.py", PVG_SCOPE_UNKNOWN, NULL);
	expect(cfg, "CMakeLists.txt", PVG_SCOPE_UNKNOWN, NULL);
	/* a prefix is a folder, not a string prefix */
	expect(cfg, "vllm_extra/x.py", PVG_SCOPE_UNKNOWN, NULL);
	expect(cfg, "csrcx/k.cu", PVG_SCOPE_UNKNOWN, NULL);
	pvg_config_free(cfg);
}

static void precedence_compiled_then_mapped_then_ignored(void)
{
	struct pvg_config *cfg = config(
		"{\"compiled\": [\"**/*.cu\"],"
		" \"install_map\": [{\"from\": \"vllm/\", \"to\": \"/i/\"}],"
		" \"ignore\": [\"**/*.md\", \"**/*.cu\", \"vllm/**\"]}");
	/* compiled beats both an install prefix and an ignore pattern */
	expect(cfg, "vllm/kernels/x.cu", PVG_SCOPE_COMPILED, NULL);
	/* a runtime file under an install prefix cannot be exempted by ignore */
	expect(cfg, "vllm/README.md", PVG_SCOPE_MAPPED, "/i/README.md");
	expect(cfg, "vllm/a/b.py", PVG_SCOPE_MAPPED, "/i/a/b.py");
	expect(cfg, "docs/README.md", PVG_SCOPE_IGNORED, NULL);
	pvg_config_free(cfg);
}

static void longest_install_prefix_wins(void)
{
	struct pvg_config *cfg = config(
		"{\"install_map\": [{\"from\": \"vllm/\", \"to\": \"/sp/vllm\"},"
		"                   {\"from\": \"vllm/third_party/\", \"to\": \"/sp/vendored/\"},"
		"                   {\"from\": \"./tools\", \"to\": \"/usr/lib/tools/\"},"
		"                   {\"from\": \"scripts/run.sh\", \"to\": \"/usr/bin/run-model\"},"
		"                   {\"from\": \"conf/app.toml\", \"to\": \"/etc/app/\"},"
		"                   {\"from\": \"share/\", \"to\": \"rel/share\"}]}");
	expect(cfg, "vllm/third_party/x/y.py", PVG_SCOPE_MAPPED, "/sp/vendored/x/y.py");
	expect(cfg, "vllm/a.py", PVG_SCOPE_MAPPED, "/sp/vllm/a.py");
	/* "from" without a trailing slash still names a folder... */
	expect(cfg, "tools/bin/t", PVG_SCOPE_MAPPED, "/usr/lib/tools/bin/t");
	expect(cfg, "toolsX", PVG_SCOPE_UNKNOWN, NULL);
	/* ...or one file, installed under another name or into a folder */
	expect(cfg, "scripts/run.sh", PVG_SCOPE_MAPPED, "/usr/bin/run-model");
	expect(cfg, "scripts/run.shx", PVG_SCOPE_UNKNOWN, NULL);
	expect(cfg, "conf/app.toml", PVG_SCOPE_MAPPED, "/etc/app/app.toml");
	/* a relative "to" is resolved against the config's folder */
	expect(cfg, "share/a", PVG_SCOPE_MAPPED, "/exp/rel/share/a");
	pvg_config_free(cfg);
}

static void nothing_configured_is_unknown(void)
{
	struct pvg_config *cfg = config("{}");
	expect(cfg, "vllm/a.py", PVG_SCOPE_UNKNOWN, NULL);
	expect(cfg, "x", PVG_SCOPE_UNKNOWN, NULL);
	pvg_config_free(cfg);
}

static void whole_repo_map(void)
{
	struct pvg_config *cfg = config(
		"{\"install_map\": [{\"from\": \".\", \"to\": \"/srv/app/\"}],"
		" \"ignore\": [\".github/**\"]}");
	expect(cfg, "a/b.py", PVG_SCOPE_MAPPED, "/srv/app/a/b.py");
	/* the map covers everything, so ignore never gets a say */
	expect(cfg, ".github/workflows/ci.yml", PVG_SCOPE_MAPPED, "/srv/app/.github/workflows/ci.yml");
	pvg_config_free(cfg);
}

static void missing_repository_is_reported(void)
{
	struct pvg_config *cfg = config("{\"repo\": \"/nonexistent-provgate-repo\"}");
	struct pvg_scope *s = pvg_scope_compute(&cfg->source, cfg->dir, NULL);
	CHECK_INT(s->err, -ENOTDIR);
	CHECK_STR(s->reason, "not-a-repo");
	CHECK(s->msg.text && strstr(s->msg.text, "/nonexistent-provgate-repo"));
	CHECK(s->msg.hint != NULL);
	CHECK_INT(s->n, 0);
	pvg_scope_free(s);
	pvg_config_free(cfg);
}

int main(void)
{
	RUN(spec_example_classes);
	RUN(precedence_compiled_then_mapped_then_ignored);
	RUN(longest_install_prefix_wins);
	RUN(nothing_configured_is_unknown);
	RUN(whole_repo_map);
	RUN(missing_repository_is_reported);
	TAP_EXIT();
}
