/* SPDX-License-Identifier: MIT */
/*
 * Gate 7 in exec's after-check: what the live service compiled or loaded while the benchmark
 * ran, picked from the witness's module tables and the log's compile lines (see
 * dispatch-window.h). 07-dispatch-marker.c decides.
 */
#include "dispatch-window.h"

/* vLLM's torch.compile, as vllm/compilation/backends.py logs it (every version since 0.6):
 *   "Using cache directory: DIR for vLLM's torch.compile"       the backend begins
 *   "Dynamo bytecode transform time: N s"                        Dynamo traced the model
 *   "Compiling a graph for dynamic shape takes N s"              Inductor compiled a graph
 *     (also "for compile range (1, 2048)", "for shape N", "for general shape")
 *   "Directly load the compiled graph(s) for dynamic shape from the cache, took N s"
 *   "vLLM's torch.compile cache is disabled."                    the backend begins, no cache
 * The same lines tell gate 7's compile-cache rule which cache folder each process used
 * (dispatch-compile.c). */
const char *const dispatch_window_log_patterns[] = {
	"Compiling a graph for ",
	"Directly load the compiled graph(s) for ",
	"Dynamo bytecode transform time",
	"for vLLM's torch.compile",
	"vLLM's torch.compile cache is disabled",
	NULL,
};

void dispatch_window_init(const struct pvg_ctx *ctx, struct window_facts *wf)
{
	memset(wf, 0, sizeof(*wf));
	wf->start_ns = ctx->window_start_ns;
	wf->end_ns = ctx->window_end_ns;
	wf->allowed = ctx->cfg->benchmark.allow_loads;
}

void dispatch_window_clear(struct window_facts *wf)
{
	for (size_t i = 0; i < wf->n_loads; i++)
		free(wf->loads[i].path);
	for (size_t i = 0; i < wf->n_compiles; i++)
		free(wf->compiles[i].text);
	free(wf->loads);
	free(wf->compiles);
	memset(wf, 0, sizeof(*wf));
}

static bool has_sha(const struct pvg_witness_mod *m)
{
	if (m->flags & PVG_WITNESS_M_NOT_HASHED)
		return false;
	for (size_t i = 0; i < sizeof(m->sha256); i++)
		if (m->sha256[i])
			return true;
	return false;
}

static void add_load(struct window_facts *wf, pid_t pid, bool exited,
		     const struct pvg_witness_mod *m)
{
	wf->loads_total++;
	if (wf->n_loads == WINDOW_KEPT)
		return;
	if (!wf->loads)
		wf->loads = pvg_xcalloc(WINDOW_KEPT, sizeof(*wf->loads));
	struct window_load *l = &wf->loads[wf->n_loads++];
	l->pid = pid;
	l->exited = exited;
	l->origin = m->origin;
	if (m->path.n) {
		size_t n = m->path.n > 300 ? 300 : m->path.n;
		_cleanup_free_ char *clean = pvg_utf8_sanitize(m->path.p, n);
		l->path = n < m->path.n ? pvg_asprintf("%s...", clean) : TAKE_PTR(clean);
	}
	if (has_sha(m))
		for (size_t i = 0; i < 8; i++)
			snprintf(l->sha + 2 * i, 3, "%02x", m->sha256[i]);
	l->size = m->size;
	l->after_ns = (int64_t)(m->load_ns - wf->start_ns);
}

void dispatch_window_from_witness(const struct witness_read *wr, struct window_facts *wf)
{
	wf->witness_read = true;
	for (size_t i = 0; i < wr->dir.n; i++) {
		const struct witness_file *f = &wr->files[i];
		if (!f->readable || (f->attr != PVG_WITNESS_LIVE && !f->exited))
			continue;
		const struct pvg_witness_file *file = &f->read->file;
		const struct pvg_witness_header *h = &file->h;
		if (f->exited)
			wf->files_exited++;
		if (h->version < 3 || !(h->flags & PVG_WITNESS_F_MODULES)) {
			wf->files_no_modules++;
			wf->no_modules_version = h->version;
			continue;
		}
		wf->files_modules++;
		pid_t pid = f->exited ? wr->live.gone[f->gone_which].pid : wr->live.t[f->which].pid;
		/* loads after its last write are not in it, unless it answered the request made
		 * after the command ended, or was written at its process's exit; a process gone
		 * before the request answers none, whatever its file says */
		if (f->exited) {
			if (!(h->flags & PVG_WITNESS_F_FINAL) && h->written_ns < wf->end_ns &&
			    !wf->files_exited_not_covering++) {
				wf->exited_not_covering_pid = pid;
				wf->exited_not_covering_ns = h->written_ns;
			}
		} else if (f->fresh == WITNESS_NO_ANSWER && h->written_ns < wf->end_ns) {
			wf->files_not_covering++;
		}
		if (h->flags & PVG_WITNESS_F_MODULE_TABLE_FULL)
			wf->files_table_full++;
		for (size_t k = 0; file->modules && k < file->n_modules; k++) {
			const struct pvg_witness_mod *m = &file->modules[k];
			if (m->load_ns >= wf->start_ns && m->load_ns <= wf->end_ns)
				add_load(wf, pid, f->exited, m);
		}
	}
}

