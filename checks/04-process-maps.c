/* SPDX-License-Identifier: MIT */
/*
 * Gate 4 process-maps: every target process maps the installed artifact itself. For each
 * process of the service tree that maps a file of the artifact's name (and for every selected
 * target, which must): not " (deleted)", the same file as the installed path now, bytes (read
 * through /proc/<pid>/map_files) equal to the build, started after the file's last change
 * (an in-place cp keeps the inode: the ctime is the only trace), no copy from another path.
 *
 * Its rules, in the order the entry evaluates them (facts in 04-process-maps.h):
 *   each artifact   rule_installed_known       the installed file is configured and there
 *                   rule_digest_known          a digest to compare the mapped bytes with
 *   the service     rule_service_not_restarted exec's after-check: the pinned process is it
 *                   pvg_maps_rule_same_service_processes  ... and the tree's service processes
 *                                              are those the before-check certified: none
 *                                              gone, none new
 *   each process    rule_maps_readable         its /proc/PID/maps could be read
 *     each mapping  (mapping_rules[] below)
 *                   rule_not_deleted           not "(deleted)": replaced after it was loaded
 *                   rule_same_file             dev + inode in its mount namespace
 *                   rule_same_bytes            map_files digest == the build's
 *                   rule_started_after_install the file's ctime is before the start
 *                   rule_target_maps           with service.match each target maps it
 *   each artifact   rule_tree_scanned          no unread process could be the one
 *                   rule_tree_maps             some process of the tree maps it
 *                   rule_some_process_maps     nothing looked at is never a pass
 *   the service     rule_change_set_known      the change set can be read
 *                   rule_change_set_started_after  its other installed files are older
 *                                              than the service
 * The functions named *_json write the evidence from the same facts; read_* gather them.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "04-process-maps.h"
#include "checks.h"
#include "sys/ns.h"

static int64_t ns_of(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/* ---- reading: the facts ---- */

/* The last file hashed through map_files: workers map the same inode, and its page cache is
 * one, so one hash serves every process while the identity holds. */
struct hash_memo {
	bool have_last;
	struct stat last_st;
	unsigned char last_digest[32];
};

static bool same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* stat of a path as the process sees it: through its root, in its mount namespace */
static int stat_in_ns(const char *procfs, pid_t pid, const char *path, struct stat *st)
{
	_cleanup_free_ char *p = pvg_asprintf("%s/%d/root%s", procfs, (int)pid, path);
	if (stat(p, st) == 0)
		return 0;
	if (errno != EACCES && errno != EPERM)
		return -errno;
	/* another user's process: its root cannot be entered; read the path as ours */
	return stat(path, st) == 0 ? 0 : -errno;
}

static bool same_identity(const struct pvg_file_id *id, const struct stat *st)
{
	return id->hashed && pvg_file_id_matches(id, st);
}

static void bytes_from_cache(struct pvg_mapped_bytes *b, const struct pvg_file_id *id,
			     const char *from)
{
	b->from = from;
	memcpy(b->digest, id->sha256, 32);
	memcpy(b->hex, id->hex, sizeof(b->hex));
}

/* Hashes the open map_files link fd (st: its identity), or takes the last digest when it is
 * the same unchanged file. */
static void hash_mapped(int fd, const struct stat *st, struct hash_memo *memo,
			struct pvg_mapped_bytes *b)
{
	if (memo->have_last && same_stat(&memo->last_st, st)) {
		memcpy(b->digest, memo->last_digest, 32);
	} else {
		uint64_t n = 0;
		int r = pvg_hash_fd(fd, -1, b->digest, &n);
		struct stat after;
		if (r < 0) {
			b->err = r;
			b->hash_failed = true;
			return;
		}
		/* reuse only what was read from an unchanging file */
		if (fstat(fd, &after) == 0 && same_stat(&after, st)) {
			memo->have_last = true;
			memo->last_st = *st;
			memcpy(memo->last_digest, b->digest, 32);
		}
	}
	pvg_hex(b->digest, 32, b->hex);
	b->from = "map_files";
}

/* The mapped bytes: hashed through map_files, unless the opened file is provably the one
 * whose digest is cached (same dev, inode, size, mtime, ctime). */
static void read_mapped_bytes(const char *procfs, const struct pvg_maps_artifact *a,
			      struct hash_memo *memo, const struct pvg_proc *p,
			      const struct pvg_mapped_file *f, bool numbers_only,
			      struct pvg_mapped_bytes *b)
{
	struct pvg_mapping m = { .start = f->first_start, .end = f->first_end };
	b->map_files = pvg_map_files_path(procfs, p->pid, &m);
	/* The link is resolved as O_PATH and looked at before it is opened: the process may
	 * have put a device (/dev/kfd, a watchdog) at this address since its maps were read,
	 * and that is never opened; the mapped file is read whole, so it has the artifact's
	 * size bound. */
	const struct pvg_untrusted how = { .root_fd = -1, .max_size = pvg_hash_max_size() };
	struct pvg_untrusted_file uf;
	_cleanup_close_ int fd = pvg_open_untrusted(b->map_files, &how, &uf);
	struct stat st = uf.st;
	if (fd >= 0 && (uint64_t)st.st_size >= PVG_HASH_SPARSE_MIN &&
	    pvg_data_bytes(fd, (uint64_t)st.st_size) < (uint64_t)st.st_size / 2)
		uf.refused = PVG_REFUSED_TOO_BIG; /* mostly holes: no library */
	if (fd >= 0)
		(void)lseek(fd, 0, SEEK_SET); /* pvg_data_bytes' seeks moved it */
	b->size = (uint64_t)st.st_size;
	if (uf.refused != PVG_REFUSED_NONE && uf.refused != PVG_REFUSED_USER &&
	    uf.refused != PVG_REFUSED_LINK) {
		b->refused = uf.refused;
		return;
	}
	if (fd < 0) {
		b->err = fd;
		if (fd == -ENOENT || fd == -ESRCH)
			return;
		/* Without CAP_SYS_ADMIN map_files cannot be opened. The mapping is the installed
		 * inode (checked before, by numbers unique to it) and its page cache is the
		 * file's: the cached digest holds if the file is unchanged since it was hashed.
		 * Numbers that a btrfs snapshot's file shares prove nothing: no digest. */
		struct stat now;
		if (!numbers_only && a->inst_id && stat(a->installed, &now) == 0 &&
		    same_identity(a->inst_id, &now) && same_file(&now, &a->st))
			bytes_from_cache(b, a->inst_id, "installed file (map_files not readable)");
		return;
	}
	if (a->inst_id && same_identity(a->inst_id, &st)) {
		bytes_from_cache(b, a->inst_id, "map_files (same file as the hashed install)");
		return;
	}
	hash_mapped(fd, &st, memo, b);
}

/* A tree process's mapped files, read once and checked against every artifact. */
struct proc_files {
	bool read;
	int err; /* 0 or the -errno of reading its maps (-ESRCH: gone) */
	struct pvg_mapped_files files;
};

static const struct proc_files *proc_files_of(struct pvg_ctx *ctx, struct proc_files *pf,
					      const struct pvg_proc *p, long tick_ns)
{
	if (pf->read)
		return pf;
	pf->read = true;
	struct pvg_maps maps = { 0 };
	int r = pvg_maps_read(ctx->procfs, p->pid, &maps);
	if (r == 0 && maps.n == 0) /* a zombie, or gone between open and read */
		r = -ESRCH;
	pf->err = r < 0 ? r : 0;
	if (r == 0)
		pvg_mapped_files_build(ctx->procfs, p->pid, &maps, &p->start, tick_ns, &pf->files);
	pvg_maps_clear(&maps);
	return pf;
}

