/* SPDX-License-Identifier: MIT */
/*
 * The cluster decision (provgate merge): reads the per-node reports that
 * `srun --ntasks-per-node=1 provgate certify --out DIR/{node}.json` wrote and refuses unless
 * every expected node is there exactly once, every report is certified, every node runs the
 * same installed bytes from the same build (artifact digest, source commit) under the same
 * config, and the reports were made within max_skew seconds of each other. cmd/merge.c
 * parses the flags and renders the result.
 */
#include <dirent.h>
#include <fcntl.h>

#include "core/cluster.h"
#include "core/report-read.h"
#include "util/hash.h"

#define MAX_REPORT_BYTES (64u << 20) /* a report with 1 GiB of evidence is not a report */
#define MAX_FAILED_LISTED 4 /* failed gates named in one refusal */

static const struct {
	const char *field; /* where the report holds it */
	const char *key;   /* its name in the cluster report */
	const char *code;  /* the refusal when nodes disagree */
	const char *what;
} idents[PVG_CLUSTER_ID__MAX] = {
	[PVG_CLUSTER_INSTALLED] = { "chain.installed.sha256", "installed_sha256",
				    "cluster.installed-differs", "installed artifact" },
	[PVG_CLUSTER_BUILD] = { "chain.build.sha256", "build_sha256", "cluster.build-differs",
				"build artifact" },
	[PVG_CLUSTER_COMMIT] = { "gates[1].evidence.head", "source_commit",
				 "cluster.commit-differs", "source commit (gate 2)" },
	[PVG_CLUSTER_CONFIG] = { "config.sha256", "config_sha256", "cluster.config-differs",
				 "config" },
	[PVG_CLUSTER_ARTIFACTS] = { "chain.artifacts", "artifacts_sha256",
				    "cluster.artifacts-differ", "set of further artifacts" },
};

static ssize_t expected_index(const struct pvg_cluster *m, const char *node);

static void add_problem(struct pvg_cluster *m, const char *code, const char *node,
			const char *report, int gate, const char *field, const char *fmt, ...) PVG_PRINTF(7, 8);
static void add_problem(struct pvg_cluster *m, const char *code, const char *node,
			const char *report, int gate, const char *field, const char *fmt, ...)
{
	m->problems = pvg_xrealloc(m->problems, m->n_problems + 1, sizeof(*m->problems));
	struct pvg_cluster_problem *p = &m->problems[m->n_problems++];
	va_list ap;
	va_start(ap, fmt);
	*p = (struct pvg_cluster_problem){
		.ix = node ? expected_index(m, node) : -1,
		.code = pvg_strdup(code),
		.node = node ? pvg_strdup(node) : NULL,
		.report = report ? pvg_strdup(report) : NULL,
		.gate = gate,
		.field = field,
		.message = pvg_vasprintf(fmt, ap),
	};
	va_end(ap);
}

static void node_report_clear(struct pvg_cluster_report *r)
{
	free(r->path);
	free(r->node);
	free(r->started_at);
	for (int i = 0; i < PVG_CLUSTER_ID__MAX; i++)
		free(r->ident[i]);
	free(r->installed_name);
	free(r->build_name);
	free(r->artifacts_text);
	free(r->tool_version);
	free(r->failed);
}

void pvg_cluster_free(struct pvg_cluster *m)
{
	if (!m)
		return;
	pvg_hostlist_clear(&m->expected);
	for (size_t i = 0; i < m->n_reports; i++)
		node_report_clear(&m->reports[i]);
	free(m->reports);
	for (size_t i = 0; i < m->n_problems; i++) {
		free(m->problems[i].code);
		free(m->problems[i].node);
		free(m->problems[i].report);
		free(m->problems[i].message);
	}
	free(m->problems);
	for (size_t i = 0; i < m->n_ignored; i++)
		free(m->ignored[i]);
	free(m->ignored);
	free(m->sorted);
	free(m->slot);
	free(m->claims);
	free(m->n_node_problems);
	free(m->reports_of.start);
	free(m->reports_of.order);
	free(m->problems_of.start);
	free(m->problems_of.order);
	for (int i = 0; i < PVG_CLUSTER_ID__MAX; i++)
		free(m->agreed[i]);
	free(m->nodes_spec);
	free(m->nodes_source);
	free(m->out_st);
	free(m->seen_dev);
	free(m->seen_ino);
	free(m);
}

/* ---- reading one report ---------------------------------------------------------------- */

/* A string member at a dotted path of objects; NULL when absent or of another type. */
static const char *json_str_at(const cJSON *root, const char *a, const char *b, const char *c)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, a);
	if (b)
		j = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, b) : NULL;
	return c ? pvg_json_get_str(j, c) : cJSON_IsString(j) ? j->valuestring : NULL;
}

static char *clean_dup(const char *s)
{
	return s ? pvg_utf8_sanitize(s, strlen(s)) : NULL;
}

/* The artifacts after the first of chain.artifacts (the first is chain.installed and
 * chain.build): a digest over their names and both sha256s, in order, so that nodes agree
 * only when each runs the same bytes of every extension; and the same as text for messages.
 * A report of one artifact, or one made before chain.artifacts, has none further. */
