/* SPDX-License-Identifier: MIT */
/* The rules of gates 4 (process-maps) and 5 (stale-service), each on facts built here by hand:
 * no process, /proc or GPU is read. */
#include <sys/sysmacros.h>

#include "04-process-maps.h"
#include "05-stale-service.h"
#include "tap.h"

/* ---- helpers ---- */

static const char *code_of(const struct pvg_outcome *o, size_t i)
{
	return i < o->n_problems ? o->problems[i].code : "(none)";
}

static bool message_has(const struct pvg_outcome *o, size_t i, const char *text)
{
	return i < o->n_problems && strstr(o->problems[i].message, text);
}

static void result_clear(struct pvg_result *res)
{
	pvg_result_reset(res);
	cJSON_Delete(res->evidence);
}

/* ---- gate 4 ---- */

/* an installed artifact of inode 42, changed at t=1000 s, whose build hashes to all 0xaa */
static const unsigned char build_digest[32] = {
	0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
	0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
	0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
};

static void artifact(struct pvg_maps_artifact *a)
{
	*a = (struct pvg_maps_artifact){ .installed = "/opt/inst/libx.so", .name = "libx.so",
					 .digest = build_digest, .digest_of = "build",
					 .digest_hex = "aaaa", .tick_ns = 10000000 };
	strcpy(a->canon, "/opt/inst/libx.so");
	a->st.st_dev = makedev(8, 1);
	a->st.st_ino = 42;
	a->st.st_ctim.tv_sec = 1000;
}

/* a process started at t=2000 s (after the install) */
static struct pvg_proc proc(pid_t pid)
{
	struct pvg_proc p = { .pid = pid, .ppid = 1, .in_tree = true };
	strcpy(p.comm, "python3");
	p.start.tv_sec = 2000;
	return p;
}

/* the installed file, mapped, its bytes read through map_files as those of the build */
static void installed_mapping(struct pvg_maps_mapping *m, struct pvg_mapped_file *f)
{
	*f = (struct pvg_mapped_file){ .path = (char *)"/opt/inst/libx.so", .dev_major = 8,
				       .dev_minor = 1, .inode = 42, .n_mappings = 4 };
	*m = (struct pvg_maps_mapping){ .f = f, .is_installed = true, .same_path = true };
	m->bytes.from = "map_files";
	memcpy(m->bytes.digest, build_digest, 32);
	strcpy(m->bytes.hex, "aaaa");
}

static void maps_passes_the_installed_build(void)
{
	struct pvg_maps_artifact a;
	artifact(&a);
	struct pvg_proc p = proc(100);
	struct pvg_mapped_file f;
	struct pvg_maps_mapping m;
	installed_mapping(&m, &f);
	struct pvg_maps_process pr = { .p = &p, .target = true, .must_map = true, .m = &m, .n = 1 };
	struct pvg_result res = { .evidence = cJSON_CreateObject() };
	struct pvg_maps_verdict v = pvg_maps_check_process(&res, &a, &pr);
	CHECK_INT(v.status, PVG_PASS);
	CHECK_INT(res.n_problems, 0);
	CHECK(v.scanned && v.mapped && v.named && v.verified);
	CHECK(v.mapping_verified[0]);
	pvg_maps_verdict_clear(&v);
	result_clear(&res);
}

static void maps_reports_deleted_after_reinstall(void)
{
	struct pvg_maps_artifact a;
	artifact(&a);
	struct pvg_proc p = proc(100);
	struct pvg_mapped_file f;
	struct pvg_maps_mapping m;
	installed_mapping(&m, &f);
	f.deleted = true;
	m.is_installed = false;
	m.bytes.from = NULL;
	struct pvg_maps_process pr = { .p = &p, .target = true, .must_map = true, .m = &m, .n = 1 };
	struct pvg_outcome o = pvg_maps_rule_not_deleted(&a, &pr, &m);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "process-maps.deleted");
	CHECK(message_has(&o, 0, "process 100 (python3) maps /opt/inst/libx.so (deleted)"));
	pvg_outcome_clear(&o);

	/* the walk ends there: one problem, and the deleted file still counts as loaded */
	struct pvg_result res = { .evidence = cJSON_CreateObject() };
	struct pvg_maps_verdict v = pvg_maps_check_process(&res, &a, &pr);
	CHECK_INT(v.status, PVG_FAIL);
	CHECK_INT(res.n_problems, 1);
	CHECK(v.mapped && !v.verified);
	pvg_maps_verdict_clear(&v);
	result_clear(&res);
}

