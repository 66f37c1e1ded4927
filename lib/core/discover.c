/* SPDX-License-Identifier: MIT */
/*
 * Discovery for provgate init (core/discover.h): each find_* fills its part of the
 * discovery from the folder, the processes and the node's GPUs, and says what it guessed
 * (note) or what is left to fill in (todo).
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <sys/stat.h>

#include "core/config.h"
#include "core/discover.h"
#include "core/source-kernels.h"
#include "formats/buildlog.h"
#include "formats/codeobj/codeobj.h"
#include "formats/ctrlog.h"
#include "formats/triton-cache.h"
#include "sys/container-log.h"
#include "sys/environment.h"
#include "sys/gpu-procs.h"
#include "sys/pymodule.h"
#include "sys/scope.h"
#include "sys/witness.h"
#include "util/hash.h"

#define WALK_DEPTH 4
#define WALK_MAX_ENTRIES 20000
#define LOG_MAX_BYTES (256u << 20)

static void note(struct pvg_discovery *g, const char *fmt, ...) PVG_PRINTF(2, 3);
static void note(struct pvg_discovery *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pvg_strv_push(&g->notes, pvg_vasprintf(fmt, ap));
	va_end(ap);
}

static void todo(struct pvg_discovery *g, const char *fmt, ...) PVG_PRINTF(2, 3);
static void todo(struct pvg_discovery *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pvg_strv_push(&g->todo, pvg_vasprintf(fmt, ap));
	va_end(ap);
}

void pvg_discovery_clear(struct pvg_discovery *g)
{
	free(g->dir);
	free(g->workdir);
	free(g->baseline);
	free(g->branch);
	free(g->build_log);
	free(g->artifact);
	free(g->arch);
	free(g->arch_others);
	pvg_strv_clear(&g->compiled);
	free(g->installed);
	free(g->python);
	free(g->python_module);
	free(g->map_from);
	free(g->map_to);
	pvg_probe_proc_clear(&g->service);
	free(g->match);
	pvg_strv_clear(&g->family);
	free(g->service_log);
	free(g->prefix);
	pvg_strv_clear(&g->ignore);
	for (size_t i = 0; i < g->n_more; i++) {
		free(g->more[i].name);
		free(g->more[i].build);
		free(g->more[i].installed);
		free(g->more[i].python_module);
	}
	free(g->more);
	pvg_strv_clear(&g->compile_traced);
	for (size_t i = 0; i < g->n_sources; i++) {
		free(g->sources[i].path);
		pvg_strv_clear(&g->sources[i].kernels);
		free(g->sources[i].why);
	}
	free(g->sources);
	pvg_strv_clear(&g->todo);
	pvg_strv_clear(&g->notes);
}

/* path relative to base when under it ("logs/build.log"), else path itself */
static const char *rel_to(const char *base, const char *path)
{
	size_t n = strlen(base);
	if (strncmp(path, base, n) == 0 && path[n] == '/')
		return path + n + 1;
	return path;
}

static bool under(const char *base, const char *path)
{
	return rel_to(base, path) != path;
}

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- walking the folder ----------------------------------------------------------------- */

typedef void (*walk_fn)(void *opaque, const char *path, const struct stat *st);

static bool skip_dir(const char *parent, const char *name)
{
	if (name[0] == '.' && (strcmp(name, ".git") == 0 || strcmp(name, ".cache") == 0 ||
			       strcmp(name, ".tox") == 0 || strcmp(name, ".") == 0 ||
			       strcmp(name, "..") == 0))
		return true;
	if (strcmp(name, "node_modules") == 0 || strcmp(name, "__pycache__") == 0 ||
	    strcmp(name, "site-packages") == 0 || strcmp(name, "CMakeFiles") == 0)
		return true;
	/* a venv is searched on its own, through its site-packages */
	_cleanup_free_ char *cfg = pvg_asprintf("%s/%s/pyvenv.cfg", parent, name);
	return is_file(cfg);
}

static void walk(const char *dir, int depth, walk_fn fn, void *opaque, size_t *budget)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) && *budget > 0) {
		(*budget)--;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		_cleanup_free_ char *p = pvg_path_join(dir, de->d_name);
		struct stat st;
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth > 0 && !skip_dir(dir, de->d_name))
				walk(p, depth - 1, fn, opaque, budget);
		} else if (S_ISREG(st.st_mode)) {
			fn(opaque, p, &st);
		}
	}
	closedir(d);
}

static void collect_outputs(struct pvg_discovery *g, const struct pvg_buildlog *l);

/* ---- the build log and its artifact ---------------------------------------------------- */

struct log_pick {
	const char *dir;
	char *log, *artifact;
	struct timespec mtime;
};

static bool gpu_build(const struct pvg_buildlog *l)
{
	if (l->n_hipify)
		return true;
	for (size_t i = 0; i < l->n_commands; i++) {
		const char *t = l->commands[i].text;
		if (strstr(t, "hipcc") || strstr(t, "nvcc") || strstr(t, "--offload-arch") ||
		    strstr(t, "-gencode") || strstr(t, "--cuda-gpu-arch"))
			return true;
	}
	return false;
}

/* The link output as the build saw it: absolute, or relative to the folder ninja/make ran in
 * (the log's folder, the config's folder, or a build folder with a build.ninja/Makefile). */
static char *resolve_output(const char *dir, const char *log, const char *out)
{
	if (out[0] == '/')
		return is_file(out) ? pvg_strdup(out) : NULL;
	_cleanup_free_ char *logdir = pvg_strdup(log);
	*strrchr(logdir, '/') = '\0';
	const char *bases[] = { logdir, dir };
	for (size_t i = 0; i < ARRAY_SIZE(bases); i++) {
		_cleanup_free_ char *p = pvg_path_join(bases[i], out);
		if (is_file(p))
			return realpath(p, NULL);
	}
	/* build folders one or two levels down */
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	char *found = NULL;
	struct dirent *de;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *sub = pvg_path_join(dir, de->d_name);
		_cleanup_free_ char *ninja = pvg_path_join(sub, "build.ninja");
		_cleanup_free_ char *make = pvg_path_join(sub, "Makefile");
		if (!is_file(ninja) && !is_file(make))
			continue;
		_cleanup_free_ char *p = pvg_path_join(sub, out);
		if (is_file(p))
			found = realpath(p, NULL);
	}
	closedir(d);
	return found;
}

static void consider_log(void *opaque, const char *path, const struct stat *st)
{
	struct log_pick *pick = opaque;
	size_t n = strlen(path);
	if (n < 5 || strcmp(path + n - 4, ".log") != 0 || (uint64_t)st->st_size > LOG_MAX_BYTES ||
	    st->st_size == 0)
		return;
	if (pick->log && (st->st_mtim.tv_sec < pick->mtime.tv_sec ||
			  (st->st_mtim.tv_sec == pick->mtime.tv_sec &&
			   st->st_mtim.tv_nsec <= pick->mtime.tv_nsec)))
		return; /* the newest wins */
	struct pvg_buildlog l;
	pvg_buildlog_init(&l);
	if (pvg_buildlog_read_file(&l, path) == 0 && gpu_build(&l)) {
		_cleanup_free_ char *out = pvg_buildlog_link_output(&l);
		char *art = out ? resolve_output(pick->dir, path, out) : NULL;
		if (art) {
			free(pick->log);
			free(pick->artifact);
			pick->log = pvg_strdup(path);
			pick->artifact = art;
			pick->mtime = st->st_mtim;
		}
	}
	pvg_buildlog_done(&l);
}

