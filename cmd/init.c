/* SPDX-License-Identifier: MIT */
/*
 * provgate init [DIR]: a starting provgate.json from what is there (lib/core/discover.c
 * finds it; this file renders it as a config). What it guessed and what is left to fill in
 * is printed and written as comments; the file is loaded back before init says it is done.
 */
#include <getopt.h>
#include <limits.h>
#include <sys/stat.h>

#include "cli.h"
#include "core/discover.h"
#include "util/own-files.h"

/* ---- writing ------------------------------------------------------------------------------ */

static char *path_value(const struct pvg_discovery *g, const char *path)
{
	return pvg_strdup(pvg_discovery_rel(g, path));
}

static void add_str(cJSON *o, const char *k, char *v) /* takes v */
{
	if (v)
		cJSON_AddItemToObject(o, k, pvg_json_string(v));
	free(v);
}

static cJSON *strv_json(const struct pvg_strv *v)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < v->n; i++)
		cJSON_AddItemToArray(a, pvg_json_string(v->v[i]));
	return a;
}

static char *render(const struct pvg_discovery *g, const char *schema)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddItemToObject(root, "$schema", pvg_json_string(schema));
	cJSON_AddItemToObject(root, "name", pvg_json_string(pvg_basename(g->workdir ? g->workdir : g->dir)));
	if (g->arch)
		cJSON_AddItemToObject(root, "arch", pvg_json_string(g->arch));
	/* several extensions placed: the artifacts form, the first artifact first */
	size_t n_placed = 0;
	for (size_t i = 0; i < g->n_more; i++)
		n_placed += g->more[i].installed != NULL;
	bool listed = g->artifact && g->installed && n_placed > 0;
	if (g->build_log || g->artifact) {
		cJSON *b = cJSON_AddObjectToObject(root, "build");
		add_str(b, "log", g->build_log ? path_value(g, g->build_log) : NULL);
		if (!listed)
			add_str(b, "artifact", g->artifact ? path_value(g, g->artifact) : NULL);
	}
	if (listed) {
		cJSON *arts = cJSON_AddArrayToObject(root, "artifacts");
		char name[128];
		pvg_artifact_default_name(g->artifact, name, sizeof(name));
		cJSON *a = cJSON_CreateObject();
		cJSON_AddItemToObject(a, "name", pvg_json_string(name));
		add_str(a, "build", path_value(g, g->artifact));
		if (g->python_module)
			cJSON_AddItemToObject(a, "python_module", pvg_json_string(g->python_module));
		else
			add_str(a, "install", path_value(g, g->installed));
		cJSON_AddItemToArray(arts, a);
		for (size_t i = 0; i < g->n_more; i++) {
			const struct pvg_discovered_artifact *m = &g->more[i];
			if (!m->installed)
				continue;
			a = cJSON_CreateObject();
			cJSON_AddItemToObject(a, "name", pvg_json_string(m->name));
			add_str(a, "build", path_value(g, m->build));
			if (m->python_module)
				cJSON_AddItemToObject(a, "python_module", pvg_json_string(m->python_module));
			else
				add_str(a, "install", path_value(g, m->installed));
			cJSON_AddItemToArray(arts, a);
		}
	}
	if (g->workdir) {
		cJSON *s = cJSON_AddObjectToObject(root, "source");
		add_str(s, "repo", strcmp(g->workdir, g->dir) ? path_value(g, g->workdir) : pvg_strdup("."));
		add_str(s, "baseline", g->baseline ? pvg_strdup(g->baseline) : NULL);
		if (g->compiled.n)
			cJSON_AddItemToObject(s, "compiled", strv_json(&g->compiled));
		if (g->map_from) {
			cJSON *m = cJSON_AddArrayToObject(s, "install_map");
			cJSON *e = cJSON_CreateObject();
			cJSON_AddItemToObject(e, "from", pvg_json_string(g->map_from));
			add_str(e, "to", pvg_strdup(pvg_discovery_rel(g, g->map_to)));
			cJSON_AddItemToArray(m, e);
		}
		cJSON_AddItemToObject(s, "ignore", strv_json(&g->ignore));
	}
	if (g->installed && listed) {
		if (g->python_module) {
			cJSON *i = cJSON_AddObjectToObject(root, "install");
			add_str(i, "python", path_value(g, g->python));
		}
	} else if (g->installed) {
		cJSON *i = cJSON_AddObjectToObject(root, "install");
		if (g->python_module) {
			cJSON_AddItemToObject(i, "python_module", pvg_json_string(g->python_module));
			add_str(i, "python", path_value(g, g->python));
		} else {
			add_str(i, "artifact", path_value(g, g->installed));
		}
	}
	if (g->match) {
		cJSON *s = cJSON_AddObjectToObject(root, "service");
		cJSON *m = cJSON_AddArrayToObject(s, "match");
		cJSON_AddItemToArray(m, pvg_json_string(g->match));
		if (g->port)
			cJSON_AddNumberToObject(s, "port", g->port);
		cJSON_AddItemToObject(s, "family", strv_json(&g->family));
	}
	if (g->service_log) {
		cJSON *m = cJSON_AddObjectToObject(root, "markers");
		add_str(m, "log", strcmp(g->service_log, PVG_LOG_CONTAINER) == 0
					  ? pvg_strdup(PVG_LOG_CONTAINER)
					  : path_value(g, g->service_log));
		if (g->prefix)
			cJSON_AddItemToObject(m, "prefix", pvg_json_string(g->prefix));
	}
	/* the change's device sources and their kernels: gate 7's default requirement, spelled
	 * out so that it can be narrowed or a source exempted with its reason */
	cJSON *srcs = NULL;
	for (size_t i = 0; i < g->n_sources; i++) {
		const struct pvg_discovered_source *ds = &g->sources[i];
		if (!ds->kernels.n)
			continue;
		if (!srcs)
			srcs = cJSON_AddObjectToObject(cJSON_AddObjectToObject(root, "witness"),
						       "changed_sources");
		cJSON *e = cJSON_CreateObject();
		cJSON_AddItemToObject(e, "kernels", strv_json(&ds->kernels));
		cJSON_AddItemToObject(srcs, ds->path, e);
	}
	/* gate 7's compile-cache rule: the changed Python files a graph may have traced */
	if (g->compile_traced.n)
		cJSON_AddItemToObject(cJSON_AddObjectToObject(root, "compile_cache"), "traced",
				      strv_json(&g->compile_traced));
	_cleanup_free_ char *body = cJSON_Print(root);
	cJSON_Delete(root);
	/* the guesses and the gaps as comments at the top: provgate allows // comments. They
	 * quote process names, command lines and paths, which the service's user chose: escaped,
	 * so that no newline or comment end lets that text reach the parser. */
	char *text = pvg_strdup("// Written by provgate init: check what it guessed.\n");
	for (size_t i = 0; i < g->notes.n; i++) {
		_cleanup_free_ char *c = pvg_escape_comment(g->notes.v[i], strlen(g->notes.v[i]));
		char *t = pvg_asprintf("%s// guessed: %s\n", text, c);
		free(text);
		text = t;
	}
	for (size_t i = 0; i < g->todo.n; i++) {
		_cleanup_free_ char *c = pvg_escape_comment(g->todo.v[i], strlen(g->todo.v[i]));
		char *t = pvg_asprintf("%s// TODO: %s\n", text, c);
		free(text);
		text = t;
	}
	char *t = pvg_asprintf("%s%s\n", text, body);
	free(text);
	return t;
}

