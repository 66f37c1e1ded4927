/* SPDX-License-Identifier: MIT */
/* Gate 7's compile-cache rule (checks/dispatch-compile.c) on facts built here: torch.compile
 * lines as the log scan keeps them, cache folders and changed files as read, with no service,
 * log or folder behind them. */
#include "dispatch-compile.h"
#include "dispatch-window.h"
#include "tap.h"

static const char *code_of(const struct pvg_outcome *o, size_t i)
{
	return i < o->n_problems ? o->problems[i].code : NULL;
}

static bool message_has(const struct pvg_outcome *o, size_t i, const char *words)
{
	return i < o->n_problems && strstr(o->problems[i].message, words) != NULL;
}

/* ---- facts: one changed .py (installed at t=1000), one folder a process loaded from ---- */

struct fixture {
	struct compile_facts cf;
	struct compile_change ch[2];
	struct compile_use use[2];
	bool traced[2][2];
	const char *how[2][2];
};

#define DIR0 "/root/.cache/vllm/torch_compile_cache/0123456789/rank_0_0/backbone"
#define DIR1 "/root/.cache/vllm/torch_compile_cache/0123456789/rank_1_0/backbone"

static void fixture(struct fixture *x)
{
	memset(x, 0, sizeof(*x));
	struct compile_facts *cf = &x->cf;
	cf->log_read = true;
	cf->service = true;
	cf->vllm = true;
	cf->env_read = true;
	cf->start = (struct timespec){ .tv_sec = 2000 };
	cf->change_read = true;
	x->ch[0] = (struct compile_change){ .path = "vllm/model_executor/models/llama.py",
					    .installed = "/site/vllm/model_executor/models/llama.py",
					    .took = { .tv_sec = 1000 } };
	cf->changes = x->ch;
	cf->n_changes = 1;
	x->use[0] = (struct compile_use){ .dir = DIR0, .has_pid = true, .pid = 41, .loaded = true,
					  .read = true, .has_graphs = true,
					  .written = { .tv_sec = 500 }, .preexisting = true,
					  .named_read = true, .n_named = 12 };
	x->traced[0][0] = true;
	x->how[0][0] = "named in computation_graph.py";
	x->use[0].traced = x->traced[0];
	x->use[0].traced_how = x->how[0];
	cf->uses = x->use;
	cf->n_uses = cf->uses_total = 1;
}

static void stale_loaded_graph_fails(void)
{
	struct fixture x;
	fixture(&x);
	struct pvg_outcome o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_FAIL);
	CHECK_INT(o.n_problems, 1);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.compile-cache-stale");
	CHECK(message_has(&o, 0, DIR0));
	CHECK(message_has(&o, 0, "vllm/model_executor/models/llama.py"));
	CHECK(message_has(&o, 0, "named in computation_graph.py"));
	CHECK(o.n_problems && strstr(o.problems[0].hint, "VLLM_DISABLE_COMPILE_CACHE=1"));
	pvg_outcome_clear(&o);
	/* the same second to the nanosecond: not older, so not proven fresh either */
	x.use[0].written = x.ch[0].took;
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_FAIL);
	pvg_outcome_clear(&o);
}

static void graph_written_after_the_change_passes(void)
{
	struct fixture x;
	fixture(&x);
	x.use[0].written = (struct timespec){ .tv_sec = 1000, .tv_nsec = 1 };
	struct pvg_outcome o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
	pvg_outcome_clear(&o);
}

/* A change whose files the graph did not trace (a kernel body in a .so, a .py the graph names
 * nowhere): reusing the cache is no stale code. */
static void untraced_change_passes(void)
{
	struct fixture x;
	fixture(&x);
	x.traced[0][0] = false;
	x.how[0][0] = NULL;
	struct pvg_outcome o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_PASS);
	pvg_outcome_clear(&o);
	/* no changed .py at all: the rule does not fire, whatever the log says */
	x.cf.n_changes = 0;
	x.cf.n_uses = 0;
	x.cf.log_read = false;
	x.cf.root_exists = true;
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_PASS);
	CHECK_INT(o.n_problems, 0);
	pvg_outcome_clear(&o);
}

/* A folder this run made (written after the service started) holds graphs compiled from the
 * files as installed; one written before, for which only compiles were logged, may still have
 * given graphs. */