static void find_build(struct pvg_discovery *g)
{
	struct log_pick pick = { .dir = g->dir };
	size_t budget = WALK_MAX_ENTRIES;
	walk(g->dir, WALK_DEPTH, consider_log, &pick, &budget);
	if (!pick.log) {
		todo(g, "build.log and build.artifact: no build log (*.log) with hipify, hipcc or "
			"nvcc lines that links a shared object was found; log the build (ninja -v "
			"... >logs/build.log 2>&1) and set both");
		return;
	}
	g->build_log = pick.log;
	g->artifact = pick.artifact;
	note(g, "build log %s (the newest that compiles GPU code); it links %s",
	     rel_to(g->dir, g->build_log), rel_to(g->dir, g->artifact));
	/* the changed sources the artifact is built from (their top folders), and the log's
	 * other shared objects, from one more read of the picked log */
	struct pvg_buildlog l;
	pvg_buildlog_init(&l);
	if (pvg_buildlog_read_file(&l, g->build_log) < 0) {
		pvg_buildlog_done(&l);
		return;
	}
	collect_outputs(g, &l);
	if (g->workdir) {
		struct pvg_strv src = { 0 };
		pvg_buildlog_sources(&l, &src);
		for (size_t i = 0; i < src.n; i++) {
			_cleanup_free_ char *abs = src.v[i][0] == '/' ? pvg_strdup(src.v[i])
								     : pvg_path_join(g->workdir, src.v[i]);
			char real[PATH_MAX];
			const char *p = realpath(abs, real) ? real : abs;
			if (!under(g->workdir, p))
				continue;
			const char *rel = rel_to(g->workdir, p);
			const char *slash = strchr(rel, '/');
			_cleanup_free_ char *glob = slash ? pvg_asprintf("%.*s/**", (int)(slash - rel), rel)
							  : pvg_strdup(rel);
			if (!pvg_strv_has(&g->compiled, glob))
				pvg_strv_push(&g->compiled, TAKE_PTR(glob));
		}
		pvg_strv_clear(&src);
	}
	pvg_buildlog_done(&l);
}

/* The processor part of an arch: "gfx90a:xnack-" -> "gfx90a", "sm_90a" -> "sm_90" */
static void processor_of(const char *arch, char *out, size_t size)
{
	struct pvg_target t;
	if (strncmp(arch, "sm_", 3) == 0) {
		size_t n = strlen(arch);
		if (n > 3 && (arch[n - 1] == 'a' || arch[n - 1] == 'f'))
			n--;
		snprintf(out, size, "%.*s", (int)n, arch);
	} else if (pvg_target_parse(arch, &t) == 0) {
		snprintf(out, size, "%s", t.processor);
	} else {
		snprintf(out, size, "%s", arch);
	}
}

/* This node's GPUs, as gate 6 reads them: KFD's topology, else NVML. A list joined with
 * ", " and where it came from; NULL when neither says. */
static char *node_gpus(const char **source, struct pvg_strv *gpus)
{
	memset(gpus, 0, sizeof(*gpus));
	*source = "KFD topology";
	if (pvg_kfd_gpu_archs(pvg_sysfs_root(), gpus) <= 0) {
		pvg_strv_clear(gpus);
		char *why = NULL;
		*source = "NVML";
		int r = pvg_nvml_gpu_archs(gpus, &why);
		free(why);
		if (r <= 0) {
			pvg_strv_clear(gpus);
			return NULL;
		}
	}
	return pvg_strv_join_distinct(gpus, ", ");
}

static void find_arch(struct pvg_discovery *g)
{
	const char *path = g->installed ? g->installed : g->artifact;
	if (!path)
		return;
	struct pvg_codeobj_set *set = NULL;
	struct pvg_codeobj_opts opts = { 0 };
	struct pvg_strv archs = { 0 }, empty = { 0 };
	if (pvg_codeobj_scan_path(path, &opts, &set) == 0) {
		/* The arch comes from the code objects that hold kernels: loadable ones first, then
		 * relocatable (__nv_relfatbin) ones, else any. An nvcc device link without -gencode
		 * leaves an empty sm_75 image, which runs nothing. */
		for (int tier = 0; tier < 3 && !archs.n; tier++) {
			for (size_t i = 0; i < set->n_objs; i++) {
				const struct pvg_code_object *co = &set->objs[i];
				const char *a = co->arch;
				if (!a || strncmp(a, "compute_", 8) == 0)
					continue;
				bool reloc = co->section && strcmp(co->section, "__nv_relfatbin") == 0;
				bool kernels = !co->kernels_known || co->n_kernels > 0;
				if ((tier == 0 && (reloc || !kernels)) || (tier == 1 && !kernels))
					continue;
				pvg_strv_add_unique(&archs, a);
			}
		}
		for (size_t i = 0; i < set->n_objs; i++) {
			const struct pvg_code_object *co = &set->objs[i];
			bool taken = false;
			for (size_t k = 0; co->arch && k < archs.n && !taken; k++)
				taken = strcmp(archs.v[k], co->arch) == 0;
			if (co->arch && !taken && strncmp(co->arch, "compute_", 8) != 0 &&
			    co->kernels_known && co->n_kernels == 0)
				pvg_strv_add_unique(&empty, co->arch);
		}
	}
	pvg_codeobj_set_free(set);
	if (archs.n && empty.n) {
		_cleanup_free_ char *e = pvg_strv_join_distinct(&empty, ", ");
		note(g, "arch: %s not taken: the code object%s for it in %s hold%s no kernel (an "
			"empty device-link image, as nvcc makes for sm_75 when the link step has no "
			"-gencode)",
		     e, empty.n == 1 ? "" : "s", rel_to(g->dir, path), empty.n == 1 ? "s" : "");
	}
	pvg_strv_clear(&empty);
	if (!archs.n) {
		todo(g, "arch: %s holds no device code object; set the GPU architecture (gfx936, "
			"sm_90)", rel_to(g->dir, path));
		return;
	}
	/* the one this node's GPUs run, when the node says which they are */
	const char *source = NULL;
	struct pvg_strv gpus;
	_cleanup_free_ char *node = node_gpus(&source, &gpus);
	size_t pick = 0, n_on_node = 0;
	_cleanup_free_ char *matching = NULL;
	bool on_node = false;
	for (size_t k = 0; node && k < archs.n; k++) {
		char proc[64];
		processor_of(archs.v[k], proc, sizeof(proc));
		bool runs = false;
		for (size_t i = 0; i < gpus.n && !runs; i++)
			runs = strcmp(gpus.v[i], proc) == 0;
		if (runs && !on_node)
			pick = k;
		on_node |= runs;
		n_on_node += runs;
		if (runs) {
			char *o = pvg_asprintf("%s%s%s", matching ? matching : "", matching ? ", " : "",
					       archs.v[k]);
			free(matching);
			matching = o;
		}
	}
	pvg_strv_clear(&gpus);
	g->arch = pvg_strdup(archs.v[pick]);
	for (size_t k = 0; k < archs.n; k++) {
		if (k == pick)
			continue;
		char *o = pvg_asprintf("%s%s%s", g->arch_others ? g->arch_others : "",
				       g->arch_others ? ", " : "", archs.v[k]);
		free(g->arch_others);
		g->arch_others = o;
	}
	pvg_strv_clear(&archs);
	if (node && !on_node)
		todo(g, "arch: this node's GPUs are %s (%s), and %s holds no code object for them "
			"(it has %s%s%s): build for this GPU, or certify on a node with the GPU the "
			"artifact is for; \"%s\" was taken", node, source, rel_to(g->dir, path),
		     g->arch, g->arch_others ? ", " : "", g->arch_others ? g->arch_others : "",
		     g->arch);
	else if (n_on_node > 1)
		todo(g, "arch: %s holds several code objects for this node's GPUs (%s, %s): %s; "
			"\"%s\" was taken: set the one of the GPU's xnack/sramecc mode (HSA_XNACK)",
		     rel_to(g->dir, path), node, source, matching, g->arch);
	else if (on_node)
		note(g, "arch %s: the code object in %s for this node's GPUs (%s, %s)%s%s", g->arch,
		     rel_to(g->dir, path), node, source, g->arch_others ? "; it also has " : "",
		     g->arch_others ? g->arch_others : "");
	else if (g->arch_others)
		todo(g, "arch: %s holds code objects for %s and %s; \"%s\" was taken: set the one "
			"the benchmark's GPU runs", rel_to(g->dir, path), g->arch, g->arch_others,
		     g->arch);
	else
		note(g, "arch %s, from the code object in %s", g->arch, rel_to(g->dir, path));
}

/* ---- the service ------------------------------------------------------------------------- */