static void further_artifacts(const cJSON *root, char **digest, char **text)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(root, "chain"), "artifacts");
	char *canon = pvg_strdup(""), *t = pvg_strdup("");
	bool bad = false;
	int i = 0;
	const cJSON *a;
	cJSON_ArrayForEach(a, list) {
		if (i++ == 0)
			continue;
		const char *name = pvg_json_get_str(a, "name");
		const char *is = json_str_at(a, "installed", "sha256", NULL);
		const char *bs = json_str_at(a, "build", "sha256", NULL);
		if (!name || !is || !bs)
			bad = true;
		char *c = pvg_asprintf("%s%s\n%s\n%s\n", canon, name ? name : "", is ? is : "",
				       bs ? bs : "");
		_cleanup_free_ char *cname = clean_dup(name ? name : "?");
		char *n = pvg_asprintf("%s%s%s installed %.12s build %.12s", t, t[0] ? "; " : "",
				       cname, is ? is : "(none)", bs ? bs : "(none)");
		free(canon);
		free(t);
		canon = c;
		t = n;
	}
	char hex[65];
	pvg_sha256_hex(canon, strlen(canon), hex);
	free(canon);
	*digest = bad ? NULL : pvg_strdup(hex);
	*text = t[0] ? t : (free(t), pvg_strdup("none"));
}

static bool is_sha256_hex(const char *s)
{
	if (!s || strlen(s) != 64)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

static bool is_commit_hex(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n != 40 && n != 64)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

/* "2026-11-29T12:00:00Z", as reports write it; strict. */
static bool parse_utc(const char *s, time_t *out)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
	if (!s || strlen(s) != sizeof(shape) - 1)
		return false;
	for (size_t i = 0; shape[i]; i++)
		if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i])
			return false;
	int Y, M, D, h, mi, sec;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ", &Y, &M, &D, &h, &mi, &sec) != 6)
		return false;
	if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || mi > 59 || sec > 60 || Y < 1970)
		return false;
	struct tm tm = { .tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D, .tm_hour = h,
			 .tm_min = mi, .tm_sec = sec };
	*out = timegm(&tm);
	return *out != (time_t)-1;
}

/* The gates that did not pass, in one line: "gate 4 process-maps fail (process-maps.deleted)";
 * gates blocked behind them are only counted. */
static void collect_failed(const cJSON *gates, const char *when, char **out, int *first, int *n,
			   int *blocked)
{
	const cJSON *g;
	cJSON_ArrayForEach(g, gates) {
		const char *status = json_str_at(g, "status", NULL, NULL);
		const char *name = json_str_at(g, "name", NULL, NULL);
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(g, "id");
		if (status && strcmp(status, "blocked") == 0) {
			(*blocked)++;
			continue;
		}
		if (!status || strcmp(status, "pass") == 0 || strcmp(status, "skipped") == 0)
			continue;
		int gid = cJSON_IsNumber(id) && id->valuedouble >= 1 && id->valuedouble <= 7
				  ? (int)id->valuedouble : 0;
		if (!*first && gid)
			*first = gid;
		if ((*n)++ >= MAX_FAILED_LISTED)
			continue;
		char codes[256] = "";
		size_t o = 0;
		const cJSON *pr, *probs = cJSON_GetObjectItemCaseSensitive(g, "problems");
		cJSON_ArrayForEach(pr, probs) {
			const char *code = json_str_at(pr, "code", NULL, NULL);
			bool seen = false; /* each code once */
			for (const cJSON *q = probs->child; code && q != pr; q = q->next) {
				const char *c2 = json_str_at(q, "code", NULL, NULL);
				seen |= c2 && strcmp(c2, code) == 0;
			}
			if (code && !seen && o < sizeof(codes) - 1)
				o += (size_t)snprintf(codes + o, sizeof(codes) - o, "%s%s",
						      o ? ", " : "", code);
		}
		if (o >= sizeof(codes))
			o = sizeof(codes) - 1;
		_cleanup_free_ char *cname = clean_dup(name ? name : "?");
		_cleanup_free_ char *cstatus = clean_dup(status);
		_cleanup_free_ char *ccodes = pvg_utf8_sanitize(codes, o);
		char *prev = *out;
		*out = pvg_asprintf("%s%sgate %d %s %s%s%s%s%s", prev ? prev : "", prev ? "; " : "",
				    gid, cname, cstatus, when, o ? " (" : "", ccodes, o ? ")" : "");
		free(prev);
	}
}

/* The node a report speaks for: host.node, else (older reports) the short host name. NULL,
 * or why the report cannot say. */
