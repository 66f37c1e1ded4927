/* SPDX-License-Identifier: MIT */
/*
 * provgate maps PID|PATTERN: the files a process maps, and which of them are stale: deleted
 * (replaced after loading), replaced (the path names another inode now), overwritten after the
 * process started (same inode, later ctime), or duplicated (one file name from two paths).
 */
#include <getopt.h>
#include <sys/sysmacros.h>

#include "cli.h"
#include "sys/maps.h"
#include "sys/procs.h"

static const char *file_state(const struct pvg_mapped_file *f)
{
	if (f->deleted)
		return "deleted";
	if (f->replaced)
		return "replaced";
	if (f->overwritten)
		return "overwritten";
	if (f->ctime_close)
		return "ambiguous";
	if (f->duplicate)
		return "duplicate";
	return "ok";
}

static bool is_stale(const struct pvg_mapped_file *f)
{
	return strcmp(file_state(f), "ok") != 0;
}

/* One process: 0 clean, 1 something stale, -errno unreadable. */
static int show_process(const struct pvg_proc *p, long tick_ns, bool json, bool all,
			cJSON *out, const struct cli_style *st)
{
	struct pvg_maps maps = { 0 };
	struct pvg_mapped_files files;
	char started[48];
	pvg_proc_format_start(p, started, sizeof(started));
	int r = pvg_maps_read(pvg_procfs_root(), p->pid, &maps);
	if (r == 0 && maps.n == 0)
		r = -ESRCH;
	/* the name and command line are the process's own words: never raw to a terminal */
	const char *who = p->cmdline && p->cmdline[0] ? p->cmdline : p->comm;
	_cleanup_free_ char *comm = pvg_escape_term(p->comm, strlen(p->comm)),
			    *shown_who = pvg_escape_term(who, strlen(who));
	cJSON *pj = NULL;
	if (json) {
		pj = cJSON_CreateObject();
		cJSON_AddNumberToObject(pj, "pid", p->pid);
		cJSON_AddNumberToObject(pj, "ppid", p->ppid);
		pvg_json_add_str(pj, "comm", p->comm);
		pvg_json_add_str(pj, "cmdline", p->cmdline);
		pvg_json_add_str(pj, "start_time", started);
		cJSON_AddItemToArray(out, pj);
	}
	if (r < 0) {
		const char *why = r == -ESRCH ? "exited while being read" : strerror(-r);
		if (json)
			pvg_json_add_str(pj, "error", why);
		else
			printf("%spid %d%s %s: %s\n", st->bold, (int)p->pid, st->reset, comm, why);
		return r;
	}
	pvg_mapped_files_build(pvg_procfs_root(), p->pid, &maps, &p->start, tick_ns, &files);
	size_t stale = 0;
	for (size_t i = 0; i < files.n; i++)
		stale += is_stale(&files.f[i]);
	if (!json)
		printf("%spid %d%s %s (ppid %d, started %s): %zu files mapped, %zu stale\n", st->bold,
		       (int)p->pid, st->reset, shown_who, (int)p->ppid, started,
		       files.n, stale);
	cJSON *fa = json ? cJSON_AddArrayToObject(pj, "files") : NULL;
	for (size_t i = 0; i < files.n; i++) {
		const struct pvg_mapped_file *f = &files.f[i];
		const char *state = file_state(f);
		if (json) {
			cJSON *o = cJSON_CreateObject();
			char dev[32];
			snprintf(dev, sizeof(dev), "%x:%x", f->dev_major, f->dev_minor);
			pvg_json_add_str(o, "path", f->path);
			pvg_json_add_str(o, "state", state);
			pvg_json_add_bool(o, "deleted", f->deleted);
			pvg_json_add_bool(o, "replaced", f->replaced);
			pvg_json_add_bool(o, "overwritten_after_start", f->overwritten);
			pvg_json_add_bool(o, "duplicate", f->duplicate);
			pvg_json_add_str(o, "dev", dev);
			pvg_json_add_u64(o, "inode", f->inode);
			if (!f->stat_err) {
				pvg_json_add_u64(o, "path_inode", f->now_ino);
				char ct[48];
				pvg_format_time(f->now_ctime.tv_sec, f->now_ctime.tv_nsec, ct, sizeof(ct));
				pvg_json_add_str(o, "path_ctime", ct);
			}
			pvg_json_add_int(o, "mappings", (int)f->n_mappings);
			cJSON_AddItemToArray(fa, o);
			continue;
		}
		if (!all && !is_stale(f))
			continue;
		_cleanup_free_ char *shown = pvg_escape_term(f->path, strlen(f->path));
		printf("  %s%-11s%s %s", is_stale(f) ? st->fail : st->dim, state, st->reset, shown);
		if (f->replaced && !f->stat_err)
			printf("  (maps inode %" PRIu64 ", path is inode %" PRIu64 " now)", f->inode,
			       f->now_ino);
		else if (f->replaced)
			printf("  (path: %s)", strerror(-f->stat_err));
		else if (f->overwritten || f->ctime_close) {
			char ct[48];
			pvg_format_time(f->now_ctime.tv_sec, f->now_ctime.tv_nsec, ct, sizeof(ct));
			printf("  (changed %s)", ct);
		}
		printf("\n");
	}
	if (json)
		pvg_json_add_int(pj, "stale", (int)stale);
	pvg_mapped_files_clear(&files);
	pvg_maps_clear(&maps);
	return stale ? 1 : 0;
}