static void compiled_only_decides_by_when_the_folder_was_made(void)
{
	struct fixture x;
	fixture(&x);
	x.use[0].loaded = false;
	x.use[0].compiled = true;
	x.use[0].preexisting = false;
	struct pvg_outcome o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_PASS);
	pvg_outcome_clear(&o);
	x.use[0].preexisting = true;
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.compile-cache-undecided");
	CHECK(message_has(&o, 0, "may have come from the folder"));
	pvg_outcome_clear(&o);
}

/* computation_graph.py could not be read (gone, a FIFO, a link, too big): a changed file
 * newer than the folder may be one it traced. */
static void untold_traced_files_are_unverifiable(void)
{
	struct fixture x;
	fixture(&x);
	x.use[0].named_read = false;
	x.use[0].named_why = "computation_graph.py: a FIFO";
	x.traced[0][0] = false;
	x.how[0][0] = NULL;
	struct pvg_outcome o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.compile-cache-undecided");
	CHECK(message_has(&o, 0, "a FIFO"));
	pvg_outcome_clear(&o);
	/* the change is older than the folder: whatever it traced was as installed */
	x.use[0].written = (struct timespec){ .tv_sec = 1500 };
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_PASS);
	pvg_outcome_clear(&o);
}

static void ambiguous_load_is_unverifiable(void)
{
	struct fixture x;
	fixture(&x);
	x.use[0].has_pid = false;
	x.use[0].ambiguous = true;
	struct pvg_outcome o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.compile-cache-undecided");
	CHECK(message_has(&o, 0, "without a pid"));
	pvg_outcome_clear(&o);
}

static void unreadable_folder_or_file_is_unverifiable(void)
{
	struct fixture x;
	fixture(&x);
	x.use[0].err = -EACCES;
	x.use[0].has_graphs = false;
	struct pvg_outcome o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.compile-cache-unreadable");
	pvg_outcome_clear(&o);
	fixture(&x);
	x.use[0].refused = PVG_REFUSED_LINK;
	x.use[0].err = -ELOOP;
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	pvg_outcome_clear(&o);
	fixture(&x);
	x.ch[0].err = -ENOENT;
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK(message_has(&o, 0, "cannot be read where it is installed"));
	pvg_outcome_clear(&o);
	/* a folder without graph files that a load line names */
	fixture(&x);
	x.use[0].has_graphs = false;
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	pvg_outcome_clear(&o);
}

/* Compile lines alone, for a folder that cannot be read now (removed since, a link out of the
 * service's root) or holds no graph files: when it was written is not known, and vLLM logs a
 * load only when a shape's last graph was loaded, so earlier graphs may have come from it. */
static void compiled_only_in_an_unreadable_folder_is_unverifiable(void)
{
	struct fixture x;
	fixture(&x);
	x.use[0].loaded = false;
	x.use[0].compiled = true;
	x.use[0].err = -ENOENT;
	x.use[0].has_graphs = false;
	x.use[0].preexisting = false;
	struct pvg_outcome o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.compile-cache-unreadable");
	CHECK(message_has(&o, 0, "may have come from it"));
	pvg_outcome_clear(&o);
	fixture(&x);
	x.use[0].loaded = false;
	x.use[0].compiled = true;
	x.use[0].has_graphs = false;
	x.use[0].preexisting = false;
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.compile-cache-unreadable");
	pvg_outcome_clear(&o);
	/* neither a load nor a compile line: nothing came from the folder that the log tells */
	x.use[0].compiled = false;
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_PASS);
	pvg_outcome_clear(&o);
}

/* No line tells which folder was used: unverifiable where a cache is in use, else the rule
 * does not apply. */