static void maps_tells_replaced_from_other_copy(void)
{
	struct pvg_maps_artifact a;
	artifact(&a);
	struct pvg_proc p = proc(100);
	struct pvg_maps_process pr = { .p = &p, .target = true };
	struct pvg_mapped_file f = { .path = (char *)"/opt/inst/libx.so", .dev_major = 8,
				     .dev_minor = 1, .inode = 41 };
	/* the installed path names the installed file now, but the process maps inode 41 */
	struct pvg_maps_mapping m = { .f = &f, .now_installed = true, .same_path = true };
	m.now = a.st;
	struct pvg_outcome o = pvg_maps_rule_same_file(&a, &pr, &m);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "process-maps.replaced");
	CHECK(message_has(&o, 0, "as dev 8:1 inode 41, but that path now names the installed "
				 "artifact (dev 8:1 inode 42)"));
	pvg_outcome_clear(&o);

	/* at the same path, a file of its own in the service's mount namespace */
	m = (struct pvg_maps_mapping){ .f = &f, .same_path = true, .still_there = true };
	o = pvg_maps_rule_same_file(&a, &pr, &m);
	CHECK_STR(code_of(&o, 0), "process-maps.other-copy");
	CHECK(message_has(&o, 0, "which in its mount namespace is another file"));
	CHECK(o.problems && strstr(o.problems[0].hint, "bind-mount"));
	pvg_outcome_clear(&o);

	/* another location altogether */
	f.path = (char *)"/home/u/build/libx.so";
	m = (struct pvg_maps_mapping){ .f = &f, .now_r = 0 };
	o = pvg_maps_rule_same_file(&a, &pr, &m);
	CHECK_STR(code_of(&o, 0), "process-maps.other-copy");
	CHECK(message_has(&o, 0, "another file than the installed artifact /opt/inst/libx.so"));
	pvg_outcome_clear(&o);

	/* the installed file itself: nothing to say */
	installed_mapping(&m, &f);
	o = pvg_maps_rule_same_file(&a, &pr, &m);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
}

static void maps_compares_mapped_bytes_with_build(void)
{
	struct pvg_maps_artifact a;
	artifact(&a);
	struct pvg_proc p = proc(100);
	struct pvg_maps_process pr = { .p = &p, .target = true };
	struct pvg_mapped_file f;
	struct pvg_maps_mapping m;
	installed_mapping(&m, &f);
	m.bytes.digest[0] = 0xbb;
	strcpy(m.bytes.hex, "bbaa");
	struct pvg_outcome o = pvg_maps_rule_same_bytes(&a, &pr, &m);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "process-maps.bytes-mismatch");
	CHECK(message_has(&o, 0, "hash to sha256 bbaa, the build is aaaa"));
	pvg_outcome_clear(&o);

	/* not read: a worker that went away proves nothing; a target that did is unverifiable */
	m.bytes = (struct pvg_mapped_bytes){ .err = -ESRCH, .map_files = (char *)"/proc/100/mf" };
	pr.target = false;
	o = pvg_maps_rule_same_bytes(&a, &pr, &m);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
	pr.target = true;
	o = pvg_maps_rule_same_bytes(&a, &pr, &m);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "process-maps.exited");
	pvg_outcome_clear(&o);

	m.bytes.err = -EACCES;
	o = pvg_maps_rule_same_bytes(&a, &pr, &m);
	CHECK_STR(code_of(&o, 0), "process-maps.permission-denied");
	CHECK(message_has(&o, 0, "through /proc/100/mf"));
	pvg_outcome_clear(&o);

	/* a device put at the mapped address since maps was read is never opened */
	m.bytes = (struct pvg_mapped_bytes){ .refused = PVG_REFUSED_DEVICE,
					     .map_files = (char *)"/proc/100/mf" };
	o = pvg_maps_rule_same_bytes(&a, &pr, &m);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "process-maps.unreadable");
	pvg_outcome_clear(&o);
}