void dispatch_window_from_log(const struct pvg_marker_scan *s, struct window_facts *wf)
{
	wf->log_read = true;
	int64_t lo = (int64_t)wf->start_ns, hi = (int64_t)wf->end_ns;
	for (size_t k = 0; k < s->events_kept; k++) {
		const struct pvg_log_event *e = &s->event[(s->events_first + k) % PVG_MARKER_EVENTS];
		if (!e->has_time) {
			wf->compiles_undated++;
			continue;
		}
		/* the work a line reports ran up to its time t, from t less what it took; t is
		 * one instant of [lo_ns, hi_ns]. In the window for sure: for every such t the
		 * work meets the window; maybe: for some t */
		int64_t took = e->took_s > 0 ? (int64_t)(e->took_s * 1e9) : 0;
		bool possible = e->hi_ns >= lo && e->lo_ns - took <= hi;
		bool sure = e->lo_ns >= lo && e->hi_ns - took <= hi;
		if (!possible)
			continue;
		bool maybe = !sure;
		wf->compiles_total++;
		wf->compiles_maybe += maybe;
		if (wf->n_compiles == WINDOW_KEPT)
			continue;
		if (!wf->compiles)
			wf->compiles = pvg_xcalloc(WINDOW_KEPT, sizeof(*wf->compiles));
		struct window_compile *c = &wf->compiles[wf->n_compiles++];
		c->text = pvg_strdup(e->text);
		c->maybe = maybe;
		c->after_ns = e->lo_ns - lo;
		c->took_s = e->took_s;
	}
}

char *dispatch_window_load_text(const struct window_load *l)
{
	return pvg_asprintf("%s %s sha256:%s %" PRIu64 " bytes, loaded by pid %d%s %.3f s after "
			    "the benchmark started",
			    pvg_witness_origin_name(l->origin), l->path ? l->path : "(memory)",
			    l->sha[0] ? l->sha : "(not hashed)", l->size, (int)l->pid,
			    l->exited ? " (exited before the after-check)" : "",
			    (double)l->after_ns / 1e9);
}

void dispatch_window_evidence(cJSON *ev, const struct window_facts *wf)
{
	cJSON *o = cJSON_AddObjectToObject(ev, "benchmark_window");
	char t[48];
	pvg_format_time((time_t)(wf->start_ns / 1000000000u), (long)(wf->start_ns % 1000000000u),
			t, sizeof(t));
	cJSON_AddStringToObject(o, "start", t);
	pvg_format_time((time_t)(wf->end_ns / 1000000000u), (long)(wf->end_ns % 1000000000u), t,
			sizeof(t));
	cJSON_AddStringToObject(o, "end", t);
	pvg_json_add_bool(o, "allowed", wf->allowed);

	cJSON *mj = cJSON_AddObjectToObject(o, "modules");
	pvg_json_add_bool(mj, "witness_read", wf->witness_read);
	pvg_json_add_bool(mj, "recorded", wf->files_modules > 0 && !wf->files_no_modules);
	pvg_json_add_u64(mj, "files_recording", wf->files_modules);
	pvg_json_add_u64(mj, "files_not_recording", wf->files_no_modules);
	pvg_json_add_u64(mj, "files_not_covering_end", wf->files_not_covering);
	pvg_json_add_u64(mj, "files_table_full", wf->files_table_full);
	pvg_json_add_u64(mj, "files_of_exited", wf->files_exited);
	pvg_json_add_u64(mj, "files_of_exited_not_covering_end", wf->files_exited_not_covering);
	pvg_json_add_u64(mj, "loaded", wf->loads_total);
	cJSON *la = cJSON_AddArrayToObject(mj, "loads");
	for (size_t i = 0; i < wf->n_loads; i++) {
		const struct window_load *l = &wf->loads[i];
		cJSON *x = cJSON_CreateObject();
		pvg_json_add_int(x, "pid", (int)l->pid);
		pvg_json_add_bool(x, "exited", l->exited);
		pvg_json_add_str(x, "origin", pvg_witness_origin_name(l->origin));
		pvg_json_add_str(x, "path", l->path);
		pvg_json_add_str(x, "sha256_prefix", l->sha[0] ? l->sha : NULL);
		pvg_json_add_u64(x, "size", l->size);
		char s[32];
		snprintf(s, sizeof(s), "%.3f", (double)l->after_ns / 1e9);
		cJSON_AddStringToObject(x, "after_start_s", s);
		cJSON_AddItemToArray(la, x);
	}

	cJSON *cj = cJSON_AddObjectToObject(o, "compile_lines");
	pvg_json_add_bool(cj, "log_read", wf->log_read);
	pvg_json_add_u64(cj, "in_window", wf->compiles_total - wf->compiles_maybe);
	pvg_json_add_u64(cj, "maybe_in_window", wf->compiles_maybe);
	pvg_json_add_u64(cj, "undated", wf->compiles_undated);
	cJSON *ca = cJSON_AddArrayToObject(cj, "lines");
	for (size_t i = 0; i < wf->n_compiles; i++) {
		const struct window_compile *c = &wf->compiles[i];
		cJSON *x = cJSON_CreateObject();
		pvg_json_add_str(x, "line", c->text);
		pvg_json_add_bool(x, "maybe", c->maybe);
		char s[32];
		snprintf(s, sizeof(s), "%.3f", (double)c->after_ns / 1e9);
		cJSON_AddStringToObject(x, "after_start_s", s);
		cJSON_AddItemToArray(ca, x);
	}
}
