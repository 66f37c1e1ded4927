/* SPDX-License-Identifier: MIT */
/* Namespaces, NSpid and containers from /proc; see ns.h. */
#include <fcntl.h>
#include <limits.h>

#include "sys/ns.h"
#include "util/hash.h"

static int ns_link(const char *procfs, pid_t pid, const char *kind, uint64_t *ino)
{
	char path[PATH_MAX], link[128];
	if (pid > 0)
		snprintf(path, sizeof(path), "%s/%d/ns/%s", procfs, (int)pid, kind);
	else
		snprintf(path, sizeof(path), "%s/self/ns/%s", procfs, kind);
	ssize_t n = readlink(path, link, sizeof(link) - 1);
	*ino = 0;
	if (n < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	link[n] = 0;
	return pvg_ns_link_parse(link, kind, ino);
}

int pvg_ns_read(const char *procfs, pid_t pid, struct pvg_ns_ids *out)
{
	memset(out, 0, sizeof(*out));
	int r = ns_link(procfs, pid, "pid", &out->pid);
	if (r < 0)
		return r;
	/* the others are best effort: a kernel without cgroup namespaces has no link */
	(void)ns_link(procfs, pid, "mnt", &out->mnt);
	(void)ns_link(procfs, pid, "net", &out->net);
	(void)ns_link(procfs, pid, "user", &out->user);
	(void)ns_link(procfs, pid, "cgroup", &out->cgroup);
	return 0;
}

static int read_text(const char *procfs, pid_t pid, const char *file, char **text, size_t *len)
{
	_cleanup_free_ char *path = pid > 0 ? pvg_asprintf("%s/%d/%s", procfs, (int)pid, file)
					    : pvg_asprintf("%s/self/%s", procfs, file);
	int r = pvg_read_file(path, 1u << 20, text, len);
	return r == -ENOENT ? -ESRCH : r;
}

int pvg_proc_nspid(const char *procfs, pid_t pid, struct pvg_nspid *out)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	memset(out, 0, sizeof(*out));
	int r = read_text(procfs, pid, "status", &text, &len);
	if (r < 0)
		return r;
	return pvg_nspid_parse(text, len, out);
}

int pvg_proc_container(const char *procfs, pid_t pid, struct pvg_container *out)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	memset(out, 0, sizeof(*out));
	int r = read_text(procfs, pid, "cgroup", &text, &len);
	if (r < 0)
		return r;
	return pvg_cgroup_container(text, len, out);
}

/* One overlay layer's name: the directory its l/ link points to (podman, docker: "../ID/diff"
 * -> "ID"), or its own path. NULL for docker's per-container "-init" layer. */
static char *layer_name(const char *root, const char *dir, size_t *unresolved)
{
	_cleanup_free_ char *path = strcmp(root, "/") == 0 || dir[0] != '/'
					    ? pvg_strdup(dir)
					    : pvg_asprintf("%s%s", root, dir);
	char target[PATH_MAX];
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	const char *name = dir;
	if (n > 0) {
		target[n] = '\0';
		name = target;
	} else if (errno != EINVAL) { /* EINVAL: a directory itself, not a link */
		(*unresolved)++;
	}
	size_t len = strlen(name);
	while (len > 1 && name[len - 1] == '/')
		len--;
	/* ".../ID/diff" names the layer ID */
	if (len > 5 && strncmp(name + len - 5, "/diff", 5) == 0)
		len -= 5;
	const char *base = name + len;
	while (base > name && base[-1] != '/')
		base--;
	size_t bl = (size_t)(name + len - base);
	if (bl > 5 && strncmp(base + bl - 5, "-init", 5) == 0)
		return NULL;
	return bl ? pvg_asprintf("%.*s", (int)bl, base) : NULL;
}