static bool generic_ancestor(const struct pvg_probe_proc *p)
{
	static const char *const shells[] = { "sh", "bash", "zsh", "dash", "fish", "tmux: server",
					      "screen", "sshd", "systemd", "init", "login", "su",
					      "sudo", "provgate", "timeout", "setsid", "nohup" };
	for (size_t i = 0; i < ARRAY_SIZE(shells); i++)
		if (strcmp(p->comm, shells[i]) == 0)
			return true;
	return p->pid <= 1;
}

static bool has_glob_chars(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* ---- what identifies a service across restarts ------------------------------------------ */

/* Titles the kernel's 15-byte name cuts ("VLLM::EngineCor"): a process that only renamed
 * itself (prctl) is completed to one of these, vLLM's and SGLang's. */
static const char *const known_titles[] = {
	"VLLM::EngineCore", "VLLM::APIServer", "VLLM::Worker", "VLLM::DPCoordinator",
	"sglang::scheduler", "sglang::detokenizer", "sglang::data_parallel_controller",
};

struct identity {
	char *match;  /* finds this process again */
	char *family; /* every process of its kind */
	const char *what; /* "process title", "entry point", "name" */
};

static void identity_clear(struct identity *id)
{
	free(id->match);
	free(id->family);
}

static bool title_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

/* The "::" of a title "PREFIX::NAME": vLLM's f"{VLLM_PROCESS_NAME_PREFIX}::{name}"
 * ("VLLM::EngineCore_DP0"), SGLang's "sglang::scheduler_TP0". NULL: no title. */
static const char *title_sep(const char *t)
{
	const char *sep = t ? strstr(t, "::") : NULL;
	if (!sep || sep == t || !title_char(sep[2]))
		return NULL;
	for (const char *c = t; c < sep; c++)
		if (!title_char(*c))
			return NULL;
	return sep;
}

/* The role without its rank: "EngineCore_DP0" -> "EngineCore", "scheduler_DP0_TP1" ->
 * "scheduler", "Worker_0" -> "Worker"; ranks change with the parallel layout, roles do not. */
static size_t role_len(const char *name, size_t n)
{
	for (size_t i = 1; i + 1 < n; i++) {
		if (name[i] != '_')
			continue;
		size_t k = i + 1;
		while (k < n && k - (i + 1) < 3 && name[k] >= 'A' && name[k] <= 'Z')
			k++;
		if (k < n && name[k] >= '0' && name[k] <= '9')
			return i;
	}
	return n;
}

static bool is_interpreter(const char *path)
{
	const char *b = pvg_basename(path);
	return strncmp(b, "python", 6) == 0 || strncmp(b, "pypy", 4) == 0;
}

/* A subcommand: "serve" in "vllm serve MODEL"; a path, an option or a file name is not one. */
static bool is_subcommand(const char *a)
{
	if (!a || !(a[0] >= 'a' && a[0] <= 'z') || strlen(a) > 32)
		return false;
	for (const char *c = a; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '_'))
			return false;
	return true;
}

/* The process title, when it has one: the first argument as setproctitle writes it
 * ("VLLM::EngineCore", maybe followed by words the service added), else the kernel's name
 * when only that was set. The rank is cut; a title without other words matches every
 * process that has it, and its prefix is the family ("VLLM::"). */
static bool title_identity(const struct pvg_probe_proc *p, struct identity *id)
{
	const char *a0 = p->argv.n ? p->argv.v[0] : NULL;
	const char *t = title_sep(a0) ? a0 : title_sep(p->comm) ? p->comm : NULL;
	if (!t)
		return false;
	const char *sep = title_sep(t), *name = sep + 2;
	size_t n = strcspn(name, " \t:");
	_cleanup_free_ char *head = pvg_asprintf("%.*s%.*s", (int)(name - t), t,
						 (int)role_len(name, n), name);
	if (t == p->comm && strlen(p->comm) == 15)
		for (size_t i = 0; i < ARRAY_SIZE(known_titles); i++)
			if (strncmp(known_titles[i], head, strlen(head)) == 0) {
				free(head);
				head = pvg_strdup(known_titles[i]);
				break;
			}
	/* words after the role are the service's own ("VLLM::EngineCore fleet-a"); after a
	 * "::" they are one run's (SGLang's "sglang::scheduler::MODEL") */
	const char *tail = name[n] == ' ' || name[n] == '\t' ? name + n : "";
	while (*tail == ' ' || *tail == '\t')
		tail++;
	if (*tail && !has_glob_chars(tail)) {
		id->match = pvg_asprintf("%s* %s*", head, tail);
		id->family = pvg_asprintf("%.*s* %s*", (int)(name - t), t, tail);
	} else {
		id->match = pvg_strdup(head);
		id->family = pvg_asprintf("%.*s", (int)(name - t), t);
	}
	id->what = "process title";
	return true;
}

/* The entry point: an interpreter's "-m" module ("sglang.launch_server") or script with its
 * subcommand ("vllm serve"), a program with its subcommand, or a title written over the
 * arguments ("vllm serve fixture"). The arguments after it are one run's and left out. */
static bool entry_identity(const struct pvg_probe_proc *p, struct identity *id)
{
	const struct pvg_strv *av = &p->argv;
	if (!av->n)
		return false;
	const char *a0 = av->v[0];
	char *entry = NULL;
	if (a0[0] != '/' && strchr(a0, ' ')) {
		entry = pvg_strdup(a0);
	} else {
		size_t i = 0;
		if (is_interpreter(a0)) {
			for (i = 1; i < av->n; i++) {
				const char *a = av->v[i];
				if (strcmp(a, "-m") == 0 && i + 1 < av->n) {
					entry = pvg_strdup(av->v[i + 1]);
					break;
				}
				if (strncmp(a, "-m", 2) == 0 && a[2]) {
					entry = pvg_strdup(a + 2);
					break;
				}
				if (strcmp(a, "-c") == 0 || strcmp(a, "-") == 0)
					return false; /* code on the command line: no entry point */
				if (a[0] != '-')
					break;
				if (strcmp(a, "-X") == 0 || strcmp(a, "-W") == 0)
					i++;
			}
			if (!entry && i >= av->n)
				return false;
		}
		if (!entry) {
			const char *script = av->v[i];
			const char *sub = i + 1 < av->n ? av->v[i + 1] : NULL;
			entry = is_subcommand(sub) ? pvg_asprintf("%s %s", pvg_basename(script), sub)
						   : pvg_strdup(script);
		}
	}
	if (!entry[0] || has_glob_chars(entry)) {
		free(entry);
		return false;
	}
	id->match = entry;
	id->family = pvg_strdup(entry);
	id->what = "entry point";
	return true;
}

static void identity_of(const struct pvg_probe_proc *p, struct identity *id)
{
	memset(id, 0, sizeof(*id));
	if (title_identity(p, id) || entry_identity(p, id))
		return;
	id->match = pvg_strdup(p->comm);
	id->family = pvg_strdup(p->comm);
	id->what = "name";
}

/* One process's service tree as init sees it: the topmost ancestor before a shell (root),
 * the port the walk up finds first, and the topmost process of the walk listening on it. */
struct tree_view {
	pid_t root, port_owner;
	uint16_t port;
};

static void tree_of(const char *procfs, const struct pvg_probe_proc *s, struct tree_view *v)
{
	memset(v, 0, sizeof(*v));
	v->root = s->pid;
	pid_t pid = s->pid, ppid = s->ppid;
	for (int depth = 0; depth < 8 && pid > 1; depth++) {
		if (depth > 0) {
			struct pvg_probe_proc p;
			if (pvg_probe_proc_read(procfs, pid, &p) < 0 || generic_ancestor(&p)) {
				pvg_probe_proc_clear(&p);
				break;
			}
			ppid = p.ppid;
			pvg_probe_proc_clear(&p);
			v->root = pid;
		}
		uint16_t port = pvg_probe_listen_port(procfs, pid);
		if (port && (!v->port || port == v->port)) {
			v->port = port;
			v->port_owner = pid;
		}
		pid = ppid;
	}
}

