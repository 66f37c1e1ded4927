/* SPDX-License-Identifier: MIT */
/* Gate 7's rules (checks/07-dispatch-marker.c) on facts built here: a log as read, witness
 * files as tallied, with no service, log or folder behind them. */
#include "07-dispatch-marker.h"
#include "tap.h"

static const char *code_of(const struct pvg_outcome *o, size_t i)
{
	return i < o->n_problems ? o->problems[i].code : NULL;
}

static bool message_has(const struct pvg_outcome *o, size_t i, const char *words)
{
	return i < o->n_problems && strstr(o->problems[i].message, words) != NULL;
}

/* ---- markers ---- */

/* A log of the live service read to its end, with one require entry and one forbid and fact
 * pattern; each test sets the counts it is about. */
struct log_fixture {
	struct pvg_config cfg;
	struct marker_read m;
	struct markers_facts f;
	struct pvg_kv kv[1];
	struct pvg_require require[1];
	char *forbid[1], *facts[1];
	size_t require_matched[1], require_not_selected[1], require_unattributed[1],
		require_undecided[1];
	struct pvg_marker_sample require_unattr_first[1];
	size_t fact_live[1], fact_unattributed[1], fact_undecided[1];
	enum pvg_attribution fact_attr[1];
	size_t forbid_live[1], forbid_unattributed[1], forbid_undecided[1];
};

static void log_fixture(struct log_fixture *x)
{
	memset(x, 0, sizeof(*x));
	x->kv[0] = (struct pvg_kv){ "selected", "True" };
	x->require[0] = (struct pvg_require){ x->kv, 1 };
	x->forbid[0] = "fallback";
	x->facts[0] = "block size = 832";
	x->cfg.markers.log = "server.log";
	x->cfg.markers.prefix = "DIAG";
	x->cfg.markers.require = x->require;
	x->cfg.markers.n_require = 1;
	x->cfg.markers.min_count = 2;
	x->cfg.markers.forbid = (struct pvg_strv){ .v = x->forbid, .n = 1 };
	x->cfg.markers.facts = (struct pvg_strv){ .v = x->facts, .n = 1 };
	x->m.log_path = "server.log";
	x->m.btime_known = true;
	x->m.zone.known = true;
	x->m.undecided = "its time may be either";
	struct pvg_marker_scan *s = &x->m.scan;
	s->bytes = 4096;
	s->require_matched = x->require_matched;
	s->require_not_selected = x->require_not_selected;
	s->require_unattributed = x->require_unattributed;
	s->require_undecided = x->require_undecided;
	s->require_unattr_first = x->require_unattr_first;
	s->fact_live = x->fact_live;
	s->fact_unattributed = x->fact_unattributed;
	s->fact_undecided = x->fact_undecided;
	s->fact_attr = x->fact_attr;
	s->forbid_live = x->forbid_live;
	s->forbid_unattributed = x->forbid_unattributed;
	s->forbid_undecided = x->forbid_undecided;
	x->fact_live[0] = 1;
	x->f = (struct markers_facts){ .cfg = &x->cfg, .m = &x->m };
}

static void markers_unconfigured_name_the_missing_key(void)
{
	struct pvg_config cfg = { 0 };
	cfg.markers.log = "server.log";
	struct markers_facts f = { .cfg = &cfg };
	struct pvg_outcome o = rule_markers_configured(&f);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK(o.stop);
	CHECK_STR(o.summary, "markers.prefix is not configured");
	CHECK_STR(code_of(&o, 0), "dispatch-marker.not-configured");
	pvg_outcome_clear(&o);
}

static void markers_missing_log_hints_where_the_output_goes(void)
{
	struct log_fixture x;
	log_fixture(&x);
	x.m.log_err = ENOENT;
	CHECK(markers_need_elsewhere(&x.cfg, &x.m));
	x.f.elsewhere = "the service (pid 7) writes its stdout to /tmp/nohup.out";
	struct pvg_outcome o = rule_markers_log_readable(&x.f);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK(o.stop);
	CHECK_STR(o.summary, "cannot read the service log");
	CHECK_STR(code_of(&o, 0), "dispatch-marker.log-unreadable");
	CHECK_STR(o.problems[0].hint, x.f.elsewhere);
	pvg_outcome_clear(&o);
}