static const char *report_node(const cJSON *root, struct pvg_cluster_report *r)
{
	const cJSON *host = cJSON_GetObjectItemCaseSensitive(root, "host");
	if (cJSON_IsObject(host) && cJSON_GetObjectItemCaseSensitive(host, "node") &&
	    !json_str_at(root, "host", "node", NULL))
		return "host.node is not a name (null: the SLURMD_NODENAME where it was made could "
		       "not name a node)";
	const char *node = json_str_at(root, "host", "node", NULL);
	if (!node) {
		const char *hn = json_str_at(root, "host", "hostname", NULL);
		if (!hn)
			return "no host.node or host.hostname";
		r->node_from_hostname = true;
		size_t n = strcspn(hn, ".");
		r->node = pvg_utf8_sanitize(hn, n);
	} else {
		r->node = clean_dup(node);
	}
	if (!r->node[0] || strlen(r->node) > PVG_HOSTLIST_MAX_NAME)
		return "its node name is empty or longer than 255 bytes";
	return NULL;
}

/* Reads path into r. 1 when it is a cluster report (ignored in a folder), 0 when r holds a
 * report, -1 after adding the problem that says why it is not one. */
static int read_report(struct pvg_cluster *m, const char *path, bool from_dir,
		       struct pvg_cluster_report *r)
{
	memset(r, 0, sizeof(*r));
	_cleanup_(pvg_report_file_clear) struct pvg_report_file f;
	int e = pvg_report_read(path, MAX_REPORT_BYTES, false, &f);
	if (e < 0) {
		add_problem(m, "cluster.bad-report", NULL, path, 0, NULL, "%s: cannot read: %s", path,
			    e == -EFBIG ? "larger than 64 MiB, or still growing"
			    : e == -EINVAL ? "not a regular file" : strerror(-e));
		return -1;
	}
	if (f.bad == PVG_REPORT_EMPTY || f.bad == PVG_REPORT_NUL) {
		add_problem(m, "cluster.bad-report", NULL, path, 0, NULL,
			    "%s: %s; not a provgate report", path,
			    f.bad == PVG_REPORT_NUL ? "holds a NUL byte" : "empty");
		return -1;
	}
	if (f.bad == PVG_REPORT_TRUNCATED || f.bad == PVG_REPORT_MALFORMED) {
		bool truncated = f.bad == PVG_REPORT_TRUNCATED;
		add_problem(m, "cluster.bad-report", NULL, path, 0, NULL,
			    "%s: not JSON (%s at byte %zu%s); not a provgate report", path,
			    truncated ? "it ends early" : "malformed", f.at,
			    truncated ? ": truncated?" : "");
		return -1;
	}
	if (f.bad == PVG_REPORT_TRAILING) {
		add_problem(m, "cluster.bad-report", NULL, path, 0, NULL,
			    "%s: content after the JSON object; not a provgate report", path);
		return -1;
	}
	const cJSON *root = f.root;
	const char *schema = cJSON_IsObject(root) ? json_str_at(root, "schema", NULL, NULL) : NULL;
	if (schema && strcmp(schema, "provgate.cluster/1") == 0 && from_dir)
		return 1;
	if (!cJSON_IsObject(root) || !schema || strcmp(schema, "provgate.report/1") != 0) {
		_cleanup_free_ char *cs = clean_dup(schema);
		add_problem(m, "cluster.bad-report", NULL, path, 0, NULL,
			    "%s: not a provgate node report (schema %s%s%s, expected "
			    "\"provgate.report/1\")",
			    path, cs ? "\"" : "", cs ? cs : "missing", cs ? "\"" : "");
		return -1;
	}
	const char *no_node = report_node(root, r);
	if (no_node) {
		add_problem(m, "cluster.bad-report", NULL, path, 0, "host.node",
			    "%s: the report does not say which node it is from: %s", path, no_node);
		node_report_clear(r);
		memset(r, 0, sizeof(*r));
		return -1;
	}
	r->path = pvg_strdup(path);
	r->certified = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "certified"));
	r->started_at = clean_dup(json_str_at(root, "started_at", NULL, NULL));
	r->started_ok = parse_utc(r->started_at, &r->started);
	r->tool_version = clean_dup(json_str_at(root, "tool", "version", NULL));
	r->ident[PVG_CLUSTER_INSTALLED] = clean_dup(json_str_at(root, "chain", "installed", "sha256"));
	r->ident[PVG_CLUSTER_BUILD] = clean_dup(json_str_at(root, "chain", "build", "sha256"));
	const char *ip = json_str_at(root, "chain", "installed", "path");
	const char *bp = json_str_at(root, "chain", "build", "path");
	r->installed_name = ip ? clean_dup(pvg_basename(ip)) : NULL;
	r->build_name = bp ? clean_dup(pvg_basename(bp)) : NULL;
	r->ident[PVG_CLUSTER_CONFIG] = clean_dup(json_str_at(root, "config", "sha256", NULL));
	further_artifacts(root, &r->ident[PVG_CLUSTER_ARTIFACTS], &r->artifacts_text);
	const cJSON *gates = cJSON_GetObjectItemCaseSensitive(root, "gates"), *g;
	cJSON_ArrayForEach(g, gates) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(g, "id");
		if (cJSON_IsNumber(id) && id->valuedouble == 2)
			r->ident[PVG_CLUSTER_COMMIT] = clean_dup(json_str_at(g, "evidence", "head", NULL));
	}
	int n_failed = 0, n_blocked = 0;
	collect_failed(gates, "", &r->failed, &r->first_failed_gate, &n_failed, &n_blocked);
	const cJSON *after = cJSON_GetObjectItemCaseSensitive(root, "after");
	if (cJSON_IsObject(after))
		collect_failed(cJSON_GetObjectItemCaseSensitive(after, "gates"), " after the command",
			       &r->failed, &r->first_failed_gate, &n_failed, &n_blocked);
	if (n_failed > MAX_FAILED_LISTED) {
		char *prev = r->failed;
		r->failed = pvg_asprintf("%s; %d more", prev, n_failed - MAX_FAILED_LISTED);
		free(prev);
	}
	if (n_blocked && r->failed) {
		char *prev = r->failed;
		r->failed = pvg_asprintf("%s; %d later gate%s blocked", prev, n_blocked,
					 n_blocked == 1 ? "" : "s");
		free(prev);
	}
	/* "certified": true stands only with its seven gates passed (a report edited by hand,
	 * or written by something else, says so without them) */
	unsigned passed = 0;
	cJSON_ArrayForEach(g, gates) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(g, "id");
		const char *status = json_str_at(g, "status", NULL, NULL);
		if (cJSON_IsNumber(id) && id->valuedouble >= 1 && id->valuedouble <= PVG_N_GATES &&
		    status && strcmp(status, "pass") == 0)
			passed |= 1u << (int)id->valuedouble;
	}
	if (r->certified && (n_failed || n_blocked || (cJSON_IsArray(gates) &&
					passed != (1u << (PVG_N_GATES + 1)) - 2u))) {
		r->certified = false;
		char *prev = r->failed;
		r->failed = pvg_asprintf("%s%sthe report says certified, but not all seven gates "
					 "passed", prev ? prev : "", prev ? "; " : "");
		free(prev);
	}
	if (!cJSON_IsArray(gates) || cJSON_GetArraySize(gates) != PVG_N_GATES) {
		/* a certified claim without its seven gates is not one */
		r->certified = false;
		if (!r->failed)
			r->failed = pvg_strdup("the report does not list the seven gates");
	}
	const char *state = json_str_at(root, "exec", "state", NULL);
	if (state && strcmp(state, "running") == 0) {
		r->certified = false;
		char *prev = r->failed;
		r->failed = pvg_asprintf("%s%sexec.state is \"running\": the command had not "
					 "finished when this report was written",
					 prev ? prev : "", prev ? "; " : "");
		free(prev);
	}
	return 0;
}

