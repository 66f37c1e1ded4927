/* SPDX-License-Identifier: MIT */
/* Rules of gates 1 (build-log) and 2 (install-scope), each called alone on facts built here by
 * hand: no log file, repository or install tree. The gates' files are compiled in, so that
 * their static rules can be called. */
#include "../../checks/01-build-log.c"
#include "../../checks/02-install-scope.c"
#include "tap.h"

/* ---- gate 1 ---- */

static struct pvg_buildlog hand_log(void)
{
	struct pvg_buildlog log;
	pvg_buildlog_init(&log);
	log.n_lines = 3;
	return log;
}

static void log_with_only_text_is_empty(void)
{
	struct pvg_buildlog log = hand_log();
	struct pvg_buildlog_request req = { .log = &log };
	struct view v = { .req = &req };
	struct pvg_result res = { 0 };
	struct pvg_outcome o = rule_log_not_empty(&v, &res);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT(o.n_problems, 1);
	CHECK_INT(res.n_problems, 0); /* the rule's problems are in its outcome */
	CHECK_STR(o.problems[0].code, "build-log.empty-log");
	CHECK_STR(o.problems[0].message,
		  "the build log (3 lines) holds no hipify, ninja or compiler lines");
	CHECK_INT(pvg_outcome_report(&res, &o), PVG_FAIL);
	CHECK_INT(res.n_problems, 1);
	CHECK_INT(o.n_problems, 0);
	pvg_result_reset(&res);
	log.n_commands = 1;
	CHECK_INT(rule_log_not_empty(&v, &res).status, PVG_PASS);
	CHECK_INT(res.n_problems, 0);
}

static void failed_step_fails_the_build(void)
{
	struct pvg_buildlog log = hand_log();
	char step[] = "csrc/kern.hip.o", err[] = "kern.hip:1: error: x";
	log.n_failed = 2; /* one kept: "(and more)" */
	log.failed[0] = step;
	log.n_failed_kept = 1;
	log.n_errors = log.n_errors_kept = 1;
	log.errors[0] = err;
	struct pvg_buildlog_request req = { .log = &log };
	struct view v = { .req = &req };
	struct pvg_result res = { 0 };
	struct pvg_outcome o = rule_build_succeeded(&v, &res);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT(o.n_problems, 2);
	CHECK_STR(o.problems[0].code, "build-log.failed-step");
	CHECK_STR(o.problems[0].message, "the build failed: csrc/kern.hip.o (and more)");
	CHECK_STR(o.problems[1].code, "build-log.compiler-error");
	pvg_outcome_clear(&o);
	pvg_result_reset(&res);
}

static void unsupported_calls_up_to_the_limit_pass(void)
{
	struct pvg_buildlog log = hand_log();
	log.unsupported_calls = 5;
	struct pvg_buildlog_request req = { .log = &log, .max_unsupported_calls = 5 };
	struct view v = { .req = &req };
	struct pvg_result res = { 0 };
	CHECK_INT(rule_unsupported_calls(&v, &res).status, PVG_PASS);
	req.max_unsupported_calls = 4;
	struct pvg_outcome o = rule_unsupported_calls(&v, &res);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT(o.n_problems, 1);
	CHECK_STR(o.problems[0].message,
		  "hipify reported 5 unsupported CUDA function calls (allowed: 4)");
	pvg_outcome_clear(&o);
	pvg_result_reset(&res);
}

static void artifact_without_link_step_or_file(void)
{
	struct pvg_buildlog log = hand_log();
	struct pvg_linkgraph g = { 0 }; /* the log links nothing */
	struct pvg_buildlog_artifact arts[] = {
		{ .name = "_C", .file = "_C.abi3.so", .arch = "gfx90a" },
		{ .name = "_moe_C", .file = NULL, .arch = "gfx90a" },
	};
	struct pvg_buildlog_request req = { .log = &log, .arts = arts, .n_arts = 2 };
	struct view v = { .req = &req, .g = &g, .arts = arts, .n_arts = 2, .multi = true };
	struct pvg_result res = { 0 };
	struct pvg_outcome o = rule_artifacts_linked(&v, &res);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT(o.n_problems, 2);
	CHECK_STR(o.problems[0].code, "build-log.no-link");
	CHECK_STR(o.problems[0].message, "_C: the log has no link step producing _C.abi3.so");
	CHECK_STR(o.problems[1].code, "build-log.not-configured");
	pvg_outcome_clear(&o);
	pvg_result_reset(&res);
}

static void cuda_source_without_hipify_line_is_not_hipified(void)
{
	struct pvg_buildlog log = hand_log();
	struct pvg_buildlog_request req = { .log = &log, .arch = "gfx90a" };
	struct view v = { .req = &req };
	struct pvg_result res = { 0 };
	cJSON *fe = cJSON_CreateObject();
	struct pvg_outcome o = rule_hipified(&v, "csrc/kern.cu", false, NULL, NULL, fe, &res);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.problems[0].code, "build-log.not-hipified");
	pvg_outcome_clear(&o);
	/* a .cpp needs no hipify; CUDA's arch needs none at all */
	CHECK_INT(rule_hipified(&v, "csrc/bind.cpp", false, NULL, NULL, fe, &res).status, PVG_PASS);
	req.cuda = true;
	CHECK_INT(rule_hipified(&v, "csrc/kern.cu", false, NULL, NULL, fe, &res).status, PVG_PASS);
	CHECK_INT(res.n_problems, 0);
	pvg_result_reset(&res);
	cJSON_Delete(fe);
}

