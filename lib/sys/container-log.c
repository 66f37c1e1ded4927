/* SPDX-License-Identifier: MIT */
/* Where a container engine keeps a container's log; see container-log.h. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>

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

/* ---- who a runtime is (SPEC §11: believed by owner, not by name) ---------------------- */

/* The service's users, against which a non-root runtime is matched. */
struct svc_user {
	bool known;
	uid_t uid;          /* its file-system uid */
	bool has_ns_owner;
	uid_t ns_owner;     /* the owner of its user namespace (a rootless engine's user) */
};

/* A runtime process that is believed, and how its files are read. */
struct runtime {
	uid_t owner;        /* the owner its files must have */
	bool as_user;       /* not root: read with creds */
	struct pvg_creds creds;
};

static void svc_user_read(const char *procfs, pid_t pid, struct svc_user *s)
{
	memset(s, 0, sizeof(*s));
	struct pvg_creds c;
	if (pvg_proc_creds(procfs, pid, &c) == 0) {
		s->known = true;
		s->uid = c.uid;
	}
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%d/ns/user", procfs, (int)pid);
	/* ns/user is the kernel's magic link to the namespace itself (O_NOFOLLOW would refuse it
	 * with ELOOP); the pid is ours, the file nsfs, and nothing of the service is named */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	uid_t owner;
	if (fd >= 0 && ioctl(fd, NS_GET_OWNER_UID, &owner) == 0) {
		s->has_ns_owner = true;
		s->ns_owner = owner;
	}
}

/* The uid that stands for root: 0, or in a fixture tree its owner. */
static uid_t root_uid(const char *root)
{
	struct stat st;
	if (strcmp(root, "/") == 0 || stat(root, &st) < 0)
		return 0;
	return st.st_uid;
}

/* Is process rpid (a "conmon", a "dockerd") believed to be the service's runtime? Its user is
 * its file-system uid from /proc/PID/status, which only privilege can make 0, never the
 * owner of /proc/PID (a process made non-dumpable shows as root there). 1 (rt filled), 0 not
 * believed (*why set, when still NULL, to a sentence naming it and its owner). */
static int believe(const char *procfs, const char *root, pid_t rpid, const char *name,
		   const struct svc_user *svc, struct runtime *rt, char **why)
{
	memset(rt, 0, sizeof(*rt));
	struct pvg_creds c;
	int r = pvg_proc_creds(procfs, rpid, &c);
	if (r < 0) {
		if (!*why)
			*why = pvg_asprintf("%s (pid %d) names it, but its user cannot be read (%s): "
					    "not believed as its runtime", name, (int)rpid,
					    strerror(-r));
		return 0;
	}
	if (c.uid == 0) {
		rt->owner = root_uid(root);
		return 1;
	}
	if (svc->known && (c.uid == svc->uid || (svc->has_ns_owner && c.uid == svc->ns_owner))) {
		/* a rootless engine: its user is the service's, and so are its files */
		rt->owner = c.uid;
		rt->as_user = true;
		rt->creds = c;
		return 1;
	}
	if (!*why) {
		_cleanup_free_ char *whose =
			!svc->known ? pvg_strdup("whose user cannot be read")
			: svc->has_ns_owner && svc->ns_owner != svc->uid
				? pvg_asprintf("uid %u, its user namespace's owner uid %u",
					       (unsigned)svc->uid, (unsigned)svc->ns_owner)
				: pvg_asprintf("uid %u", (unsigned)svc->uid);
		*why = pvg_asprintf("%s (pid %d) names it, but runs as uid %u: neither root nor the "
				    "service's user (%s), so it is not believed as its runtime "
				    "(anyone can name a process %s)",
				    name, (int)rpid, (unsigned)c.uid, whose, name);
	}
	return 0;
}

/* The bytes of an engine state file, read as the runtime's user could and owned by it. */
static int read_state(const char *path, const struct runtime *rt, size_t max, char **text)
{
	const struct pvg_untrusted how = { .root_fd = -1, .max_size = max,
					   .as = rt->as_user ? &rt->creds : NULL,
					   .has_want_uid = true, .want_uid = rt->owner };
	*text = NULL;
	_cleanup_close_ int fd = pvg_open_untrusted(path, &how, NULL);
	if (fd < 0)
		return fd;
	return pvg_read_fd(fd, max, text, NULL);
}

static void found(struct pvg_container_log *out, char *path, const char *driver, char *how,
		  const struct runtime *rt)
{
	out->path = path;
	out->driver = pvg_strdup(driver);
	out->how = how;
	out->owner = rt->owner;
	out->as_user = rt->as_user;
	out->creds = rt->creds;
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
 * filled), 0 no monitor seen (*distrust set when one was seen but not believed). */
