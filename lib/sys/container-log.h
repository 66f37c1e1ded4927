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
#include "util/util.h"

struct pvg_container_log {
	struct pvg_container container; /* the process's, from its cgroup */
	bool in_container;
	char *path;    /* the log file; NULL: see why */
	char *driver;  /* the engine's log driver ("k8s-file", "json-file", "journald", ...) */
	char *how;     /* where it was found ("conmon -l (pid 4242)", "config.v2.json") */
	bool no_file;  /* the engine keeps this container's output in no file (journald, none) */
	struct pvg_msg why; /* path NULL: why, and what to do */
};

/* root: where engine state files are read ("/", or a fixture tree). 0 (path or why set),
 * -ESRCH when the process is gone. */
int pvg_container_log_find(const char *procfs, const char *root, pid_t pid,
			   struct pvg_container_log *out);
void pvg_container_log_clear(struct pvg_container_log *l);