/* ---- gate 2 ---- */

static struct pvg_change mapped_change(char *path, char *install)
{
	return (struct pvg_change){ .path = path, .kind = 'M', .cls = PVG_SCOPE_MAPPED,
				    .install_path = install };
}

static void missing_install_fails_and_is_capped(void)
{
	struct pvg_change c = mapped_change("vllm/x.py", "/site/vllm/x.py");
	struct change_facts f = { .change = &c, .verdict = V_MISSING };
	struct caps caps = { 0 };
	struct pvg_result res = { 0 };
	struct pvg_outcome o = rule_installed_identical(&f, &caps, &res);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT(o.n_problems, 1);
	CHECK_STR(o.problems[0].code, "install-scope.not-installed");
	CHECK_STR(o.problems[0].message,
		  "modified file vllm/x.py is not installed: /site/vllm/x.py does not exist");
	pvg_outcome_report(&res, &o);
	/* past the cap the status stays, the problem is only counted */
	caps.count_of[0] = MAX_PROBLEMS_PER_CODE;
	o = rule_installed_identical(&f, &caps, &res);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT(o.n_problems, 0);
	caps_problems(&caps, &res);
	CHECK_STR(res.problems[1].message, "… and 1 more files like the above");
	pvg_result_reset(&res);
}

static void differing_bytes_name_both_digests(void)
{
	struct pvg_change c = mapped_change("vllm/x.py", "/site/vllm/x.py");
	struct compare_job j = { .change = &c, .verdict = V_DIFFERS };
	memset(j.work_hex, 'a', 64);
	memset(j.inst_hex, 'b', 64);
	struct change_facts f = { .change = &c, .verdict = V_DIFFERS, .job = &j };
	struct caps caps = { 0 };
	struct pvg_result res = { 0 };
	struct pvg_outcome o = rule_installed_identical(&f, &caps, &res);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.problems[0].message,
		  "vllm/x.py: installed copy /site/vllm/x.py differs (sha256 aaaaaaaaaaaa… in the "
		  "work tree, bbbbbbbbbbbb… installed)");
	CHECK(unproven(&f));
	f.verdict = V_SAME;
	CHECK(!unproven(&f));
	pvg_outcome_clear(&o);
	pvg_result_reset(&res);
}

static void unknown_file_is_denied(void)
{
	struct pvg_change c = { .path = "tools/new.sh", .kind = 'A', .cls = PVG_SCOPE_UNKNOWN };
	struct change_facts f = { .change = &c };
	struct caps caps = { 0 };
	struct pvg_result res = { 0 };
	struct pvg_outcome o = rule_in_scope(&f, &caps, &res);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.problems[0].code, "install-scope.unknown-scope");
	CHECK_STR(o.problems[0].message,
		  "added file tools/new.sh is neither mapped, compiled nor ignored");
	pvg_outcome_clear(&o);
	c.cls = PVG_SCOPE_IGNORED;
	CHECK_INT(rule_in_scope(&f, &caps, &res).status, PVG_PASS);
	CHECK_INT(res.n_problems, 0);
	pvg_result_reset(&res);
}

static void renamed_away_file_still_installed_fails(void)
{
	struct pvg_change c = mapped_change("vllm/new.py", "/site/vllm/new.py");
	c.kind = 'R';
	c.old_path = "vllm/old.py";
	c.old_install_path = "/site/vllm/old.py";
	struct change_facts f = { .change = &c, .verdict = V_SAME, .old_verdict = V_STILL };
	struct caps caps = { 0 };
	struct pvg_result res = { 0 };
	struct pvg_outcome o = rule_old_path_removed(&f, &caps, &res);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.problems[0].message,
		  "vllm/old.py was renamed to vllm/new.py but is still installed at "
		  "/site/vllm/old.py");
	pvg_outcome_clear(&o);
	f.old_verdict = V_GONE;
	CHECK_INT(rule_old_path_removed(&f, &caps, &res).status, PVG_PASS);
	pvg_result_reset(&res);
}

int main(void)
{
	RUN(log_with_only_text_is_empty);
	RUN(failed_step_fails_the_build);
	RUN(unsupported_calls_up_to_the_limit_pass);
	RUN(artifact_without_link_step_or_file);
	RUN(cuda_source_without_hipify_line_is_not_hipified);
	RUN(missing_install_fails_and_is_capped);
	RUN(differing_bytes_name_both_digests);
	RUN(unknown_file_is_denied);
	RUN(renamed_away_file_still_installed_fails);
	TAP_EXIT();
}