static void maps_needs_start_after_install(void)
{
	struct pvg_maps_artifact a;
	artifact(&a);
	struct pvg_proc p = proc(100);
	struct pvg_maps_process pr = { .p = &p, .target = true };
	struct pvg_mapped_file f;
	struct pvg_maps_mapping m;
	installed_mapping(&m, &f);
	struct pvg_outcome o = pvg_maps_rule_started_after_install(&a, &pr, &m);
	CHECK_INT(o.status, PVG_PASS);

	a.st.st_ctim.tv_sec = 3000; /* overwritten in place while it ran */
	o = pvg_maps_rule_started_after_install(&a, &pr, &m);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "process-maps.overwritten-after-start");
	pvg_outcome_clear(&o);

	a.st.st_ctim = p.start; /* within one clock tick */
	a.st.st_ctim.tv_nsec += 5000000;
	o = pvg_maps_rule_started_after_install(&a, &pr, &m);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "process-maps.start-ambiguous");
	pvg_outcome_clear(&o);

	/* the bytes pass, the start does not: the process is not verified */
	a.st.st_ctim.tv_sec = 3000;
	struct pvg_maps_process one = { .p = &p, .target = true, .m = &m, .n = 1 };
	struct pvg_result res = { .evidence = cJSON_CreateObject() };
	struct pvg_maps_verdict v = pvg_maps_check_process(&res, &a, &one);
	CHECK_INT(v.status, PVG_FAIL);
	CHECK(v.mapped && !v.mapping_verified[0] && !v.verified);
	pvg_maps_verdict_clear(&v);
	result_clear(&res);
}

static void maps_target_must_map_with_match(void)
{
	struct pvg_maps_artifact a;
	artifact(&a);
	struct pvg_proc p = proc(100);
	struct pvg_maps_process pr = { .p = &p, .target = true, .must_map = true };
	struct pvg_result res = { .evidence = cJSON_CreateObject() };
	struct pvg_maps_verdict v = pvg_maps_check_process(&res, &a, &pr);
	CHECK_INT(v.status, PVG_FAIL);
	CHECK_INT(res.n_problems, 1);
	if (res.n_problems) {
		CHECK_STR(res.problems[0].code, "process-maps.not-loaded");
		/* started after the install, maps nothing: a lazy load, warm up */
		CHECK(strstr(res.problems[0].hint, "warm up") != NULL);
	}
	pvg_maps_verdict_clear(&v);
	result_clear(&res);

	/* a process whose maps could not be read: unverifiable, and not scanned */
	pr.err = -EACCES;
	res = (struct pvg_result){ .evidence = cJSON_CreateObject() };
	v = pvg_maps_check_process(&res, &a, &pr);
	CHECK_INT(v.status, PVG_UNVERIFIABLE);
	CHECK(!v.scanned);
	if (res.n_problems)
		CHECK_STR(res.problems[0].code, "process-maps.permission-denied");
	pvg_maps_verdict_clear(&v);
	result_clear(&res);
}

static void maps_tree_rules(void)
{
	struct pvg_maps_artifact a;
	artifact(&a);
	struct pvg_proc procs[] = { proc(100), proc(101) };
	procs[1].ppid = 100;
	pid_t targets[] = { 100 };
	struct pvg_targets t = { .procs = procs, .n = 2, .how = PVG_SELECT_PID, .root = 100,
				 .primary = 100, .targets = targets, .n_targets = 1 };
	struct pvg_maps_tree tr = { .t = &t, .a = &a, .n_checked = 2, .n_unscanned = 1 };
	struct pvg_outcome o = pvg_maps_rule_tree_scanned(&tr);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "process-maps.exited");
	pvg_outcome_clear(&o);
	o = pvg_maps_rule_tree_maps(&tr); /* an unread process might map it */
	CHECK_INT(o.status, PVG_PASS);

	tr.n_unscanned = 0;
	o = pvg_maps_rule_tree_maps(&tr);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "process-maps.not-loaded");
	CHECK(message_has(&o, 0, "no process of the tree of 100 (python3, 2 processes checked)"));
	pvg_outcome_clear(&o);

	tr.n_mapping = 1;
	o = pvg_maps_rule_tree_maps(&tr);
	CHECK_INT(o.status, PVG_PASS);
}