/* ---- inputs ---------------------------------------------------------------------------- */

static bool is_output(const struct pvg_cluster *m, const struct stat *st)
{
	for (size_t i = 0; i < m->n_out; i++)
		if (m->out_st[i].st_dev == st->st_dev && m->out_st[i].st_ino == st->st_ino)
			return true;
	return false;
}

static bool seen_before(struct pvg_cluster *m, const struct stat *st)
{
	for (size_t i = 0; i < m->n_seen; i++)
		if (m->seen_dev[i] == st->st_dev && m->seen_ino[i] == st->st_ino)
			return true;
	m->seen_dev = pvg_xrealloc(m->seen_dev, m->n_seen + 1, sizeof(*m->seen_dev));
	m->seen_ino = pvg_xrealloc(m->seen_ino, m->n_seen + 1, sizeof(*m->seen_ino));
	m->seen_dev[m->n_seen] = st->st_dev;
	m->seen_ino[m->n_seen++] = st->st_ino;
	return false;
}

static void add_input(struct pvg_cluster *m, const char *path, bool from_dir)
{
	struct pvg_cluster_report r;
	int k = read_report(m, path, from_dir, &r);
	if (k == 1) {
		m->ignored = pvg_xrealloc(m->ignored, m->n_ignored + 1, sizeof(*m->ignored));
		m->ignored[m->n_ignored++] = pvg_strdup(path);
		return;
	}
	if (k < 0)
		return;
	m->reports = pvg_xrealloc(m->reports, m->n_reports + 1, sizeof(*m->reports));
	m->reports[m->n_reports++] = r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A folder: every *.json in it (not recursive, sorted; hidden and temp files skipped).
 * 0; 1 when it held more than PVG_CLUSTER_MAX_INPUTS (err says so); -errno. */
static int add_dir(struct pvg_cluster *m, const char *dir, struct pvg_error *err)
{
	DIR *d = opendir(dir);
	if (!d) {
		int e = -errno;
		snprintf(err->message, sizeof(err->message), "cannot read folder %s: %s", dir,
			 strerror(-e));
		return e;
	}
	int rc = 0;
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (e->d_name[0] == '.' || l < 6 || strcmp(e->d_name + l - 5, ".json") != 0 ||
		    strstr(e->d_name, ".tmp."))
			continue;
		if (n == PVG_CLUSTER_MAX_INPUTS) {
			snprintf(err->message, sizeof(err->message), "more than %d reports in %s",
				 PVG_CLUSTER_MAX_INPUTS, dir);
			rc = 1;
			break;
		}
		names = pvg_xrealloc(names, n + 1, sizeof(*names));
		names[n++] = pvg_path_join(dir, e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode) && !is_output(m, &st) &&
		    !seen_before(m, &st) && m->n_inputs++ < PVG_CLUSTER_MAX_INPUTS)
			add_input(m, names[i], true);
		free(names[i]);
	}
	free(names);
	return rc;
}