/* One process's mappings of the artifact: the installed file by identity, or a file of its
 * name (an inode number alone may belong to another file system). */
static void read_process(struct pvg_ctx *ctx, const struct pvg_maps_artifact *a,
			 struct hash_memo *memo, struct proc_files *pf, struct pvg_maps_process *pr)
{
	const struct pvg_proc *p = pr->p;
	const struct pvg_mapped_files *mf = &proc_files_of(ctx, pf, p, a->tick_ns)->files;
	pr->err = pf->err;
	if (pr->err < 0)
		return;
	pr->m = pvg_xcalloc(mf->n ? mf->n : 1, sizeof(*pr->m));
	for (size_t i = 0; i < mf->n; i++) {
		const struct pvg_mapped_file *f = &mf->f[i];
		struct pvg_maps_mapping *m = &pr->m[pr->n];
		*m = (struct pvg_maps_mapping){ .f = f };
		/* Identity, never path text: the path in maps is a path in the process's mount
		 * namespace (a container's bind mount, its own image), the file is what counts. */
		enum pvg_same_file same = f->deleted ? PVG_OTHER_FILE
			: pvg_mapping_same_file(ctx->procfs, p->pid, f, a->canon, &a->st, &a->ref);
		m->is_installed = same != PVG_OTHER_FILE;
		m->quirk = same == PVG_SAME_FILE_QUIRK || same == PVG_SAME_NUMBERS;
		m->numbers_only = same == PVG_SAME_NUMBERS;
		if (!m->is_installed && strcmp(pvg_basename(f->path), a->name) != 0)
			continue;
		pr->n++;
		/* what the mapped path names now, in the process's own mount namespace */
		m->now_r = m->is_installed ? 0 : stat_in_ns(ctx->procfs, p->pid, f->path, &m->now);
		m->now_installed = m->now_r == 0 && !m->is_installed && same_file(&m->now, &a->st);
		m->same_path = strcmp(f->path, a->canon) == 0;
		if (f->deleted)
			continue;
		if (!m->is_installed) {
			bool quirk2 = false;
			/* the mapped file is still at its path there: a file of its own */
			m->still_there = m->now_r == 0 && pvg_mapping_is_file(ctx->procfs, p->pid, f,
									      f->path, &m->now,
									      &quirk2);
			continue;
		}
		read_mapped_bytes(ctx->procfs, a, memo, p, f, m->numbers_only, &m->bytes);
	}
}

static void process_clear(struct pvg_maps_process *pr)
{
	for (size_t i = 0; i < pr->n; i++)
		free(pr->m[i].bytes.map_files);
	free(pr->m);
	pr->m = NULL;
	pr->n = 0;
}

/* ---- the rules ---- */

/* The one thing that helps a process that does not map the installed file. Warming up
 * loads a lazily loaded extension only into a process that started after the install and
 * holds no copy of it yet; a process that maps a deleted or other copy, or that started
 * before the file was installed, needs a restart. */
static char *not_loaded_hint(const struct pvg_maps_artifact *a, const struct pvg_proc *p,
			     bool named)
{
	if (named)
		return pvg_strdup("restart the service: it maps a replaced, deleted or other copy "
				  "of the artifact, never the installed one");
	int64_t start_ns = p ? ns_of(&p->start) : 0;
	if (p && ns_of(&a->st.st_ctim) >= start_ns)
		return pvg_strdup("restart the service: it started before the artifact was "
				  "installed");
	return pvg_strdup("the service loads extensions lazily: send one request (warm up) "
			  "and run again");
}

/* root without CAP_SYS_PTRACE in its effective set (a container's root given only some
 * capabilities: a Kubernetes sidecar, podman run --cap-drop): the kernel's ptrace check
 * refuses the maps of a process whose capabilities are not a subset of provgate's */
static bool root_without_ptrace(void)
{
	return pvg_root_without_cap(CAP_SYS_PTRACE);
}

static struct pvg_outcome rule_maps_readable(const struct pvg_maps_process *pr)
{
	struct pvg_outcome o = { 0 };
	const struct pvg_proc *p = pr->p;
	int r = pr->err;
	if (r >= 0 || (!pr->target && r == -ESRCH))
		return o; /* a process of the tree that went away runs nothing */
	if (r == -ESRCH)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "process-maps.exited",
				    "the target exited during the check; run again while it is up",
				    "process %d (%s) exited while it was being scanned", (int)p->pid,
				    p->comm);
	else if (r == -EACCES || r == -EPERM)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "process-maps.permission-denied",
				    root_without_ptrace()
					    ? "provgate runs as root without CAP_SYS_PTRACE: add that "
					      "capability (Kubernetes: securityContext.capabilities.add: "
					      "[SYS_PTRACE]; podman/docker: --cap-add SYS_PTRACE)"
					    : "run provgate as the service's user or as root",
				    "cannot read /proc/%d/maps (process of uid %u): %s", (int)p->pid,
				    (unsigned)p->uid, strerror(-r));
	else
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "process-maps.unreadable", NULL,
				    "cannot read /proc/%d/maps: %s", (int)p->pid, strerror(-r));
	return o;
}

struct pvg_outcome pvg_maps_rule_not_deleted(const struct pvg_maps_artifact *a,
					     const struct pvg_maps_process *pr,
					     const struct pvg_maps_mapping *m)
{
	(void)a;
	struct pvg_outcome o = { 0 };
	if (m->f->deleted)
		pvg_outcome_problem(&o, PVG_FAIL, "process-maps.deleted",
				    "restart the service: it still maps the replaced file",
				    "process %d (%s) maps %s (deleted): the file was replaced after "
				    "it was loaded",
				    (int)pr->p->pid, pr->p->comm, m->f->path);
	return o;
}

struct pvg_outcome pvg_maps_rule_same_file(const struct pvg_maps_artifact *a,
					   const struct pvg_maps_process *pr,
					   const struct pvg_maps_mapping *m)
{
	struct pvg_outcome o = { 0 };
	if (m->is_installed)
		return o;
	const struct pvg_mapped_file *f = m->f;
	const struct pvg_proc *p = pr->p;
	char dev[32];
	snprintf(dev, sizeof(dev), "%x:%x", f->dev_major, f->dev_minor);
	const struct stat *now = m->now_r == 0 ? &m->now : &a->st;
	if (m->now_installed || (m->same_path && !m->still_there))
		pvg_outcome_problem(&o, PVG_FAIL, "process-maps.replaced",
				    "restart the service: the installed file is not the one it "
				    "loaded",
				    "process %d (%s) maps %s as dev %s inode %" PRIu64 ", but that "
				    "path now names %s (dev %u:%u inode %" PRIu64 ")",
				    (int)p->pid, p->comm, f->path, dev, f->inode,
				    m->now_installed ? "the installed artifact" : "another file",
				    major(now->st_dev), minor(now->st_dev), (uint64_t)now->st_ino);
	else if (m->same_path)
		pvg_outcome_problem(&o, PVG_FAIL, "process-maps.other-copy",
				    "the service's mount namespace has a file of its own at the "
				    "installed path (an image layer or another mount): bind-mount "
				    "the installed artifact there, or install inside the container",
				    "process %d (%s) maps %s, which in its mount namespace is "
				    "another file (dev %s inode %" PRIu64 ") than the installed "
				    "artifact (dev %u:%u inode %" PRIu64 ")",
				    (int)p->pid, p->comm, f->path, dev, f->inode,
				    major(a->st.st_dev), minor(a->st.st_dev), (uint64_t)a->st.st_ino);
	else
		pvg_outcome_problem(&o, PVG_FAIL, "process-maps.other-copy",
				    "the service loads the artifact from another location (build "
				    "tree, PYTHONPATH, second install); make it load the installed one",
				    "process %d (%s) maps %s (dev %s inode %" PRIu64 "), another "
				    "file than the installed artifact %s",
				    (int)p->pid, p->comm, f->path, dev, f->inode, a->canon);
	return o;
}