static bool is_mapper(const struct pvg_probe_procs *ms, pid_t pid)
{
	for (size_t i = 0; i < ms->n; i++)
		if (ms->p[i].pid == pid)
			return true;
	return false;
}

/* A container runtime's log (CRI, docker's json-file; formats/ctrlog.h), recognised by its
 * first bytes, decoded: the service's own lines in buf[0, *n) (whole records from the first
 * line end of a tail that begins mid-record). */
static void decode_runtime_log(int fd, bool tail, char *buf, ssize_t *n)
{
	char head[128];
	ssize_t h = pread(fd, head, sizeof(head), 0);
	enum pvg_ctrlog_kind kind = h > 0 ? pvg_ctrlog_detect(head, (size_t)h) : PVG_CTRLOG_PLAIN;
	if (kind == PVG_CTRLOG_PLAIN)
		return;
	const char *in = buf;
	size_t len = (size_t)*n;
	if (tail) {
		const char *nl = memchr(buf, '\n', len);
		len = nl ? len - (size_t)(nl + 1 - buf) : 0;
		in = nl ? nl + 1 : buf;
	}
	/* the decoded text is never longer than the records; the slack is the decoder's */
	size_t cap = len + PVG_CTRLOG_SLACK + 1;
	_cleanup_free_ char *out = pvg_xcalloc(cap, 1);
	struct pvg_ctrlog d;
	pvg_ctrlog_init(&d, kind, 16);
	size_t w = 0, i = 0;
	while (i < len) {
		size_t produced = 0;
		size_t used = pvg_ctrlog_decode(&d, in + i, len - i, out + w, cap - 1 - w, &produced);
		w += produced;
		i += used;
		pvg_ctrlog_drop_before(&d, d.out_pos);
		if (!used && !produced)
			break;
	}
	w += pvg_ctrlog_finish(&d, out + w, cap - 1 - w);
	pvg_ctrlog_done(&d);
	memcpy(buf, out, w);
	buf[w] = '\0';
	*n = (ssize_t)w;
}

/* The word before "selected=" (past other key=value fields) in the log's last MiB; a
 * container runtime's log is read as the service's lines it holds. */
