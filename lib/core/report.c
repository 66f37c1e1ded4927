/* SPDX-License-Identifier: MIT */
/* The report (SPEC §5): all seven gates in order, 64-bit values as strings, text sanitized. */
#include <sys/utsname.h>

#include "core/run.h"
#include "sys/node.h"
#include "sys/ns.h"

cJSON *pvg_result_json(const struct pvg_result *r)
{
	cJSON *g = cJSON_CreateObject();
	pvg_json_add_int(g, "id", r->id);
	pvg_json_add_str(g, "name", r->name);
	pvg_json_add_str(g, "status", pvg_status_name(r->status));
	pvg_json_add_str(g, "summary", r->summary ? r->summary : "");
	cJSON_AddItemToObject(g, "evidence",
			      r->evidence ? cJSON_Duplicate(r->evidence, true) : cJSON_CreateObject());
	cJSON *probs = cJSON_AddArrayToObject(g, "problems");
	for (size_t i = 0; i < r->n_problems; i++) {
		cJSON *p = cJSON_CreateObject();
		pvg_json_add_str(p, "code", r->problems[i].code);
		pvg_json_add_str(p, "message", r->problems[i].message);
		pvg_json_add_str(p, "hint", r->problems[i].hint);
		cJSON_AddItemToArray(probs, p);
	}
	char ms[32];
	snprintf(ms, sizeof(ms), "%.3f", (double)r->elapsed_ns / 1e6);
	cJSON_AddStringToObject(g, "elapsed_ms", ms);
	if (r->prepared_ns) {
		snprintf(ms, sizeof(ms), "%.3f", (double)r->prepared_ns / 1e6);
		cJSON_AddStringToObject(g, "prepared_ms", ms);
	}
	return g;
}

static cJSON *gates_json(const struct pvg_result *results)
{
	cJSON *gates = cJSON_CreateArray();
	for (int i = 0; i < PVG_N_GATES; i++)
		cJSON_AddItemToArray(gates, pvg_result_json(&results[i]));
	return gates;
}

/* Where provgate ran: "host" (the initial pid namespace) or "container", its namespaces and,
 * inside a container, which one. */
static cJSON *view_json(const char *procfs)
{
	struct pvg_self_view v;
	cJSON *o = cJSON_CreateObject();
	if (pvg_self_view_read(procfs, "/", &v) < 0) {
		cJSON_AddNullToObject(o, "kind");
		return o;
	}
	pvg_json_add_str(o, "kind", v.in_container ? "container" : "host");
	cJSON *ns = cJSON_AddObjectToObject(o, "namespaces");
	pvg_json_add_u64(ns, "pid", v.ns.pid);
	pvg_json_add_u64(ns, "mnt", v.ns.mnt);
	pvg_json_add_u64(ns, "net", v.ns.net);
	if (v.have_container) {
		cJSON *c = cJSON_AddObjectToObject(o, "container");
		pvg_json_add_str(c, "engine", v.container.engine);
		pvg_json_add_str(c, "id", v.container.id[0] ? v.container.id : NULL);
		pvg_json_add_str(c, "from", v.how);
	} else {
		cJSON_AddNullToObject(o, "container");
	}
	return o;
}

cJSON *pvg_report_build(const struct pvg_run *run)
{
	cJSON *rep = cJSON_CreateObject();
	cJSON_AddStringToObject(rep, "schema", "provgate.report/1");
	cJSON *tool = cJSON_AddObjectToObject(rep, "tool");
	cJSON_AddStringToObject(tool, "name", "provgate");
	cJSON_AddStringToObject(tool, "version", pvg_version());
	pvg_json_add_str(rep, "name", run->cfg->name);
	cJSON_AddStringToObject(rep, "phase", pvg_phase_name(run->phase));
	char ts[40];
	pvg_format_time(run->ctx.started_at, -1, ts, sizeof(ts));
	cJSON_AddStringToObject(rep, "started_at", ts);

	cJSON *host = cJSON_AddObjectToObject(rep, "host");
	struct utsname u;
	if (uname(&u) == 0) {
		pvg_json_add_str(host, "hostname", u.nodename);
		pvg_json_add_str(host, "kernel", u.release);
		pvg_json_add_str(host, "machine", u.machine);
	} else {
		cJSON_AddNullToObject(host, "hostname");
		cJSON_AddNullToObject(host, "kernel");
	}
	/* which node of a job this report speaks for (provgate merge matches it with the job's
	 * node list) */
	struct pvg_node node;
	if (pvg_node_get(&node, NULL, 0) == 0) {
		pvg_json_add_str(host, "node", node.node);
		pvg_json_add_str(host, "node_from", node.node_from);
	} else {
		cJSON_AddNullToObject(host, "node");
		pvg_json_add_str(host, "node_from", "SLURMD_NODENAME (not a usable node name)");
	}
	pvg_json_add_str(host, "slurm_job_id", node.job[0] ? node.job : NULL);

	cJSON_AddItemToObject(rep, "view", view_json("/proc")); /* provgate itself: the real /proc */

	cJSON *config = cJSON_AddObjectToObject(rep, "config");
	pvg_json_add_str(config, "path", run->cfg->path);
	pvg_json_add_str(config, "sha256", run->cfg->sha256[0] ? run->cfg->sha256 : NULL);

	cJSON *sel = cJSON_AddArrayToObject(rep, "selected_gates");
	for (int i = 1; i <= PVG_N_GATES; i++)
		if (run->selected & PVG_GATE_BIT(i))
			cJSON_AddItemToArray(sel, cJSON_CreateNumber(i));
	pvg_json_add_bool(rep, "keep_going", run->keep_going);
	pvg_json_add_bool(rep, "certified", pvg_run_certified(run));
	/* the chain alone: exec's report says the provenance held even when the benchmark
	 * failed, so that "certified" can never stand for a run that failed or never started */
	pvg_json_add_bool(rep, "provenance_certified", pvg_run_provenance_certified(run));
	cJSON_AddItemToObject(rep, "gates", gates_json(run->results));
	cJSON_AddItemToObject(rep, "chain", cJSON_Duplicate(run->ctx.chain, true));
	if (run->environment)
		cJSON_AddItemToObject(rep, "environment", cJSON_Duplicate(run->environment, true));
	else
		cJSON_AddNullToObject(rep, "environment");
	if (run->after) {
		cJSON *after = cJSON_AddObjectToObject(rep, "after");
		cJSON *asel = cJSON_AddArrayToObject(after, "selected_gates");
		for (int i = 1; i <= PVG_N_GATES; i++)
			if (run->after_selected & PVG_GATE_BIT(i))
				cJSON_AddItemToArray(asel, cJSON_CreateNumber(i));
		cJSON_AddItemToObject(after, "gates", gates_json(run->after));
	}
	if (run->exec_info)
		cJSON_AddItemToObject(rep, "exec", cJSON_Duplicate(run->exec_info, true));
	return rep;
}

char *pvg_run_report_json(const struct pvg_run *run)
{
	_cleanup_json_ cJSON *report = pvg_report_build(run);
	return cJSON_Print(report);
}