static void markers_refuse_a_fifo_unopened(void)
{
	struct log_fixture x;
	log_fixture(&x);
	x.m.log_err = ENXIO;
	x.m.log_refused = PVG_REFUSED_FIFO;
	struct pvg_outcome o = rule_markers_log_is_file(&x.f);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK(o.stop);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.log-fifo");
	CHECK(message_has(&o, 0, "refused unopened"));
	pvg_outcome_clear(&o);
	/* a container's log of another owner is the container rule's, not this one's */
	x.m.log_refused = PVG_REFUSED_OWNER;
	o = rule_markers_log_is_file(&x.f);
	CHECK_INT(o.n_problems, 0);
	x.m.container = true;
	o = rule_markers_container_log_owned(&x.f);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.container-log-refused");
	CHECK(o.stop);
	pvg_outcome_clear(&o);
}

static void markers_empty_log_fails_and_stops(void)
{
	struct log_fixture x;
	log_fixture(&x);
	x.m.scan.bytes = 0;
	x.m.scan.hole_bytes = 1 << 20;
	CHECK(markers_need_elsewhere(&x.cfg, &x.m));
	struct pvg_outcome o = rule_markers_log_not_empty(&x.f);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK(o.stop);
	CHECK(!o.summary); /* told by its problem */
	CHECK(message_has(&o, 0, "is empty (its size is all holes"));
	pvg_outcome_clear(&o);
}

static void markers_enough_live_markers_pass(void)
{
	struct log_fixture x;
	log_fixture(&x);
	x.require_matched[0] = 2;
	x.m.scan.markers_live = 2;
	struct pvg_outcome o = rule_markers_enough(&x.f);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
	CHECK(!o.stop);
	CHECK(!markers_need_elsewhere(&x.cfg, &x.m));
	pvg_outcome_clear(&o);
}

static void markers_too_few_say_how_many(void)
{
	struct log_fixture x;
	log_fixture(&x);
	x.require_matched[0] = 1;
	x.m.scan.markers_live = 1;
	struct pvg_outcome o = rule_markers_enough(&x.f);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.too-few");
	CHECK_STR(o.problems[0].message, "1 live marker for {selected=True}, 2 required");
	pvg_outcome_clear(&o);
}

static void markers_undecided_times_are_unverifiable_not_failed(void)
{
	struct log_fixture x;
	log_fixture(&x);
	x.require_matched[0] = 1;
	x.require_undecided[0] = 1;
	x.m.scan.markers_live = 1;
	struct pvg_outcome o = rule_markers_enough(&x.f);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.time-undecided");
	CHECK(message_has(&o, 0, "its time may be either"));
	pvg_outcome_clear(&o);
	x.forbid_undecided[0] = 3;
	o = rule_markers_forbid_decided(&x.f);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK(message_has(&o, 0, "forbidden \"fallback\" appears in 3 lines"));
	pvg_outcome_clear(&o);
	/* a live forbidden line decides, whatever else may be undecided */
	x.forbid_live[0] = 1;
	o = rule_markers_forbid_decided(&x.f);
	CHECK_INT(o.n_problems, 0);
	o = rule_markers_not_forbidden(&x.f);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.forbidden");
	pvg_outcome_clear(&o);
}

static void markers_only_from_others_say_so(void)
{
	struct log_fixture x;
	log_fixture(&x);
	x.require_unattributed[0] = 4;
	x.require_unattr_first[0] = (struct pvg_marker_sample){ .offset = 17,
								.attr = PVG_ATTR_BEFORE_START };
	x.m.scan.markers_foreign_recent = 1;
	CHECK(!markers_need_elsewhere(&x.cfg, &x.m)); /* another process writes this log */
	struct pvg_outcome o = rule_markers_enough(&x.f);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.unattributed");
	CHECK(strstr(o.problems[0].hint, "another process writes markers") != NULL);
	CHECK(message_has(&o, 0, "before the service started, e.g. at byte 17"));
	pvg_outcome_clear(&o);
}

static void markers_missing_fact_fails(void)
{
	struct log_fixture x;
	log_fixture(&x);
	x.fact_live[0] = 0;
	x.fact_unattributed[0] = 1;
	x.fact_attr[0] = PVG_ATTR_UNKNOWN;
	struct pvg_outcome o = rule_markers_facts_live(&x.f);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.missing-fact");
	CHECK(message_has(&o, 0, "log file was created before the service started"));
	pvg_outcome_clear(&o);
}

