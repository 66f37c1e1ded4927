/* SPDX-License-Identifier: MIT */
/* Where a container engine keeps a container's log; see container-log.h. */
#include <dirent.h>
#include <limits.h>

#include "sys/container-log.h"
#include "sys/ns.h"

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

/* root + path, for reading engine state from the host's view or a fixture tree */
static char *rooted(const char *root, const char *path)
{
	return strcmp(root, "/") == 0 ? pvg_strdup(path) : pvg_asprintf("%s%s", root, path);
}

static int read_proc(const char *procfs, pid_t pid, const char *file, char **text, size_t *len)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%d/%s", procfs, (int)pid, file);
	int r = pvg_read_file(path, 1u << 20, text, len);
	return r == -ENOENT ? -ESRCH : r;
}

/* The parent's pid from /proc/PID/stat ("PID (COMM) S PPID ..."; comm may hold ") "). */
static pid_t parent_of(const char *procfs, pid_t pid)
{
	_cleanup_free_ char *stat = NULL;
	size_t len = 0;
	if (read_proc(procfs, pid, "stat", &stat, &len) < 0)
		return 0;
	const char *rp = strrchr(stat, ')');
	int ppid = 0;
	if (!rp || sscanf(rp + 1, " %*c %d", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

static bool comm_is(const char *procfs, pid_t pid, const char *name)
{
	_cleanup_free_ char *comm = NULL;
	size_t len = 0;
	if (read_proc(procfs, pid, "comm", &comm, &len) < 0)
		return false;
	comm[strcspn(comm, "\n")] = '\0';
	return strcmp(comm, name) == 0;
}

static void found(struct pvg_container_log *out, char *path, const char *driver, char *how)
{
	out->path = path;
	out->driver = pvg_strdup(driver);
	out->how = how;
}

static void no_file(struct pvg_container_log *out, const char *driver, const char *hint,
		    char *text)
{
	out->no_file = true;
	out->driver = pvg_strdup(driver);
	out->why.text = text;
	out->why.hint = hint ? pvg_strdup(hint) : NULL;
}

static void not_found(struct pvg_container_log *out, const char *hint, char *text)
{
	out->why.text = text;
	out->why.hint = hint ? pvg_strdup(hint) : NULL;
}

static const char *const HINT_NAME = "set markers.log to the container's log file (podman "
				     "inspect -f '{{.HostConfig.LogConfig.Path}}', docker inspect "
				     "-f '{{.LogPath}}'), or run provgate on the host";

/* podman, CRI-O: the monitor among the process's ancestors, and its -l argument. 1 found (out
 * filled), 0 no monitor seen. */
static int from_conmon(const char *procfs, pid_t pid, struct pvg_container_log *out)
{
	const char *id = out->container.id;
	pid_t p = pid;
	for (int depth = 0; depth < 64 && p > 1; depth++) {
		p = parent_of(procfs, p);
		if (p <= 1 || !comm_is(procfs, p, "conmon"))
			continue;
		_cleanup_free_ char *cmd = NULL;
		size_t len = 0;
		if (read_proc(procfs, p, "cmdline", &cmd, &len) < 0)
			continue;
		_cleanup_free_ char *path = NULL, *drivers = NULL;
		if (pvg_conmon_log_parse(cmd, len, id, &path, &drivers) <= 0)
			continue;
		if (path) {
			found(out, TAKE_PTR(path), "k8s-file", pvg_asprintf("conmon -l (pid %d)", (int)p));
			return 1;
		}
		bool journal = strstr(drivers, "journald") != NULL;
		no_file(out, *drivers ? drivers : "none",
			journal ? "the container logs to the journal, which provgate does not read: "
				  "start it with --log-driver k8s-file, or set markers.log to a file "
				  "the service writes"
				: "start the container with --log-driver k8s-file, or set markers.log "
				  "to a file the service writes",
			pvg_asprintf("the container's monitor (conmon, pid %d) keeps its output in no "
				     "file (log driver: %s)", (int)p, *drivers ? drivers : "none"));
		return 1;
	}
	return 0;
}

/* The docker data roots to look in: each dockerd's --data-root (or -g, --graph), the
 * daemon.json's "data-root", and the default. */
static void docker_roots(const char *procfs, const char *root, struct pvg_strv *out)
{
	_cleanup_(closedirp) DIR *d = opendir(procfs);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || !comm_is(procfs, (pid_t)pid, "dockerd"))
			continue;
		_cleanup_free_ char *cmd = NULL;
		size_t len = 0;
		if (read_proc(procfs, (pid_t)pid, "cmdline", &cmd, &len) < 0)
			continue;
		for (const char *a = cmd; a < cmd + len; a += strlen(a) + 1) {
			const char *next = a + strlen(a) + 1;
			if ((strcmp(a, "--data-root") == 0 || strcmp(a, "-g") == 0 ||
			     strcmp(a, "--graph") == 0) && next < cmd + len)
				pvg_strv_push(out, pvg_strdup(next));
			else if (strncmp(a, "--data-root=", 12) == 0)
				pvg_strv_push(out, pvg_strdup(a + 12));
		}
	}
	_cleanup_free_ char *conf = rooted(root, "/etc/docker/daemon.json");
	_cleanup_free_ char *text = NULL;
	if (pvg_read_file(conf, 1u << 20, &text, NULL) == 0) {
		_cleanup_json_ cJSON *j = cJSON_Parse(text);
		const cJSON *dr = cJSON_GetObjectItemCaseSensitive(j, "data-root");
		if (!cJSON_IsString(dr))
			dr = cJSON_GetObjectItemCaseSensitive(j, "graph");
		if (cJSON_IsString(dr) && dr->valuestring[0] == '/')
			pvg_strv_push(out, pvg_strdup(dr->valuestring));
	}
	pvg_strv_push(out, pvg_strdup("/var/lib/docker"));
}

static cJSON *read_json(const char *path)
{
	_cleanup_free_ char *text = NULL;
	if (pvg_read_file(path, 16u << 20, &text, NULL) < 0)
		return NULL;
	return cJSON_Parse(text);
}

/* docker: 1 found (out filled), 0 no data root holds the container. */
static int from_docker(const char *procfs, const char *root, struct pvg_container_log *out)
{
	const char *id = out->container.id;
	_cleanup_(pvg_strv_clear) struct pvg_strv roots = { 0 };
	docker_roots(procfs, root, &roots);
	for (size_t i = 0; i < roots.n; i++) {
		_cleanup_free_ char *dir = pvg_asprintf("%s/containers/%s", roots.v[i], id);
		_cleanup_free_ char *cfgp = pvg_asprintf("%s/config.v2.json", dir);
		_cleanup_free_ char *hostp = pvg_asprintf("%s/hostconfig.json", dir);
		_cleanup_free_ char *cfgr = rooted(root, cfgp), *hostr = rooted(root, hostp);
		_cleanup_json_ cJSON *cfg = read_json(cfgr);
		if (!cfg)
			continue;
		_cleanup_json_ cJSON *host = read_json(hostr);
		const cJSON *lc = cJSON_GetObjectItemCaseSensitive(host, "LogConfig");
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(lc, "Type");
		const cJSON *lp = cJSON_GetObjectItemCaseSensitive(cfg, "LogPath");
		const char *driver = cJSON_IsString(type) ? type->valuestring : "json-file";
		if (strcmp(driver, "json-file") == 0 && cJSON_IsString(lp) && lp->valuestring[0] == '/') {
			found(out, rooted(root, lp->valuestring), driver,
			      pvg_asprintf("%s LogPath", cfgp));
			return 1;
		}
		bool journal = strcmp(driver, "journald") == 0;
		no_file(out, driver,
			journal ? "the container logs to the journal, which provgate does not read: "
				  "start it with --log-driver json-file, or set markers.log to a file "
				  "the service writes"
				: "start the container with --log-driver json-file, or set markers.log "
				  "to a file the service writes",
			pvg_asprintf("docker keeps this container's output in no file provgate reads "
				     "(log driver %s, in %s)", driver, hostp));
		return 1;
	}
	return 0;
}

/* Kubernetes: the kubelet's link /var/log/containers/<pod>_<ns>_<ctr>-<id>.log. */
static int from_kubelet(const char *root, struct pvg_container_log *out)
{
	_cleanup_free_ char *dir = rooted(root, "/var/log/containers");
	_cleanup_(closedirp) DIR *d = opendir(dir);
	_cleanup_free_ char *tail = pvg_asprintf("-%s.log", out->container.id);
	size_t tl = strlen(tail);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l <= tl || strcmp(e->d_name + l - tl, tail) != 0)
			continue;
		_cleanup_free_ char *link = pvg_asprintf("%s/%s", dir, e->d_name);
		char *real = realpath(link, NULL);
		if (!real)
			continue;
		found(out, real, "cri", pvg_asprintf("/var/log/containers/%s", e->d_name));
		return 1;
	}
	return 0;
}