/* What kept the mapped bytes from being read: unverifiable, except a worker that went away,
 * which proves nothing either way. */
static struct pvg_outcome bytes_unread(const struct pvg_maps_process *pr,
				       const struct pvg_maps_mapping *m)
{
	struct pvg_outcome o = { 0 };
	const struct pvg_mapped_bytes *b = &m->bytes;
	const struct pvg_proc *p = pr->p;
	int e = -b->err;
	if (b->refused != PVG_REFUSED_NONE)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "process-maps.unreadable",
				    "the mapping is no longer the installed library: run again",
				    "process %d maps %s at %s, which is now %s (%" PRIu64 " bytes): "
				    "not read",
				    (int)p->pid, m->f->path, b->map_files,
				    b->refused == PVG_REFUSED_TOO_BIG ? "over the bound or mostly holes"
								      : pvg_refusal_text(b->refused),
				    b->size);
	else if (b->hash_failed)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "process-maps.unreadable", NULL,
				    "reading the mapped bytes of process %d through %s failed: %s",
				    (int)p->pid, b->map_files, strerror(e));
	else if ((e == ENOENT || e == ESRCH) && pr->target)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "process-maps.exited",
				    "run again while the service is up",
				    "process %d (%s) exited while its mapped bytes were being read",
				    (int)p->pid, p->comm);
	else if (e != ENOENT && e != ESRCH)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "process-maps.permission-denied",
				    "run provgate as root (or with CAP_SYS_ADMIN) to read map_files",
				    "cannot read the mapped bytes of process %d through %s: %s%s",
				    (int)p->pid, b->map_files, strerror(e),
				    m->numbers_only
					    ? " (the device and inode in its maps are those of the "
					      "installed file, and of every file with that inode number "
					      "in another subvolume or snapshot of its btrfs)"
					    : "");
	return o;
}

struct pvg_outcome pvg_maps_rule_same_bytes(const struct pvg_maps_artifact *a,
					    const struct pvg_maps_process *pr,
					    const struct pvg_maps_mapping *m)
{
	const struct pvg_mapped_bytes *b = &m->bytes;
	if (!b->from)
		return bytes_unread(pr, m);
	struct pvg_outcome o = { 0 };
	if (memcmp(b->digest, a->digest, 32) != 0)
		pvg_outcome_problem(&o, PVG_FAIL, "process-maps.bytes-mismatch",
				    "reinstall the build artifact and restart the service",
				    "process %d (%s) maps %s whose bytes hash to sha256 %s, the %s is %s",
				    (int)pr->p->pid, pr->p->comm, m->f->path, b->hex, a->digest_of,
				    a->digest_hex);
	return o;
}

struct pvg_outcome pvg_maps_rule_started_after_install(const struct pvg_maps_artifact *a,
						       const struct pvg_maps_process *pr,
						       const struct pvg_maps_mapping *m)
{
	(void)m;
	struct pvg_outcome o = { 0 };
	const struct pvg_proc *p = pr->p;
	int64_t start_ns = ns_of(&p->start), c = ns_of(&a->st.st_ctim);
	if (c < start_ns)
		return o;
	char ct[48], started[48];
	pvg_format_time(a->st.st_ctim.tv_sec, a->st.st_ctim.tv_nsec, ct, sizeof(ct));
	pvg_proc_format_start(p, started, sizeof(started));
	if (c >= start_ns + a->tick_ns)
		pvg_outcome_problem(&o, PVG_FAIL, "process-maps.overwritten-after-start",
				    "restart the service: the file was overwritten in place while "
				    "it ran, so the loaded code may be the old one or a mix",
				    "%s changed at %s, after process %d (%s) started at %s", a->canon,
				    ct, (int)p->pid, p->comm, started);
	else
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "process-maps.start-ambiguous",
				    "restart the service once the install has finished",
				    "%s changed at %s, within one clock tick of the start of process "
				    "%d (%s) at %s: which came first cannot be told",
				    a->canon, ct, (int)p->pid, p->comm, started);
	return o;
}

/* A mapping's rules in order; a failure of one that ends the walk leaves the later ones
 * unasked (a deleted or other file has no bytes of the install to compare). */
static const struct mapping_rule {
	const char *name;
	struct pvg_outcome (*check)(const struct pvg_maps_artifact *,
				    const struct pvg_maps_process *,
				    const struct pvg_maps_mapping *);
	bool ends_walk;
} mapping_rules[] = {
	{ "not-deleted", pvg_maps_rule_not_deleted, true },
	{ "same-file", pvg_maps_rule_same_file, true },
	{ "same-bytes", pvg_maps_rule_same_bytes, false },
	{ "started-after", pvg_maps_rule_started_after_install, true },
};

/* Loaded: the installed file, deleted or not, or its former self at the installed path. */
static bool mapping_loaded(const struct pvg_maps_mapping *m)
{
	return m->is_installed || m->same_path || m->now_installed;
}

/* With service.match each selected process must map it; a pid or pidfile may name the API
 * server, so there the tree as a whole must (rule_tree_maps). */
static struct pvg_outcome rule_target_maps(const struct pvg_maps_artifact *a,
					   const struct pvg_maps_process *pr)
{
	struct pvg_outcome o = { 0 };
	bool mapped = false, named = pr->n > 0;
	for (size_t i = 0; i < pr->n; i++)
		mapped |= mapping_loaded(&pr->m[i]);
	if (pr->err < 0 || !pr->target || !pr->must_map || mapped)
		return o;
	_cleanup_free_ char *hint = not_loaded_hint(a, pr->p, named);
	pvg_outcome_problem(&o, PVG_FAIL, "process-maps.not-loaded", hint,
			    "process %d (%s) does not map %s%s", (int)pr->p->pid, pr->p->comm,
			    a->canon, named ? " (only another file of that name)" : "");
	return o;
}

struct pvg_maps_verdict pvg_maps_check_process(struct pvg_result *res,
					       const struct pvg_maps_artifact *a,
					       const struct pvg_maps_process *pr)
{
	struct pvg_maps_verdict v = { 0 };
	struct pvg_outcome o = rule_maps_readable(pr);
	v.status = pvg_outcome_report(res, &o);
	if (pr->err < 0)
		return v;
	v.scanned = true;
	v.named = pr->n > 0;
	v.mapping_verified = pvg_xcalloc(pr->n ? pr->n : 1, sizeof(bool));
	bool any_verified = false;
	for (size_t i = 0; i < pr->n; i++) {
		const struct pvg_maps_mapping *m = &pr->m[i];
		v.mapped |= mapping_loaded(m);
		bool ok = true;
		for (size_t k = 0; k < ARRAY_SIZE(mapping_rules); k++) {
			o = mapping_rules[k].check(a, pr, m);
			enum pvg_status s = pvg_outcome_report(res, &o);
			v.status = pvg_status_worst(v.status, s);
			ok &= s == PVG_PASS;
			if (s != PVG_PASS && mapping_rules[k].ends_walk)
				break;
		}
		v.mapping_verified[i] = ok;
		any_verified |= ok;
	}
	o = rule_target_maps(a, pr);
	v.status = pvg_status_worst(v.status, pvg_outcome_report(res, &o));
	v.verified = any_verified && v.status == PVG_PASS;
	return v;
}