/* told among the problems of markers that did not pass, leaving their status; nothing (the
 * evidence has it) where they passed, since a problem would fail the gate */
static void markers_refused_zone_file_is_told_without_a_status(void)
{
	struct log_fixture x;
	log_fixture(&x);
	x.m.zone.refused = "device";
	x.m.zone.why = (struct pvg_msg){ .text = "its zone file is a device", .hint = "fix it" };
	struct pvg_outcome o = rule_markers_zone_file(&x.f, PVG_UNVERIFIABLE);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 1);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.zone-file-refused");
	pvg_outcome_clear(&o);
	o = rule_markers_zone_file(&x.f, PVG_PASS);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
	pvg_outcome_clear(&o);
}

/* ---- witness ---- */

static void witness_without_a_kernel_is_unverifiable(void)
{
	struct pvg_config cfg = { 0 };
	cfg.witness.dir = "/w";
	struct pvg_outcome o = rule_witness_kernel_named(&cfg, NULL);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK(o.stop);
	CHECK_STR(o.summary, "witness: no kernel required");
	pvg_outcome_clear(&o);
	/* a change set with no device source to require says so */
	struct changed_sources none = { .applies = true };
	o = rule_witness_kernel_named(&cfg, &none);
	CHECK(o.stop);
	CHECK(message_has(&o, 0, "no changed device source has kernels to require"));
	pvg_outcome_clear(&o);
	/* a changed device source is something to require, with no witness.require */
	struct changed_sources one = { .applies = true, .n_required = 1 };
	o = rule_witness_kernel_named(&cfg, &one);
	CHECK_INT(o.status, PVG_PASS);
	CHECK(!o.stop);
	pvg_outcome_clear(&o);
	o = rule_witness_service(-ESRCH, NULL);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.no-service");
	CHECK(o.stop);
	pvg_outcome_clear(&o);
}

static void witness_environment_names_the_missing_variable(void)
{
	struct pvg_config cfg = { 0 };
	cfg.witness.dir = "/w";
	cfg.witness.api = "hsa";
	struct witness_env env = { .pid = 42, .dir_r = 0, .dir = "/w" };
	struct pvg_outcome o = rule_witness_environment(&cfg, &env);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-not-enabled");
	CHECK(message_has(&o, 0, "(HSA_TOOLS_LIB is not set"));
	pvg_outcome_clear(&o);
	env = (struct witness_env){ .pid = 42, .dir_r = -EACCES };
	o = rule_witness_environment(&cfg, &env);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-env-unreadable");
	CHECK(o.problems[0].hint != NULL);
	pvg_outcome_clear(&o);
	env = (struct witness_env){ .pid = 42, .dir = "/x", .lib = "/lib.so", .same_folder = false };
	o = rule_witness_environment(&cfg, &env);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-dir-mismatch");
	pvg_outcome_clear(&o);
	env.same_folder = true;
	o = rule_witness_environment(&cfg, &env);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
}

static void witness_folder_link_is_refused(void)
{
	struct pvg_config cfg = { 0 };
	cfg.witness.dir = "/w";
	struct witness_read wr;
	dispatch_witness_read_init(&wr);
	wr.folder_r = -ELOOP;
	wr.folder.is_link = true;
	struct pvg_outcome o = rule_witness_folder(&cfg, &wr);
	CHECK(o.stop);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-dir-link");
	CHECK_STR(o.summary, "witness folder refused: a symbolic link");
	pvg_outcome_clear(&o);
}

/* Three files: one of a live target that does not parse, one live that did not answer, one
 * live that answered. */
static void witness_files_corrupt_fail_unanswered_are_unverifiable(void)
{
	struct pvg_witness_target t = { .pid = 42, .nspid = 42, .start_ticks = 9 };
	struct pvg_witness_read reads[3] = {
		{ .name = "witness-42-9-b.pvgw", .perr = PVG_WITNESS_E_CHECKSUM },
		{ .name = "witness-42-9-c.pvgw" },
		{ .name = "witness-42-9-d.pvgw" },
	};
	reads[1].file.h.version = 2;
	struct witness_file files[3] = {
		{ .read = &reads[0], .named_target = true },
		{ .read = &reads[1], .readable = true, .fresh = WITNESS_NO_ANSWER,
		  .writer_alive = true },
		{ .read = &reads[2], .readable = true, .fresh = WITNESS_ANSWERED },
	};
	struct witness_read wr = { 0 };
	wr.live = (struct witness_live){ .t = &t, .n = 1 };
	wr.dir = (struct pvg_witness_dir){ .files = reads, .n = 3 };
	wr.files = files;
	wr.fresh = (struct witness_fresh){ .token = 5, .waited_ms = 2000 };
	struct pvg_outcome o = rule_witness_files(&wr);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT(o.n_problems, 2);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-corrupt");
	CHECK_STR(code_of(&o, 1), "dispatch-marker.witness-no-answer");
	CHECK(message_has(&o, 1, "did not answer the witness request within 2000 ms"));
	pvg_outcome_clear(&o);
	/* no request could be made: unverifiable, with nothing to say per file */
	files[0].named_target = false;
	wr.fresh.token = 0;
	o = rule_witness_files(&wr);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_INT(o.n_problems, 0);
}