/* exec's after-check: the tree's service processes against those the before-check pinned */
static struct pvg_pinned_proc pinned(pid_t pid, uint64_t ticks, const char *comm, bool service)
{
	struct pvg_pinned_proc p = { .pid = pid, .nspid = pid, .start_ticks = ticks,
				     .service = service };
	snprintf(p.comm, sizeof(p.comm), "%s", comm);
	p.start.tv_sec = 2000;
	return p;
}

static void maps_service_processes_gone_and_new(void)
{
	const struct pvg_pinned_proc before[] = {
		pinned(100, 1, "VLLM::EngineCor", true), /* the selected one: still there */
		pinned(101, 2, "VLLM::Worker_0", true),  /* exits */
		pinned(102, 3, "ptxas", false),          /* a helper: exits, not counted */
		pinned(103, 4, "VLLM::Worker_1", true),  /* exits; its pid taken by a new worker */
		pinned(108, 5, "python3", false),        /* renamed a service name since: seen */
		pinned(109, 6, "VLLM::Worker_3", true),  /* reparented out of the tree */
	};
	struct pvg_proc procs[] = {
		proc(100), proc(103), proc(104), proc(105), proc(106), proc(108), proc(109),
	};
	const struct { const char *comm; uint64_t ticks; bool family, in_tree; } now[] = {
		{ "VLLM::EngineCor", 1, true, true }, { "VLLM::Worker_1", 40, true, true },
		{ "VLLM::Worker_2", 41, true, true }, { "cc1", 42, false, true },
		{ "VLLM::EngineCor", 43, true, false }, { "VLLM::Worker_4", 5, true, true },
		{ "VLLM::Worker_3", 6, true, false },
	};
	for (size_t i = 0; i < ARRAY_SIZE(procs); i++) {
		snprintf(procs[i].comm, sizeof(procs[i].comm), "%s", now[i].comm);
		procs[i].start_ticks = now[i].ticks;
		procs[i].family = now[i].family;
		procs[i].in_tree = now[i].in_tree;
		procs[i].start.tv_sec = 2010;
	}
	struct pvg_targets t = { .procs = procs, .n = ARRAY_SIZE(procs), .how = PVG_SELECT_MATCH,
				 .root = 100, .primary = 100 };
	struct pvg_maps_service_change c = { .pinned = before, .n_pinned = ARRAY_SIZE(before),
					     .pinned_primary = 100,
					     .pinned_ns = 2005000000000ull,
					     .window_start_ns = 2006000000000ull,
					     .window_end_ns = 2020000000000ull, .t = &t };
	struct pvg_outcome o = pvg_maps_rule_same_service_processes(&c);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT((int)o.n_problems, 5);
	CHECK_STR(code_of(&o, 0), "process-maps.service-process-gone");
	CHECK(message_has(&o, 0, "service process 101 (VLLM::Worker_0, started"));
	CHECK(message_has(&o, 0, "it exited before the after-check"));
	CHECK_STR(code_of(&o, 1), "process-maps.service-process-gone");
	CHECK(message_has(&o, 1, "service process 103 (VLLM::Worker_1"));
	CHECK_STR(code_of(&o, 2), "process-maps.service-process-gone");
	CHECK(message_has(&o, 2, "service process 109 (VLLM::Worker_3"));
	CHECK(message_has(&o, 2, "it left the service's tree"));
	CHECK_STR(code_of(&o, 3), "process-maps.service-process-new");
	CHECK(message_has(&o, 3, "service process 103 (VLLM::Worker_1"));
	CHECK(message_has(&o, 3, "4.000 s after the benchmark started"));
	CHECK_STR(code_of(&o, 4), "process-maps.service-process-new");
	CHECK(message_has(&o, 4, "service process 104 (VLLM::Worker_2"));
	pvg_outcome_clear(&o);

	cJSON *ev = cJSON_CreateObject();
	pvg_maps_service_change_json(ev, &c);
	const cJSON *sp = cJSON_GetObjectItem(ev, "service_processes");
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(sp, "gone")), 3);
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(sp, "new")), 2);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(sp, "certified")), "4");
	cJSON_Delete(ev);

	/* the same processes as pinned: nothing to say */
	struct pvg_proc same[] = { proc(100), proc(101) };
	same[0].start_ticks = 1, same[0].family = true;
	same[1].start_ticks = 2, same[1].family = true;
	struct pvg_targets t2 = { .procs = same, .n = 2, .how = PVG_SELECT_MATCH, .root = 100,
				  .primary = 100 };
	c.pinned = before;
	c.n_pinned = 2;
	c.t = &t2;
	o = pvg_maps_rule_same_service_processes(&c);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT((int)o.n_problems, 0);
	pvg_outcome_clear(&o);
}