static int from_conmon(const char *procfs, const char *root, pid_t pid,
		       const struct svc_user *svc, struct pvg_container_log *out, char **distrust)
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
		struct runtime rt;
		if (!believe(procfs, root, p, "conmon", svc, &rt, distrust))
			continue;
		if (path) {
			found(out, TAKE_PTR(path), "k8s-file",
			      pvg_asprintf("conmon -l (pid %d, uid %u)", (int)p,
					   rt.as_user ? (unsigned)rt.creds.uid : 0u),
			      &rt);
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

/* A docker data root and the runtime whose it is. */
#define MAX_DOCKER_ROOTS 16
struct docker_root {
	char *dir;
	struct runtime rt;
};

static void docker_root_add(struct docker_root *roots, size_t *n, const char *dir,
			    const struct runtime *rt)
{
	if (*n < MAX_DOCKER_ROOTS) {
		roots[*n].dir = pvg_strdup(dir);
		roots[*n].rt = *rt;
		(*n)++;
	}
}

/* The docker data roots to look in: each believed dockerd's --data-root (or -g, --graph),
 * the daemon.json's "data-root", and the default (root's, by where they are). */
static size_t docker_roots(const char *procfs, const char *root, const struct svc_user *svc,
			   struct docker_root *out, char **distrust)
{
	size_t n = 0;
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
		struct runtime rt;
		bool believed = false, asked = false;
		for (const char *a = cmd; a < cmd + len; a += strlen(a) + 1) {
			const char *next = a + strlen(a) + 1, *dir = NULL;
			if ((strcmp(a, "--data-root") == 0 || strcmp(a, "-g") == 0 ||
			     strcmp(a, "--graph") == 0) && next < cmd + len)
				dir = next;
			else if (strncmp(a, "--data-root=", 12) == 0)
				dir = a + 12;
			if (!dir)
				continue;
			if (!asked) {
				asked = true;
				believed = believe(procfs, root, (pid_t)pid, "dockerd", svc, &rt,
						   distrust);
			}
			if (believed)
				docker_root_add(out, &n, dir, &rt);
		}
	}
	const struct runtime system = { .owner = root_uid(root) };
	_cleanup_free_ char *conf = rooted(root, "/etc/docker/daemon.json");
	_cleanup_free_ char *text = NULL;
	if (read_state(conf, &system, 1u << 20, &text) == 0) {
		_cleanup_json_ cJSON *j = cJSON_Parse(text);
		const cJSON *dr = cJSON_GetObjectItemCaseSensitive(j, "data-root");
		if (!cJSON_IsString(dr))
			dr = cJSON_GetObjectItemCaseSensitive(j, "graph");
		if (cJSON_IsString(dr) && dr->valuestring[0] == '/')
			docker_root_add(out, &n, dr->valuestring, &system);
	}
	docker_root_add(out, &n, "/var/lib/docker", &system);
	return n;
}

static cJSON *read_json(const char *path, const struct runtime *rt)
{
	_cleanup_free_ char *text = NULL;
	if (read_state(path, rt, 16u << 20, &text) < 0)
		return NULL;
	return cJSON_Parse(text);
}

/* docker: 1 found (out filled), 0 no data root holds the container. */
static int from_docker(const char *procfs, const char *root, const struct svc_user *svc,
		       struct pvg_container_log *out, char **distrust)
{
	const char *id = out->container.id;
	struct docker_root roots[MAX_DOCKER_ROOTS];
	size_t n = docker_roots(procfs, root, svc, roots, distrust);
	int ret = 0;
	for (size_t i = 0; i < n && !ret; i++) {
		const struct runtime *rt = &roots[i].rt;
		_cleanup_free_ char *dir = pvg_asprintf("%s/containers/%s", roots[i].dir, id);
		_cleanup_free_ char *cfgp = pvg_asprintf("%s/config.v2.json", dir);
		_cleanup_free_ char *hostp = pvg_asprintf("%s/hostconfig.json", dir);
		_cleanup_free_ char *cfgr = rooted(root, cfgp), *hostr = rooted(root, hostp);
		_cleanup_json_ cJSON *cfg = read_json(cfgr, rt);
		if (!cfg)
			continue;
		_cleanup_json_ cJSON *host = read_json(hostr, rt);
		const cJSON *lc = cJSON_GetObjectItemCaseSensitive(host, "LogConfig");
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(lc, "Type");
		const cJSON *lp = cJSON_GetObjectItemCaseSensitive(cfg, "LogPath");
		const char *driver = cJSON_IsString(type) ? type->valuestring : "json-file";
		ret = 1;
		if (strcmp(driver, "json-file") == 0 && cJSON_IsString(lp) && lp->valuestring[0] == '/') {
			found(out, rooted(root, lp->valuestring), driver,
			      pvg_asprintf("%s LogPath", cfgp), rt);
			continue;
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
	}
	for (size_t i = 0; i < n; i++)
		free(roots[i].dir);
	return ret;
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
		/* the kubelet's folders are root's: so must the log be */
		const struct runtime system = { .owner = root_uid(root) };
		found(out, real, "cri", pvg_asprintf("/var/log/containers/%s", e->d_name), &system);
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
	struct svc_user svc;
	svc_user_read(procfs, pid, &svc);
	_cleanup_free_ char *distrust = NULL;
	if (conmon_engine && from_conmon(procfs, root, pid, &svc, out, &distrust))
		return 0;
	if (strcmp(engine, "docker") == 0 && from_docker(procfs, root, &svc, out, &distrust))
		return 0;
	if ((out->container.pod[0] || strcmp(engine, "containerd") == 0 ||
	     strcmp(engine, "cri-o") == 0) && from_kubelet(root, out))
		return 0;
	if (distrust) {
		out->runtime_not_trusted = true;
		not_found(out, "run the container with a runtime owned by root or by the service's "
			       "own user (rootless podman or docker), or set markers.log to the "
			       "service's log file",
			  pvg_asprintf("no log file of %s container %.12s can be believed: %s", engine,
				       out->container.id, distrust));
		return 0;
	}
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

void pvg_container_log_how(const struct pvg_container_log *l, struct pvg_untrusted *how)
{
	/* the runtime's own file: owned by its user, opened with their rights, and never a link
	 * planted where the file should be */
	how->as = l->as_user ? &l->creds : NULL;
	how->nofollow = true;
	how->has_want_uid = true;
	how->want_uid = l->owner;
}

void pvg_container_log_clear(struct pvg_container_log *l)
{
	free(l->path);
	free(l->driver);
	free(l->how);
	pvg_msg_clear(&l->why);
	memset(l, 0, sizeof(*l));
}