static void witness_no_live_file_fails_only_when_nothing_else_did(void)
{
	struct pvg_config cfg = { 0 };
	cfg.witness.dir = "/w";
	struct witness_tally ta = { 0 };
	ta.attr_count[PVG_WITNESS_PID_REUSED] = 2;
	struct pvg_outcome o = rule_witness_live_file(&cfg, &ta, PVG_PASS);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK(o.stop);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-stale");
	CHECK_STR(o.summary, "witness: no file of the live service (2 ignored)");
	pvg_outcome_clear(&o);
	o = rule_witness_live_file(&cfg, &ta, PVG_UNVERIFIABLE);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
	CHECK(o.stop);
	pvg_outcome_clear(&o);
	ta.n_live = 1;
	o = rule_witness_recording(&ta);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-not-recording");
	CHECK(message_has(&o, 0, "no reason given"));
	pvg_outcome_clear(&o);
}

static void witness_requirement_short_fails_unless_replays_hide_it(void)
{
	struct pvg_witness_require req = { .kernel = "my_kernel", .via = PVG_WITNESS_REQUIRE_ANY };
	struct pvg_config cfg = { 0 };
	cfg.witness.dir = "/w";
	cfg.witness.require = &req;
	cfg.witness.n_require = 1;
	struct witness_need need = { .w = &req, .need = 3, .got = 1 };
	struct witness_read wr = { 0 };
	wr.needs = &need;
	struct pvg_outcome o = rule_witness_required(&cfg, &wr);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-too-few");
	CHECK_STR(o.problems[0].message, "{my_kernel}: 1 launch seen by the witness, 3 required");
	pvg_outcome_clear(&o);
	wr.tally.opaque = 2; /* graph replays the witness could not itemize may hold it */
	o = rule_witness_required(&cfg, &wr);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	pvg_outcome_clear(&o);
	req.via = PVG_WITNESS_REQUIRE_EAGER; /* ... unless eager launches alone count */
	o = rule_witness_required(&cfg, &wr);
	CHECK_INT(o.status, PVG_FAIL);
	pvg_outcome_clear(&o);
	need.got = 3;
	o = rule_witness_required(&cfg, &wr);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
}

static void witness_forbidden_launch_fails_and_opaque_replays_are_unproven(void)
{
	char *pat[] = { "fallback*" };
	struct pvg_config cfg = { 0 };
	cfg.witness.dir = "/w";
	cfg.witness.forbid = (struct pvg_strv){ .v = pat, .n = 1 };
	struct pvg_witness_entry e = { .name = { "fallback_gemm", 13 }, .grid = { 8, 1, 1 },
				       .block = { 256, 1, 1 }, .count = 5 };
	struct witness_seen seen = { .pattern = pat[0], .n = 5, .seen = &e };
	struct witness_read wr = { 0 };
	wr.seen = &seen;
	struct pvg_outcome o = rule_witness_forbidden(&cfg, &wr);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(o.problems[0].message, "forbidden \"fallback*\": the live service launched "
					 "fallback_gemm 5 times (e.g. grid=8,1,1 block=256,1,1)");
	pvg_outcome_clear(&o);
	wr.tally.opaque = 1;
	o = rule_witness_forbid_provable(&cfg, &wr.tally);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-graph-opaque");
	pvg_outcome_clear(&o);
}

/* ---- code identity ---- */

/* A live file of version 3 with three modules: the artifact's copy, a copy with other bytes
 * in another library, and PTX the driver compiled. */