/* ---- gate 5 ---- */

static struct pvg_proc svc(pid_t pid, pid_t ppid, const char *comm, bool family, bool in_tree)
{
	struct pvg_proc p = { .pid = pid, .ppid = ppid, .family = family, .in_tree = in_tree };
	snprintf(p.comm, sizeof(p.comm), "%s", comm);
	return p;
}

static void stale_reports_orphan_and_second_instance(void)
{
	struct pvg_proc procs[] = {
		svc(10, 1, "vllm", true, true),        /* the service */
		svc(20, 1, "VLLM::EngineCor", true, false), /* an orphan of an earlier run */
		svc(30, 1, "vllm", true, false),       /* a second instance */
		svc(31, 30, "VLLM::EngineCor", true, false),
	};
	struct pvg_targets t = { .procs = procs, .n = 4, .root = 10, .primary = 10 };
	struct pvg_outcome o = pvg_stale_rule_no_service_outside_tree(&t);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT(o.n_problems, 3);
	CHECK_STR(code_of(&o, 0), "stale-service.orphan");
	CHECK_STR(code_of(&o, 1), "stale-service.orphan"); /* its parent is init */
	CHECK_STR(code_of(&o, 2), "stale-service.outside-tree");
	CHECK(message_has(&o, 2, "belongs to another tree (parent 30 vllm)"));
	pvg_outcome_clear(&o);

	t.n = 1;
	o = pvg_stale_rule_no_service_outside_tree(&t);
	CHECK_INT(o.status, PVG_PASS);
}

static void stale_lists_at_most_eight_but_fails_for_all(void)
{
	struct pvg_proc procs[12];
	procs[0] = svc(10, 1, "vllm", true, true);
	for (int i = 1; i < 12; i++)
		procs[i] = svc(100 + i, 1, "vllm", true, false);
	struct pvg_targets t = { .procs = procs, .n = 12, .root = 10, .primary = 10 };
	struct pvg_outcome o = pvg_stale_rule_no_service_outside_tree(&t);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT(o.n_problems, PVG_STALE_MAX_LISTED);
	pvg_outcome_clear(&o);
}

static void stale_port_must_be_held_by_tree(void)
{
	struct pvg_proc procs[] = { svc(10, 1, "vllm", true, true), svc(50, 1, "nc", false, false) };
	struct pvg_targets t = { .procs = procs, .n = 2, .root = 10, .primary = 10 };
	struct pvg_tcp_socket sock = { .family = 4, .port = 8000, .inode = 777 };
	struct pvg_tcp_table listeners = { .s = &sock, .n = 1 }, none = { 0 };
	struct pvg_port_view pv = { .port = 8000, .procfs = "/proc", .listeners = &listeners,
				    .host_listeners = &none };
	struct pvg_fd_holder hits[] = { { .pid = 10, .in_tree = true, .socket_inode = 777 } };
	struct pvg_fd_scan fs = { .hits = hits, .n_hits = 1 };
	struct pvg_outcome o = pvg_stale_rule_port_owned(&t, &pv, &fs);
	CHECK_INT(o.status, PVG_PASS);

	hits[0] = (struct pvg_fd_holder){ .pid = 50, .socket_inode = 777 };
	o = pvg_stale_rule_port_owned(&t, &pv, &fs);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "stale-service.port-foreign");
	CHECK(message_has(&o, 0, "port 8000 is held by process 50 (nc)"));
	pvg_outcome_clear(&o);

	/* listening, nobody visible holds it */
	fs.n_hits = 0;
	o = pvg_stale_rule_port_owned(&t, &pv, &fs);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "stale-service.port-owner-unknown");
	pvg_outcome_clear(&o);

	/* nothing listens */
	listeners.n = 0;
	o = pvg_stale_rule_port_owned(&t, &pv, &fs);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "stale-service.port-not-listening");
	pvg_outcome_clear(&o);

	/* /proc/net/tcp unreadable: the port rules say nothing more */
	pv.tcp_r = -EINVAL;
	o = pvg_stale_rule_port_readable(&pv);
	CHECK_STR(code_of(&o, 0), "stale-service.net-unreadable");
	CHECK(message_has(&o, 0, "malformed line"));
	pvg_outcome_clear(&o);
	o = pvg_stale_rule_port_owned(&t, &pv, &fs);
	CHECK_INT(o.status, PVG_PASS);
}

