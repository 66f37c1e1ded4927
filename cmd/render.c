/* SPDX-License-Identifier: MIT */
/* Rendering a run: the verdict as text, and the one JUnit writer. */
#include "cli.h"

void cli_style_init(struct cli_style *st, FILE *f, bool force_off)
{
	const char *nc = getenv("NO_COLOR");
	bool on = !force_off && isatty(fileno(f)) && !(nc && nc[0]);
	const char *term = getenv("TERM");
	if (term && strcmp(term, "dumb") == 0)
		on = false;
	st->pass = on ? "\033[32m" : "";
	st->fail = on ? "\033[31m" : "";
	st->warn = on ? "\033[33m" : "";
	st->dim = on ? "\033[2m" : "";
	st->bold = on ? "\033[1m" : "";
	st->reset = on ? "\033[0m" : "";
}

static const char *status_colour(const struct cli_style *st, enum pvg_status s)
{
	switch (s) {
	case PVG_PASS:
		return st->pass;
	case PVG_FAIL:
		return st->fail;
	case PVG_UNVERIFIABLE:
		return st->warn;
	default:
		return st->dim;
	}
}

void cli_print_gates(FILE *f, const struct pvg_result *results, pvg_gate_mask only,
		     int verbosity, const struct cli_style *st)
{
	for (int i = 0; i < PVG_N_GATES; i++) {
		const struct pvg_result *r = &results[i];
		if (only && !(only & PVG_GATE_BIT(r->id)))
			continue;
		char label[16];
		snprintf(label, sizeof(label), "%s", pvg_status_name(r->status));
		for (char *p = label; *p; p++)
			*p = (char)(*p - 32 * (*p >= 'a' && *p <= 'z'));
		fprintf(f, "  %d %-16s %s%-12s%s ", r->id, r->name, status_colour(st, r->status),
			label, st->reset);
		pvg_fputs_term(r->summary, f);
		fputc('\n', f);
		for (size_t k = 0; k < r->n_problems; k++) {
			const struct pvg_problem *p = &r->problems[k];
			/* the summary is usually the first problem's message: said once */
			if (k == 0 && r->summary && p->message && strcmp(r->summary, p->message) == 0) {
				fprintf(f, "      %s%s%s\n", st->bold, p->code, st->reset);
			} else {
				fprintf(f, "      %s%s%s: ", st->bold, p->code, st->reset);
				pvg_fputs_term(p->message, f);
				fputc('\n', f);
			}
			/* problems in a row with the same hint (one per process, say) share one */
			const struct pvg_problem *next = k + 1 < r->n_problems ? p + 1 : NULL;
			if (p->hint && !(next && next->hint && strcmp(next->hint, p->hint) == 0)) {
				fprintf(f, "      %shint:%s ", st->dim, st->reset);
				pvg_fputs_term(p->hint, f);
				fputc('\n', f);
			}
		}
		if (verbosity > 0 && r->evidence && r->evidence->child) {
			/* indented for a reader at a terminal, one line for grep and logs; cJSON
			 * escapes C0 controls only: the rest of the rule still applies */
			if (!isatty(fileno(f))) {
				_cleanup_free_ char *ev = cJSON_PrintUnformatted(r->evidence);
				fprintf(f, "      %sevidence:%s ", st->dim, st->reset);
				pvg_fputs_term(ev, f);
				fputc('\n', f);
				continue;
			}
			_cleanup_free_ char *ev = cJSON_Print(r->evidence);
			fprintf(f, "      %sevidence:%s", st->dim, st->reset);
			/* newlines and tabs here are cJSON's layout (it escapes those in strings) */
			for (char *line = ev, *nl; line; line = nl ? nl + 1 : NULL) {
				nl = strchr(line, '\n');
				if (nl)
					*nl = '\0';
				fputs("\n      ", f);
				for (char *t; (t = strchr(line, '\t')); line = t + 1) {
					*t = '\0';
					pvg_fputs_term(line, f);
					fputs("  ", f);
				}
				pvg_fputs_term(line, f);
			}
			fputc('\n', f);
		}
	}
}

static const struct pvg_result *first_not_passed(const struct pvg_result *results,
						 pvg_gate_mask selected)
{
	for (int i = 0; i < PVG_N_GATES; i++)
		if ((selected & PVG_GATE_BIT(i + 1)) && results[i].status != PVG_PASS)
			return &results[i];
	return NULL;
}