static void cache_in_use_without_a_telling_line(void)
{
	struct fixture x;
	fixture(&x);
	x.cf.n_uses = x.cf.uses_total = 0;
	x.cf.cache_root = "/root/.cache/vllm";
	x.cf.root_exists = true;
	x.cf.log_read = false;
	x.cf.log_why = "markers.log is not configured: no service log is read";
	struct pvg_outcome o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.compile-cache-untold");
	CHECK(message_has(&o, 0, "/root/.cache/vllm"));
	CHECK(message_has(&o, 0, "markers.log is not configured"));
	pvg_outcome_clear(&o);
	/* the log was read and names no folder */
	x.cf.log_read = true;
	x.cf.log_why = NULL;
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK(message_has(&o, 0, "no live line"));
	pvg_outcome_clear(&o);
	/* a folder held open tells a cache is in use even where the service is not named vLLM */
	x.cf.vllm = false;
	x.cf.open_folder = "/c/torch_compile_cache/0123456789/rank_0_0/backbone/inductor_cache/x";
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	pvg_outcome_clear(&o);
	/* none in use */
	x.cf.open_folder = NULL;
	x.cf.vllm = true;
	x.cf.root_exists = false;
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_PASS);
	pvg_outcome_clear(&o);
	/* disabled by the environment */
	x.cf.root_exists = true;
	x.cf.env_disabled = true;
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_PASS);
	pvg_outcome_clear(&o);
	/* disabled, by the service's own line */
	x.cf.env_disabled = false;
	x.cf.disabled_lines = 2;
	o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_PASS);
	pvg_outcome_clear(&o);
}

static void lines_not_kept_are_unverifiable(void)
{
	struct fixture x;
	fixture(&x);
	x.use[0].written = (struct timespec){ .tv_sec = 3000 };
	x.cf.lines_lost = 5;
	struct pvg_outcome o = rule_compile_cache(&x.cf);
	CHECK_INT(o.status, PVG_UNVERIFIABLE);
	CHECK_STR(code_of(&o, 0), "dispatch-marker.compile-cache-untold");
	CHECK(message_has(&o, 0, "5 earliest lines not kept"));
	pvg_outcome_clear(&o);
}

/* ---- the log's lines into folders ---- */

static void event(struct pvg_marker_scan *s, const char *text, bool has_pid, pid_t pid)
{
	struct pvg_log_event *e = &s->event[s->events_kept++];
	e->offset = 1000 * s->events_kept;
	e->text = (char *)text;
	e->has_pid = has_pid;
	e->pid = pid;
	s->events_live++;
}

static void log_lines_name_each_process_folder(void)
{
	struct marker_read m = { .events = dispatch_window_log_patterns };
	struct pvg_marker_scan *s = &m.scan;
	event(s, "(VllmWorker rank=0 pid=41) INFO 12-04 10:00:01 [backends.py:540] Using cache "
		 "directory: " DIR0 " for vLLM's torch.compile", true, 41);
	event(s, "(VllmWorker rank=1 pid=42) INFO 12-04 10:00:01 [backends.py:540] Using cache "
		 "directory: " DIR1 " for vLLM's torch.compile", true, 42);
	event(s, "(VllmWorker rank=0 pid=41) INFO 12-04 10:00:03 [backends.py:161] Directly load "
		 "the compiled graph(s) for dynamic shape from the cache, took 1.212 s", true, 41);
	event(s, "(VllmWorker rank=1 pid=42) INFO 12-04 10:00:09 [backends.py:215] Compiling a "
		 "graph for dynamic shape takes 7.01 s", true, 42);
	event(s, "(VllmWorker rank=2 pid=43) INFO 12-04 10:00:09 [backends.py:161] Directly load "
		 "the compiled graph(s) for dynamic shape from the cache, took 1.0 s", true, 43);
	struct compile_facts cf = { 0 };
	dispatch_compile_from_log(&m, &cf);
	CHECK(cf.log_read);
	CHECK_INT(cf.n_uses, 2);
	CHECK_STR(cf.n_uses > 0 ? cf.uses[0].dir : NULL, DIR0);
	CHECK(cf.n_uses > 0 && cf.uses[0].loaded && !cf.uses[0].compiled && cf.uses[0].pid == 41);
	CHECK_STR(cf.n_uses > 1 ? cf.uses[1].dir : NULL, DIR1);
	CHECK(cf.n_uses > 1 && !cf.uses[1].loaded && cf.uses[1].compiled);
	CHECK_INT(cf.loads_untold, 1);
	dispatch_compile_clear(&cf);
}

/* The scan notes a block's lines pattern by pattern (compile and load lines before the
 * "Using cache directory" lines): the folders are read in the log's order. */