static void stale_host_side_belongs_to_forwarder(void)
{
	struct pvg_proc procs[] = { svc(10, 1, "vllm", true, true),
				    svc(60, 1, "rootlessport", false, false),
				    svc(70, 1, "socat", false, false) };
	struct pvg_targets t = { .procs = procs, .n = 3, .root = 10, .primary = 10 };
	struct pvg_tcp_socket inner = { .inode = 1 }, outer = { .inode = 2 };
	struct pvg_tcp_table listeners = { .s = &inner, .n = 1 }, host = { .s = &outer, .n = 1 };
	struct pvg_port_view pv = { .port = 8000, .procfs = "/proc", .listeners = &listeners,
				    .own_netns = true, .host_listeners = &host };
	struct pvg_fd_holder hits[] = { { .pid = 10, .in_tree = true, .socket_inode = 1 },
					{ .pid = 60, .socket_inode = 2 } };
	struct pvg_fd_scan fs = { .hits = hits, .n_hits = 2 };
	struct pvg_outcome o = pvg_stale_rule_host_side_port(&t, &pv, &fs);
	CHECK_INT(o.status, PVG_PASS);

	hits[1].pid = 70;
	o = pvg_stale_rule_host_side_port(&t, &pv, &fs);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "stale-service.port-foreign");
	CHECK(message_has(&o, 0, "on the host's side is held by process 70 (socat)"));
	pvg_outcome_clear(&o);

	pv.host_r = -EACCES;
	o = pvg_stale_rule_host_side_port(&t, &pv, &fs);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "stale-service.net-unreadable");
	pvg_outcome_clear(&o);
}

static void stale_gpu_holder_once_per_process(void)
{
	struct pvg_proc procs[] = { svc(10, 1, "vllm", true, true), svc(80, 1, "burn", false, false) };
	struct pvg_targets t = { .procs = procs, .n = 2, .root = 10, .primary = 10 };
	struct pvg_fd_holder hits[] = {
		{ .pid = 10, .in_tree = true, .path = (char *)"/dev/kfd" },
		{ .pid = 80, .path = (char *)"/dev/kfd" },
		{ .pid = 80, .path = (char *)"/dev/dri/renderD128" },
	};
	struct pvg_fd_scan fs = { .hits = hits, .n_hits = 3 };
	struct pvg_outcome o = pvg_stale_rule_no_gpu_holder_outside_tree(&t, &fs);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT(o.n_problems, 1);
	CHECK_STR(code_of(&o, 0), "stale-service.gpu-holder");
	CHECK(message_has(&o, 0, "process 80 (burn) outside the service tree holds /dev/kfd"));
	pvg_outcome_clear(&o);
}