void cli_print_header(FILE *f, const struct pvg_run *run, const struct cli_style *st)
{
	fprintf(f, "%sprovgate %s%s", st->bold, pvg_version(), st->reset);
	if (run->cfg->name) {
		fputs(" · ", f);
		pvg_fputs_term(run->cfg->name, f);
	}
	fprintf(f, " · phase %s", pvg_phase_name(run->phase));
	if (run->cfg->path) {
		fputs(" · ", f);
		pvg_fputs_term(run->cfg->path, f);
	}
	fputc('\n', f);
	/* said once, before the gates: a provgate that cannot read the service's side */
	const char *limited = pvg_json_get_str(
		cJSON_GetObjectItemCaseSensitive(run->environment, "reader"), "limited");
	if (limited) {
		fprintf(f, "%snot root:%s ", st->warn, st->reset);
		pvg_fputs_term(limited, f);
		fputc('\n', f);
	}
}

void cli_print_run(FILE *f, const struct pvg_run *run, bool certify, int verbosity,
		   const struct cli_style *st)
{
	if (verbosity >= 0) {
		cli_print_header(f, run, st);
		cli_print_gates(f, run->results, 0, verbosity, st);
		if (run->after) {
			fprintf(f, "%safter the command:%s\n", st->bold, st->reset);
			cli_print_gates(f, run->after, run->after_selected, verbosity, st);
		}
	}
	cli_print_verdict(f, run, certify, st);
}

void cli_print_verdict(FILE *f, const struct pvg_run *run, bool certify,
		       const struct cli_style *st)
{
	const struct pvg_result *bad = first_not_passed(run->results, run->selected);
	if (!bad && run->after)
		bad = first_not_passed(run->after, run->after_selected);
	int n_sel = 0, n_bad = 0;
	for (int i = 0; i < PVG_N_GATES; i++)
		if (run->selected & PVG_GATE_BIT(i + 1)) {
			n_sel++;
			n_bad += run->results[i].status != PVG_PASS;
		}
	if (certify) {
		char held[64] = "";
		if (run->after) {
			/* "gates 3, 4, 5, 7": the re-checked ones, as the table marks them */
			size_t used = (size_t)snprintf(held, sizeof(held), ", and gates");
			const char *sep = " ";
			for (int i = 1; i <= PVG_N_GATES && used < sizeof(held); i++)
				if (run->after_selected & PVG_GATE_BIT(i)) {
					used += (size_t)snprintf(held + used, sizeof(held) - used, "%s%d",
								 sep, i);
					sep = ", ";
				}
		}
		/* exec: the command's fate is part of the verdict; a benchmark that failed or
		 * never started is no certified run, however well the chain held */
		enum pvg_benchmark b = pvg_run_benchmark(run);
		const char *fate = pvg_run_benchmark_text(run);
		if (pvg_run_certified(run))
			fprintf(f, "%sCERTIFIED%s: all seven gates passed%s%s%s%s%s\n", st->pass,
				st->reset, held, run->after ? " still hold after the command" : "",
				fate ? "; the benchmark succeeded (" : "", fate ? fate : "",
				fate ? ")" : "");
		else if (pvg_run_provenance_certified(run))
			fprintf(f, "%sPROVENANCE CERTIFIED, but the benchmark %s%s: %s (all seven "
				   "gates passed%s%s); not a certified run\n",
				st->warn, b == PVG_BENCHMARK_NOT_STARTED ? "did not run" : "failed",
				st->reset, fate ? fate : "?", held,
				run->after ? " still hold after it" : "");
		else
			fprintf(f,
				"%sNOT CERTIFIED%s: gate %d %s: %s%s%s%s\n", st->fail, st->reset,
				bad ? bad->id : 0, bad ? bad->name : "?",
				bad ? pvg_status_name(bad->status) : "?",
				run->after && bad && bad >= run->after && bad < run->after + PVG_N_GATES
					? " after the command"
					: "",
				fate ? b == PVG_BENCHMARK_NOT_RUN ? "; " : "; the benchmark: " : "",
				fate ? fate : "");
	} else if (!bad) {
		fprintf(f, "%sPASSED%s: %d of %d selected gates passed (phase %s)%s\n", st->pass,
			st->reset, n_sel, n_sel, pvg_phase_name(run->phase),
			pvg_run_certified(run) ? "; certified" : "; not a certification");
	} else {
		fprintf(f, "%sFAILED%s: %d of %d selected gates did not pass; first: gate %d %s: %s\n",
			st->fail, st->reset, n_bad, n_sel, bad->id, bad->name,
			pvg_status_name(bad->status));
	}
}