void pvg_maps_verdict_clear(struct pvg_maps_verdict *v)
{
	free(v->mapping_verified);
	v->mapping_verified = NULL;
}

/* A process that could not be read might be the one that maps it. */
struct pvg_outcome pvg_maps_rule_tree_scanned(const struct pvg_maps_tree *tr)
{
	struct pvg_outcome o = { 0 };
	if (tr->n_mapping == 0 && tr->n_unscanned > 0 && tr->so_far == PVG_PASS)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "process-maps.exited",
				    "run again while the service is up",
				    "no process of the tree of %d maps %s, and %zu of its processes "
				    "exited while they were being scanned",
				    (int)tr->t->primary, tr->a->canon, tr->n_unscanned);
	return o;
}

struct pvg_outcome pvg_maps_rule_tree_maps(const struct pvg_maps_tree *tr)
{
	struct pvg_outcome o = { 0 };
	const struct pvg_targets *t = tr->t;
	if (tr->n_mapping || tr->n_unscanned || t->how == PVG_SELECT_MATCH)
		return o;
	const struct pvg_proc *p = pvg_targets_find(t, t->primary);
	const struct pvg_proc *root = pvg_targets_find(t, t->root);
	_cleanup_free_ char *hint = not_loaded_hint(tr->a, root ? root : p, tr->n_named > 0);
	pvg_outcome_problem(&o, PVG_FAIL, "process-maps.not-loaded", hint,
			    "no process of the tree of %d (%s, %zu process%s checked) maps %s",
			    (int)t->primary, p ? p->comm : "?", tr->n_checked,
			    tr->n_checked == 1 ? "" : "es", tr->a->canon);
	return o;
}

/* ---- the evidence ---- */

static void mapping_json(cJSON *fj, const struct pvg_maps_process *pr,
			 const struct pvg_maps_mapping *m)
{
	const struct pvg_mapped_file *f = m->f;
	pvg_json_add_str(fj, "path", f->path);
	pvg_json_add_bool(fj, "deleted", f->deleted);
	char dev[32];
	snprintf(dev, sizeof(dev), "%x:%x", f->dev_major, f->dev_minor);
	pvg_json_add_str(fj, "dev", dev);
	pvg_json_add_u64(fj, "inode", f->inode);
	pvg_json_add_int(fj, "mappings", (int)f->n_mappings);
	pvg_json_add_bool(fj, "installed_file", m->is_installed);
	if (f->deleted || !m->is_installed)
		return;
	if (m->quirk)
		pvg_json_add_bool(fj, "device_number_quirk", true);
	const struct pvg_mapped_bytes *b = &m->bytes;
	if (b->from) {
		pvg_json_add_str(fj, "bytes_from", b->from);
		pvg_json_add_str(fj, "sha256", b->hex);
	} else if (b->refused == PVG_REFUSED_NONE && !b->hash_failed && !pr->target &&
		   (b->err == -ENOENT || b->err == -ESRCH)) {
		pvg_json_add_str(fj, "error", "exited while being scanned");
	}
}

static cJSON *process_json(const struct pvg_maps_artifact *a, const struct pvg_maps_process *pr,
			   const struct pvg_maps_verdict *v)
{
	const struct pvg_proc *p = pr->p;
	char started[48];
	pvg_proc_format_start(p, started, sizeof(started));
	cJSON *pj = cJSON_CreateObject();
	cJSON_AddNumberToObject(pj, "pid", p->pid);
	cJSON_AddNumberToObject(pj, "ppid", p->ppid);
	pvg_json_add_str(pj, "comm", p->comm);
	pvg_json_add_str(pj, "start_time", started);
	pvg_json_add_bool(pj, "target", pr->target);
	if (pr->err < 0) {
		pvg_json_add_str(pj, "error", strerror(-pr->err));
		return pj;
	}
	cJSON *arr = cJSON_AddArrayToObject(pj, "mappings");
	for (size_t i = 0; i < pr->n; i++) {
		cJSON *fj = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, fj);
		mapping_json(fj, pr, &pr->m[i]);
	}
	for (size_t i = 0; i < pr->n; i++) {
		if (!v->mapping_verified[i])
			continue;
		pvg_json_add_str(pj, "maps_path", pr->m[i].f->path);
		pvg_json_add_str(pj, "installed_path", a->canon);
	}
	pvg_json_add_bool(pj, "verified", v->verified);
	return pj;
}

/* Which namespaces and container a process runs in: what a later A/B comparison checks as
 * "the same container". */
static void add_identity(cJSON *c, const struct pvg_proc *p, const struct pvg_self_view *self)
{
	if (p->ns_pid)
		cJSON_AddNumberToObject(c, "ns_pid", p->ns_pid);
	else
		cJSON_AddNullToObject(c, "ns_pid");
	cJSON *ns = cJSON_AddObjectToObject(c, "namespaces");
	const struct {
		const char *name;
		uint64_t ino;
	} kinds[] = { { "pid", p->ns.pid }, { "mnt", p->ns.mnt }, { "net", p->ns.net } };
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		if (kinds[i].ino)
			pvg_json_add_u64(ns, kinds[i].name, kinds[i].ino);
		else
			cJSON_AddNullToObject(ns, kinds[i].name);
	}
	struct pvg_container ctr;
	bool found = pvg_proc_container("/proc", p->pid, &ctr) > 0 && !ctr.conmon;
	/* a private cgroup namespace hides the path: provgate's own container is the
	 * process's when they share the pid namespace */
	if (!found && self->in_container && self->have_container && p->ns.pid == self->ns.pid) {
		ctr = self->container;
		found = true;
	}
	if (found) {
		cJSON *o = cJSON_AddObjectToObject(c, "container");
		pvg_json_add_str(o, "engine", ctr.engine);
		pvg_json_add_str(o, "id", ctr.id);
		if (ctr.pod[0])
			pvg_json_add_str(o, "pod", ctr.pod);
	} else {
		cJSON_AddNullToObject(c, "container");
	}
}

/* The chain's entry for a process: what it runs, where, and whether that was proved. */
static cJSON *chain_json(const struct pvg_maps_artifact *a, const struct pvg_maps_process *pr,
			 const struct pvg_maps_verdict *v, const struct pvg_self_view *self)
{
	const struct pvg_proc *p = pr->p;
	char started[48];
	pvg_proc_format_start(p, started, sizeof(started));
	const char *maps_path = NULL;
	for (size_t i = 0; i < pr->n && !maps_path && v->mapping_verified; i++)
		if (v->mapping_verified[i])
			maps_path = pr->m[i].f->path;
	/* the same file as provgate names it; on the host, the host's path */
	const char *installed = maps_path ? a->canon : NULL;
	cJSON *c = cJSON_CreateObject();
	cJSON_AddNumberToObject(c, "pid", p->pid);
	pvg_json_add_str(c, "start_time", started);
	pvg_json_add_str(c, "maps_path", maps_path);
	pvg_json_add_str(c, "installed_path", installed);
	pvg_json_add_str(c, "host_path", installed && !self->in_container ? installed : NULL);
	add_identity(c, p, self);
	pvg_json_add_str(c, "comm", p->comm);
	pvg_json_add_bool(c, "target", pr->target);
	pvg_json_add_bool(c, "verified", v->verified);
	return c;
}