static void stale_unread_fds_make_one_problem(void)
{
	struct pvg_proc procs[] = { svc(10, 1, "vllm", true, true) };
	struct pvg_targets t = { .procs = procs, .n = 1, .root = 10, .primary = 10 };
	struct pvg_tcp_socket sock = { .inode = 777 };
	struct pvg_tcp_table listeners = { .s = &sock, .n = 1 }, none = { 0 };
	struct pvg_port_view pv = { .port = 8000, .procfs = "/proc", .listeners = &listeners,
				    .host_listeners = &none };
	pid_t denied[] = { 4242 };
	struct pvg_fd_scan fs = { .denied = denied, .n_denied = 1 };
	struct pvg_result res = { .evidence = cJSON_CreateObject() };
	struct pvg_outcome o = pvg_stale_rule_port_owned(&t, &pv, &fs);
	CHECK_INT(pvg_stale_report(&res, &o, &fs), PVG_UNVERIFIABLE);
	o = pvg_stale_rule_no_gpu_holder_outside_tree(&t, &fs);
	CHECK_INT(pvg_stale_report(&res, &o, &fs), PVG_UNVERIFIABLE);
	CHECK_INT(res.n_problems, 1);
	if (res.n_problems) {
		CHECK_STR(res.problems[0].code, "stale-service.permission-denied");
		CHECK_STR(res.problems[0].message,
			  "the open files of 1 process (first pid 4242) could not be read, so a "
			  "foreign owner of the port or a GPU holder outside the tree cannot be "
			  "ruled out");
	}
	cJSON *ev = cJSON_GetObjectItem(res.evidence, "fds_unreadable");
	CHECK(ev && cJSON_GetArraySize(ev) == 1);
	result_clear(&res);
}

static void stale_gpu_driver_counts_what_a_container_cannot_see(void)
{
	struct pvg_gpu_procs g = { .source = "kfd", .where = (char *)"/sys/class/kfd", .n = 3 };
	struct pvg_gpu_view gv = { .in_container = true, .g = &g, .n_tree_holders = 1,
				   .n_outside_holders = 1 };
	struct pvg_outcome o = pvg_stale_rule_gpu_driver_accounts(&gv);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "stale-service.gpu-holder-outside-view");
	CHECK(message_has(&o, 0, "accounts for 2 (1 of the service tree): 1 outside it"));
	pvg_outcome_clear(&o);
	/* a visible process whose fds could not be read may be the one not accounted for (the
	 * service's own engine, of another user, to a root without CAP_DAC_READ_SEARCH): that
	 * cannot be told, and blames nobody outside */
	gv.n_unread = 1;
	o = pvg_stale_rule_gpu_driver_accounts(&gv);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "stale-service.gpu-holders-unverifiable");
	CHECK(message_has(&o, 0, "the open files of 1 process in it could not be read"));
	pvg_outcome_clear(&o);
	/* more missing than unreadable: some are outside, whatever the unread ones hold */
	g.n = 4;
	o = pvg_stale_rule_gpu_driver_accounts(&gv);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "stale-service.gpu-holder-outside-view");
	pvg_outcome_clear(&o);
	g.n = 3;
	gv.n_unread = 0;

	/* NVML: this namespace only, and no memory figures */
	g = (struct pvg_gpu_procs){ .source = "nvml", .where = (char *)"libnvidia-ml.so.1",
				    .n = 1, .namespaced = true };
	gv.n_outside_holders = 0;
	o = pvg_stale_rule_gpu_driver_accounts(&gv);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "stale-service.gpu-holders-unverifiable");
	pvg_outcome_clear(&o);

	/* with memory: 1 GiB unaccounted is more than the tolerance for one entry */
	g.have_memory = true;
	g.n_entries = 1;
	g.used_bytes = 2048ull << 20;
	g.listed_bytes = 1024ull << 20;
	o = pvg_stale_rule_gpu_driver_accounts(&gv);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK(message_has(&o, 0, "2048 MiB in use, 1024 MiB more than the 1 process NVML lists"));
	pvg_outcome_clear(&o);
	g.used_bytes = (1024ull + 50) << 20;
	o = pvg_stale_rule_gpu_driver_accounts(&gv);
	CHECK_INT(o.status, PVG_PASS);

	/* no driver list at all */
	gv.r = -ENOENT;
	gv.why = "no /sys/class/kfd";
	o = pvg_stale_rule_gpu_driver_accounts(&gv);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK(message_has(&o, 0, "and no /sys/class/kfd: a GPU holder"));
	pvg_outcome_clear(&o);

	/* on the host the fd scan sees everything: the rule has nothing to add */
	gv.in_container = false;
	o = pvg_stale_rule_gpu_driver_accounts(&gv);
	CHECK_INT(o.status, PVG_PASS);
}

