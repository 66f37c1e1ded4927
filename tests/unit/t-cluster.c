/* SPDX-License-Identifier: MIT */
/* lib/core/cluster.c: the cluster decision of provgate merge through its API, without the
 * CLI: node reports written to a folder, then pvg_cluster_new / _add / _decide. */
#include <unistd.h>

#include "tap.h"
#include "core/cluster.h"

static char dir[] = "/tmp/pvg-t-cluster.XXXXXX";

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define SHA_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define COMMIT "0123456789abcdef0123456789abcdef01234567"

/* A certified node report as certify writes it (the fields the decision reads). */
static void write_report_arts(const char *sub, const char *file, const char *node,
			      const char *started_at, const char *installed, const char *moe)
{
	_cleanup_free_ char *folder = pvg_path_join(dir, sub);
	mkdir(folder, 0755);
	_cleanup_free_ char *path = pvg_path_join(folder, file);
	FILE *f = fopen(path, "w");
	fprintf(f, "{\"schema\": \"provgate.report/1\", \"certified\": true, "
		   "\"started_at\": \"%s\", \"tool\": {\"version\": \"t\"}, "
		   "\"host\": {\"node\": \"%s\", \"hostname\": \"%s.example\"}, "
		   "\"config\": {\"sha256\": \"%s\"}, "
		   "\"chain\": {\"installed\": {\"path\": \"/site/_C.so\", \"sha256\": \"%s\"}, "
		   "\"build\": {\"path\": \"/build/_C.so\", \"sha256\": \"%s\"}",
		started_at, node, node, SHA_C, installed, SHA_B);
	/* a config with a second artifact: chain.artifacts, the first as chain.installed */
	if (moe)
		fprintf(f, ", \"artifacts\": [{\"name\": \"_C\", "
			   "\"installed\": {\"path\": \"/site/_C.so\", \"sha256\": \"%s\"}, "
			   "\"build\": {\"path\": \"/build/_C.so\", \"sha256\": \"%s\"}}, "
			   "{\"name\": \"_moe_C\", "
			   "\"installed\": {\"path\": \"/site/_moe_C.so\", \"sha256\": \"%s\"}, "
			   "\"build\": {\"path\": \"/build/_moe_C.so\", \"sha256\": \"%s\"}}]",
			installed, SHA_B, moe, SHA_B);
	fputs("}, \"gates\": [", f);
	for (int id = 1; id <= PVG_N_GATES; id++)
		fprintf(f, "%s{\"id\": %d, \"name\": \"%s\", \"status\": \"pass\"%s}", id > 1 ? ", " : "",
			id, pvg_gate_name(id), id == 2 ? ", \"evidence\": {\"head\": \"" COMMIT "\"}" : "");
	fputs("]}\n", f);
	fclose(f);
}

static void write_report(const char *sub, const char *file, const char *node,
			 const char *started_at, const char *installed)
{
	write_report_arts(sub, file, node, started_at, installed, NULL);
}

/* Decides the cluster of nodes over folder sub; returns it (caller frees). */
static struct pvg_cluster *decide(const char *nodes, long skew, const char *sub, int *refused)
{
	struct pvg_cluster *c = NULL;
	struct pvg_error err = { { 0 } };
	CHECK_INT(pvg_cluster_new(nodes, "--nodes", skew, &c, &err), 0);
	if (!c)
		return NULL;
	_cleanup_free_ char *folder = pvg_path_join(dir, sub);
	CHECK_INT(pvg_cluster_add(c, folder, &err), 0);
	*refused = pvg_cluster_decide(c);
	return c;
}

static size_t count_code(const struct pvg_cluster *c, const char *code, const char *node)
{
	size_t n = 0;
	for (size_t k = 0; k < c->n_problems; k++)
		n += strcmp(c->problems[k].code, code) == 0 &&
		     (!node || (c->problems[k].node && strcmp(c->problems[k].node, node) == 0));
	return n;
}