static void artifact_json(cJSON *ev, const struct pvg_maps_artifact *a)
{
	pvg_json_add_str(ev, "installed", a->canon);
	pvg_json_add_u64(ev, "installed_inode", (uint64_t)a->st.st_ino);
	pvg_json_add_str(ev, "expected_sha256", a->digest_hex);
	pvg_json_add_str(ev, "expected_from", a->digest_of);
}

/* ---- the artifacts ---- */

/* What reading artifact ai's installed file and digests gave. */
struct artifact_read {
	int at_r;          /* pvg_ctx_installed_at: 0 or -errno, with why */
	const char *why;
	bool listed;       /* the config lists artifacts (for the hint) */
	int stat_err;      /* errno of stat or realpath of the installed file */
	bool no_digest;    /* neither the build's nor (without a build) the installed digest */
	const struct pvg_file_id *bad; /* the file that could not be hashed */
};

static void read_artifact(struct pvg_ctx *ctx, size_t ai, struct pvg_maps_artifact *a,
			  struct artifact_read *ar)
{
	const char *build = ctx->arts[ai].a.build;
	ar->listed = ctx->cfg->n_artifacts != 0;
	ar->at_r = pvg_ctx_installed_at(ctx, ai, &a->installed, &ar->why);
	if (ar->at_r < 0)
		return;
	if (stat(a->installed, &a->st) < 0 || !realpath(a->installed, a->canon)) {
		ar->stat_err = errno;
		return;
	}
	a->name = pvg_basename(a->canon);
	/* the numbers maps shows for it, for processes whose map_files cannot be followed */
	const struct pvg_untrusted how = { .root_fd = -1 };
	struct pvg_untrusted_file uf;
	_cleanup_close_ int fd = pvg_open_untrusted(a->installed, &how, &uf);
	if (fd >= 0 && same_file(&uf.st, &a->st))
		(void)pvg_maps_id_of_fd(fd, &a->ref);

	/* the digest to compare with: the build's (cached from gate 3 when unchanged) */
	const char *paths[2] = { a->installed, build };
	const struct pvg_file_id *ids[2] = { 0 };
	pvg_ctx_hash(ctx, paths, build ? 2 : 1, ids);
	a->inst_id = ids[0] && ids[0]->hashed ? ids[0] : NULL;
	if (ids[1] && ids[1]->hashed) {
		a->digest = ids[1]->sha256;
		a->digest_hex = ids[1]->hex;
		a->digest_of = "build";
	} else if (!build && a->inst_id) {
		a->digest = a->inst_id->sha256;
		a->digest_hex = a->inst_id->hex;
		a->digest_of = "installed file";
	} else {
		ar->no_digest = true;
		ar->bad = build ? ids[1] : ids[0];
	}
}

static struct pvg_outcome rule_installed_known(const struct pvg_maps_artifact *a,
					       const struct artifact_read *ar)
{
	struct pvg_outcome o = { 0 };
	if (ar->at_r < 0)
		pvg_outcome_problem(&o, ar->at_r == -ENOENT ? PVG_FAIL : PVG_UNVERIFIABLE,
				    ar->at_r == -ENOENT ? "process-maps.installed-missing"
							: "process-maps.not-configured",
				    ar->listed ? "set the entry's install (or python_module)"
					       : "set install.artifact (or install.python_module)",
				    "%s", ar->why);
	else if (ar->stat_err)
		pvg_outcome_problem(&o, ar->stat_err == ENOENT ? PVG_FAIL : PVG_UNVERIFIABLE,
				    ar->stat_err == ENOENT ? "process-maps.installed-missing"
							   : "process-maps.unreadable",
				    "install the artifact", "installed artifact %s: %s", a->installed,
				    strerror(ar->stat_err));
	return o;
}

static struct pvg_outcome rule_digest_known(const struct artifact_read *ar)
{
	struct pvg_outcome o = { 0 };
	if (ar->at_r >= 0 && !ar->stat_err && ar->no_digest)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "process-maps.no-digest",
				    "check gate 3 (artifact-hash)", "cannot hash %s: %s",
				    ar->bad ? ar->bad->path : "?",
				    ar->bad && ar->bad->err ? strerror(-ar->bad->err)
							    : "unknown error");
	return o;
}

static void artifact_summary(struct pvg_result *res, const struct pvg_maps_artifact *a,
			     const struct artifact_read *ar)
{
	if (ar->at_r < 0)
		pvg_summary(res, "installed artifact unknown: %s", ar->why);
	else if (ar->stat_err)
		pvg_summary(res, "installed artifact %s: %s", a->installed, strerror(ar->stat_err));
	else if (ar->no_digest)
		pvg_summary(res, "no digest to compare the mapped bytes with");
}

/* Every artifact's installed file and the digest its mapped bytes must have; with several,
 * each gets its object in evidence.artifacts[]. */
static enum pvg_status expect_artifacts(struct pvg_ctx *ctx, struct pvg_result *res,
					struct pvg_maps_artifact *as, cJSON *art_ev)
{
	enum pvg_status st = PVG_PASS;
	for (size_t ai = 0; ai < ctx->n_arts; ai++) {
		cJSON *ev = res->evidence;
		if (art_ev) {
			ev = cJSON_CreateObject();
			pvg_json_add_str(ev, "name", ctx->arts[ai].a.name);
			cJSON_AddItemToArray(art_ev, ev);
		}
		size_t from = res->n_problems;
		struct artifact_read ar = { 0 };
		read_artifact(ctx, ai, &as[ai], &ar);
		struct pvg_outcome o = rule_installed_known(&as[ai], &ar);
		enum pvg_status s = pvg_outcome_report(res, &o);
		o = rule_digest_known(&ar);
		s = pvg_status_worst(s, pvg_outcome_report(res, &o));
		artifact_summary(res, &as[ai], &ar);
		pvg_problems_label(ctx, res, from, ai);
		st = pvg_status_worst(st, s);
		if (s == PVG_PASS)
			artifact_json(ev, &as[ai]);
	}
	return st;
}

/* ---- the service ---- */

/* exec's after-check: a restarted service could pass every other test here */
static struct pvg_outcome rule_service_not_restarted(const struct pvg_ctx *ctx,
						     const struct pvg_targets *t)
{
	struct pvg_outcome o = { 0 };
	if (!ctx->pinned)
		return o;
	const struct pvg_proc *now = pvg_targets_find(t, ctx->pinned_pid);
	if (now && now->start_ticks == ctx->pinned_start_ticks && t->primary == ctx->pinned_pid)
		return o;
	pvg_outcome_problem(&o, PVG_FAIL, "process-maps.service-restarted",
			    "the benchmark's numbers came from more than one service "
			    "process; run it again without restarting the service",
			    "the certified service process %d is %s; the service is now process %d",
			    (int)ctx->pinned_pid,
			    !now ? "gone"
			    : now->start_ticks != ctx->pinned_start_ticks
				    ? "gone (its pid now names another process)"
				    : "no longer the selected target",
			    (int)t->primary);
	return o;
}

/* The after-check's process of the tree that is this pinned one (same pid, same start). */
static const struct pvg_proc *still_there(const struct pvg_targets *t,
					  const struct pvg_pinned_proc *pp)
{
	const struct pvg_proc *q = pvg_targets_find(t, pp->pid);
	return q && q->start_ticks == pp->start_ticks && !q->zombie ? q : NULL;
}