static void stale_profiler_fails_unless_allowed(void)
{
	struct pvg_strv attached = { 0 };
	pvg_strv_add_unique(&attached, "nsys (libToolsInjection64.so mapped by 10)");
	struct pvg_outcome o = pvg_stale_rule_no_profiler(&attached, false);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_STR(code_of(&o, 0), "stale-service.profiler-attached");
	pvg_outcome_clear(&o);
	o = pvg_stale_rule_no_profiler(&attached, true);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
	pvg_strv_clear(&attached);
}

/* a folder named by VLLM_TORCH_PROFILER_DIR with n traces since the start */
static struct pvg_profiler_dir trace_dir(size_t n_since, int err)
{
	struct pvg_profiler_dir d = { .pid = 77, .var = "VLLM_TORCH_PROFILER_DIR",
				      .dir = (char *)"/traces", .err = err, .n_since = n_since,
				      .n_before = 3 };
	static char names[2][64] = { "dp0_pp0_tp0_dcp0_ep0_rank0.1733.pt.trace.json.gz",
				     "dp0_pp0_tp1_dcp0_ep1_rank1.1734.pt.trace.json.gz" };
	for (size_t i = 0; i < n_since && i < 2; i++)
		d.traces[d.n_traces++].name = names[i];
	return d;
}

static void stale_profiler_traces_fail_unless_allowed(void)
{
	struct pvg_profiler_dir d = trace_dir(2, 0);
	struct pvg_stale_trace_dirs td = { &d, 1 };
	struct pvg_outcome o = pvg_stale_rule_no_profiler_traces(&td, false);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT(o.n_problems, 1);
	CHECK_STR(code_of(&o, 0), "stale-service.profiler-traces");
	CHECK(message_has(&o, 0, "pid 77 was started with VLLM_TORCH_PROFILER_DIR=/traces, and 2 "
			  "torch-profiler traces were written there since it started: "
			  "dp0_pp0_tp0_dcp0_ep0_rank0.1733.pt.trace.json.gz, "
			  "dp0_pp0_tp1_dcp0_ep1_rank1.1734.pt.trace.json.gz"));
	pvg_outcome_clear(&o);
	o = pvg_stale_rule_no_profiler_traces(&td, true);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
}

/* set, but no trace since the start (only older ones), or no folder yet: noted, not failed */
static void stale_profiler_dir_without_traces_passes(void)
{
	struct pvg_profiler_dir d[2] = { trace_dir(0, 0), trace_dir(0, -ENOENT) };
	struct pvg_stale_trace_dirs td = { d, 2 };
	struct pvg_outcome o = pvg_stale_rule_no_profiler_traces(&td, false);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
}

/* a folder that cannot be listed (a link out of the root, another user's folder) proves
 * nothing either way */
static void stale_profiler_dir_unreadable_is_unverifiable(void)
{
	struct pvg_profiler_dir d = trace_dir(0, -ELOOP);
	d.refused = PVG_REFUSED_LINK;
	struct pvg_stale_trace_dirs td = { &d, 1 };
	struct pvg_outcome o = pvg_stale_rule_no_profiler_traces(&td, false);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "stale-service.profiler-dir-unreadable");
	pvg_outcome_clear(&o);
}

int main(void)
{
	RUN(maps_passes_the_installed_build);
	RUN(maps_reports_deleted_after_reinstall);
	RUN(maps_tells_replaced_from_other_copy);
	RUN(maps_compares_mapped_bytes_with_build);
	RUN(maps_needs_start_after_install);
	RUN(maps_target_must_map_with_match);
	RUN(maps_tree_rules);
	RUN(maps_service_processes_gone_and_new);
	RUN(stale_reports_orphan_and_second_instance);
	RUN(stale_lists_at_most_eight_but_fails_for_all);
	RUN(stale_port_must_be_held_by_tree);
	RUN(stale_host_side_belongs_to_forwarder);
	RUN(stale_gpu_holder_once_per_process);
	RUN(stale_unread_fds_make_one_problem);
	RUN(stale_gpu_driver_counts_what_a_container_cannot_see);
	RUN(stale_profiler_fails_unless_allowed);
	RUN(stale_profiler_traces_fail_unless_allowed);
	RUN(stale_profiler_dir_without_traces_passes);
	RUN(stale_profiler_dir_unreadable_is_unverifiable);
	TAP_EXIT();
}