int pvg_container_log_find(const char *procfs, const char *root, pid_t pid,
			   struct pvg_container_log *out)
{
	memset(out, 0, sizeof(*out));
	int r = pvg_proc_container(procfs, pid, &out->container);
	if (r == -ESRCH || r == -ENOENT)
		return -ESRCH;
	if (r <= 0) {
		not_found(out, "set markers.log to the service's log file",
			  r < 0 ? pvg_asprintf("the cgroup of pid %d cannot be read: %s", (int)pid,
					       strerror(-r))
				: pvg_asprintf("pid %d runs in no container its cgroup names (the host, "
					       "or a private cgroup namespace)", (int)pid));
		return 0;
	}
	out->in_container = true;
	const char *engine = out->container.engine;
	bool conmon_engine = strcmp(engine, "podman") == 0 || strcmp(engine, "cri-o") == 0;
	if (conmon_engine && from_conmon(procfs, pid, out))
		return 0;
	if (strcmp(engine, "docker") == 0 && from_docker(procfs, root, out))
		return 0;
	if ((out->container.pod[0] || strcmp(engine, "containerd") == 0 ||
	     strcmp(engine, "cri-o") == 0) && from_kubelet(root, out))
		return 0;
	not_found(out, HINT_NAME,
		  pvg_asprintf("no log file of %s container %.12s was found (%s)", engine,
			       out->container.id,
			       conmon_engine ? "its monitor, conmon, is not among the service's "
					       "ancestors that provgate can see"
			       : strcmp(engine, "docker") == 0
				       ? "no docker data root provgate can read holds it"
				       : "no /var/log/containers link names it"));
	return 0;
}

void pvg_container_log_clear(struct pvg_container_log *l)
{
	free(l->path);
	free(l->driver);
	free(l->how);
	pvg_msg_clear(&l->why);
	memset(l, 0, sizeof(*l));
}