static char *guess_prefix(const char *log)
{
	struct stat st;
	_cleanup_close_ int fd = pvg_open_regular(log, &st);
	if (fd < 0)
		return NULL;
	size_t want = st.st_size > (1 << 20) ? (1 << 20) : (size_t)st.st_size;
	_cleanup_free_ char *buf = pvg_xcalloc(want + 1, 1);
	ssize_t n = pread(fd, buf, want, st.st_size - (off_t)want);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	decode_runtime_log(fd, (off_t)want < st.st_size, buf, &n);
	for (char *p = buf; (p = strstr(p, " selected=")); p++) {
		char *e = p; /* end of the word before */
		for (;;) {
			char *s = e;
			while (s > buf && s[-1] != ' ' && s[-1] != '\n')
				s--;
			if (s == e)
				break;
			if (memchr(s, '=', (size_t)(e - s))) { /* another field: go on left */
				e = s > buf ? s - 1 : s;
				if (e == s)
					break;
				continue;
			}
			bool ok = e - s >= 3 && e - s < 64;
			bool upper = false;
			for (char *q = s; q < e && ok; q++) {
				ok = (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
				     (*q >= '0' && *q <= '9') || *q == '_' || *q == ':' || *q == '-';
				upper |= (*q >= 'A' && *q <= 'Z') || *q == '_';
			}
			if (ok && upper)
				return pvg_asprintf("%.*s", (int)(e - s), s);
			break;
		}
	}
	return NULL;
}

/* A service that opens its log for each line holds no descriptor of it: the newest *.log
 * under the folder (not the build log) whose last MiB holds a "selected=" marker line. */
struct marker_log_pick {
	const char *build_log;
	char *path;
	struct timespec mtime;
};

static void consider_marker_log(void *opaque, const char *path, const struct stat *st)
{
	struct marker_log_pick *m = opaque;
	size_t n = strlen(path);
	if (n < 5 || strcmp(path + n - 4, ".log") != 0 ||
	    (m->build_log && strcmp(path, m->build_log) == 0))
		return;
	if (m->path && (st->st_mtim.tv_sec < m->mtime.tv_sec ||
			(st->st_mtim.tv_sec == m->mtime.tv_sec &&
			 st->st_mtim.tv_nsec <= m->mtime.tv_nsec)))
		return;
	_cleanup_free_ char *prefix = guess_prefix(path);
	if (!prefix)
		return;
	free(m->path);
	m->path = pvg_strdup(path);
	m->mtime = st->st_mtim;
}

static void find_marker_log(struct pvg_discovery *g)
{
	struct marker_log_pick m = { .build_log = g->build_log };
	size_t budget = WALK_MAX_ENTRIES;
	walk(g->dir, WALK_DEPTH, consider_marker_log, &m, &budget);
	if (m.path) {
		g->service_log = m.path;
		note(g, "markers.log %s: the newest log with marker lines (the service holds no log "
			"open: check that it is the one it writes)", rel_to(g->dir, g->service_log));
	}
}

/* site-packages/a/b/_C.abi3.so -> "a.b._C", when it is under a site folder */
static char *module_of(const char *installed)
{
	const char *sp = strstr(installed, "/site-packages/");
	if (!sp)
		sp = strstr(installed, "/dist-packages/");
	if (!sp)
		return NULL;
	char *mod = pvg_strdup(strchr(sp + 1, '/') + 1);
	char *dot = strchr(strrchr(mod, '/') ? strrchr(mod, '/') : mod, '.');
	if (dot)
		*dot = '\0';
	for (char *c = mod; *c; c++)
		if (*c == '/')
			*c = '.';
	return mod;
}

/* site-packages/a/b/_C.abi3.so -> "a.b._C" and the venv's python */
static void python_of(struct pvg_discovery *g, const char *installed)
{
	const char *sp = strstr(installed, "/site-packages/");
	if (!sp)
		sp = strstr(installed, "/dist-packages/");
	if (!sp)
		return;
	_cleanup_free_ char *root = pvg_asprintf("%.*s", (int)(sp - installed), installed);
	/* root is <venv>/lib/pythonX.Y */
	char *l = strrchr(root, '/');
	if (!l)
		return;
	*l = '\0';
	l = strrchr(root, '/');
	if (!l)
		return;
	*l = '\0';
	_cleanup_free_ char *py = pvg_asprintf("%s/bin/python3", root);
	_cleanup_free_ char *cfg = pvg_asprintf("%s/pyvenv.cfg", root);
	if (!is_file(py))
		return;
	_cleanup_free_ char *mod = module_of(installed);
	if (!mod)
		return;
	g->python = TAKE_PTR(py);
	g->python_module = TAKE_PTR(mod);
	note(g, "install.python_module %s, resolved by %s%s", g->python_module,
	     rel_to(g->dir, g->python), is_file(cfg) ? " (a venv)" : "");
	/* SPEC §11: an interpreter another user can change is only ever read, never run */
	_cleanup_free_ char *what = NULL;
	uid_t owner = 0;
	if (pvg_python_writable_by_others(g->python, &what, &owner) == 1) {
		struct passwd *pw = owner ? getpwuid(owner) : NULL;
		_cleanup_free_ char *who =
			!owner ? pvg_strdup("users other than root (group or others may write it)")
			: pw   ? pvg_asprintf("user %s (uid %u)", pw->pw_name, (unsigned)owner)
			       : pvg_asprintf("uid %u", (unsigned)owner);
		note(g, "install.python %s can be changed by %s, through %s: provgate never runs "
			"it; it resolves install.python_module by reading the files of that "
			"installation (pyvenv.cfg, site-packages, the path lines of .pth files, "
			"setuptools' editable finders as data), so a .pth import line or another "
			"import hook there is not followed",
		     rel_to(g->dir, g->python), who, rel_to(g->dir, what));
	}
}

/* Log files the command line names: the value of an option about a log ("--log-file X",
 * "--log=X", "--log X"; not "--log-level", nor a logging config), or an argument that is a
 * *.log; relative ones from the process's folder. Only existing regular files. */
static void logs_named_on(const char *procfs, pid_t pid, const struct pvg_strv *argv,
			  const char *build_log, struct pvg_strv *out)
{
	_cleanup_free_ char *cwd = NULL;
	bool cwd_read = false;
	for (size_t i = 1; i < argv->n; i++) {
		const char *a = argv->v[i], *val = NULL;
		if (a[0] == '-') {
			const char *eq = strchr(a, '=');
			_cleanup_free_ char *opt = pvg_asprintf("%.*s", (int)(eq ? eq - a : (ptrdiff_t)strlen(a)), a);
			if (!strstr(opt, "log") || strstr(opt, "level") || strstr(opt, "conf") ||
			    strstr(opt, "format") || strstr(opt, "stats"))
				continue;
			val = eq ? eq + 1 : i + 1 < argv->n ? argv->v[i + 1] : NULL;
		} else {
			size_t n = strlen(a);
			if (n > 4 && strcmp(a + n - 4, ".log") == 0)
				val = a;
		}
		if (!val || !val[0])
			continue;
		if (val[0] != '/' && !cwd_read) {
			cwd = pvg_probe_cwd(procfs, pid);
			cwd_read = true;
		}
		if (val[0] != '/' && !cwd)
			continue;
		_cleanup_free_ char *path = val[0] == '/' ? pvg_strdup(val) : pvg_path_join(cwd, val);
		char real[PATH_MAX];
		if (!realpath(path, real) || !is_file(real) || (build_log && strcmp(real, build_log) == 0))
			continue;
		pvg_strv_add_unique(out, real);
	}
}

static bool ends_with_log(const char *path)
{
	size_t n = strlen(path);
	return n > 4 && strcmp(path + n - 4, ".log") == 0;
}

static void find_service(struct pvg_discovery *g, const char *procfs)
{
	if (!g->artifact)
		return;
	const char *name = pvg_basename(g->artifact);
	struct pvg_probe_procs ms = { 0 };
	if (pvg_probe_mappers(procfs, name, &ms) < 0 || ms.n == 0) {
		todo(g, "service.match: no running process maps %s; start the service, warm it up, "
			"and run init again (or set service.match)", name);
		pvg_probe_procs_clear(&ms);
		return;
	}
	/* Several processes may map a file of that name: the service's engine and workers, a
	 * stale engine of an earlier run, another service. The service maps the build's bytes,
	 * then a copy under the folder; of those, the one that owns a port (itself or an
	 * ancestor: the API server) is the service and the others stale; among those the
	 * topmost (its parent maps nothing of it). */
	struct pvg_file_id build_id;
	pvg_hash_file(g->artifact, &build_id);
	_cleanup_free_ int *score = pvg_xcalloc(ms.n, sizeof(int));
	_cleanup_free_ struct tree_view *tree = pvg_xcalloc(ms.n, sizeof(*tree));
	size_t top = SIZE_MAX;
	int best = -1;
	for (size_t i = 0; i < ms.n; i++) {
		struct pvg_file_id id;
		struct stat a, b;
		tree_of(procfs, &ms.p[i], &tree[i]);
		if (tree[i].port)
			score[i] += 2;
		if (!ms.p[i].deleted && build_id.hashed && stat(ms.p[i].mapped, &a) == 0 &&
		    stat(g->artifact, &b) == 0 && a.st_size == b.st_size) {
			pvg_hash_file(ms.p[i].mapped, &id);
			if (id.hashed && memcmp(id.sha256, build_id.sha256, 32) == 0)
				score[i] += 8;
			pvg_file_id_clear(&id);
		}
		if (under(g->dir, ms.p[i].mapped))
			score[i] += 4;
		if (!is_mapper(&ms, ms.p[i].ppid))
			score[i] += 1;
		if (score[i] > best) {
			best = score[i];
			top = i;
		}
	}
	pvg_file_id_clear(&build_id);
	g->n_mappers = ms.n;
	/* as good a candidate in another tree: two services, or a stale one nothing sets apart;
	 * which is the service is the user's to say, never a guess */
	size_t n_tied = 0;
	for (size_t i = 0; i < ms.n; i++)
		n_tied += score[i] == best && tree[i].root != tree[top].root;
	if (n_tied) {
		_cleanup_free_ char *list = NULL;
		for (size_t i = 0; i < ms.n; i++) {
			if (score[i] != best)
				continue;
			struct identity id;
			identity_of(&ms.p[i], &id);
			char port[16] = "no port";
			if (tree[i].port)
				snprintf(port, sizeof(port), "port %u", tree[i].port);
			char *l = pvg_asprintf("%s%spid %d (%s, %s, maps %s%s)", list ? list : "",
					       list ? "; " : "", (int)ms.p[i].pid, id.match, port,
					       ms.p[i].mapped, ms.p[i].deleted ? " (deleted)" : "");
			free(list);
			list = l;
			identity_clear(&id);
		}
		todo(g, "service: %zu processes in different trees map %s and nothing tells which is "
			"the service (none alone owns a port or maps the build's bytes): %s; stop the "
			"stale ones and run init again, or set service.match (or service.pid / "
			"service.pidfile) and service.port",
		     n_tied + 1, name, list);
		pvg_probe_procs_clear(&ms);
		return;
	}
	g->service = ms.p[top];
	memset(&ms.p[top], 0, sizeof(ms.p[top]));
	const struct tree_view own = tree[top];
	struct pvg_probe_proc *s = &g->service;
	struct identity id;
	identity_of(s, &id);
	g->match = TAKE_PTR(id.match);
	pvg_strv_push(&g->family, TAKE_PTR(id.family));
	note(g, "service: process %d (%s) maps %s%s; service.match is its %s %s, service.family "
		"every process of that kind (%s)",
	     (int)s->pid, s->comm, s->mapped, s->deleted ? " (deleted: restart it after the install)" : "",
	     id.what, g->match, g->family.v[0]);
	/* the others of its kind outside its tree: what gate 5 will refuse */
	_cleanup_free_ char *others = NULL;
	size_t n_others = 0;
	for (size_t i = 0; i < ms.n; i++) {
		if (i == top || tree[i].root == own.root)
			continue;
		struct identity o;
		identity_of(&ms.p[i], &o);
		if (strcmp(o.family, g->family.v[0]) == 0) {
			char *l = pvg_asprintf("%s%s%d", others ? others : "", others ? ", " : "",
					       (int)ms.p[i].pid);
			free(others);
			others = l;
			n_others++;
		}
		identity_clear(&o);
	}
	if (n_others)
		note(g, "service: %zu other process%s of that kind map%s %s outside its tree (pid %s); "
			"it was taken for %s; gate 5 refuses the others until they are stopped",
		     n_others, n_others == 1 ? "" : "es", n_others == 1 ? "s" : "", name, others,
		     own.port ? "owning the port" : "mapping the build's bytes");
	pvg_probe_procs_clear(&ms);
	/* the copy it maps is the installed one, unless it loads the build tree's own */
	char real_art[PATH_MAX];
	if (!realpath(g->artifact, real_art) || strcmp(real_art, s->mapped) != 0)
		g->installed = pvg_strdup(s->mapped);
	else
		todo(g, "install: the service loads the build tree's %s itself; install it and "
			"restart the service", name);
	/* port and log: the process, then its ancestors up to a shell */
	pid_t pid = s->pid;
	struct pvg_strv logs = { 0 }, named = { 0 }, written = { 0 };
	for (int depth = 0; depth < 8 && pid > 1; depth++) {
		struct pvg_probe_proc p;
		if (depth == 0) {
			p = (struct pvg_probe_proc){ .pid = s->pid, .ppid = s->ppid };
			memcpy(p.comm, s->comm, sizeof(p.comm));
		} else if (pvg_probe_proc_read(procfs, pid, &p) < 0 || generic_ancestor(&p)) {
			pvg_probe_proc_clear(&p);
			break;
		}
		/* the port, and the topmost ancestor that listens too (an API server whose
		 * engine inherited the socket): it must be a service process for gate 5 */
		if (depth == 0 && own.port) {
			g->port = own.port;
			if (own.port_owner == s->pid)
				note(g, "service.port %u: the service process listens on it", own.port);
		}
		if (own.port && p.pid == own.port_owner && depth > 0) {
			struct identity a;
			identity_of(&p, &a);
			pvg_strv_add_unique(&g->family, a.family);
			note(g, "service.port %u: process %d (%s), its ancestor, listens on it; "
				"service.family names its %s %s", own.port, (int)p.pid, p.comm, a.what,
			     a.family);
			identity_clear(&a);
		}
		logs_named_on(procfs, p.pid, depth ? &p.argv : &s->argv, g->build_log, &named);
		pvg_probe_written_files(procfs, p.pid, &written);
		pvg_probe_log_paths(procfs, p.pid, &logs);
		pid = p.ppid;
		if (depth > 0)
			pvg_probe_proc_clear(&p);
	}
	/* a containerized service writes to stdout, and the log is the one its engine keeps
	 * (its monitor holds it open, so it is among the logs above): named "container", which
	 * outlives this container's id */
	_cleanup_(pvg_container_log_clear) struct pvg_container_log cl = { 0 };
	bool in_ctr = pvg_container_log_find(procfs, "/", s->pid, &cl) == 0 && cl.in_container;
	_cleanup_free_ char *ctr_real = cl.path ? realpath(cl.path, NULL) : NULL;
	/* where the service writes, best first: the log its command line names, a file it holds
	 * open for writing, its stdout and stderr (and *.log files it holds open) */
	struct pvg_strv all = { 0 };
	for (int k = 0; k < 3; k++) {
		const struct pvg_strv *v = k == 0 ? &named : k == 1 ? &written : &logs;
		for (size_t i = 0; i < v->n; i++) {
			_cleanup_free_ char *r = realpath(v->v[i], NULL);
			if ((ctr_real && r && strcmp(r, ctr_real) == 0) ||
			    (g->build_log && r && strcmp(r, g->build_log) == 0))
				continue;
			pvg_strv_add_unique(&all, v->v[i]);
		}
	}
	/* the first that holds marker lines; else the container's; else the log its command
	 * line names or a *.log it writes; else one under the folder with marker lines; else
	 * its stdout */
	for (size_t i = 0; i < all.n && !g->service_log; i++) {
		_cleanup_free_ char *pfx = guess_prefix(all.v[i]);
		if (pfx)
			g->service_log = pvg_strdup(all.v[i]);
	}
	const char *why = NULL;
	if (g->service_log)
		why = pvg_strv_has(&named, g->service_log)     ? "its command line names it"
		      : pvg_strv_has(&written, g->service_log) ? "the service holds it open for writing"
							       : "the service writes it";
	if (g->service_log) {
		note(g, "markers.log %s: %s, and it holds marker lines", rel_to(g->dir, g->service_log),
		     why);
	} else if (ctr_real) {
		g->service_log = pvg_strdup(PVG_LOG_CONTAINER);
		note(g, "markers.log container: the log %s keeps of the service's container "
			"(%s, from %s)", cl.container.engine, cl.path, cl.how);
	} else {
		for (size_t i = 0; i < all.n && !g->service_log; i++) {
			bool is_named = pvg_strv_has(&named, all.v[i]);
			if (is_named || (pvg_strv_has(&written, all.v[i]) && ends_with_log(all.v[i]))) {
				g->service_log = pvg_strdup(all.v[i]);
				note(g, "markers.log %s: %s (no marker line in it yet)",
				     rel_to(g->dir, g->service_log),
				     is_named ? "its command line names it"
					      : "the service holds it open for writing");
			}
		}
		if (!g->service_log)
			find_marker_log(g);
	}
	if (!g->service_log && logs.n) {
		for (size_t i = 0; i < all.n && !g->service_log; i++)
			if (pvg_strv_has(&logs, all.v[i]))
				g->service_log = pvg_strdup(all.v[i]);
		if (g->service_log)
			note(g, "markers.log %s: the service writes it (no marker line in it yet)",
			     rel_to(g->dir, g->service_log));
	}
	pvg_strv_clear(&logs);
	pvg_strv_clear(&named);
	pvg_strv_clear(&written);
	pvg_strv_clear(&all);
	if (!g->service_log && in_ctr)
		todo(g, "markers.log: the service runs in %s container %.12s, whose log provgate "
			"cannot read: %s; %s", cl.container.engine, cl.container.id,
		     cl.why.text ? cl.why.text : "no file", cl.why.hint ? cl.why.hint : "set markers.log");
	/* the file read for the prefix ("container" is set only with one) */
	const char *log_file = g->service_log && strcmp(g->service_log, PVG_LOG_CONTAINER) == 0
				       ? ctr_real
				       : g->service_log;
	if (g->service_log) {
		g->prefix = guess_prefix(log_file);
		if (g->prefix)
			note(g, "markers.prefix %s: the word before selected= in the log", g->prefix);
		else
			todo(g, "markers.prefix: no \"PREFIX ... selected=...\" line in %s; set the "
				"prefix your kernel prints when it is dispatched",
			     rel_to(g->dir, log_file));
	} else if (!in_ctr) {
		todo(g, "markers.log: the service writes no regular file on stdout or stderr and "
			"holds no *.log open; redirect its output to a file and set markers.log");
	}
	if (!g->port)
		note(g, "service.port: the service listens on no TCP port (left out)");
}

/* ---- install ------------------------------------------------------------------------------ */

struct same_name {
	const char *name, *artifact;
	char *found;
};

static void consider_copy(void *opaque, const char *path, const struct stat *st)
{
	struct same_name *s = opaque;
	(void)st;
	if (s->found || strcmp(pvg_basename(path), s->name) != 0)
		return;
	char real[PATH_MAX];
	if (realpath(path, real) && strcmp(real, s->artifact) != 0)
		s->found = pvg_strdup(real);
}

static void find_install(struct pvg_discovery *g)
{
	if (!g->artifact)
		return;
	if (!g->installed) {
		/* no service told: another file of the artifact's name under the folder */
		struct same_name s = { .name = pvg_basename(g->artifact), .artifact = g->artifact };
		size_t budget = WALK_MAX_ENTRIES;
		walk(g->dir, WALK_DEPTH, consider_copy, &s, &budget);
		g->installed = s.found;
	}
	if (!g->installed) {
		todo(g, "install.artifact: no installed copy of %s was found; set install.artifact "
			"(or install.python_module with install.python)",
		     pvg_basename(g->artifact));
		return;
	}
	note(g, "installed artifact %s", rel_to(g->dir, g->installed));
	python_of(g, g->installed);
	/* the package folder: installed beside a folder of the repo with the same name */
	if (!g->workdir)
		return;
	_cleanup_free_ char *pkgdir = pvg_strdup(g->installed);
	*strrchr(pkgdir, '/') = '\0';
	const char *pkg = pvg_basename(pkgdir);
	_cleanup_free_ char *in_repo = pvg_path_join(g->workdir, pkg);
	struct stat st;
	if (stat(in_repo, &st) == 0 && S_ISDIR(st.st_mode)) {
		g->map_from = pvg_asprintf("%s/", pkg);
		g->map_to = pvg_asprintf("%s/", pkgdir);
		note(g, "source.install_map %s -> %s (the repo's package folder of that name)",
		     g->map_from, rel_to(g->dir, g->map_to));
	} else {
		todo(g, "source.install_map: map the repo's runtime files (Python) to where they are "
			"installed (%s?)", rel_to(g->dir, pkgdir));
	}
}

/* ---- the change set: what is no runtime file ------------------------------------------- */

/* files that are no runtime file: documentation, tests, and build files (what they build is
 * proven by gates 1, 3 and 6) */
static const char *const not_runtime[] = {
	"docs/**", "**/*.md", "**/*.rst", ".github/**", ".gitignore", "tests/**", "test/**",
	"pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in", "**/CMakeLists.txt",
	"**/*.cmake",
};

/* The changed .py files that define Triton kernels (their content in the work tree): JIT
 * device code, whose kernels gate 7 requires as it does a .cu's (SPEC 12). One that imports
 * triton and in which none is recognised is a todo: gate 7 requires nothing of it. */
static void changed_triton_sources(struct pvg_discovery *g, const struct pvg_scope *s)
{
	if (!g->workdir)
		return;
	for (size_t i = 0; i < s->n; i++) {
		const struct pvg_change *c = &s->changes[i];
		size_t n = strlen(c->path);
		if (c->kind == 'D' || c->submodule || n < 4 || strcmp(c->path + n - 3, ".py") != 0)
			continue;
		_cleanup_free_ char *path = pvg_path_join(g->workdir, c->path);
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		struct pvg_strv k = { 0 };
		bool imports = false;
		if (pvg_read_file(path, PVG_TRITON_MAX_SOURCE, &text, &len) == 0)
			pvg_triton_py_scan(text, len, &k, &imports);
		if (!k.n && imports)
			todo(g, "witness.changed_sources %s: it imports triton, but no Triton kernel "
				"was recognised in it (@triton.jit, @triton.autotune, "
				"@triton.heuristics, an alias, k = triton.jit(fn)); gate 7 requires "
				"nothing of it: if it defines kernels, name them (\"%s\": "
				"{\"kernels\": [...]})",
			     c->path, c->path);
		if (!k.n)
			continue;
		g->sources = pvg_xrealloc(g->sources, g->n_sources + 1, sizeof(*g->sources));
		struct pvg_discovered_source *ds = &g->sources[g->n_sources++];
		memset(ds, 0, sizeof(*ds));
		ds->path = pvg_strdup(c->path);
		ds->kernels = k;
		note(g, "witness.changed_sources %s: %zu @triton.jit kernel%s (gate 7 requires one "
			"launched from a fresh Triton cache entry of the installed file once witness.dir "
			"is set)",
		     ds->path, k.n, k.n == 1 ? "" : "s");
	}
}

/* The changed .cu/.hip sources and the kernels of g->arch in the objects the build log
 * compiled from each (gate 7 requires them once a witness records). */
static void changed_device_sources(struct pvg_discovery *g, const struct pvg_scope *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += s->changes[i].kind != 'D' && pvg_is_device_source(s->changes[i].path);
	if (!n)
		return;
	struct pvg_buildlog log;
	struct pvg_linkgraph lg = { 0 };
	struct pvg_strv roots = { 0 };
	pvg_buildlog_init(&log);
	bool have_log = g->build_log && g->arch && pvg_buildlog_read_file(&log, g->build_log) == 0;
	if (have_log) {
		pvg_linkgraph_build(&log, &lg);
		for (size_t i = 0; i < log.dirs.n; i++)
			if (log.dirs.v[i][0] == '/')
				pvg_strv_add_unique(&roots, log.dirs.v[i]);
		for (size_t i = 0; i < lg.n_compiles && roots.n < 16; i++)
			if (lg.compiles[i].dir && lg.compiles[i].dir[0] == '/')
				pvg_strv_add_unique(&roots, lg.compiles[i].dir);
		if (g->artifact) {
			_cleanup_free_ char *d = pvg_strdup(g->artifact);
			char *slash = strrchr(d, '/');
			if (slash && slash != d) {
				*slash = '\0';
				pvg_strv_add_unique(&roots, d);
			}
		}
	}
	g->sources = pvg_xcalloc(n, sizeof(*g->sources));
	for (size_t i = 0; i < s->n; i++) {
		const struct pvg_change *c = &s->changes[i];
		if (c->kind == 'D' || !pvg_is_device_source(c->path))
			continue;
		struct pvg_discovered_source *ds = &g->sources[g->n_sources++];
		ds->path = pvg_strdup(c->path);
		if (!have_log) {
			ds->why = pvg_strdup(!g->build_log ? "no build log found" : !g->arch ? "no arch found"
								 : "the build log cannot be read");
			continue;
		}
		struct pvg_source_kernels k;
		pvg_source_kernels_read(&log, &lg, &roots, g->workdir, c->path, g->arch, &k);
		if (k.err)
			ds->why = pvg_strdup(k.why);
		else if (!k.kernels.n)
			ds->why = pvg_strdup("its objects define no kernel");
		for (size_t j = 0; j < k.kernels.n; j++)
			pvg_strv_push(&ds->kernels, pvg_strdup(k.kernels.v[j]));
		pvg_source_kernels_clear(&k);
		if (ds->kernels.n)
			note(g, "witness.changed_sources %s: %zu kernel%s for %s in the objects the build "
				"log compiled from it (gate 7 requires one launched from the artifact "
				"once witness.dir is set)",
			     ds->path, ds->kernels.n, ds->kernels.n == 1 ? "" : "s", g->arch);
		else if (k.err || !have_log)
			todo(g, "witness.changed_sources %s: its kernels are not known (%s): name them, "
				"or exempt it with the reason",
			     ds->path, ds->why);
	}
	pvg_strv_clear(&roots);
	pvg_linkgraph_done(&lg);
	pvg_buildlog_done(&log);
}

static void classify_changes(struct pvg_discovery *g, const char *procfs)
{
	if (!g->workdir || !g->baseline)
		return;
	/* the build folder inside the repo is build state */
	if (g->artifact && under(g->workdir, g->artifact)) {
		const char *rel = rel_to(g->workdir, g->artifact);
		const char *slash = strchr(rel, '/');
		if (slash) {
			char *glob = pvg_asprintf("%.*s/**", (int)(slash - rel), rel);
			note(g, "source.ignore %s: the build folder is inside the repo", glob);
			pvg_strv_push(&g->ignore, glob);
		}
	}
	struct pvg_source_spec src = { .repo = g->workdir, .baseline = g->baseline,
				       .include_uncommitted = true, .compiled = g->compiled,
				       .ignore = g->ignore };
	struct pvg_install_map map = { .from = g->map_from, .to = g->map_to };
	if (g->map_from) {
		src.install_map = &map;
		src.n_install_map = 1;
	}
	const struct pvg_scope_own own = { .build_artifact = g->artifact };
	struct pvg_scope *s = pvg_scope_compute(&src, g->workdir, &own);
	if (s->err) {
		todo(g, "source.baseline: %s", s->msg.text ? s->msg.text : strerror(-s->err));
		pvg_scope_free(s);
		return;
	}
	size_t unknown = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct pvg_change *c = &s->changes[i];
		if (c->cls != PVG_SCOPE_UNKNOWN)
			continue;
		bool placed = false;
		for (size_t k = 0; k < ARRAY_SIZE(not_runtime) && !placed; k++)
			if (pvg_glob_match(not_runtime[k], c->path)) {
				if (!pvg_strv_has(&g->ignore, not_runtime[k]))
					pvg_strv_push(&g->ignore, pvg_strdup(not_runtime[k]));
				placed = true;
			}
		if (!placed && unknown++ < 10)
			todo(g, "source: changed file %s is neither compiled, mapped nor ignored: add it "
				"to source.install_map, source.compiled or source.ignore",
			     c->path);
	}
	if (unknown > 10)
		todo(g, "source: ... and %zu more changed files like that", unknown - 10);
	note(g, "%zu files changed since %s (merge base %.12s)", s->n, g->baseline, s->merge_base);
	changed_device_sources(g, s);
	changed_triton_sources(g, s);
	pvg_discover_compile_cache(g, procfs, s);
	if (s->n == 0)
		todo(g, "source.baseline: nothing changed since %s; set the branch your change is "
			"based on", g->baseline);
	pvg_scope_free(s);
}