static bool gone_from_tree(const struct pvg_maps_service_change *c,
			   const struct pvg_pinned_proc *pp)
{
	if (!pp->service || pp->pid == c->pinned_primary)
		return false;
	const struct pvg_proc *q = still_there(c->t, pp);
	return !q || !q->in_tree;
}

static bool new_in_tree(const struct pvg_maps_service_change *c, const struct pvg_proc *q)
{
	if (!q->in_tree || q->zombie || q->self || !(q->family || q->matched) ||
	    q->pid == c->t->primary)
		return false;
	for (size_t i = 0; i < c->n_pinned; i++)
		if (c->pinned[i].pid == q->pid && c->pinned[i].start_ticks == q->start_ticks)
			return false;
	return true;
}

static void format_ns(uint64_t ns, char *out, size_t size)
{
	pvg_format_time((time_t)(ns / 1000000000u), (long)(ns % 1000000000u), out, size);
}

struct pvg_outcome pvg_maps_rule_same_service_processes(const struct pvg_maps_service_change *c)
{
	struct pvg_outcome o = { 0 };
	char pin[48] = "", w0[48] = "", w1[48] = "";
	format_ns(c->pinned_ns, pin, sizeof(pin));
	if (c->window_start_ns) {
		format_ns(c->window_start_ns, w0, sizeof(w0));
		format_ns(c->window_end_ns, w1, sizeof(w1));
	}
	for (size_t i = 0; i < c->n_pinned; i++) {
		const struct pvg_pinned_proc *pp = &c->pinned[i];
		if (!gone_from_tree(c, pp))
			continue;
		char started[48];
		pvg_format_time(pp->start.tv_sec, pp->start.tv_nsec, started, sizeof(started));
		const struct pvg_proc *q = still_there(c->t, pp);
		_cleanup_free_ char *ran = c->window_start_ns
			? pvg_asprintf(" (the benchmark ran from %s to %s)", w0, w1)
			: pvg_strdup("");
		pvg_outcome_problem(&o, PVG_FAIL, "process-maps.service-process-gone",
				    "a service process that exits or restarts while the benchmark "
				    "runs leaves part of the benchmark to processes never checked: "
				    "find why in the service's log, then run the benchmark again on "
				    "a steady service",
				    "service process %d (%s, started %s) that the before-check "
				    "certified at %s is gone: %s before the after-check%s",
				    (int)pp->pid, pp->comm, started, pin,
				    q ? "it left the service's tree" : "it exited", ran);
	}
	const struct pvg_targets *t = c->t;
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *q = &t->procs[i];
		if (!new_in_tree(c, q))
			continue;
		char started[48];
		pvg_proc_format_start(q, started, sizeof(started));
		int64_t start_ns = (int64_t)q->start.tv_sec * 1000000000 + q->start.tv_nsec;
		/* a start time is counted in clock ticks (10 ms at USER_HZ 100), rounded down: one
		 * tick before the benchmark's start cannot be told from after it */
		int64_t tick_ns = t->tick_ns;
		int64_t ws = (int64_t)c->window_start_ns;
		_cleanup_free_ char *when =
			!c->window_start_ns ? pvg_strdup("after the before-check")
			: start_ns >= ws ? pvg_asprintf("%.3f s after the benchmark started",
							(double)(start_ns - ws) / 1e9)
			: start_ns + tick_ns > ws
				? pvg_strdup("as the benchmark started (within the clock tick its "
					     "start time is counted in)")
				: pvg_strdup("after the before-check, before the benchmark started");
		pvg_outcome_problem(&o, PVG_FAIL, "process-maps.service-process-new",
				    "a service process started while the benchmark ran (a worker "
				    "restarted, an engine core started anew, a process pool) ran "
				    "part of it uncertified: find why in the service's log, then run "
				    "the benchmark again on a steady service",
				    "service process %d (%s, started %s, %s) was not there for the "
				    "before-check at %s: it was never certified",
				    (int)q->pid, q->comm, started, when, pin);
	}
	return o;
}

void pvg_maps_service_change_json(cJSON *ev, const struct pvg_maps_service_change *c)
{
	cJSON *o = cJSON_AddObjectToObject(ev, "service_processes");
	size_t certified = 0;
	for (size_t i = 0; i < c->n_pinned; i++)
		certified += c->pinned[i].service;
	pvg_json_add_u64(o, "certified", certified);
	char when[48];
	format_ns(c->pinned_ns, when, sizeof(when));
	cJSON_AddStringToObject(o, "certified_at", when);
	cJSON *gone = cJSON_AddArrayToObject(o, "gone");
	for (size_t i = 0; i < c->n_pinned; i++) {
		const struct pvg_pinned_proc *pp = &c->pinned[i];
		if (!gone_from_tree(c, pp))
			continue;
		cJSON *x = cJSON_CreateObject();
		pvg_json_add_int(x, "pid", (int)pp->pid);
		pvg_json_add_str(x, "comm", pp->comm);
		pvg_format_time(pp->start.tv_sec, pp->start.tv_nsec, when, sizeof(when));
		cJSON_AddStringToObject(x, "start_time", when);
		pvg_json_add_bool(x, "exited", !still_there(c->t, pp));
		cJSON_AddItemToArray(gone, x);
	}
	cJSON *fresh = cJSON_AddArrayToObject(o, "new");
	for (size_t i = 0; i < c->t->n; i++) {
		const struct pvg_proc *q = &c->t->procs[i];
		if (!new_in_tree(c, q))
			continue;
		cJSON *x = cJSON_CreateObject();
		pvg_json_add_int(x, "pid", (int)q->pid);
		pvg_json_add_str(x, "comm", q->comm);
		pvg_json_add_str(x, "command", q->cmdline);
		pvg_proc_format_start(q, when, sizeof(when));
		cJSON_AddStringToObject(x, "start_time", when);
		cJSON_AddItemToArray(fresh, x);
	}
}

/* Every process of the tree against artifact a: its evidence in ev, its chain entries in
 * chain; the tree's rules over their verdicts. */
static enum pvg_status maps_of_artifact(struct pvg_ctx *ctx, struct pvg_result *res,
					const struct pvg_targets *t,
					const struct pvg_self_view *self,
					const struct pvg_maps_artifact *a, struct proc_files *pfs,
					cJSON *ev, cJSON *chain, size_t *n_mapping_out)
{
	struct hash_memo memo = { 0 };
	struct pvg_maps_tree tr = { .t = t, .a = a };
	cJSON *procs = cJSON_AddArrayToObject(ev, "processes");
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!p->in_tree || p->self)
			continue;
		struct pvg_maps_process pr = { .p = p, .must_map = t->how == PVG_SELECT_MATCH };
		for (size_t k = 0; k < t->n_targets; k++)
			pr.target |= t->targets[k] == p->pid;
		read_process(ctx, a, &memo, &pfs[i], &pr);
		struct pvg_maps_verdict v = pvg_maps_check_process(res, a, &pr);
		tr.n_named += v.named;
		tr.so_far = pvg_status_worst(tr.so_far, v.status);
		tr.n_checked++;
		tr.n_unscanned += !v.scanned;
		/* tree members without the extension say nothing */
		if (pr.n > 0 || pr.target) {
			tr.n_mapping += v.mapped;
			cJSON_AddItemToArray(procs, process_json(a, &pr, &v));
			cJSON_AddItemToArray(chain, chain_json(a, &pr, &v, self));
		}
		pvg_maps_verdict_clear(&v);
		process_clear(&pr);
	}
	struct pvg_outcome o = pvg_maps_rule_tree_scanned(&tr);
	enum pvg_status st = pvg_status_worst(tr.so_far, pvg_outcome_report(res, &o));
	o = pvg_maps_rule_tree_maps(&tr);
	st = pvg_status_worst(st, pvg_outcome_report(res, &o));
	*n_mapping_out = tr.n_mapping;
	return st;
}