struct code_fixture {
	struct pvg_witness_mod mods[3];
	struct pvg_witness_entry e[6];
	struct pvg_witness_file file;
	struct witness_digest digest;
	const char *names[1];
	struct witness_code code;
};

static void code_fixture(struct code_fixture *x)
{
	memset(x, 0, sizeof(*x));
	for (int i = 0; i < 3; i++)
		memset(x->mods[i].sha256, 0x10 * (i + 1), 32);
	x->mods[0].origin = PVG_WITNESS_ORIGIN_EMBEDDED;
	x->mods[0].path = (struct pvg_witness_str){ "/venv/ext/_C.so", 15 };
	x->mods[1].origin = PVG_WITNESS_ORIGIN_FILE;
	x->mods[1].path = (struct pvg_witness_str){ "/opt/old/libk.so", 16 };
	x->mods[2].origin = PVG_WITNESS_ORIGIN_PTX_JIT;
	const struct pvg_witness_str k = { "_Z6kernelPf", 11 };
	/* from the artifact, from other bytes, ambiguous, PTX JIT, module unknown, no identity */
	x->e[0] = (struct pvg_witness_entry){ .name = k, .count = 4, .code = 1,
					      .bind = PVG_WITNESS_BIND_HANDLE };
	x->e[1] = (struct pvg_witness_entry){ .name = k, .count = 7, .code = 2,
					      .bind = PVG_WITNESS_BIND_LOADED_IN_CALL };
	x->e[2] = (struct pvg_witness_entry){ .name = k, .count = 1, .code = 1,
					      .bind = PVG_WITNESS_BIND_AMBIGUOUS };
	x->e[3] = (struct pvg_witness_entry){ .name = k, .count = 2, .code = 3,
					      .bind = PVG_WITNESS_BIND_HANDLE };
	x->e[4] = (struct pvg_witness_entry){ .name = k, .count = 3 };
	x->file.h.version = 3;
	x->file.h.flags = PVG_WITNESS_F_MODULES;
	x->file.entries = x->e;
	x->file.n = 5;
	x->file.modules = x->mods;
	x->file.n_modules = 3;
	memcpy(x->digest.sha256, x->mods[0].sha256, 32);
	x->names[0] = "_C";
	x->code = (struct witness_code){ .read = true, .d = &x->digest, .n = 1, .names = x->names,
					 .n_arts = 1 };
}

static void code_launch_counts_by_its_module_bytes(void)
{
	struct code_fixture x;
	code_fixture(&x);
	const struct pvg_witness_mod *m;
	const struct witness_digest *d;
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[0], &m, &d), WITNESS_FROM_ARTIFACT);
	CHECK(d == &x.digest && m == &x.mods[0]);
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[1], &m, &d), WITNESS_FROM_OTHER);
	CHECK(m == &x.mods[1] && d == NULL);
	/* ambiguous never counts, even when the module it names is the artifact's */
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[2], &m, &d), WITNESS_FROM_AMBIGUOUS);
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[3], &m, &d), WITNESS_FROM_PTX_JIT);
	/* a launch with no module in a file that records modules: undecided, never by name */
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[4], &m, &d), WITNESS_FROM_UNDECIDED);
	CHECK(m == NULL);
	/* a file whose writer did not record modules (an API that cannot say): by name only */
	x.file.h.flags = 0;
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[4], &m, &d), WITNESS_FROM_NAME_ONLY);
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[0], &m, &d), WITNESS_FROM_NAME_ONLY);
	x.file.h.flags = PVG_WITNESS_F_MODULES;
	/* an older file: whatever its records say, by name only */
	x.file.h.version = 2;
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[0], &m, &d), WITNESS_FROM_NAME_ONLY);
	x.file.h.version = 3;
	/* other bytes while an artifact's digest is not known: undecided, not other code */
	x.code.why = "_C: the sha256 of its code object 0 for gfx90a is not known";
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[1], &m, &d), WITNESS_FROM_UNDECIDED);
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[0], &m, &d), WITNESS_FROM_ARTIFACT);
	x.code.why = NULL;
	x.mods[1].flags = PVG_WITNESS_M_NOT_HASHED;
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[1], &m, &d), WITNESS_FROM_UNDECIDED);
}

/* The CUDA witness keys a record by the launched handle (a CUfunction or CUkernel) and binds
 * its module once, when the record is made: a handle the driver hands out again after its
 * module was unloaded lands in the old record. Launches after the module's unload are not
 * that module's code. */