static void cluster_of_agreeing_nodes_is_certified(void)
{
	write_report("good", "n1.json", "n1", "2026-11-29T12:00:00Z", SHA_A);
	write_report("good", "n2.json", "n2", "2026-11-29T12:00:30Z", SHA_A);
	int refused = -1;
	struct pvg_cluster *c = decide("n[1-2]", 300, "good", &refused);
	CHECK_INT(refused, 0);
	CHECK(pvg_cluster_certified(c));
	CHECK_INT(c->n_problems, 0);
	CHECK_STR(pvg_cluster_node_status(c, 0), "certified");
	CHECK_STR(c->agreed[PVG_CLUSTER_INSTALLED], SHA_A);
	_cleanup_free_ char *json = pvg_cluster_report_json(c);
	_cleanup_json_ cJSON *doc = cJSON_Parse(json);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "certified")));
	CHECK_STR(pvg_json_get_str(cJSON_GetObjectItemCaseSensitive(doc, "identity"),
				   "installed_name"), "_C.so");
	pvg_cluster_free(c);
}

static void duplicated_node_is_refused(void)
{
	write_report("dup", "n1.json", "n1", "2026-11-29T12:00:00Z", SHA_A);
	write_report("dup", "n1-again.json", "n1", "2026-11-29T12:00:10Z", SHA_A);
	write_report("dup", "n2.json", "n2", "2026-11-29T12:00:20Z", SHA_A);
	int refused = -1;
	struct pvg_cluster *c = decide("n[1-2]", 300, "dup", &refused);
	CHECK_INT(refused, 1);
	CHECK(!pvg_cluster_certified(c));
	CHECK_INT(count_code(c, "cluster.duplicate-node", "n1"), 1);
	CHECK_INT(c->n_problems, 1);
	CHECK_STR(pvg_cluster_node_status(c, 0), "duplicate");
	CHECK_STR(pvg_cluster_node_status(c, 1), "certified");
	CHECK_INT(c->claims[0], 2);
	pvg_cluster_free(c);
}

static void skewed_node_is_refused(void)
{
	write_report("skew", "n1.json", "n1", "2026-11-29T12:00:00Z", SHA_A);
	write_report("skew", "n2.json", "n2", "2026-11-29T12:01:00Z", SHA_A);
	write_report("skew", "n3.json", "n3", "2026-11-29T13:00:00Z", SHA_A);
	int refused = -1;
	struct pvg_cluster *c = decide("n[1-3]", 300, "skew", &refused);
	CHECK_INT(refused, 1);
	CHECK_INT(count_code(c, "cluster.skew", "n3"), 1);
	CHECK_INT(c->n_problems, 1);
	CHECK_STR(pvg_cluster_node_status(c, 2), "refused");
	CHECK_STR(pvg_cluster_node_status(c, 0), "certified");
	CHECK(c->have_window && c->last - c->first == 3600);
	pvg_cluster_free(c);
	/* the same reports within a wider window pass */
	c = decide("n[1-3]", 3600, "skew", &refused);
	CHECK_INT(refused, 0);
	pvg_cluster_free(c);
}

static void node_with_another_artifact_is_refused(void)
{
	write_report("other", "n1.json", "n1", "2026-11-29T12:00:00Z", SHA_A);
	write_report("other", "n2.json", "n2", "2026-11-29T12:00:05Z", SHA_C);
	write_report("other", "n3.json", "n3", "2026-11-29T12:00:10Z", SHA_A);
	int refused = -1;
	struct pvg_cluster *c = decide("n[1-3]", 300, "other", &refused);
	CHECK_INT(refused, 1);
	CHECK_INT(count_code(c, "cluster.installed-differs", "n2"), 1);
	CHECK_INT(c->n_problems, 1);
	CHECK(c->agreed[PVG_CLUSTER_INSTALLED] == NULL); /* no agreement to attest */
	CHECK_STR(c->agreed[PVG_CLUSTER_BUILD], SHA_B);
	CHECK_STR(pvg_cluster_node_status(c, 1), "refused");
	pvg_cluster_free(c);
}