/* ---- the verdict ----------------------------------------------------------------------- */

static const struct pvg_cluster *sort_ctx; /* qsort has no argument for it */

static int cmp_expected(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(sort_ctx->expected.host[x], sort_ctx->expected.host[y]);
	return c ? c : (x > y) - (x < y);
}

/* Sorts the expected names for expected_index; the first name listed twice, or NULL. */
static const char *index_expected(struct pvg_cluster *m)
{
	m->sorted = pvg_xcalloc(m->expected.n + 1, sizeof(*m->sorted));
	for (size_t i = 0; i < m->expected.n; i++)
		m->sorted[i] = i;
	sort_ctx = m;
	qsort(m->sorted, m->expected.n, sizeof(*m->sorted), cmp_expected);
	for (size_t i = 1; i < m->expected.n; i++)
		if (strcmp(m->expected.host[m->sorted[i - 1]], m->expected.host[m->sorted[i]]) == 0)
			return m->expected.host[m->sorted[i]];
	return NULL;
}

static ssize_t expected_index(const struct pvg_cluster *m, const char *node)
{
	size_t lo = 0, hi = m->sorted ? m->expected.n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(m->expected.host[m->sorted[mid]], node);
		if (c == 0)
			return (ssize_t)m->sorted[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Counting sort of count items by their node index (ix_at(i)); items of no node are left out. */
static void group_by_node(struct pvg_cluster_by_node *g, size_t n_nodes, size_t count,
			  ssize_t (*ix_at)(const struct pvg_cluster *, size_t), const struct pvg_cluster *m)
{
	free(g->start);
	free(g->order);
	g->start = pvg_xcalloc(n_nodes + 2, sizeof(*g->start));
	g->order = pvg_xcalloc(count + 1, sizeof(*g->order));
	for (size_t k = 0; k < count; k++) {
		ssize_t i = ix_at(m, k);
		if (i >= 0)
			g->start[i + 1]++;
	}
	for (size_t i = 0; i < n_nodes; i++)
		g->start[i + 1] += g->start[i];
	size_t *fill = pvg_xcalloc(n_nodes + 1, sizeof(*fill));
	for (size_t k = 0; k < count; k++) {
		ssize_t i = ix_at(m, k);
		if (i >= 0)
			g->order[g->start[i] + fill[i]++] = k;
	}
	free(fill);
}

static ssize_t report_ix(const struct pvg_cluster *m, size_t k)
{
	return m->reports[k].ix;
}

static ssize_t problem_ix(const struct pvg_cluster *m, size_t k)
{
	return m->problems[k].ix;
}

static void check_presence(struct pvg_cluster *m)
{
	m->slot = pvg_xcalloc(m->expected.n + 1, sizeof(*m->slot));
	m->claims = pvg_xcalloc(m->expected.n + 1, sizeof(*m->claims));
	for (size_t i = 0; i < m->expected.n; i++)
		m->slot[i] = -1;
	for (size_t k = 0; k < m->n_reports; k++) {
		struct pvg_cluster_report *r = &m->reports[k];
		ssize_t i = r->ix = expected_index(m, r->node);
		if (i < 0) {
			add_problem(m, "cluster.unexpected-node", r->node, r->path, 0, "host.node",
				    "%s: report %s is from a node that is not in the job's node list "
				    "(%s)%s",
				    r->node, r->path, m->nodes_spec,
				    r->node_from_hostname ? "; the report has no host.node, so its "
							    "host name stood for the node" : "");
			continue;
		}
		if (m->claims[i]++ == 0)
			m->slot[i] = (ssize_t)k;
	}
	group_by_node(&m->reports_of, m->expected.n, m->n_reports, report_ix, m);
	for (size_t i = 0; i < m->expected.n; i++) {
		const char *node = m->expected.host[i];
		if (m->claims[i] == 0) {
			add_problem(m, "cluster.missing-node", node, NULL, 0, NULL,
				    "%s: no report from this node", node);
			continue;
		}
		if (m->claims[i] == 1)
			continue;
		char *list = NULL;
		PVG_CLUSTER_FOR_NODE(&m->reports_of, i, k) {
			char *prev = list;
			list = pvg_asprintf("%s%s%s", prev ? prev : "", prev ? ", " : "",
					    m->reports[k].path);
			free(prev);
		}
		add_problem(m, "cluster.duplicate-node", node, NULL, 0, "host.node",
			    "%s: %zu reports claim this node (%s); each node must be certified "
			    "exactly once",
			    node, m->claims[i], list);
		free(list);
		m->slot[i] = -1; /* which one stands for the node is unknowable */
	}
}

static void check_certified(struct pvg_cluster *m)
{
	for (size_t i = 0; i < m->expected.n; i++) {
		if (m->slot[i] < 0)
			continue;
		const struct pvg_cluster_report *r = &m->reports[m->slot[i]];
		if (r->certified)
			continue;
		add_problem(m, "cluster.not-certified", r->node, r->path, r->first_failed_gate, NULL,
			    "%s: not certified: %s (%s)", r->node,
			    r->failed ? r->failed : "the report says certified: false", r->path);
	}
}

struct held {
	const char *value;
	size_t node; /* expected index */
};

static int cmp_held(const void *a, const void *b)
{
	const struct held *x = a, *y = b;
	int c = strcmp(x->value, y->value);
	return c ? c : (x->node > y->node) - (x->node < y->node);
}

/* The value most nodes hold; on a tie, the one the earliest node in the list holds. */
static const char *majority(const struct pvg_cluster *m, int f, size_t *count, size_t *first_node)
{
	struct held *h = pvg_xcalloc(m->expected.n + 1, sizeof(*h));
	size_t n = 0;
	for (size_t i = 0; i < m->expected.n; i++)
		if (m->slot[i] >= 0 && m->reports[m->slot[i]].ident[f])
			h[n++] = (struct held){ m->reports[m->slot[i]].ident[f], i };
	qsort(h, n, sizeof(*h), cmp_held);
	const char *best = NULL;
	size_t best_n = 0, best_first = 0;
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a + 1; b < n && strcmp(h[b].value, h[a].value) == 0; b++)
			;
		if (b - a > best_n || (b - a == best_n && h[a].node < best_first)) {
			best = h[a].value;
			best_n = b - a;
			best_first = h[a].node; /* the run is sorted by node */
		}
	}
	free(h);
	*count = best_n;
	*first_node = best_first;
	return best;
}