static void code_launch_after_its_module_unloaded_is_undecided(void)
{
	struct code_fixture x;
	code_fixture(&x);
	const struct pvg_witness_mod *m;
	const struct witness_digest *d;
	x.mods[0].load_ns = 1000;
	x.mods[0].unload_ns = 5000;
	x.e[0].first_ns = 2000;
	x.e[0].last_ns = 4000;
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[0], &m, &d), WITNESS_FROM_ARTIFACT);
	x.e[0].last_ns = 6000;
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[0], &m, &d), WITNESS_FROM_UNDECIDED);
	CHECK(m == &x.mods[0] && d == NULL);
	/* still loaded when written: nothing to compare */
	x.mods[0].unload_ns = 0;
	CHECK_INT(dispatch_witness_from(&x.code, &x.file, &x.e[0], &m, &d), WITNESS_FROM_ARTIFACT);
}

static void code_require_from_other_code_fails_naming_it(void)
{
	struct code_fixture x;
	code_fixture(&x);
	struct pvg_witness_require req = { .kernel = "kernel", .via = PVG_WITNESS_REQUIRE_ANY };
	struct pvg_config cfg = { 0 };
	cfg.witness.dir = "/w";
	cfg.witness.require = &req;
	cfg.witness.n_require = 1;
	struct witness_need need = { .w = &req, .need = 1, .other_code = 7, .other_e = &x.e[1],
				     .other_mod = &x.mods[1], .other_e_n = 7 };
	struct witness_read wr = { 0 };
	wr.needs = &need;
	wr.code = x.code;
	struct pvg_outcome o = rule_witness_required(&cfg, &wr);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-other-code");
	CHECK_STR(o.problems[0].message,
		  "{kernel}: 0 launches from the artifact's code, 1 required; _Z6kernelPf ran 7 "
		  "times from other code, e.g. 7 from /opt/old/libk.so (file, sha256 202020202020…)");
	pvg_outcome_clear(&o);
	/* a launch whose code cannot be told leaves it undecided */
	need.ambiguous = 1;
	o = rule_witness_required(&cfg, &wr);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK(message_has(&o, 0, "1 launch of a name several loaded modules define, none told"));
	pvg_outcome_clear(&o);
	/* PTX compiled by the driver alone: unverifiable, saying why */
	need = (struct witness_need){ .w = &req, .need = 1, .jit = 2 };
	o = rule_witness_required(&cfg, &wr);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-code-unknown");
	CHECK(message_has(&o, 0, "compiled from PTX"));
	CHECK(strstr(o.problems[0].hint, "-gencode") != NULL);
	pvg_outcome_clear(&o);
	/* launches linked by name only keep the name rule of witness.require */
	need = (struct witness_need){ .w = &req, .need = 1, .got = 3, .by_name = 3 };
	o = rule_witness_required(&cfg, &wr);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
}

static void sources_fixture(struct changed_source *c, char **kernels)
{
	memset(c, 0, sizeof(*c));
	c->path = "csrc/gemm.cu";
	c->state = SOURCE_KERNELS;
	c->kernels = (struct pvg_strv){ .v = kernels, .n = 2 };
}

static void sources_launched_from_the_artifact_pass(void)
{
	char *k[] = { "_Z4gemmPf", "_Z7gemm_v2Pf" };
	struct changed_source c;
	sources_fixture(&c, k);
	c.count.from_artifact = 1;
	c.count.elsewhere = 9; /* a copy elsewhere ran too: the artifact's did run */
	struct changed_sources s = { .applies = true, .v = &c, .n = 1, .n_required = 1 };
	struct witness_tally ta = { 0 };
	struct pvg_outcome o = rule_witness_changed_sources(&s, &ta, NULL);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
	pvg_outcome_clear(&o);
	/* no change set read (source.repo not set): nothing is required by default */
	s.applies = false;
	c.count.from_artifact = 0;
	o = rule_witness_changed_sources(&s, &ta, NULL);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
}