/* Nothing looked at is never a pass. */
static struct pvg_outcome rule_some_process_maps(const struct pvg_ctx *ctx, size_t ai,
						 const struct pvg_maps_artifact *a,
						 enum pvg_status so_far, size_t n_mapping)
{
	struct pvg_outcome o = { 0 };
	char lb[160];
	if (so_far == PVG_PASS && n_mapping == 0)
		pvg_outcome_problem(&o, PVG_FAIL, "process-maps.not-loaded", NULL,
				    "%sno process maps %s",
				    pvg_ctx_art_label(ctx, ai, lb, sizeof(lb)), a->canon);
	return o;
}

/* Every artifact against the tree; returns the worst status, *n_mapping_all the fewest
 * processes that map one. */
static enum pvg_status maps_of_artifacts(struct pvg_ctx *ctx, struct pvg_result *res,
					 const struct pvg_targets *t,
					 const struct pvg_maps_artifact *as, cJSON *art_ev,
					 size_t *n_mapping_all)
{
	struct pvg_self_view self;
	(void)pvg_self_view_read(ctx->procfs, "/", &self);
	enum pvg_status st = PVG_PASS;
	*n_mapping_all = SIZE_MAX;
	_cleanup_free_ struct proc_files *pfs = pvg_xcalloc(t->n ? t->n : 1, sizeof(*pfs));
	for (size_t ai = 0; ai < ctx->n_arts; ai++) {
		cJSON *ev = art_ev ? cJSON_GetArrayItem(art_ev, (int)ai) : res->evidence;
		cJSON *chain = cJSON_CreateArray();
		size_t from = res->n_problems, n_mapping;
		enum pvg_status s = maps_of_artifact(ctx, res, t, &self, &as[ai], pfs, ev, chain,
						     &n_mapping);
		pvg_problems_label(ctx, res, from, ai);
		struct pvg_outcome o = rule_some_process_maps(ctx, ai, &as[ai], s, n_mapping);
		s = pvg_status_worst(s, pvg_outcome_report(res, &o));
		if (art_ev)
			pvg_json_add_str(ev, "status", pvg_status_name(s));
		st = pvg_status_worst(st, s);
		if (n_mapping < *n_mapping_all)
			*n_mapping_all = n_mapping;
		cJSON *link = pvg_chain_artifact(ctx, ai);
		if (link)
			cJSON_ReplaceItemInObject(link, "processes", cJSON_Duplicate(chain, true));
		if (ai == 0)
			pvg_chain_set(ctx, "processes", chain);
		else
			cJSON_Delete(chain);
	}
	for (size_t i = 0; i < t->n; i++)
		pvg_mapped_files_clear(&pfs[i].files);
	return st;
}

/* ---- the change set ---- */

#define MAX_LISTED_FILES 10

/* An installed file of the change set that changed at or after the service's start. */
struct changed_file {
	const char *path;
	struct timespec ctime;
};

/* The change set's other installed files against the service tree's root. */
struct change_set_view {
	const struct pvg_proc *root; /* NULL: no service process */
	bool no_baseline;
	int scope_r;                 /* pvg_scope_get: 0 or -errno (scope->msg says why) */
	const struct pvg_scope *s;
	long tick_ns;
	size_t n_checked;
	struct changed_file *changed; /* at or after the root's start, in change set order */
	size_t n_changed;
};

static bool is_artifact(const struct stat *st, const struct pvg_maps_artifact *as, size_t n_as)
{
	bool artifact = false;
	for (size_t k = 0; k < n_as; k++)
		artifact |= st->st_dev == as[k].st.st_dev && st->st_ino == as[k].st.st_ino;
	return artifact;
}

static void read_change_set(struct pvg_ctx *ctx, const struct pvg_targets *t,
			    const struct pvg_maps_artifact *as, size_t n_as,
			    struct change_set_view *cv)
{
	cv->root = pvg_targets_find(t, t->root);
	if (!cv->root)
		cv->root = pvg_targets_find(t, t->primary);
	cv->tick_ns = as[0].tick_ns;
	/* a gate needs only its own keys: without a baseline there is no change set */
	cv->no_baseline = !ctx->cfg->source.baseline;
	if (!cv->root || cv->no_baseline)
		return;
	cv->scope_r = pvg_scope_get(ctx, &cv->s);
	if (cv->scope_r < 0)
		return;
	int64_t start_ns = ns_of(&cv->root->start);
	cv->changed = pvg_xcalloc(cv->s->n ? cv->s->n : 1, sizeof(*cv->changed));
	for (size_t i = 0; i < cv->s->n; i++) {
		const struct pvg_change *c = &cv->s->changes[i];
		if (c->cls != PVG_SCOPE_MAPPED || c->kind == 'D' || c->submodule || !c->install_path)
			continue;
		struct stat st;
		if (stat(c->install_path, &st) < 0 || !S_ISREG(st.st_mode))
			continue; /* not installed: gate 2 says so */
		if (is_artifact(&st, as, n_as))
			continue; /* an artifact itself, checked above */
		cv->n_checked++;
		if (ns_of(&st.st_ctim) >= start_ns)
			cv->changed[cv->n_changed++] = (struct changed_file){ c->install_path,
									     st.st_ctim };
	}
}

static struct pvg_outcome rule_change_set_known(const struct change_set_view *cv)
{
	struct pvg_outcome o = { 0 };
	if (cv->root && !cv->no_baseline && cv->scope_r < 0)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "process-maps.change-set-unknown",
				    cv->s->msg.hint,
				    "the change set's installed files cannot be checked against the "
				    "service's start: %s",
				    cv->s->msg.text ? cv->s->msg.text : strerror(-cv->scope_r));
	return o;
}

static bool changed_late(const struct change_set_view *cv, const struct changed_file *f)
{
	return ns_of(&f->ctime) >= ns_of(&cv->root->start) + cv->tick_ns;
}

/* "PATH (changed at TIME), ..." of the first MAX_LISTED_FILES files changed late (or, with
 * late false, within one tick of the start); *n their number. */
static char *changed_list(const struct change_set_view *cv, bool late, size_t *n)
{
	char *list = pvg_strdup("");
	*n = 0;
	for (size_t i = 0; i < cv->n_changed; i++) {
		const struct changed_file *f = &cv->changed[i];
		if (changed_late(cv, f) != late || ++*n > MAX_LISTED_FILES)
			continue;
		char ct[48];
		pvg_format_time(f->ctime.tv_sec, f->ctime.tv_nsec, ct, sizeof(ct));
		char *nl = pvg_asprintf("%s%s%s (changed at %s)", list, *list ? ", " : "", f->path,
					ct);
		free(list);
		list = nl;
	}
	return list;
}

/*
 * The other installed files of the change set (a changed .py that gate 2 compares with the
 * work tree): the service must have started after each took its current content, or it runs
 * what it imported before. The start is the service tree's root's, the earliest process of
 * the tree (workers that import a file anew start later). A file's ctime moves with every
 * content change, rename into place or new inode; a chmod moves it too, which only errs on
 * the side of a restart.
 */