static void lines_are_taken_in_the_log_order(void)
{
	struct marker_read m = { .events = dispatch_window_log_patterns };
	struct pvg_marker_scan *s = &m.scan;
	event(s, "(VllmWorker rank=0 pid=41) INFO 12-04 10:00:03 [backends.py:161] Directly load "
		 "the compiled graph(s) for dynamic shape from the cache, took 1.212 s", true, 41);
	event(s, "(VllmWorker rank=0 pid=41) INFO 12-04 10:00:01 [backends.py:540] Using cache "
		 "directory: " DIR0 " for vLLM's torch.compile", true, 41);
	s->event[0].offset = 200;
	s->event[1].offset = 100;
	struct compile_facts cf = { 0 };
	dispatch_compile_from_log(&m, &cf);
	CHECK(cf.n_uses == 1 && cf.uses[0].loaded);
	CHECK_INT(cf.loads_untold, 0);
	dispatch_compile_clear(&cf);
}

static void pidless_lines_with_several_folders_are_ambiguous(void)
{
	struct marker_read m = { .events = dispatch_window_log_patterns };
	struct pvg_marker_scan *s = &m.scan;
	event(s, "INFO 12-04 10:00:01 [backends.py:540] Using cache directory: " DIR0
		 " for vLLM's torch.compile", false, 0);
	event(s, "INFO 12-04 10:00:01 [backends.py:540] Using cache directory: " DIR1
		 " for vLLM's torch.compile", false, 0);
	event(s, "INFO 12-04 10:00:03 [backends.py:161] Directly load the compiled graph(s) for "
		 "compile range (1, 8192) from the cache, took 1.212 s", false, 0);
	event(s, "INFO 12-04 10:00:01 [backends.py:538] vLLM's torch.compile cache is disabled.",
	      false, 0);
	struct compile_facts cf = { 0 };
	dispatch_compile_from_log(&m, &cf);
	CHECK_INT(cf.n_uses, 2);
	CHECK(cf.n_uses == 2 && cf.uses[0].ambiguous && cf.uses[1].ambiguous);
	CHECK(cf.n_uses == 2 && cf.uses[0].loaded && cf.uses[1].loaded);
	CHECK_INT(cf.disabled_lines, 1);
	dispatch_compile_clear(&cf);
	/* one folder only: the load is its own */
	struct marker_read m1 = { .events = dispatch_window_log_patterns };
	event(&m1.scan, "INFO 12-04 10:00:01 [backends.py:540] Using cache directory: " DIR0
			" for vLLM's torch.compile", false, 0);
	event(&m1.scan, "INFO 12-04 10:00:03 [backends.py:161] Directly load the compiled "
			"graph(s) for dynamic shape from the cache, took 1.2 s", false, 0);
	dispatch_compile_from_log(&m1, &cf);
	CHECK(cf.n_uses == 1 && cf.uses[0].loaded && !cf.uses[0].ambiguous);
	dispatch_compile_clear(&cf);
	/* no log */
	dispatch_compile_from_log(NULL, &cf);
	CHECK(!cf.log_read && cf.log_why && strstr(cf.log_why, "markers.log"));
	dispatch_compile_clear(&cf);
	/* a log not searched for them (the service is not named vLLM) is not read as saying
	 * nothing */
	m1.events = NULL;
	dispatch_compile_from_log(&m1, &cf);
	CHECK(!cf.log_read && cf.log_why && strstr(cf.log_why, "not searched"));
	CHECK_INT(cf.n_uses, 0);
	dispatch_compile_clear(&cf);
}

int main(void)
{
	RUN(stale_loaded_graph_fails);
	RUN(graph_written_after_the_change_passes);
	RUN(untraced_change_passes);
	RUN(compiled_only_decides_by_when_the_folder_was_made);
	RUN(untold_traced_files_are_unverifiable);
	RUN(ambiguous_load_is_unverifiable);
	RUN(unreadable_folder_or_file_is_unverifiable);
	RUN(compiled_only_in_an_unreadable_folder_is_unverifiable);
	RUN(cache_in_use_without_a_telling_line);
	RUN(lines_not_kept_are_unverifiable);
	RUN(log_lines_name_each_process_folder);
	RUN(lines_are_taken_in_the_log_order);
	RUN(pidless_lines_with_several_folders_are_ambiguous);
	TAP_EXIT();
}