void cli_xml_escape(FILE *f, const char *s)
{
	pvg_fputs_xml(s, f);
}

/* ---- the one JUnit writer (run, certify, exec, compare, merge) ---- */

void cli_junit_begin(FILE *f, const char *name, const char *suite, int tests, int failures,
		     int skipped)
{
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"", f);
	cli_xml_escape(f, name);
	fprintf(f, "\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n", tests, failures, skipped);
	fputs("  <testsuite name=\"", f);
	cli_xml_escape(f, suite);
	fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\">\n", tests,
		failures, skipped);
}

void cli_junit_case(FILE *f, const char *classname, const char *name, double seconds)
{
	fputs("    <testcase classname=\"", f);
	cli_xml_escape(f, classname);
	fputs("\" name=\"", f);
	cli_xml_escape(f, name);
	if (seconds >= 0)
		fprintf(f, "\" time=\"%.3f", seconds);
	fputs("\">\n", f);
}

void cli_junit_failure(FILE *f, const char *type, const char *message)
{
	fputs("      <failure type=\"", f);
	cli_xml_escape(f, type);
	fputs("\" message=\"", f);
	cli_xml_escape(f, message);
	fputs("\">", f);
}

void cli_junit_line(FILE *f, const char *code, const char *message, const char *hint)
{
	cli_xml_escape(f, code);
	fputs(": ", f);
	cli_xml_escape(f, message);
	if (hint) {
		fputs("\nhint: ", f);
		cli_xml_escape(f, hint);
	}
	fputc('\n', f);
}

void cli_junit_failure_end(FILE *f)
{
	fputs("</failure>\n", f);
}

void cli_junit_case_end(FILE *f)
{
	fputs("    </testcase>\n", f);
}

char *cli_junit_end(FILE *f, char **buf)
{
	fputs("  </testsuite>\n</testsuites>\n", f);
	fclose(f);
	return *buf;
}

static void junit_cases(FILE *f, const struct pvg_result *results, const char *suffix)
{
	for (int i = 0; i < PVG_N_GATES; i++) {
		const struct pvg_result *r = &results[i];
		_cleanup_free_ char *name = pvg_asprintf("%d %s%s", r->id, r->name, suffix);
		cli_junit_case(f, "provgate", name, (double)r->elapsed_ns / 1e9);
		if (r->status == PVG_FAIL || r->status == PVG_UNVERIFIABLE) {
			cli_junit_failure(f, pvg_status_name(r->status), r->summary);
			for (size_t k = 0; k < r->n_problems; k++)
				cli_junit_line(f, r->problems[k].code, r->problems[k].message,
					       r->problems[k].hint);
			cli_junit_failure_end(f);
		} else if (r->status == PVG_BLOCKED || r->status == PVG_SKIPPED) {
			fprintf(f, "      <skipped message=\"%s: ", pvg_status_name(r->status));
			cli_xml_escape(f, r->summary);
			fputs("\"/>\n", f);
		} else {
			fputs("      <system-out>", f);
			cli_xml_escape(f, r->summary);
			fputs("</system-out>\n", f);
		}
		cli_junit_case_end(f);
	}
}

static void junit_counts(const struct pvg_result *results, int *fail, int *skip)
{
	for (int i = 0; i < PVG_N_GATES; i++) {
		*fail += results[i].status == PVG_FAIL || results[i].status == PVG_UNVERIFIABLE;
		*skip += results[i].status == PVG_BLOCKED || results[i].status == PVG_SKIPPED;
	}
}

char *cli_junit(const struct pvg_run *run)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	if (!f)
		return pvg_strdup("");
	int fail = 0, skip = 0, tests = PVG_N_GATES;
	junit_counts(run->results, &fail, &skip);
	if (run->after) {
		junit_counts(run->after, &fail, &skip);
		tests += PVG_N_GATES;
	}
	_cleanup_free_ char *suite = pvg_asprintf("provgate %s", run->cfg->name ? run->cfg->name
										 : "run");
	cli_junit_begin(f, "provgate", suite, tests, fail, skip);
	junit_cases(f, run->results, "");
	if (run->after)
		junit_cases(f, run->after, " (after command)");
	return cli_junit_end(f, &buf);
}