static struct pvg_outcome rule_change_set_started_after(const struct change_set_view *cv)
{
	struct pvg_outcome o = { 0 };
	if (!cv->root || cv->no_baseline || cv->scope_r < 0)
		return o;
	const struct pvg_proc *root = cv->root;
	char started[48];
	pvg_proc_format_start(root, started, sizeof(started));
	size_t n_late, n_close;
	_cleanup_free_ char *list = changed_list(cv, true, &n_late);
	_cleanup_free_ char *close_list = changed_list(cv, false, &n_close);
	if (n_late) {
		_cleanup_free_ char *more = n_late > MAX_LISTED_FILES
			? pvg_asprintf(" and %zu more", n_late - MAX_LISTED_FILES) : pvg_strdup("");
		pvg_outcome_problem(&o, PVG_FAIL, "process-maps.installed-after-start",
				    "restart the service: it imported these files before they took "
				    "their current content, so it runs the old code",
				    "%zu installed file%s of the change set changed after the service "
				    "(process %d, %s) started at %s: %s%s",
				    n_late, n_late == 1 ? "" : "s", (int)root->pid, root->comm,
				    started, list, more);
	}
	if (n_close)
		pvg_outcome_problem(&o, PVG_UNVERIFIABLE, "process-maps.start-ambiguous",
				    "restart the service once the install has finished",
				    "%zu installed file%s of the change set changed within one clock "
				    "tick of the start of process %d (%s) at %s: which came first "
				    "cannot be told: %s",
				    n_close, n_close == 1 ? "" : "s", (int)root->pid, root->comm,
				    started, close_list);
	return o;
}

static void change_set_json(cJSON *ev, const struct change_set_view *cv)
{
	if (!cv->root) {
		pvg_json_add_str(ev, "not_checked", "no service process");
		return; /* the selection's own problem is reported elsewhere */
	}
	if (cv->no_baseline) {
		pvg_json_add_str(ev, "not_checked", "source.baseline is not set: no change set");
		return;
	}
	if (cv->scope_r < 0) {
		pvg_json_add_str(ev, "not_checked", cv->s->msg.text);
		return;
	}
	char started[48];
	pvg_proc_format_start(cv->root, started, sizeof(started));
	cJSON_AddNumberToObject(ev, "reference_pid", cv->root->pid);
	pvg_json_add_str(ev, "reference_start", started);
	cJSON *late = cJSON_AddArrayToObject(ev, "changed_after_start");
	for (size_t i = 0; i < cv->n_changed; i++) {
		const struct changed_file *f = &cv->changed[i];
		if (!changed_late(cv, f))
			continue;
		char ct[48];
		pvg_format_time(f->ctime.tv_sec, f->ctime.tv_nsec, ct, sizeof(ct));
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_str(o, "path", f->path);
		pvg_json_add_str(o, "changed_at", ct);
		cJSON_AddItemToArray(late, o);
	}
	pvg_json_add_int(ev, "checked", (int)cv->n_checked);
}

static enum pvg_status check_change_set(struct pvg_ctx *ctx, struct pvg_result *res,
					const struct pvg_targets *t,
					const struct pvg_maps_artifact *as, size_t n_as)
{
	struct change_set_view cv = { 0 };
	read_change_set(ctx, t, as, n_as, &cv);
	change_set_json(cJSON_AddObjectToObject(res->evidence, "change_set_files"), &cv);
	struct pvg_outcome o = rule_change_set_known(&cv);
	enum pvg_status st = pvg_outcome_report(res, &o);
	o = rule_change_set_started_after(&cv);
	st = pvg_status_worst(st, pvg_outcome_report(res, &o));
	free(cv.changed);
	return st;
}

/* ---- the gate ---- */

static void maps_summary(struct pvg_result *res, enum pvg_status st,
			 const struct pvg_maps_artifact *as, size_t n_as, size_t n_mapping_all)
{
	const char *s = n_mapping_all == 1 ? "" : "es", *verb_s = n_mapping_all == 1 ? "s" : "";
	if (st != PVG_PASS) {
		pvg_summary(res, "%s", res->problems[0].message);
	} else if (n_as == 1) {
		pvg_summary(res, "%zu process%s map%s the installed %s (inode %" PRIu64 ", sha256 "
			    "%.12s…, %s)",
			    n_mapping_all, s, verb_s, as[0].name, (uint64_t)as[0].st.st_ino,
			    as[0].digest_hex, as[0].digest_of);
	} else {
		_cleanup_free_ char *names = pvg_strdup("");
		for (size_t ai = 0; ai < n_as; ai++) {
			char *j = pvg_asprintf("%s%s%s", names, ai ? ", " : "", as[ai].name);
			free(names);
			names = j;
		}
		pvg_summary(res, "%zu process%s map%s each of the %zu installed artifacts (%s), "
			    "their bytes those of the build",
			    n_mapping_all, s, verb_s, n_as, names);
	}
}

static enum pvg_status run_process_maps(struct pvg_ctx *ctx, struct pvg_result *res)
{
	if (ctx->n_arts == 0) {
		pvg_summary(res, "installed artifact unknown: none is configured");
		pvg_problem(res, "process-maps.not-configured",
			    "set install.artifact (or install.python_module), or list artifacts",
			    "neither install.artifact nor install.python_module is set");
		return PVG_UNVERIFIABLE;
	}
	size_t n_as = ctx->n_arts;
	bool several = n_as > 1;
	_cleanup_free_ struct pvg_maps_artifact *as = pvg_xcalloc(n_as, sizeof(*as));
	cJSON *art_ev = several ? cJSON_AddArrayToObject(res->evidence, "artifacts") : NULL;
	enum pvg_status st = expect_artifacts(ctx, res, as, art_ev);
	if (st != PVG_PASS) {
		if (several)
			pvg_summary(res, "%s", res->problems[0].message);
		return st;
	}

	const struct pvg_targets *t;
	int r = pvg_targets_get(ctx, &t);
	if (r < 0) {
		pvg_summary(res, "cannot list processes: %s", strerror(-r));
		pvg_problem(res, "process-maps.scan-failed", "is /proc mounted?",
			    "reading the process list in /proc failed: %s", strerror(-r));
		return PVG_UNVERIFIABLE;
	}
	for (size_t ai = 0; ai < n_as; ai++)
		as[ai].tick_ns = t->tick_ns;
	cJSON_AddItemToObject(res->evidence, "selection", pvg_targets_json(t));
	if (t->err)
		return pvg_targets_problem(t, res);

	struct pvg_outcome o = rule_service_not_restarted(ctx, t);
	st = pvg_outcome_report(res, &o);
	if (ctx->pinned) {
		const struct pvg_maps_service_change c = {
			.pinned = ctx->pinned_procs,
			.n_pinned = ctx->n_pinned_procs,
			.pinned_primary = ctx->pinned_pid,
			.pinned_ns = ctx->pinned_ns,
			.window_start_ns = ctx->window_start_ns,
			.window_end_ns = ctx->window_end_ns,
			.t = t,
		};
		o = pvg_maps_rule_same_service_processes(&c);
		st = pvg_status_worst(st, pvg_outcome_report(res, &o));
		pvg_maps_service_change_json(res->evidence, &c);
	}
	size_t n_mapping_all;
	st = pvg_status_worst(st, maps_of_artifacts(ctx, res, t, as, art_ev, &n_mapping_all));
	st = pvg_status_worst(st, check_change_set(ctx, res, t, as, n_as));
	maps_summary(res, st, as, n_as, n_mapping_all);
	return st;
}

const struct pvg_check pvg_check_process_maps = {
	.id = 4,
	.name = "process-maps",
	.phases = PVG_IN_PHASE(PVG_PHASE_LIVE),
	.rechecked = true,
	.run = run_process_maps,
	.pin = pvg_targets_pin,
};
