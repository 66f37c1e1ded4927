/* SPDX-License-Identifier: MIT */
/* Rules of gates 3 (artifact-hash) and 6 (code-object), each called alone on facts built here
 * by hand: no artifact is read. The gates' files are compiled in, so that their static rules
 * can be called. */
#include "../../checks/03-artifact-hash.c"
#include "../../checks/06-code-object.c"
#include "tap.h"

/* ---- gate 3 ---- */

static void no_build_artifact_stops_unverifiable(void)
{
	struct pvg_artifact a = { .name = "_C" };
	struct hash_facts f = { .a = &a };
	struct pvg_outcome o = rule_build_configured(&f);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK(o.stop);
	CHECK_STR(o.summary, "build.artifact is not configured");
	CHECK_INT(o.n_problems, 1);
	CHECK_STR(o.problems[0].code, "artifact-hash.not-configured");
	pvg_outcome_clear(&o);
	a.build = "/b/_C.so";
	o = rule_build_configured(&f);
	CHECK_INT(o.status, PVG_PASS);
	CHECK(!o.stop);
	CHECK_INT(o.n_problems, 0);
}

static void module_not_found_fails(void)
{
	struct pvg_config cfg = { 0 };
	struct pvg_artifact a = { .build = "/b/_C.so", .python_module = "vllm._C" };
	struct hash_facts f = { .cfg = &cfg, .a = &a, .located = -ENOENT,
				.why = "vllm._C is not importable" };
	struct pvg_outcome o = rule_install_located(&f);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK(o.stop);
	CHECK_STR(o.summary, "installed module vllm._C cannot be found");
	CHECK_STR(o.problems[0].code, "artifact-hash.module-not-found");
	CHECK_STR(o.problems[0].message, "vllm._C is not importable");
	pvg_outcome_clear(&o);
}

static void unread_sides_say_why_and_stop(void)
{
	struct pvg_file_id b = { .path = "/b/_C.so", .err = -ENOENT };
	struct pvg_file_id in = { .path = "/i/_C.so", .err = -EACCES };
	struct hash_facts f = { .b = &b, .in = &in };
	struct pvg_outcome o = rule_sides_read(&f);
	CHECK_INT(o.status, PVG_FAIL); /* a missing side outranks an unreadable one */
	CHECK(o.stop);
	CHECK_INT(o.n_problems, 2);
	CHECK_STR(o.problems[0].code, "artifact-hash.build-missing");
	CHECK_STR(o.problems[1].code, "artifact-hash.unreadable");
	CHECK_STR(o.summary, "cannot compare: build artifact /b/_C.so does not exist");
	pvg_outcome_clear(&o);
}

static void different_digests_name_the_first_difference(void)
{
	struct pvg_file_id b = { .path = "/b/_C.so", .size = 10, .hashed = true };
	struct pvg_file_id in = { .path = "/i/_C.so", .size = 10, .hashed = true };
	memset(b.hex, 'a', 64);
	memset(in.hex, 'b', 64);
	in.sha256[0] = 1;
	struct hash_facts f = { .b = &b, .in = &in, .diff_at = 7 };
	CHECK_INT(rule_not_empty(&f).status, PVG_PASS);
	struct pvg_outcome o = rule_same_digest(&f);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.problems[0].code, "artifact-hash.mismatch");
	CHECK(strstr(o.problems[0].message, "; first difference at byte 7") != NULL);
	CHECK_STR(o.summary,
		  "installed artifact differs from the build: sha256 aaaaaaaaaaaa… vs bbbbbbbbbbbb…");
	pvg_outcome_clear(&o);
	in.sha256[0] = 0;
	CHECK_INT(rule_same_digest(&f).status, PVG_PASS);
	in.size = 0;
	o = rule_not_empty(&f);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.summary, "installed artifact is empty");
	CHECK_STR(o.problems[0].message, "installed artifact /i/_C.so is 0 bytes");
	pvg_outcome_clear(&o);
}

/* ---- gate 6 ---- */

static void no_arch_stops_unverifiable(void)
{
	struct co_facts f = { 0 };
	struct pvg_outcome o = rule_arch_configured(&f);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK(o.stop);
	CHECK_STR(o.summary, "arch is not configured");
	CHECK_STR(o.problems[0].code, "code-object.not-configured");
	pvg_outcome_clear(&o);
}

static void damaged_objects_and_containers_are_malformed(void)
{
	struct pvg_code_object objs[2] = {
		{ .section = ".hip_fatbin", .bundle = 0, .entry = 1, .id = "hipv4-gfx90a",
		  .error = "truncated note" },
		{ .section = ".hip_fatbin", .bundle = 0, .entry = 2, .mismatch = "e_flags say gfx942" },
	};
	struct pvg_co_issue issue = { .where = ".hip_fatbin bundle 3", .message = "ends past" };
	struct pvg_codeobj_set set = { .objs = objs, .n_objs = 2, .issues = &issue, .n_issues = 1 };
	struct co_facts f = { .arch = "gfx90a", .set = &set };
	struct pvg_outcome o = rule_objects_sound(&f);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK(!o.stop);
	CHECK_INT(o.n_problems, 3);
	CHECK_STR(o.problems[0].code, "code-object.malformed");
	CHECK_STR(o.problems[0].message,
		  ".hip_fatbin bundle 0 entry 1 (hipv4-gfx90a): truncated note");
	CHECK_STR(o.problems[1].code, "code-object.id-mismatch");
	CHECK_STR(o.problems[1].message, ".hip_fatbin bundle 0 entry 2 (?): e_flags say gfx942");
	CHECK_STR(o.problems[2].message, ".hip_fatbin bundle 3: ends past");
	pvg_outcome_clear(&o);
}

static void no_device_code_stops(void)
{
	struct pvg_codeobj_set set = { .n_issues = 0 };
	struct co_facts f = { .arch = "gfx90a", .path = "/i/_C.so", .set = &set };
	struct pvg_outcome o = rule_device_code(&f);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK(o.stop);
	CHECK_STR(o.summary, "/i/_C.so carries no device code");
	CHECK_STR(o.problems[0].message, "/i/_C.so has no .hip_fatbin or .nv_fatbin code object");
	pvg_outcome_clear(&o);
	f.n_device = 1;
	CHECK_INT(rule_device_code(&f).status, PVG_PASS);
}

static void relocatable_only_arch_asks_for_the_device_link(void)
{
	struct pvg_codeobj_set set = { 0 };
	struct co_facts f = { .arch = "sm_90", .path = "/i/_C.so", .set = &set,
			      .n_device = 1, .n_reloc_match = 1 };
	struct pvg_outcome o = rule_arch_present(&f);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK(o.stop);
	CHECK_STR(o.summary, "no loadable sm_90 code object in _C.so (it has: none)");
	CHECK_STR(o.problems[0].code, "code-object.arch-missing");
	CHECK(strncmp(o.problems[0].hint, "device-link for this arch too", 29) == 0);
	CHECK(strstr(o.problems[0].message, "the device link left this arch out") != NULL);
	pvg_outcome_clear(&o);
	f.n_match = 1;
	CHECK_INT(rule_arch_present(&f).status, PVG_PASS);
}

int main(void)
{
	RUN(no_build_artifact_stops_unverifiable);
	RUN(module_not_found_fails);
	RUN(unread_sides_say_why_and_stop);
	RUN(different_digests_name_the_first_difference);
	RUN(no_arch_stops_unverifiable);
	RUN(damaged_objects_and_containers_are_malformed);
	RUN(no_device_code_stops);
	RUN(relocatable_only_arch_asks_for_the_device_link);
	TAP_EXIT();
}