int pvg_proc_rootfs(const char *procfs, const char *root, pid_t pid, struct pvg_rootfs_id *out)
{
	memset(out, 0, sizeof(*out));
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = read_text(procfs, pid, "mountinfo", &text, &len);
	if (r < 0)
		return r;
	struct pvg_rootfs fs;
	r = pvg_mountinfo_root(text, len, &fs);
	if (r <= 0)
		return r;
	snprintf(out->fstype, sizeof(out->fstype), "%s", fs.fstype);
	if (fs.lowerdir) {
		/* "a:b:c", a ':' inside a path escaped with a backslash */
		_cleanup_free_ char *names = pvg_strdup("");
		for (const char *p = fs.lowerdir; *p;) {
			const char *e = p;
			while (*e && *e != ':') {
				if (*e == '\\' && e[1])
					e++;
				e++;
			}
			_cleanup_free_ char *dir = pvg_asprintf("%.*s", (int)(e - p), p);
			_cleanup_free_ char *name = dir[0] ? layer_name(root, dir, &out->unresolved) : NULL;
			if (name) {
				char *grown = pvg_asprintf("%s%s\n", names, name);
				free(names);
				names = grown;
				out->layers++;
			}
			p = *e ? e + 1 : e;
		}
		if (out->layers)
			pvg_sha256_hex(names, strlen(names), out->sha256);
	}
	pvg_rootfs_clear(&fs);
	return 1;
}

/* KEY="VALUE" at the start of a line of podman's /run/.containerenv */
static const char *env_value(const char *text, const char *key, size_t *n)
{
	size_t kl = strlen(key);
	for (const char *l = text; l && *l;) {
		if (strncmp(l, key, kl) == 0 && l[kl] == '=' && l[kl + 1] == '"') {
			*n = strcspn(l + kl + 2, "\"\n");
			return l + kl + 2;
		}
		const char *nl = strchr(l, '\n');
		l = nl ? nl + 1 : NULL;
	}
	return NULL;
}

static void containerenv(const char *text, struct pvg_self_view *v)
{
	size_t n;
	const char *e = env_value(text, "engine", &n);
	snprintf(v->container.engine, sizeof(v->container.engine), "podman");
	if (e && strncmp(e, "podman", 6) != 0) {
		n = strcspn(e, "-\"\n");
		if (n && n < sizeof(v->container.engine))
			snprintf(v->container.engine, sizeof(v->container.engine), "%.*s", (int)n, e);
	}
	const char *id = env_value(text, "id", &n);
	if (id && n == 64)
		snprintf(v->container.id, sizeof(v->container.id), "%.*s", (int)n, id);
}

int pvg_self_view_read(const char *procfs, const char *root, struct pvg_self_view *out)
{
	memset(out, 0, sizeof(*out));
	int r = pvg_ns_read(procfs, 0, &out->ns);
	if (r < 0)
		return r;
	out->in_container = out->ns.pid != PVG_PIDNS_INIT_INO;
	if (pvg_proc_container(procfs, 0, &out->container) > 0) {
		out->have_container = true;
		snprintf(out->how, sizeof(out->how), "cgroup");
		return 0;
	}
	memset(&out->container, 0, sizeof(out->container));
	if (!out->in_container)
		return 0;
	/* a private cgroup namespace shows "/": the engines' marker files say which one */
	_cleanup_free_ char *p = pvg_path_join(root, "run/.containerenv");
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (pvg_read_file(p, 64 << 10, &text, &len) == 0) {
		containerenv(text, out);
		out->have_container = true;
		snprintf(out->how, sizeof(out->how), "/run/.containerenv");
		return 0;
	}
	free(p);
	p = pvg_path_join(root, ".dockerenv");
	if (access(p, F_OK) == 0) {
		snprintf(out->container.engine, sizeof(out->container.engine), "docker");
		out->have_container = true;
		snprintf(out->how, sizeof(out->how), "/.dockerenv");
	}
	return 0;
}

const char *pvg_port_forwarder_engine(const char *comm)
{
	static const struct {
		const char *comm; /* as the kernel cuts it: 15 bytes */
		const char *engine;
	} forwarders[] = {
		{ "conmon", "podman" },           /* rootful podman keeps the port open in conmon */
		{ "rootlessport", "podman" },     /* rootless podman with slirp4netns */
		{ "rootlessport-ch", "podman" },  /* rootlessport-child */
		{ "pasta", "podman" },            /* rootless podman 5 */
		{ "pasta.avx2", "podman" },
		{ "slirp4netns", "podman" },
		{ "docker-proxy", "docker" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(forwarders); i++)
		if (strcmp(comm, forwarders[i].comm) == 0)
			return forwarders[i].engine;
	return NULL;
}