static const char *schema_path(void)
{
	/* where meson installs it (in a bundle: the bundle's); an editor only needs a name to
	 * find it by */
	return pvg_own_data_file("config.schema.json");
}

static int init_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool force = false;
	const char *output = NULL;
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, "fo:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
			printf("Usage: provgate %s\n\n%s\n", verb_init.synopsis, verb_init.help);
			printf("  -f, --force           overwrite an existing config\n"
			       "  -o, --output FILE     write FILE (default DIR/provgate.json; - for "
			       "stdout)\n");
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "provgate init: one folder at most\n");
		return EXIT_USAGE;
	}
	const char *arg = optind < argc ? argv[optind] : ".";
	_cleanup_free_ char *dir = realpath(arg, NULL);
	struct stat st;
	if (!dir || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "provgate init: %s: not a folder\n", arg);
		return EXIT_USAGE;
	}
	_cleanup_free_ char *out = output ? pvg_strdup(output) : pvg_path_join(dir, "provgate.json");
	if (strcmp(out, "-") != 0 && !force && lstat(out, &st) == 0) {
		/* a usage matter, not a verdict: exit 1 means "not certified" */
		fprintf(stderr, "provgate init: %s exists; not overwriting it: use -o FILE to write "
				"another, or --force to replace it\n", out);
		return EXIT_USAGE;
	}
	if (strcmp(out, "-") != 0) {
		/* relative paths in the config are relative to its own folder */
		_cleanup_free_ char *abs = pvg_path_absolute(out);
		*strrchr(abs, '/') = '\0';
		char real[PATH_MAX];
		if (realpath(abs[0] ? abs : "/", real) && strcmp(real, dir) != 0) {
			free(dir);
			dir = pvg_strdup(real);
		}
	}
	struct pvg_discovery g;
	pvg_discover(dir, NULL, &g);

	_cleanup_free_ char *text = render(&g, schema_path());
	/* what init writes must load: never hand over a config that fails at once */
	struct pvg_config *cfg = pvg_config_new();
	cfg->dir = pvg_strdup(g.dir);
	struct pvg_error err = { { 0 } };
	int r = pvg_config_parse(cfg, text, strlen(text), out, &err);
	pvg_config_free(cfg);
	if (r < 0) {
		_cleanup_free_ char *why = pvg_escape_term(err.message, strlen(err.message));
		fprintf(stderr, "provgate init: internal error: the config it made does not load: %s\n",
			why);
		pvg_discovery_clear(&g);
		return EXIT_INTERNAL;
	}
	r = cli_write_file(out, text);
	if (r < 0) {
		fprintf(stderr, "provgate init: cannot write %s: %s\n", out, strerror(-r));
		pvg_discovery_clear(&g);
		return EXIT_USAGE;
	}
	FILE *f = strcmp(out, "-") == 0 ? stderr : stdout;
	if (strcmp(out, "-") != 0)
		fprintf(f, "wrote %s\n", out);
	for (size_t i = 0; i < g.notes.n; i++) {
		fputs("  guessed: ", f);
		pvg_fputs_term(g.notes.v[i], f);
		fputc('\n', f);
	}
	for (size_t i = 0; i < g.todo.n; i++) {
		fputs("  to fill in: ", f);
		pvg_fputs_term(g.todo.v[i], f);
		fputc('\n', f);
	}
	if (!g.todo.n)
		fprintf(f, "nothing left to fill in; markers.require and markers.facts say what the "
			   "benchmark claims (see provgate.json(5)); then: provgate certify\n");
	pvg_discovery_clear(&g);
	return EXIT_OK;
}

const struct cli_verb verb_init = {
	.name = "init",
	.main = init_main,
	.synopsis = "init [DIR] [--force] [--output FILE]",
	.help = "Writes a starting provgate.json for DIR (default .) from what it finds: the git\n"
		"checkout and its baseline, the newest build log and the artifact it links, the\n"
		"architecture of its code objects (the one this node's GPUs run, when the KFD\n"
		"topology or NVML names them), a running service that maps it (command line,\n"
		"port, log, the installed copy), the venv's Python module, the install_map. Prints\n"
		"what it guessed and what is left to fill in; never overwrites without --force.\n",
};