static void check_identity(struct pvg_cluster *m)
{
	for (int f = 0; f < PVG_CLUSTER_ID__MAX; f++) {
		size_t ref_n = 0, ref_i = 0;
		const char *ref = majority(m, f, &ref_n, &ref_i);
		const char *ref_node = ref ? m->expected.host[ref_i] : NULL;
		bool all = ref != NULL;
		for (size_t i = 0; i < m->expected.n; i++) {
			if (m->slot[i] < 0) {
				all = false;
				continue;
			}
			const struct pvg_cluster_report *r = &m->reports[m->slot[i]];
			const char *v = r->ident[f];
			bool well_formed = f == PVG_CLUSTER_COMMIT ? is_commit_hex(v) : is_sha256_hex(v);
			if (!v || !well_formed) {
				add_problem(m, "cluster.missing-field", r->node, r->path, 0,
					    idents[f].field,
					    "%s: %s %s in %s, so the %s cannot be compared across nodes",
					    r->node, idents[f].field, v ? "is malformed" : "is missing",
					    r->path, idents[f].what);
				all = false;
			} else if (strcmp(v, ref) != 0 && f == PVG_CLUSTER_ARTIFACTS) {
				const struct pvg_cluster_report *rr = &m->reports[m->slot[ref_i]];
				add_problem(m, idents[f].code, r->node, r->path, 0, idents[f].field,
					    "%s: its further artifacts (%s) differ from %s's (%s; %zu of "
					    "%zu nodes): this node runs another build of an extension",
					    r->node, r->artifacts_text, ref_node, rr->artifacts_text,
					    ref_n, m->expected.n);
				all = false;
			} else if (strcmp(v, ref) != 0) {
				add_problem(m, idents[f].code, r->node, r->path, 0, idents[f].field,
					    "%s: %s %.12s differs from %s's %.12s (%zu of %zu nodes): "
					    "this node runs another %s",
					    r->node, idents[f].field, v, ref_node, ref, ref_n,
					    m->expected.n, idents[f].what);
				all = false;
			}
		}
		if (all)
			m->agreed[f] = pvg_strdup(ref);
	}
}

struct timed {
	time_t t;
	size_t slot; /* expected index */
};