static void maps_usage(FILE *f)
{
	fprintf(f, "Usage: provgate maps [--json] [--all] PID|PATTERN\n"
		   "Lists the files a process maps and marks those that are deleted, replaced (the\n"
		   "path names another inode now), overwritten after the process started, or\n"
		   "duplicated (the same file name mapped from two paths). PATTERN is matched like\n"
		   "service.match (command line and 15-byte name). --all lists healthy files too.\n"
		   "Exit: 0 nothing stale, 1 something stale or no such process, 2 usage.\n");
}

static int maps_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "all", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool json = false, all = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "jah", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'a': all = true; break;
		case 'h': maps_usage(stdout); return EXIT_OK;
		default: maps_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		maps_usage(stderr);
		return EXIT_USAGE;
	}
	const char *what = argv[optind];
	struct pvg_config *cfg = pvg_config_new();
	char *end;
	long pid = strtol(what, &end, 10);
	bool by_pid = *what && !*end && pid > 0;
	if (by_pid) {
		cfg->service.pid = pid;
	} else {
		cfg->service.match.v = pvg_xcalloc(1, sizeof(char *));
		cfg->service.match.v[0] = pvg_strdup(what);
		cfg->service.match.n = 1;
	}
	struct pvg_targets *t = NULL;
	int r = pvg_targets_scan(&cfg->service, &t);
	pvg_config_free(cfg);
	if (r < 0) {
		fprintf(stderr, "provgate maps: cannot list processes: %s\n", strerror(-r));
		return EXIT_INTERNAL;
	}
	if (t->err) {
		/* the selection speaks of config keys; maps has none */
		if (by_pid && t->err == -ESRCH)
			fprintf(stderr, "provgate maps: no process %ld\n", pid);
		else if (by_pid) {
			fprintf(stderr, "provgate maps: process %ld: ", pid);
			pvg_fputs_term(t->msg.text, stderr);
			fputc('\n', stderr);
		}
		else
			fprintf(stderr, "provgate maps: no process matches \"%s\"\n", what);
		pvg_targets_free(t);
		return EXIT_NOT_CERTIFIED;
	}
	struct cli_style st;
	cli_style_init(&st, stdout, json);
	_cleanup_json_ cJSON *out = json ? cJSON_CreateArray() : NULL;
	int rc = EXIT_OK;
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!p->matched)
			continue;
		if (show_process(p, t->tick_ns, json, all, out, &st) != 0)
			rc = EXIT_NOT_CERTIFIED;
	}
	pvg_targets_free(t);
	if (json) {
		_cleanup_free_ char *text = cJSON_Print(out);
		printf("%s\n", text);
	}
	return rc;
}

const struct cli_verb verb_maps = {
	.name = "maps",
	.main = maps_main,
	.synopsis = "maps [--json] [--all] PID|PATTERN",
	.help = "",
};