const char *pvg_discovery_rel(const struct pvg_discovery *d, const char *path)
{
	return rel_to(d->dir, path);
}

/* The checkout: dir itself, or a repository one level down. */
static void find_checkout(struct pvg_discovery *g)
{
	struct stat st;
	if (pvg_probe_git(g->dir, &g->workdir, &g->baseline, &g->branch) < 0) {
		free(g->workdir);
		free(g->baseline);
		free(g->branch);
		g->workdir = g->baseline = g->branch = NULL;
		DIR *d = opendir(g->dir);
		struct dirent *de;
		while (d && !g->workdir && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			_cleanup_free_ char *sub = pvg_path_join(g->dir, de->d_name);
			_cleanup_free_ char *dotgit = pvg_path_join(sub, ".git");
			if (lstat(dotgit, &st) == 0 &&
			    pvg_probe_git(sub, &g->workdir, &g->baseline, &g->branch) < 0) {
				free(g->workdir);
				free(g->baseline);
				free(g->branch);
				g->workdir = g->baseline = g->branch = NULL;
			}
		}
		if (d)
			closedir(d);
	}
	if (!g->workdir)
		todo(g, "source.repo: no git checkout in %s or one level down", g->dir);
	else if (!g->baseline)
		todo(g, "source.baseline: no origin/HEAD, origin/main, origin/master, main or master "
			"other than the branch checked out; set the branch your change is based on");
	else
		note(g, "git checkout %s on %s; baseline %s", rel_to(g->dir, g->workdir),
		     g->branch ? g->branch : "a detached HEAD", g->baseline);
}

