/* SPDX-License-Identifier: MIT */
/*
 * The log file a container engine keeps of a container's stdout and stderr, found from the
 * container id of the process's cgroup and the engine's own state, read as files (no engine
 * command is run):
 *   podman, CRI-O: the arguments the engine started the container's monitor with (conmon
 *     -l DRIVER:PATH, an ancestor of the container's processes): the LogPath of podman's
 *     container config, which podman keeps in its database, as conmon writes it;
 *   docker: <data-root>/containers/<id>/config.v2.json's LogPath and hostconfig.json's log
 *     driver, the data root from dockerd's --data-root, /etc/docker/daemon.json or
 *     /var/lib/docker;
 *   Kubernetes (containerd, CRI-O): the kubelet's /var/log/containers/<pod>_<ns>_<ctr>-<id>.log
 *     link into /var/log/pods/.
 */
#pragma once
#include "formats/container.h"
#include "util/untrusted.h"
#include "util/util.h"

struct pvg_container_log {
	struct pvg_container container; /* the process's, from its cgroup */
	bool in_container;
	char *path;    /* the log file; NULL: see why */
	char *driver;  /* the engine's log driver ("k8s-file", "json-file", "journald", ...) */
	char *how;     /* where it was found ("conmon -l (pid 4242)", "config.v2.json") */
	bool no_file;  /* the engine keeps this container's output in no file (journald, none) */
	/* path NULL because the only runtime process that named this container (a conmon among
	 * its ancestors, a dockerd) is not believed: owned by neither root nor the service's
	 * (rootless engine's) user; why names it and its owner */
	bool runtime_not_trusted;
	struct pvg_msg why; /* path NULL: why, and what to do */
	/* Whose the log is (SPEC §11): the runtime's user (root, or a rootless engine's own
	 * user); the log must be owned by them, and when that is not root it is read with their
	 * rights (creds), never ours. */
	uid_t owner;
	bool as_user;
	struct pvg_creds creds;
};

/* root: where engine state files are read ("/", or a fixture tree, whose owner then stands
 * for root). A runtime process (conmon, dockerd) is believed only when it runs as root, or as
 * the service's user or the owner of the service's user namespace (a rootless engine); the
 * engine state found through it is read as its user could, owned by that user. 0 (path or
 * why set), -ESRCH when the process is gone. */
int pvg_container_log_find(const char *procfs, const char *root, pid_t pid,
			   struct pvg_container_log *out);
/* How l->path (found) is opened with pvg_open_untrusted (root_fd -1): as its runtime's user
 * may, refused unless it is a regular file owned by l->owner, and not a link as its last
 * name. how->as points into l. */
void pvg_container_log_how(const struct pvg_container_log *l, struct pvg_untrusted *how);
void pvg_container_log_clear(struct pvg_container_log *l);
