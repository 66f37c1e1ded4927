/* SPDX-License-Identifier: MIT */
/*
 * The one way to open a file that another user controls (SPEC §11): a path that came from
 * the service side (its environment, its root, a runtime's arguments, a folder it writes),
 * and, with root_fd -1, a path the config names (the author's choice, links followed, but
 * still never a device).
 *
 * The path is resolved first as O_PATH (which opens nothing: no device driver sees an open),
 * inside root_fd when given (openat2 RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, or a
 * component-by-component O_NOFOLLOW walk on kernels before 5.6), then fstat'ed: only a
 * regular file of at most max_size bytes is reopened for reading, through the O_PATH
 * descriptor itself (/proc/self/fd/N), never by its path again. With as set, all of that
 * happens in a forked child that has the service user's uid, gid and groups, no
 * capabilities and no_new_privs, and hands the descriptor back: the answer is what that user
 * could have opened. The child changes no identity where provgate's real, effective and
 * file-system uid and gid and its groups are exactly the service user's (provgate run as
 * that user: it only drops what capabilities it has, and with none the open is done in
 * process); root opens a root service's files (uid and gid 0) as itself. Anything else takes
 * setgroups, setresgid and setresuid, which need CAP_SETGID and CAP_SETUID: where they fail
 * (a container's root without those capabilities, provgate run as a third user) nothing is
 * opened with provgate's own rights instead; the file is refused, PVG_REFUSED_IDENTITY.
 * A path from the service side (root_fd, a folder's descriptor, as, or service_side) never
 * reaches a kernel file system's file (procfs, sysfs, debugfs, tracefs, securityfs, configfs,
 * bpf, ...): its "regular" files are interfaces, not data.
 */
#pragma once
#include "util/util.h"

/* Why a file was refused (the errno returned says the same more coarsely). */
enum pvg_refusal {
	PVG_REFUSED_NONE = 0,
	PVG_REFUSED_DEVICE,    /* a character or block device: -ENODEV */
	PVG_REFUSED_FIFO,      /* -ENXIO */
	PVG_REFUSED_SOCKET,    /* -ENXIO */
	PVG_REFUSED_DIRECTORY, /* -EISDIR */
	PVG_REFUSED_TOO_BIG,   /* st_size over max_size: -EFBIG */
	PVG_REFUSED_OWNER,     /* not owned by want_uid: -EPERM */
	PVG_REFUSED_LINK,      /* a magic link (/proc/PID/fd/N, /proc/self/root) on the way, or
				* a link where none is allowed: -ELOOP */
	PVG_REFUSED_USER,      /* the service's user may not open it: -EACCES */
	PVG_REFUSED_KERNEL_FS, /* a file of procfs, sysfs, debugfs, ... reached from the service
				* side (/proc/kmsg as a time zone): reading one can change the
				* kernel's state: -ENODEV */
	PVG_REFUSED_IDENTITY,  /* not opened: provgate could not take on the service user's
				* identity (no CAP_SETUID/CAP_SETGID): -EPERM */
};

/* The credentials a file is opened with on the service user's behalf. */
#define PVG_CREDS_MAX_GROUPS 64
struct pvg_creds {
	uid_t uid;
	gid_t gid;
	size_t n_groups;
	gid_t groups[PVG_CREDS_MAX_GROUPS];
	/* the process's effective capabilities (/proc/PID/status CapEff), kept by an open as
	 * this user where we hold them too: a root service reads what its capabilities let it,
	 * no more; without them (have_caps false) the open has none */
	uint64_t cap_eff;
	bool have_caps;
};

struct pvg_untrusted {
	int root_fd;               /* an O_PATH descriptor of the root to resolve in; -1: none */
	uint64_t max_size;         /* 0: no bound */
	const struct pvg_creds *as; /* open with these rights (NULL: ours) */
	bool nofollow;             /* with root_fd -1: a link as the last component is refused */
	bool service_side;         /* with root_fd -1: the path is one the service's user can
				    * change (a file in their venv), so a kernel file system's
				    * file is refused as it is below a root */
	bool want_dir;             /* a directory is wanted (O_RDONLY|O_DIRECTORY), not a file */
	bool has_want_uid;
	uid_t want_uid;            /* with has_want_uid: the file must be owned by this uid */
};

struct pvg_untrusted_file {
	struct stat st;            /* of what was opened, or of what was refused */
	enum pvg_refusal refused;
};

/* The fd, open O_RDONLY|O_CLOEXEC (blocking reads), or -errno; on a refusal *out says which,
 * and out->st what was seen. */
int pvg_open_untrusted(const char *path, const struct pvg_untrusted *how,
		       struct pvg_untrusted_file *out);
/* The same relative to an open directory (a witness folder): name must be one component. */
int pvg_openat_untrusted(int dir_fd, const char *name, const struct pvg_untrusted *how,
			 struct pvg_untrusted_file *out);
/* "a device node", "a FIFO", ..., for messages. */
const char *pvg_refusal_text(enum pvg_refusal r);
/* A word for problem codes and evidence: "device", "fifo", "socket", "directory",
 * "too-big", "owner", "link", "denied", "kernel-file", "identity". */
const char *pvg_refusal_word(enum pvg_refusal r);
/* For PVG_REFUSED_IDENTITY, what to do (names the capabilities this process lacks of
 * CAP_SETUID and CAP_SETGID); for any other refusal, otherwise. */
const char *pvg_refusal_hint(enum pvg_refusal r, const char *otherwise);

/* The bytes of fd's file that are data, not holes, counted with SEEK_DATA/SEEK_HOLE up to
 * size; where the file system cannot tell, size itself. fd's offset is where it was. */
uint64_t pvg_data_bytes(int fd, uint64_t size);

/* The process's file-system credentials from /proc/PID/status (Uid/Gid's fourth field,
 * Groups). 0 or -errno (-ESRCH gone). */
int pvg_proc_creds(const char *procfs, pid_t pid, struct pvg_creds *out);

/* This process's effective capabilities, bit N for capability N; 0 or -errno. */
int pvg_effective_caps(uint64_t *eff);
/* Root (euid 0) without capability cap in its effective set: a container's root given only
 * some (a Kubernetes sidecar, podman run --cap-drop). False where they cannot be read. */
bool pvg_root_without_cap(int cap);

/* Opens path as process pid sees it (absolute: inside its root; relative: in its working
 * folder) with its user's rights, never following a link out (util/untrusted.h); a folder
 * when dir, else a regular file of at most max bytes (0: any). The fd, or -errno. */
int pvg_proc_open_as(const char *procfs, pid_t pid, const char *path, bool dir, uint64_t max,
		     enum pvg_refusal *refused);

/* Test seam: PROVGATE_NO_OPENAT2=1 takes the walk that kernels before 5.6 get. */
bool pvg_untrusted_use_openat2(void);