/* ---- the log's other shared objects ------------------------------------------------------- */

/* Is pid the service process, or one of its descendants or ancestors up to a shell? */
static bool in_service_tree(const char *procfs, const struct pvg_discovery *g, pid_t pid)
{
	if (!g->service.pid)
		return false;
	for (int depth = 0; depth < 16 && pid > 1; depth++) {
		if (pid == g->service.pid || pid == g->service.ppid)
			return true;
		struct pvg_probe_proc p;
		if (pvg_probe_proc_read(procfs, pid, &p) < 0)
			return false;
		pid = p.ppid;
		pvg_probe_proc_clear(&p);
	}
	return false;
}

/* The other shared objects the picked log links, resolved on disk (g->more, not placed yet);
 * one that is not on disk is a todo. */
static void collect_outputs(struct pvg_discovery *g, const struct pvg_buildlog *l)
{
	struct pvg_linkgraph lg;
	pvg_linkgraph_build(l, &lg);
	const char *first = pvg_basename(g->artifact);
	for (size_t i = 0; i < lg.n_links; i++) {
		const struct pvg_link_step *st = &lg.links[i];
		if (st->kind != PVG_LINK_SHARED || !st->last ||
		    strcmp(pvg_basename(st->output), first) == 0)
			continue;
		_cleanup_free_ char *joined = st->dir && st->output[0] != '/'
						      ? pvg_path_join(st->dir, st->output)
						      : pvg_strdup(st->output);
		char *build = resolve_output(g->dir, g->build_log, joined);
		if (!build) {
			todo(g, "artifacts: the build log links %s too, which was not found on disk; "
				"add an artifacts entry for it if the service loads it",
			     pvg_basename(st->output));
			continue;
		}
		bool dup = false;
		for (size_t k = 0; k < g->n_more; k++)
			dup |= strcmp(g->more[k].build, build) == 0;
		if (dup) {
			free(build);
			continue;
		}
		g->more = pvg_xrealloc(g->more, g->n_more + 1, sizeof(*g->more));
		struct pvg_discovered_artifact *a = &g->more[g->n_more++];
		memset(a, 0, sizeof(*a));
		char name[128];
		pvg_artifact_default_name(build, name, sizeof(name));
		a->name = pvg_strdup(name);
		a->build = build;
	}
	pvg_linkgraph_done(&lg);
}