static int cmp_timed(const void *a, const void *b)
{
	const struct timed *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* The largest set of reports within max_skew of each other (the latest such window on a tie:
 * a stale report is an old one); every report outside it is refused. */
static void check_skew(struct pvg_cluster *m)
{
	struct timed *t = pvg_xcalloc(m->expected.n + 1, sizeof(*t));
	size_t n = 0;
	for (size_t i = 0; i < m->expected.n; i++) {
		if (m->slot[i] < 0)
			continue;
		const struct pvg_cluster_report *r = &m->reports[m->slot[i]];
		if (!r->started_ok) {
			add_problem(m, "cluster.missing-field", r->node, r->path, 0, "started_at",
				    "%s: started_at %s in %s, so its time cannot be checked",
				    r->node, r->started_at ? "is malformed" : "is missing", r->path);
			continue;
		}
		t[n++] = (struct timed){ r->started, i };
	}
	if (n == 0) {
		free(t);
		return;
	}
	qsort(t, n, sizeof(*t), cmp_timed);
	size_t best_lo = 0, best_n = 0, lo = 0;
	for (size_t hi = 0; hi < n; hi++) {
		while ((double)t[hi].t - (double)t[lo].t > (double)m->max_skew)
			lo++;
		if (hi - lo + 1 >= best_n) {
			best_n = hi - lo + 1;
			best_lo = lo;
		}
	}
	m->first = t[0].t;
	m->last = t[n - 1].t;
	m->have_window = true;
	char a[40], b[40];
	pvg_format_time(t[best_lo].t, -1, a, sizeof(a));
	pvg_format_time(t[best_lo + best_n - 1].t, -1, b, sizeof(b));
	for (size_t k = 0; k < n; k++) {
		if (k >= best_lo && k < best_lo + best_n)
			continue;
		const struct pvg_cluster_report *r = &m->reports[m->slot[t[k].slot]];
		long off = (long)(k < best_lo ? t[best_lo].t - t[k].t
					      : t[k].t - t[best_lo + best_n - 1].t);
		add_problem(m, "cluster.skew", r->node, r->path, 0, "started_at",
			    "%s: report made at %s, %ld s %s the other %zu node%s (%s .. %s); "
			    "--max-skew is %ld s",
			    r->node, r->started_at, off, k < best_lo ? "before" : "after", best_n,
			    best_n == 1 ? "" : "s", a, b, m->max_skew);
	}
	free(t);
}

/* ---- output ---------------------------------------------------------------------------- */

/* After every check: who has which problems. */
static void index_problems(struct pvg_cluster *m)
{
	m->n_node_problems = pvg_xcalloc(m->expected.n + 1, sizeof(*m->n_node_problems));
	for (size_t k = 0; k < m->n_problems; k++)
		if (m->problems[k].ix >= 0)
			m->n_node_problems[m->problems[k].ix]++;
	group_by_node(&m->problems_of, m->expected.n, m->n_problems, problem_ix, m);
}

const char *pvg_cluster_node_status(const struct pvg_cluster *m, size_t i)
{
	if (m->claims[i] == 0)
		return "missing";
	if (m->claims[i] > 1)
		return "duplicate";
	return m->n_node_problems[i] ? "refused" : "certified";
}

cJSON *pvg_cluster_json(const struct pvg_cluster *m)
{
	cJSON *rep = cJSON_CreateObject();
	cJSON_AddStringToObject(rep, "schema", "provgate.cluster/1");
	cJSON *tool = cJSON_AddObjectToObject(rep, "tool");
	cJSON_AddStringToObject(tool, "name", "provgate");
	cJSON_AddStringToObject(tool, "version", pvg_version());
	char ts[40];
	pvg_format_time(time(NULL), -1, ts, sizeof(ts));
	cJSON_AddStringToObject(rep, "merged_at", ts);
	cJSON *exp = cJSON_AddObjectToObject(rep, "expected");
	pvg_json_add_str(exp, "nodes", m->nodes_spec);
	pvg_json_add_str(exp, "from", m->nodes_source);
	pvg_json_add_u64(exp, "count", m->expected.n);
	pvg_json_add_i64(rep, "max_skew_s", m->max_skew);
	pvg_json_add_bool(rep, "certified", m->n_problems == 0);
	cJSON *id = cJSON_AddObjectToObject(rep, "identity");
	for (int f = 0; f < PVG_CLUSTER_ID__MAX; f++)
		pvg_json_add_str(id, idents[f].key, m->agreed[f]);
	/* the artifacts' file names, from a node that holds the agreed digests */
	const char *names[2] = { NULL, NULL };
	for (size_t k = 0; k < m->n_reports; k++) {
		const struct pvg_cluster_report *r = &m->reports[k];
		if (!names[0] && m->agreed[PVG_CLUSTER_INSTALLED] && r->ident[PVG_CLUSTER_INSTALLED] &&
		    strcmp(r->ident[PVG_CLUSTER_INSTALLED], m->agreed[PVG_CLUSTER_INSTALLED]) == 0)
			names[0] = r->installed_name;
		if (!names[1] && m->agreed[PVG_CLUSTER_BUILD] && r->ident[PVG_CLUSTER_BUILD] &&
		    strcmp(r->ident[PVG_CLUSTER_BUILD], m->agreed[PVG_CLUSTER_BUILD]) == 0)
			names[1] = r->build_name;
	}
	pvg_json_add_str(id, "installed_name", names[0]);
	pvg_json_add_str(id, "build_name", names[1]);
	cJSON *win = cJSON_AddObjectToObject(rep, "window");
	if (m->have_window) {
		pvg_format_time(m->first, -1, ts, sizeof(ts));
		pvg_json_add_str(win, "first", ts);
		pvg_format_time(m->last, -1, ts, sizeof(ts));
		pvg_json_add_str(win, "last", ts);
		pvg_json_add_i64(win, "span_s", (int64_t)(m->last - m->first));
	} else {
		cJSON_AddNullToObject(win, "first");
		cJSON_AddNullToObject(win, "last");
		cJSON_AddNullToObject(win, "span_s");
	}
	cJSON *nodes = cJSON_AddArrayToObject(rep, "nodes");
	for (size_t i = 0; i < m->expected.n; i++) {
		cJSON *o = cJSON_CreateObject();
		const char *node = m->expected.host[i];
		pvg_json_add_str(o, "node", node);
		pvg_json_add_str(o, "status", pvg_cluster_node_status(m, i));
		cJSON *files = cJSON_AddArrayToObject(o, "reports");
		PVG_CLUSTER_FOR_NODE(&m->reports_of, i, k)
			cJSON_AddItemToArray(files, pvg_json_string(m->reports[k].path));
		const struct pvg_cluster_report *r = m->slot[i] >= 0 ? &m->reports[m->slot[i]] : NULL;
		if (r) {
			pvg_json_add_bool(o, "certified", r->certified);
			pvg_json_add_str(o, "started_at", r->started_at);
			for (int f = 0; f < PVG_CLUSTER_ID__MAX; f++)
				pvg_json_add_str(o, idents[f].key, r->ident[f]);
			pvg_json_add_str(o, "tool_version", r->tool_version);
			pvg_json_add_bool(o, "node_from_hostname", r->node_from_hostname);
		}
		cJSON *codes = cJSON_AddArrayToObject(o, "problems");
		PVG_CLUSTER_FOR_NODE(&m->problems_of, i, k)
			cJSON_AddItemToArray(codes, pvg_json_string(m->problems[k].code));
		cJSON_AddItemToArray(nodes, o);
	}
	cJSON *probs = cJSON_AddArrayToObject(rep, "problems");
	for (size_t k = 0; k < m->n_problems; k++) {
		const struct pvg_cluster_problem *p = &m->problems[k];
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_str(o, "code", p->code);
		pvg_json_add_str(o, "node", p->node);
		pvg_json_add_str(o, "report", p->report);
		if (p->gate)
			pvg_json_add_int(o, "gate", p->gate);
		else
			cJSON_AddNullToObject(o, "gate");
		pvg_json_add_str(o, "field", p->field);
		pvg_json_add_str(o, "message", p->message);
		cJSON_AddItemToArray(probs, o);
	}
	cJSON *ign = cJSON_AddArrayToObject(rep, "ignored");
	for (size_t k = 0; k < m->n_ignored; k++)
		cJSON_AddItemToArray(ign, pvg_json_string(m->ignored[k]));
	return rep;
}

/* ---- the API --------------------------------------------------------------------------- */

int pvg_cluster_new(const char *nodes, const char *from, long max_skew, struct pvg_cluster **out,
		    struct pvg_error *err)
{
	*out = NULL;
	if (!from)
		from = "nodes";
	struct pvg_cluster *m = pvg_xcalloc(1, sizeof(*m));
	m->nodes_spec = pvg_strdup(nodes ? nodes : "");
	m->nodes_source = pvg_strdup(from);
	m->max_skew = max_skew;
	char why[512];
	if (max_skew < 0) {
		snprintf(err->message, sizeof(err->message), "max_skew %ld is negative", max_skew);
		pvg_cluster_free(m);
		return -EINVAL;
	}
	int r = pvg_hostlist_expand(m->nodes_spec, PVG_CLUSTER_MAX_NODES, &m->expected, why,
				    sizeof(why));
	if (r < 0) {
		_cleanup_free_ char *cw = pvg_utf8_sanitize(why, strlen(why));
		snprintf(err->message, sizeof(err->message), "%s: %s", from, cw);
		pvg_cluster_free(m);
		return r;
	}
	const char *twice = index_expected(m);
	if (twice) {
		_cleanup_free_ char *cn = clean_dup(twice);
		snprintf(err->message, sizeof(err->message), "%s names node %s twice", from, cn);
		pvg_cluster_free(m);
		return -EINVAL;
	}
	*out = m;
	return 0;
}

void pvg_cluster_add_output(struct pvg_cluster *m, const char *path)
{
	struct stat st;
	if (!path || strcmp(path, "-") == 0 || stat(path, &st) < 0)
		return;
	m->out_st = pvg_xrealloc(m->out_st, m->n_out + 1, sizeof(*m->out_st));
	m->out_st[m->n_out++] = st;
}

int pvg_cluster_add(struct pvg_cluster *m, const char *path, struct pvg_error *err)
{
	if (m->decided) {
		snprintf(err->message, sizeof(err->message), "%s: the cluster is already decided",
			 path);
		return -EBUSY;
	}
	struct stat st;
	if (stat(path, &st) < 0) {
		int e = -errno;
		snprintf(err->message, sizeof(err->message), "%s: %s", path, strerror(-e));
		return e;
	}
	if (S_ISDIR(st.st_mode))
		return add_dir(m, path, err);
	if (!seen_before(m, &st) && m->n_inputs++ < PVG_CLUSTER_MAX_INPUTS)
		add_input(m, path, false);
	return 0;
}

int pvg_cluster_decide(struct pvg_cluster *m)
{
	if (!m->decided) {
		m->decided = true;
		check_presence(m);
		check_certified(m);
		check_identity(m);
		check_skew(m);
		index_problems(m);
	}
	return m->n_problems ? 1 : 0;
}

bool pvg_cluster_certified(const struct pvg_cluster *m)
{
	return m->decided && m->n_problems == 0;
}

char *pvg_cluster_report_json(const struct pvg_cluster *m)
{
	if (!m->decided)
		return NULL;
	_cleanup_json_ cJSON *rep = pvg_cluster_json(m);
	_cleanup_free_ char *text = cJSON_Print(rep);
	return pvg_asprintf("%s\n", text);
}
