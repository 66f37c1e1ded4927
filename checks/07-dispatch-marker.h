/* SPDX-License-Identifier: MIT */
/*
 * Gate 7's rules (07-dispatch-marker.c), each on the facts it needs, for the gate's entry and
 * for tests/unit/t-rules-7.c, which builds those facts by hand. The facts are read by
 * dispatch-markers.c and dispatch-witness.c.
 */
#pragma once
#include "dispatch-markers.h"
#include "dispatch-window.h"
#include "dispatch-witness.h"
#include "facts.h"

/* Each rule returns a struct pvg_outcome (facts.h); a rule that sets stop ends its part, with
 * its summary (or none: its problems tell it). */

/* ---- markers: the facts are the config, the log as read, and where else the service's output
 * goes (looked up only when a rule needs it) ---- */
struct markers_facts {
	const struct pvg_config *cfg;
	const struct marker_read *m; /* NULL when the markers are not configured */
	const char *elsewhere;
};

struct pvg_outcome rule_markers_configured(const struct markers_facts *f);
struct pvg_outcome rule_markers_service_found(const struct markers_facts *f);
struct pvg_outcome rule_markers_container_log_found(const struct markers_facts *f);
struct pvg_outcome rule_markers_container_log_owned(const struct markers_facts *f);
struct pvg_outcome rule_markers_log_is_file(const struct markers_facts *f);
struct pvg_outcome rule_markers_log_readable(const struct markers_facts *f);
struct pvg_outcome rule_markers_log_not_empty(const struct markers_facts *f);
struct pvg_outcome rule_markers_kernel_selected(const struct markers_facts *f);
struct pvg_outcome rule_markers_forbid_decided(const struct markers_facts *f);
struct pvg_outcome rule_markers_not_forbidden(const struct markers_facts *f);
struct pvg_outcome rule_markers_facts_live(const struct markers_facts *f);
struct pvg_outcome rule_markers_enough(const struct markers_facts *f);
struct pvg_outcome rule_markers_zone_file(const struct markers_facts *f, enum pvg_status so_far);
/* Does a rule need elsewhere (the log missing or empty, or no live marker at all where
 * markers are too few)? */
bool markers_need_elsewhere(const struct pvg_config *cfg, const struct marker_read *m);

/* ---- the witness: the config and what dispatch-witness.c read, stage by stage ---- */
struct pvg_outcome rule_witness_kernel_named(const struct pvg_config *cfg,
					     const struct changed_sources *srcs);
struct pvg_outcome rule_witness_service(int targets_r, const struct pvg_targets *t);
struct pvg_outcome rule_witness_environment(const struct pvg_config *cfg,
					    const struct witness_env *env);
struct pvg_outcome rule_witness_folder(const struct pvg_config *cfg,
				       const struct witness_read *wr);
struct pvg_outcome rule_witness_request(const struct pvg_config *cfg,
					const struct witness_fresh *fr);
struct pvg_outcome rule_witness_folder_listed(const struct pvg_config *cfg,
					      const struct witness_read *wr);
struct pvg_outcome rule_witness_files(const struct witness_read *wr);
struct pvg_outcome rule_witness_live_file(const struct pvg_config *cfg,
					  const struct witness_tally *ta,
					  enum pvg_status so_far);
struct pvg_outcome rule_witness_recording(const struct witness_tally *ta);
struct pvg_outcome rule_witness_required(const struct pvg_config *cfg,
					 const struct witness_read *wr);
struct pvg_outcome rule_witness_changed_sources(const struct changed_sources *srcs,
						const struct witness_tally *ta,
						const struct witness_code *code);
struct pvg_outcome rule_witness_forbid_provable(const struct pvg_config *cfg,
						const struct witness_tally *ta);
struct pvg_outcome rule_witness_forbidden(const struct pvg_config *cfg,
					  const struct witness_read *wr);

/* ---- exec's after-check: what the live service compiled or loaded while the benchmark ran
 * (dispatch-window.c picked it from the witness's module tables and the log's compile
 * lines) ---- */
struct pvg_outcome rule_window_loads_seen(const struct window_facts *wf);
struct pvg_outcome rule_window_no_loads(const struct window_facts *wf);
struct pvg_outcome rule_window_no_compiles(const struct window_facts *wf);
/* The part's words for the gate's summary (allocated). */
char *window_summary(const struct window_facts *wf);