static void sources_never_launched_fail_naming_source_and_kernels(void)
{
	char *k[] = { "_Z4gemmPf", "_Z7gemm_v2Pf" };
	struct changed_source c;
	sources_fixture(&c, k);
	struct changed_sources s = { .applies = true, .v = &c, .n = 1, .n_required = 1 };
	struct witness_tally ta = { 0 };
	struct pvg_outcome o = rule_witness_changed_sources(&s, &ta, NULL);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-source-not-launched");
	CHECK_STR(o.problems[0].message,
		  "changed source csrc/gemm.cu: none of its kernels (_Z4gemmPf, _Z7gemm_v2Pf) was "
		  "launched by the live service: nothing of that name ran");
	pvg_outcome_clear(&o);
	/* ... unless the table was full: then it may have run unrecorded */
	ta.table_full = true;
	o = rule_witness_changed_sources(&s, &ta, NULL);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	pvg_outcome_clear(&o);
}

static void sources_run_from_other_code_fail_naming_it(void)
{
	struct code_fixture x;
	code_fixture(&x);
	char *k[] = { "_Z6kernelPf", "_Z7gemm_v2Pf" };
	struct changed_source c;
	sources_fixture(&c, k);
	c.count.elsewhere = 7;
	c.count.other = &x.e[1];
	c.count.other_mod = &x.mods[1];
	c.count.other_n = 7;
	struct changed_sources s = { .applies = true, .v = &c, .n = 1, .n_required = 1 };
	struct witness_tally ta = { 0 };
	struct pvg_outcome o = rule_witness_changed_sources(&s, &ta, &x.code);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-source-other-code");
	CHECK_STR(o.problems[0].message,
		  "changed source csrc/gemm.cu: none of its kernels (_Z6kernelPf, _Z7gemm_v2Pf) was "
		  "launched from the artifact; _Z6kernelPf ran 7 times from other code: "
		  "/opt/old/libk.so (file, sha256 202020202020…)");
	pvg_outcome_clear(&o);
}

/* The launches of a changed source's kernels, counted from a live file as the gate counts
 * them (dispatch_witness_count). */
static struct source_count count_for(struct code_fixture *x, struct changed_source *c,
				     struct triton_jit *jit)
{
	struct pvg_config cfg = { 0 };
	cfg.witness.dir = "/w";
	struct pvg_ctx ctx = { 0 };
	ctx.cfg = &cfg;
	uint8_t byte = 0;
	struct pvg_witness_read f = { .name = "w.pvgw", .bytes = &byte, .len = 1, .file = x->file };
	struct changed_sources s = { .applies = true, .v = c, .n = 1, .n_required = 1 };
	struct witness_read wr = { 0 };
	wr.dir = (struct pvg_witness_dir){ .files = &f, .n = 1 };
	wr.code = x->code;
	wr.code.jit = jit;
	wr.sources = &s;
	memset(&c->count, 0, sizeof(c->count));
	dispatch_witness_count(&ctx, &wr);
	free(wr.needs);
	free(wr.seen);
	return c->count;
}

static void sources_count_only_the_code_the_source_becomes(void)
{
	struct code_fixture x;
	code_fixture(&x);
	x.file.n = 1; /* e[0]: 4 launches from the artifact's module */
	char *k[] = { "_Z6kernelPf", "_Z7gemm_v2Pf" };
	struct changed_source c;
	sources_fixture(&c, k);
	struct source_count n = count_for(&x, &c, NULL);
	CHECK_INT((int)n.from_artifact, 4);
	/* a changed .py's Triton kernels are compiled from that file: an artifact's kernel of
	 * the same name is other code */
	c.path = "pkg/ops/k.py";
	c.triton = true;
	n = count_for(&x, &c, NULL);
	CHECK_INT((int)n.from_artifact, 0);
	CHECK_INT((int)n.elsewhere, 4);
	/* a JIT module linked to another changed .py counts for that file only */
	x.mods[1].origin = PVG_WITNESS_ORIGIN_MEMORY;
	x.e[0] = x.e[1]; /* 7 launches from module 2, bound in call */
	struct triton_judged judged = { .v = TRITON_LINKED, .change = "pkg/ops/other.py" };
	memcpy(judged.sha256, x.mods[1].sha256, 32);
	struct triton_jit jit = { .built = true, .root_fd = -1, .v = &judged, .n = 1 };
	n = count_for(&x, &c, &jit);
	CHECK_INT((int)n.from_artifact, 0);
	CHECK_INT((int)n.elsewhere, 7);
	judged.change = "pkg/ops/k.py";
	n = count_for(&x, &c, &jit);
	CHECK_INT((int)n.from_artifact, 7);
	/* ... and never for a .cu's kernel of that name */
	c.path = "csrc/gemm.cu";
	c.triton = false;
	judged.change = "pkg/ops/k.py";
	n = count_for(&x, &c, &jit);
	CHECK_INT((int)n.from_artifact, 0);
	CHECK_INT((int)n.elsewhere, 7);
}