/* The log's last link output may be an extension the service does not load: then the first
 * one it does map is the artifact the service is found by. */
static void prefer_mapped_output(struct pvg_discovery *g, const char *procfs)
{
	if (!g->artifact || g->n_more == 0)
		return;
	struct pvg_probe_procs ms = { 0 };
	bool mapped = pvg_probe_mappers(procfs, pvg_basename(g->artifact), &ms) == 0 && ms.n > 0;
	pvg_probe_procs_clear(&ms);
	for (size_t i = 0; !mapped && i < g->n_more; i++) {
		mapped = pvg_probe_mappers(procfs, pvg_basename(g->more[i].build), &ms) == 0 &&
			 ms.n > 0;
		pvg_probe_procs_clear(&ms);
		if (!mapped)
			continue;
		note(g, "artifact %s: no process maps the log's last link output %s, one maps %s",
		     g->more[i].name, pvg_basename(g->artifact), pvg_basename(g->more[i].build));
		char *b = g->artifact;
		g->artifact = g->more[i].build;
		g->more[i].build = b;
		char name[128];
		pvg_artifact_default_name(b, name, sizeof(name));
		free(g->more[i].name);
		g->more[i].name = pvg_strdup(name);
	}
}

/* Every other shared object the log links is an artifact too when the service tree maps an
 * installed copy of it: proposed in artifacts[]; one it does not map is named in a todo,
 * never left out silently. */
static void place_more_artifacts(struct pvg_discovery *g, const char *procfs)
{
	for (size_t i = 0; i < g->n_more; i++) {
		struct pvg_discovered_artifact *a = &g->more[i];
		const char *fname = pvg_basename(a->build);
		struct pvg_probe_procs ms = { 0 };
		if (g->service.pid && pvg_probe_mappers(procfs, fname, &ms) == 0) {
			for (size_t k = 0; k < ms.n && !a->installed; k++) {
				char real[PATH_MAX];
				if (ms.p[k].deleted || !in_service_tree(procfs, g, ms.p[k].pid))
					continue;
				if (realpath(a->build, real) && strcmp(real, ms.p[k].mapped) == 0)
					continue; /* the build tree's own copy */
				a->installed = pvg_strdup(ms.p[k].mapped);
			}
		}
		pvg_probe_procs_clear(&ms);
		if (!a->installed) {
			todo(g, "artifacts: the build log links %s too, but the service maps no "
				"installed copy of it; install it and warm the service up, then add "
				"{\"name\": \"%s\", \"build\": \"%s\", \"install\": ...} to artifacts, "
				"or leave it out if no changed source goes into it (gate 1 says so)",
			     fname, a->name, rel_to(g->dir, a->build));
			continue;
		}
		if (g->python_module)
			a->python_module = module_of(a->installed);
		note(g, "artifact %s: the log links %s too and the service maps %s", a->name,
		     rel_to(g->dir, a->build), rel_to(g->dir, a->installed));
	}
}

/* The Triton caches the service's environment names (what gate 7 reads at check time to
 * find the entries of JIT modules loaded from memory, provgate-witness(7)): listed, so that
 * a folder it does not name (vLLM sets TRITON_CACHE_DIR at run time, in its workers) can be
 * added to witness.triton_caches. The values are the service user's: quoted as text only. */
static void find_triton(struct pvg_discovery *g, const char *procfs)
{
	if (!g->service.pid)
		return;
	static const char *const vars[] = { "TRITON_CACHE_DIR", "TRITON_HOME", "VLLM_CACHE_ROOT" };
	_cleanup_free_ char *seen = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		_cleanup_free_ char *v = NULL;
		if (pvg_proc_getenv(procfs, g->service.pid, vars[i], &v) < 0 || !v || !v[0])
			continue;
		_cleanup_free_ char *t = pvg_utf8_sanitize(v, strlen(v));
		char *n = pvg_asprintf("%s%s%s=%s", seen ? seen : "", seen ? ", " : "", vars[i], t);
		free(seen);
		seen = n;
	}
	if (seen)
		note(g, "Triton caches: the service's environment names %s; gate 7 looks there (and "
			"in HOME/.triton/cache) for the entries of JIT modules; a folder it uses "
			"that its environment does not name goes in witness.triton_caches",
		     seen);
}

void pvg_discover(const char *dir, const char *procfs, struct pvg_discovery *g)
{
	memset(g, 0, sizeof(*g));
	g->dir = pvg_strdup(dir);
	find_checkout(g);
	find_build(g);
	prefer_mapped_output(g, procfs ? procfs : pvg_procfs_root());
	find_service(g, procfs ? procfs : pvg_procfs_root());
	find_triton(g, procfs ? procfs : pvg_procfs_root());
	find_install(g);
	place_more_artifacts(g, procfs ? procfs : pvg_procfs_root());
	find_arch(g);
	classify_changes(g, procfs ? procfs : pvg_procfs_root());
	if (!g->service_log && !g->match)
		todo(g, "markers.log and markers.prefix: the service's log and the word the kernel "
			"prints when it is dispatched");
}