static void node_with_another_second_artifact_is_refused(void)
{
	/* the first artifact agrees everywhere; n2's _moe_C is another build (SHA_A vs SHA_B) */
	write_report_arts("moe", "n1.json", "n1", "2026-11-29T12:00:00Z", SHA_A, SHA_B);
	write_report_arts("moe", "n2.json", "n2", "2026-11-29T12:00:05Z", SHA_A, SHA_A);
	write_report_arts("moe", "n3.json", "n3", "2026-11-29T12:00:10Z", SHA_A, SHA_B);
	int refused = -1;
	struct pvg_cluster *c = decide("n[1-3]", 300, "moe", &refused);
	CHECK_INT(refused, 1);
	CHECK_INT(count_code(c, "cluster.artifacts-differ", "n2"), 1);
	CHECK_INT(c->n_problems, 1);
	CHECK(c->n_problems == 1 && strstr(c->problems[0].message, "_moe_C installed aaaaaaaaaaaa"));
	CHECK_STR(c->agreed[PVG_CLUSTER_INSTALLED], SHA_A);
	CHECK(c->agreed[PVG_CLUSTER_ARTIFACTS] == NULL);
	CHECK_STR(pvg_cluster_node_status(c, 1), "refused");
	pvg_cluster_free(c);
	/* the same second artifact everywhere: certified */
	write_report_arts("moe2", "n1.json", "n1", "2026-11-29T12:00:00Z", SHA_A, SHA_B);
	write_report_arts("moe2", "n2.json", "n2", "2026-11-29T12:00:05Z", SHA_A, SHA_B);
	c = decide("n[1-2]", 300, "moe2", &refused);
	CHECK_INT(refused, 0);
	CHECK(c->agreed[PVG_CLUSTER_ARTIFACTS] != NULL);
	pvg_cluster_free(c);
}

static void missing_node_bad_report_and_own_output(void)
{
	write_report("mixed", "n1.json", "n1", "2026-11-29T12:00:00Z", SHA_A);
	_cleanup_free_ char *bad = pvg_path_join(dir, "mixed/bad.json");
	FILE *f = fopen(bad, "w");
	fputs("{\"schema\": \"provgate.report/1\", \"host\": {\"node\": \"n2\"", f);
	fclose(f);
	/* a file the caller writes into the folder is never read as a report */
	_cleanup_free_ char *own = pvg_path_join(dir, "mixed/cluster.json");
	f = fopen(own, "w");
	fputs("garbage", f);
	fclose(f);
	struct pvg_cluster *c = NULL;
	struct pvg_error err = { { 0 } };
	CHECK_INT(pvg_cluster_new("n[1-2]", "--nodes", 300, &c, &err), 0);
	pvg_cluster_add_output(c, own);
	_cleanup_free_ char *folder = pvg_path_join(dir, "mixed");
	CHECK_INT(pvg_cluster_add(c, folder, &err), 0);
	CHECK_INT(pvg_cluster_decide(c), 1);
	CHECK_INT(count_code(c, "cluster.missing-node", "n2"), 1);
	CHECK_INT(count_code(c, "cluster.bad-report", NULL), 1);
	CHECK(strstr(c->problems[0].message, "ends early") || strstr(c->problems[1].message,
								       "ends early"));
	CHECK_STR(pvg_cluster_node_status(c, 1), "missing");
	/* nothing is added once decided */
	CHECK_INT(pvg_cluster_add(c, folder, &err), -EBUSY);
	pvg_cluster_free(c);
}

static void bad_node_lists_are_errors(void)
{
	struct pvg_cluster *c = NULL;
	struct pvg_error err = { { 0 } };
	CHECK_INT(pvg_cluster_new("n[1-2],n1", "--nodes", 300, &c, &err), -EINVAL);
	CHECK(c == NULL);
	CHECK_STR(err.message, "--nodes names node n1 twice");
	CHECK(pvg_cluster_new("n[2-", "SLURM_JOB_NODELIST", 300, &c, &err) < 0);
	CHECK(strncmp(err.message, "SLURM_JOB_NODELIST: ", 20) == 0);
	CHECK_INT(pvg_cluster_new("n1", "--nodes", -1, &c, &err), -EINVAL);
	CHECK_INT(pvg_cluster_new("n1", "--nodes", 300, &c, &err), 0);
	CHECK(pvg_cluster_add(c, "/nonexistent/pvg-report.json", &err) == -ENOENT);
	CHECK(strstr(err.message, "/nonexistent/pvg-report.json: ") == err.message);
	CHECK(pvg_cluster_report_json(c) == NULL); /* not decided yet */
	pvg_cluster_free(c);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	RUN(cluster_of_agreeing_nodes_is_certified);
	RUN(duplicated_node_is_refused);
	RUN(skewed_node_is_refused);
	RUN(node_with_another_artifact_is_refused);
	RUN(node_with_another_second_artifact_is_refused);
	RUN(missing_node_bad_report_and_own_output);
	RUN(bad_node_lists_are_errors);
	_cleanup_free_ char *rm = pvg_asprintf("rm -rf '%s'", dir);
	if (system(rm) != 0)
		return 1;
	TAP_EXIT();
}