static void sources_by_name_only_or_untold_are_unverifiable(void)
{
	char *k[] = { "_Z4gemmPf", "_Z7gemm_v2Pf" };
	struct changed_source c;
	sources_fixture(&c, k);
	c.count.name_only = 5;
	struct changed_sources s = { .applies = true, .v = &c, .n = 1, .n_required = 1 };
	struct witness_tally ta = { 0 };
	struct pvg_outcome o = rule_witness_changed_sources(&s, &ta, NULL);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-name-only");
	CHECK(message_has(&o, 0, "linked by name only"));
	pvg_outcome_clear(&o);
	c.count.name_only = 0;
	c.count.jit = 2;
	o = rule_witness_changed_sources(&s, &ta, NULL);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-code-unknown");
	pvg_outcome_clear(&o);
	c.count.jit = 0;
	c.count.ambiguous = 1;
	o = rule_witness_changed_sources(&s, &ta, NULL);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK(message_has(&o, 0, "none told"));
	pvg_outcome_clear(&o);
}

static void sources_exempt_unknown_header_and_unreadable(void)
{
	struct changed_source v[3];
	memset(v, 0, sizeof(v));
	v[0] = (struct changed_source){ .path = "csrc/a.cu", .state = SOURCE_EXEMPT,
					.exempt = "only used at startup" };
	v[1] = (struct changed_source){ .path = "csrc/b.cuh", .state = SOURCE_HEADER };
	v[2] = (struct changed_source){ .path = "csrc/c.hip", .state = SOURCE_UNKNOWN,
					.why = "object build/c.o (compile line 4): not found" };
	struct changed_sources s = { .applies = true, .v = v, .n = 2, .n_required = 0 };
	struct witness_tally ta = { 0 };
	/* exempt (the reason is the evidence's) and a header: nothing required */
	struct pvg_outcome o = rule_witness_changed_sources(&s, &ta, NULL);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
	pvg_outcome_clear(&o);
	s.n = 3;
	o = rule_witness_changed_sources(&s, &ta, NULL);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_INT(o.n_problems, 1);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-source-kernels-unknown");
	CHECK(message_has(&o, 0, "csrc/c.hip: its kernels are not known: object build/c.o"));
	pvg_outcome_clear(&o);
	struct changed_sources bad = { .applies = true, .err = -ENOENT, .why = "no baseline" };
	o = rule_witness_changed_sources(&bad, &ta, NULL);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.witness-sources-unknown");
	pvg_outcome_clear(&o);
}

int main(void)
{
	RUN(markers_unconfigured_name_the_missing_key);
	RUN(markers_missing_log_hints_where_the_output_goes);
	RUN(markers_refuse_a_fifo_unopened);
	RUN(markers_empty_log_fails_and_stops);
	RUN(markers_enough_live_markers_pass);
	RUN(markers_too_few_say_how_many);
	RUN(markers_undecided_times_are_unverifiable_not_failed);
	RUN(markers_only_from_others_say_so);
	RUN(markers_missing_fact_fails);
	RUN(markers_refused_zone_file_is_told_without_a_status);
	RUN(witness_without_a_kernel_is_unverifiable);
	RUN(witness_environment_names_the_missing_variable);
	RUN(witness_folder_link_is_refused);
	RUN(witness_files_corrupt_fail_unanswered_are_unverifiable);
	RUN(witness_no_live_file_fails_only_when_nothing_else_did);
	RUN(witness_requirement_short_fails_unless_replays_hide_it);
	RUN(witness_forbidden_launch_fails_and_opaque_replays_are_unproven);
	RUN(code_launch_counts_by_its_module_bytes);
	RUN(code_launch_after_its_module_unloaded_is_undecided);
	RUN(code_require_from_other_code_fails_naming_it);
	RUN(sources_launched_from_the_artifact_pass);
	RUN(sources_never_launched_fail_naming_source_and_kernels);
	RUN(sources_run_from_other_code_fail_naming_it);
	RUN(sources_count_only_the_code_the_source_becomes);
	RUN(sources_by_name_only_or_untold_are_unverifiable);
	RUN(sources_exempt_unknown_header_and_unreadable);
	TAP_EXIT();
}
