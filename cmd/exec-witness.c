/* SPDX-License-Identifier: MIT */
/*
 * provgate exec --witness DIR: the dispatch witness recipe. Starts nothing: prints the
 * variables to start the service with, and when a config finds a live service, checks from
 * /proc/PID/environ that its processes were started with them (gate 7 trusts the witness
 * only then).
 */
#include <limits.h>

#include "util/own-files.h"
#include "sys/procs.h"
#include "exec-witness.h"
#include "sys/witness.h"

static const char *witness_library(const struct pvg_config *cfg)
{
	const char *env = getenv("PROVGATE_WITNESS_LIB");
	if (env && env[0])
		return env;
	if (cfg && cfg->witness.library)
		return cfg->witness.library;
	return pvg_own_witness_library();
}

/* which variable loads the library: witness.api, else the arch, else both are printed */
static const char *api_of(const struct pvg_config *cfg)
{
	if (cfg && cfg->witness.api)
		return cfg->witness.api;
	if (cfg && cfg->arch)
		return pvg_arch_is_cuda(cfg->arch) ? "cuda" : "hsa";
	return NULL;
}

static bool config_exists(const char *opt)
{
	const char *p = opt ? opt : getenv("PROVGATE_CONFIG");
	if (!p || !p[0])
		p = "provgate.json";
	return access(p, F_OK) == 0;
}

int cli_exec_witness(const struct run_opts *o, const char *dir_arg)
{
	_cleanup_config_ struct pvg_config *cfg = NULL;
	if (config_exists(o->config)) {
		int rc = cli_open_config(o, &cfg);
		if (rc)
			return rc;
	}
	char cwd[PATH_MAX];
	_cleanup_free_ char *dir = dir_arg[0] == '/' || !getcwd(cwd, sizeof(cwd))
					   ? pvg_strdup(dir_arg)
					   : pvg_path_join(cwd, dir_arg);
	const char *lib = witness_library(cfg);
	const char *api = api_of(cfg);
	struct stat st;
	printf("Start the service with the dispatch witness (provgate starts nothing):\n\n");
	printf("  export %s=%s\n", PVG_WITNESS_DIR_ENV, dir);
	if (!api || strcmp(api, "cuda") == 0)
		printf("  export CUDA_INJECTION64_PATH=%s%s\n", lib, api ? "" : "    # CUDA");
	if (!api || strcmp(api, "hsa") == 0)
		printf("  export HSA_TOOLS_LIB=%s%s\n", lib, api ? "" : "            # ROCm");
	printf("\nand name the folder in provgate.json: \"witness\": {\"dir\": \"%s\", "
	       "\"require\": [{\"kernel\": \"...\"}]}\n", dir);
	if (stat(lib, &st) < 0)
		fprintf(stderr, "provgate exec: warning: %s: %s (set PROVGATE_WITNESS_LIB to "
				"libprovgate-witness.so)\n", lib, strerror(errno));
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		fprintf(stderr, "provgate exec: warning: %s is not a folder: create it (mkdir -p) "
				"before starting the service\n", dir);
	if (cfg && cfg->witness.dir) {
		_cleanup_free_ char *a = realpath(dir, NULL), *b = realpath(cfg->witness.dir, NULL);
		if (!(a && b ? strcmp(a, b) == 0 : strcmp(dir, cfg->witness.dir) == 0))
			fprintf(stderr, "provgate exec: warning: the config's witness.dir is %s, "
					"not %s\n", cfg->witness.dir, dir);
	}

	if (!cfg || (!cfg->service.match.n && cfg->service.pid < 0 && !cfg->service.pidfile)) {
		printf("\nNo service configured: nothing to check yet.\n");
		return EXIT_OK;
	}
	struct pvg_targets *t = NULL;
	int r = pvg_targets_scan(&cfg->service, &t);
	if (r < 0 || t->err) {
		const char *why = r < 0 ? strerror(-r) : t->msg.text ? t->msg.text : "none";
		_cleanup_free_ char *shown = pvg_escape_term(why, strlen(why));
		printf("\nNo live service yet (%s): start it with the variables above, then run "
		       "provgate certify.\n", shown);
		if (t)
			pvg_targets_free(t);
		return EXIT_OK;
	}
	printf("\nThe live service:\n");
	int rc = EXIT_OK;
	const char *procfs = pvg_procfs_root();
	for (size_t i = 0; i < t->n_targets; i++) {
		pid_t pid = t->targets[i];
		_cleanup_free_ char *d = NULL, *cuda = NULL, *hsa = NULL;
		int rd = pvg_proc_getenv(procfs, pid, PVG_WITNESS_DIR_ENV, &d);
		(void)pvg_proc_getenv(procfs, pid, "CUDA_INJECTION64_PATH", &cuda);
		(void)pvg_proc_getenv(procfs, pid, "HSA_TOOLS_LIB", &hsa);
		const char *loader = cuda ? "CUDA_INJECTION64_PATH" : hsa ? "HSA_TOOLS_LIB" : NULL;
		if (rd == -EACCES || rd == -EPERM) {
			printf("  pid %d: its environment cannot be read (%s): run as its user or root\n",
			       (int)pid, strerror(-rd));
			rc = EXIT_NOT_CERTIFIED;
		} else if (!d || !loader) {
			printf("  pid %d: started without the witness (%s not set): restart it with the "
			       "variables above; until then gate 7 cannot trust the witness\n",
			       (int)pid, !d ? PVG_WITNESS_DIR_ENV : "CUDA_INJECTION64_PATH or HSA_TOOLS_LIB");
			rc = EXIT_NOT_CERTIFIED;
		} else {
			_cleanup_free_ char *a = realpath(d, NULL), *b = realpath(dir, NULL);
			bool same = a && b ? strcmp(a, b) == 0 : strcmp(d, dir) == 0;
			/* the service's own variables: its user wrote them */
			const char *lv = cuda ? cuda : hsa;
			_cleanup_free_ char *dv = pvg_escape_term(d, strlen(d)),
					    *lvv = pvg_escape_term(lv, strlen(lv));
			printf("  pid %d: %s=%s, %s=%s%s\n", (int)pid, PVG_WITNESS_DIR_ENV, dv, loader,
			       lvv, same ? "" : " (another folder than DIR)");
			if (!same)
				rc = EXIT_NOT_CERTIFIED;
		}
	}
	pvg_targets_free(t);
	return rc;
}
