/* SPDX-License-Identifier: MIT */
/*
 * Gate 4 process-maps: every target process maps the installed artifact itself. For each
 * process of the service tree that maps a file of the artifact's name (and for every selected
 * target, which must): not " (deleted)", the same file as the installed path now, bytes (read
 * through /proc/<pid>/map_files) equal to the build, started after the file's last change
 * (an in-place cp keeps the inode: the ctime is the only trace), no copy from another path.
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "checks.h"
#include "facts.h"
#include "util/untrusted.h"
#include "sys/maps.h"
#include "sys/ns.h"

struct expect {
	const char *installed;  /* as configured */
	char canon[PATH_MAX];   /* as maps shows it: links resolved */
	const char *name;       /* base name */
	struct stat st;
	const struct pvg_file_id *inst_id; /* cached identity + digest of the installed file */
	const unsigned char *digest;       /* what the mapped bytes must hash to */
	const char *digest_hex;
	const char *digest_of;             /* "build" or "installed" */
	long tick_ns;
	/* the last file hashed through map_files: workers map the same inode, and its page
	 * cache is one, so one hash serves every process while the identity holds */
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

/* The mapped bytes: hashed through map_files, unless the opened file is provably the one
 * whose digest is cached (same dev, inode, size, mtime, ctime). */
static enum pvg_status check_bytes(struct pvg_ctx *ctx, struct pvg_result *res,
				   struct expect *ex, const struct pvg_proc *p, bool target,
				   const struct pvg_mapped_file *f, cJSON *pj)
{
	struct pvg_mapping m = { .start = f->first_start, .end = f->first_end };
	_cleanup_free_ char *mf = pvg_map_files_path(ctx->procfs, p->pid, &m);
	/* The link is resolved as O_PATH and looked at before it is opened: the process may
	 * have put a device (/dev/kfd, a watchdog) at this address since its maps were read,
	 * and that is never opened; the mapped file is read whole, so it has the artifact's
	 * size bound. */
	const struct pvg_untrusted how = { .root_fd = -1, .max_size = pvg_hash_max_size() };
	struct pvg_untrusted_file uf;
	_cleanup_close_ int fd = pvg_open_untrusted(mf, &how, &uf);
	struct stat st = uf.st;
	if (fd >= 0 && (uint64_t)st.st_size >= PVG_HASH_SPARSE_MIN &&
	    pvg_data_bytes(fd, (uint64_t)st.st_size) < (uint64_t)st.st_size / 2)
		uf.refused = PVG_REFUSED_TOO_BIG; /* mostly holes: no library */
	if (fd >= 0)
		(void)lseek(fd, 0, SEEK_SET); /* pvg_data_bytes' seeks moved it */
	if (uf.refused != PVG_REFUSED_NONE && uf.refused != PVG_REFUSED_USER &&
	    uf.refused != PVG_REFUSED_LINK) {
		pvg_problem(res, "process-maps.unreadable",
			    "the mapping is no longer the installed library: run again",
			    "process %d maps %s at %s, which is now %s (%" PRIu64 " bytes): not read",
			    (int)p->pid, f->path, mf,
			    uf.refused == PVG_REFUSED_TOO_BIG ? "over the bound or mostly holes"
							      : pvg_refusal_text(uf.refused),
			    (uint64_t)st.st_size);
		return PVG_UNVERIFIABLE;
	}
	if (fd < 0) {
		int e = -fd;
		if ((e == ENOENT || e == ESRCH) && !target) {
			pvg_json_add_str(pj, "error", "exited while being scanned");
			return PVG_PASS; /* a worker that went away proves nothing either way */
		}
		if (e == ENOENT || e == ESRCH) {
			pvg_problem(res, "process-maps.exited", "run again while the service is up",
				    "process %d (%s) exited while its mapped bytes were being read",
				    (int)p->pid, p->comm);
			return PVG_UNVERIFIABLE;
		}
		/* Without CAP_SYS_ADMIN map_files cannot be opened. The mapping is the installed
		 * inode (checked before) and its page cache is the file's: the cached digest holds
		 * if the file is unchanged since it was hashed. */
		struct stat now;
		if (ex->inst_id && stat(ex->installed, &now) == 0 && same_identity(ex->inst_id, &now) &&
		    f->inode == (uint64_t)now.st_ino) {
			pvg_json_add_str(pj, "bytes_from", "installed file (map_files not readable)");
			pvg_json_add_str(pj, "sha256", ex->inst_id->hex);
			if (memcmp(ex->inst_id->sha256, ex->digest, 32) != 0)
				goto mismatch_cached;
			return PVG_PASS;
		}
		pvg_problem(res, "process-maps.permission-denied",
			    "run provgate as root (or with CAP_SYS_ADMIN) to read map_files",
			    "cannot read the mapped bytes of process %d through %s: %s", (int)p->pid,
			    mf, strerror(e));
		return PVG_UNVERIFIABLE;
	}
	if (ex->inst_id && same_identity(ex->inst_id, &st)) {
		pvg_json_add_str(pj, "bytes_from", "map_files (same file as the hashed install)");
		pvg_json_add_str(pj, "sha256", ex->inst_id->hex);
		if (memcmp(ex->inst_id->sha256, ex->digest, 32) != 0)
			goto mismatch_cached;
		return PVG_PASS;
	}
	unsigned char digest[32];
	char hex[65];
	uint64_t n = 0;
	if (ex->have_last && same_stat(&ex->last_st, &st)) {
		memcpy(digest, ex->last_digest, 32);
	} else {
		int r = pvg_hash_fd(fd, -1, digest, &n);
		struct stat after;
		if (r < 0) {
			pvg_problem(res, "process-maps.unreadable", NULL,
				    "reading the mapped bytes of process %d through %s failed: %s",
				    (int)p->pid, mf, strerror(-r));
			return PVG_UNVERIFIABLE;
		}
		/* reuse only what was read from an unchanging file */
		if (fstat(fd, &after) == 0 && same_stat(&after, &st)) {
			ex->have_last = true;
			ex->last_st = st;
			memcpy(ex->last_digest, digest, 32);
		}
	}
	pvg_hex(digest, 32, hex);
	pvg_json_add_str(pj, "bytes_from", "map_files");
	pvg_json_add_str(pj, "sha256", hex);
	if (memcmp(digest, ex->digest, 32) != 0) {
		pvg_problem(res, "process-maps.bytes-mismatch",
			    "reinstall the build artifact and restart the service",
			    "process %d (%s) maps %s whose bytes hash to sha256 %s, the %s is %s",
			    (int)p->pid, p->comm, f->path, hex, ex->digest_of, ex->digest_hex);
		return PVG_FAIL;
	}
	return PVG_PASS;

mismatch_cached:
	pvg_problem(res, "process-maps.bytes-mismatch",
		    "reinstall the build artifact and restart the service",
		    "process %d (%s) maps %s whose bytes hash to sha256 %s, the %s is %s", (int)p->pid,
		    p->comm, f->path, ex->inst_id->hex, ex->digest_of, ex->digest_hex);
	return PVG_FAIL;
}

/* The one thing that helps a process that does not map the installed file. Warming up
 * loads a lazily loaded extension only into a process that started after the install and
 * holds no copy of it yet; a process that maps a deleted or other copy, or that started
 * before the file was installed, needs a restart. */
static char *not_loaded_hint(const struct expect *ex, const struct pvg_proc *p, bool named)
{
	if (named)
		return pvg_strdup("restart the service: it maps a replaced, deleted or other copy "
				  "of the artifact, never the installed one");
	int64_t start_ns = p ? (int64_t)p->start.tv_sec * 1000000000 + p->start.tv_nsec : 0;
	int64_t c = (int64_t)ex->st.st_ctim.tv_sec * 1000000000 + ex->st.st_ctim.tv_nsec;
	if (p && c >= start_ns)
		return pvg_strdup("restart the service: it started before the artifact was "
				  "installed");
	return pvg_strdup("the service loads extensions lazily: send one request (warm up) "
			  "and run again");
}

/* One process: which copies of the artifact it maps, and whether the one it runs is the
 * installed file. *maps_path receives the installed mapping's path when there is one. */
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

static enum pvg_status check_process(struct pvg_ctx *ctx, struct pvg_result *res,
				     struct expect *ex, const struct pvg_proc *p,
				     struct proc_files *pf, bool target, bool must_map, cJSON *pj,
				     bool *mapped, bool *scanned, bool *named_out)
{
	char started[48];
	*mapped = false;
	*scanned = false;
	*named_out = false;
	pvg_proc_format_start(p, started, sizeof(started));
	cJSON_AddNumberToObject(pj, "pid", p->pid);
	cJSON_AddNumberToObject(pj, "ppid", p->ppid);
	pvg_json_add_str(pj, "comm", p->comm);
	pvg_json_add_str(pj, "start_time", started);
	pvg_json_add_bool(pj, "target", target);

	const struct pvg_mapped_files *mf = &proc_files_of(ctx, pf, p, ex->tick_ns)->files;
	int r = pf->err;
	if (r < 0) {
		pvg_json_add_str(pj, "error", strerror(-r));
		if (!target && r == -ESRCH)
			return PVG_PASS; /* a process of the tree that went away runs nothing */
		if (r == -ESRCH)
			pvg_problem(res, "process-maps.exited",
				    "the target exited during the check; run again while it is up",
				    "process %d (%s) exited while it was being scanned", (int)p->pid,
				    p->comm);
		else if (r == -EACCES || r == -EPERM)
			pvg_problem(res, "process-maps.permission-denied",
				    "run provgate as the service's user or as root",
				    "cannot read /proc/%d/maps (process of uid %u): %s", (int)p->pid,
				    (unsigned)p->uid, strerror(-r));
		else
			pvg_problem(res, "process-maps.unreadable", NULL,
				    "cannot read /proc/%d/maps: %s", (int)p->pid, strerror(-r));
		return PVG_UNVERIFIABLE;
	}

	*scanned = true;
	enum pvg_status st = PVG_PASS;
	cJSON *arr = cJSON_AddArrayToObject(pj, "mappings");
	bool installed_ok = false, named = false;
	for (size_t i = 0; i < mf->n; i++) {
		const struct pvg_mapped_file *f = &mf->f[i];
		/* Identity, never path text: the path in maps is a path in the process's mount
		 * namespace (a container's bind mount, its own image), the file is what counts. */
		bool quirk = false;
		bool is_installed = !f->deleted && pvg_mapping_is_file(ctx->procfs, p->pid, f,
									ex->canon, &ex->st, &quirk);
		/* by name otherwise: an inode number alone may belong to another file system */
		if (!is_installed && strcmp(pvg_basename(f->path), ex->name) != 0)
			continue;
		/* what the mapped path names now, in the process's own mount namespace */
		struct stat now;
		int now_r = is_installed ? 0 : stat_in_ns(ctx->procfs, p->pid, f->path, &now);
		bool now_installed = now_r == 0 && !is_installed && same_file(&now, &ex->st);
		bool same_path = strcmp(f->path, ex->canon) == 0;
		named = true;
		/* deleted or not: the installed file (or its former self) was loaded */
		*mapped |= is_installed || same_path || now_installed;
		cJSON *fj = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, fj);
		pvg_json_add_str(fj, "path", f->path);
		pvg_json_add_bool(fj, "deleted", f->deleted);
		char dev[32];
		snprintf(dev, sizeof(dev), "%x:%x", f->dev_major, f->dev_minor);
		pvg_json_add_str(fj, "dev", dev);
		pvg_json_add_u64(fj, "inode", f->inode);
		pvg_json_add_int(fj, "mappings", (int)f->n_mappings);
		pvg_json_add_bool(fj, "installed_file", is_installed);
		if (f->deleted) {
			pvg_problem(res, "process-maps.deleted",
				    "restart the service: it still maps the replaced file",
				    "process %d (%s) maps %s (deleted): the file was replaced after it "
				    "was loaded",
				    (int)p->pid, p->comm, f->path);
			st = pvg_status_worst(st, PVG_FAIL);
			continue;
		}
		if (!is_installed) {
			bool quirk2 = false;
			/* the mapped file is still at its path there: a file of its own */
			bool still_there = now_r == 0 && pvg_mapping_is_file(ctx->procfs, p->pid, f,
									     f->path, &now, &quirk2);
			if (now_installed || (same_path && !still_there)) {
				pvg_problem(res, "process-maps.replaced",
					    "restart the service: the installed file is not the one it "
					    "loaded",
					    "process %d (%s) maps %s as dev %s inode %" PRIu64 ", but that "
					    "path now names %s (dev %u:%u inode %" PRIu64 ")",
					    (int)p->pid, p->comm, f->path, dev, f->inode,
					    now_installed ? "the installed artifact" : "another file",
					    now_r == 0 ? major(now.st_dev) : major(ex->st.st_dev),
					    now_r == 0 ? minor(now.st_dev) : minor(ex->st.st_dev),
					    now_r == 0 ? (uint64_t)now.st_ino : (uint64_t)ex->st.st_ino);
			} else if (same_path) {
				pvg_problem(res, "process-maps.other-copy",
					    "the service's mount namespace has a file of its own at the "
					    "installed path (an image layer or another mount): bind-mount "
					    "the installed artifact there, or install inside the container",
					    "process %d (%s) maps %s, which in its mount namespace is "
					    "another file (dev %s inode %" PRIu64 ") than the installed "
					    "artifact (dev %u:%u inode %" PRIu64 ")",
					    (int)p->pid, p->comm, f->path, dev, f->inode,
					    major(ex->st.st_dev), minor(ex->st.st_dev),
					    (uint64_t)ex->st.st_ino);
			} else {
				pvg_problem(res, "process-maps.other-copy",
					    "the service loads the artifact from another location (build "
					    "tree, PYTHONPATH, second install); make it load the installed one",
					    "process %d (%s) maps %s (dev %s inode %" PRIu64 "), another "
					    "file than the installed artifact %s",
					    (int)p->pid, p->comm, f->path, dev, f->inode, ex->canon);
			}
			st = pvg_status_worst(st, PVG_FAIL);
			continue;
		}
		if (quirk)
			pvg_json_add_bool(fj, "device_number_quirk", true);
		enum pvg_status bs = check_bytes(ctx, res, ex, p, target, f, fj);
		st = pvg_status_worst(st, bs);
		int64_t start_ns = (int64_t)p->start.tv_sec * 1000000000 + p->start.tv_nsec;
		int64_t c = (int64_t)ex->st.st_ctim.tv_sec * 1000000000 + ex->st.st_ctim.tv_nsec;
		char ct[48];
		pvg_format_time(ex->st.st_ctim.tv_sec, ex->st.st_ctim.tv_nsec, ct, sizeof(ct));
		if (c >= start_ns + ex->tick_ns) {
			pvg_problem(res, "process-maps.overwritten-after-start",
				    "restart the service: the file was overwritten in place while it "
				    "ran, so the loaded code may be the old one or a mix",
				    "%s changed at %s, after process %d (%s) started at %s", ex->canon,
				    ct, (int)p->pid, p->comm, started);
			st = pvg_status_worst(st, PVG_FAIL);
			continue;
		}
		if (c >= start_ns) {
			pvg_problem(res, "process-maps.start-ambiguous",
				    "restart the service once the install has finished",
				    "%s changed at %s, within one clock tick of the start of process "
				    "%d (%s) at %s: which came first cannot be told",
				    ex->canon, ct, (int)p->pid, p->comm, started);
			st = pvg_status_worst(st, PVG_UNVERIFIABLE);
			continue;
		}
		if (bs == PVG_PASS) {
			installed_ok = true;
			pvg_json_add_str(pj, "maps_path", f->path);
			pvg_json_add_str(pj, "installed_path", ex->canon);
		}
	}
	/* with service.match each selected process must map it; a pid or pidfile may name the
	 * API server, so there the tree as a whole must (checked by the caller) */
	if (target && must_map && !*mapped) {
		_cleanup_free_ char *hint = not_loaded_hint(ex, p, named);
		pvg_problem(res, "process-maps.not-loaded", hint, "process %d (%s) does not map %s%s",
			    (int)p->pid, p->comm, ex->canon,
			    named ? " (only another file of that name)" : "");
		st = pvg_status_worst(st, PVG_FAIL);
	}
	*named_out = named;
	pvg_json_add_bool(pj, "verified", installed_ok && st == PVG_PASS);
	return st;
}

#define MAX_LISTED_FILES 10

/*
 * The other installed files of the change set (a changed .py that gate 2 compares with the
 * work tree): the service must have started after each took its current content, or it runs
 * what it imported before. The start is the service tree's root's, the earliest process of
 * the tree (workers that import a file anew start later). A file's ctime moves with every
 * content change, rename into place or new inode; a chmod moves it too, which only errs on
 * the side of a restart.
 */
static enum pvg_status check_change_set(struct pvg_ctx *ctx, struct pvg_result *res,
					const struct pvg_targets *t, const struct expect *exs,
					size_t n_exs)
{
	cJSON *ev = cJSON_AddObjectToObject(res->evidence, "change_set_files");
	const struct pvg_proc *root = pvg_targets_find(t, t->root);
	if (!root)
		root = pvg_targets_find(t, t->primary);
	if (!root) {
		pvg_json_add_str(ev, "not_checked", "no service process");
		return PVG_PASS; /* the selection's own problem is reported elsewhere */
	}
	if (!ctx->cfg->source.baseline) {
		/* a gate needs only its own keys: without a baseline there is no change set */
		pvg_json_add_str(ev, "not_checked", "source.baseline is not set: no change set");
		return PVG_PASS;
	}
	const struct pvg_scope *s;
	int r = pvg_scope_get(ctx, &s);
	if (r < 0) {
		pvg_json_add_str(ev, "not_checked", s->msg.text);
		pvg_problem(res, "process-maps.change-set-unknown", s->msg.hint,
			    "the change set's installed files cannot be checked against the "
			    "service's start: %s",
			    s->msg.text ? s->msg.text : strerror(-r));
		return PVG_UNVERIFIABLE;
	}
	char started[48];
	pvg_proc_format_start(root, started, sizeof(started));
	cJSON_AddNumberToObject(ev, "reference_pid", root->pid);
	pvg_json_add_str(ev, "reference_start", started);
	int64_t start_ns = (int64_t)root->start.tv_sec * 1000000000 + root->start.tv_nsec;
	cJSON *late = cJSON_AddArrayToObject(ev, "changed_after_start");
	size_t n_checked = 0, n_late = 0, n_close = 0;
	_cleanup_free_ char *list = pvg_strdup(""), *close_list = pvg_strdup("");
	for (size_t i = 0; i < s->n; i++) {
		const struct pvg_change *c = &s->changes[i];
		if (c->cls != PVG_SCOPE_MAPPED || c->kind == 'D' || c->submodule || !c->install_path)
			continue;
		struct stat st;
		if (stat(c->install_path, &st) < 0 || !S_ISREG(st.st_mode))
			continue; /* not installed: gate 2 says so */
		bool artifact = false;
		for (size_t k = 0; k < n_exs; k++)
			artifact |= st.st_dev == exs[k].st.st_dev && st.st_ino == exs[k].st.st_ino;
		if (artifact)
			continue; /* an artifact itself, checked above */
		n_checked++;
		int64_t cns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
		if (cns < start_ns)
			continue;
		char ct[48];
		pvg_format_time(st.st_ctim.tv_sec, st.st_ctim.tv_nsec, ct, sizeof(ct));
		bool is_late = cns >= start_ns + exs[0].tick_ns;
		size_t *n = is_late ? &n_late : &n_close;
		char **l = is_late ? &list : &close_list;
		if (is_late) {
			cJSON *o = cJSON_CreateObject();
			pvg_json_add_str(o, "path", c->install_path);
			pvg_json_add_str(o, "changed_at", ct);
			cJSON_AddItemToArray(late, o);
		}
		if (++*n <= MAX_LISTED_FILES) {
			char *nl = pvg_asprintf("%s%s%s (changed at %s)", *l, **l ? ", " : "",
						c->install_path, ct);
			free(*l);
			*l = nl;
		}
	}
	pvg_json_add_int(ev, "checked", (int)n_checked);
	enum pvg_status st = PVG_PASS;
	if (n_late) {
		_cleanup_free_ char *more = n_late > MAX_LISTED_FILES
			? pvg_asprintf(" and %zu more", n_late - MAX_LISTED_FILES) : pvg_strdup("");
		pvg_problem(res, "process-maps.installed-after-start",
			    "restart the service: it imported these files before they took their "
			    "current content, so it runs the old code",
			    "%zu installed file%s of the change set changed after the service "
			    "(process %d, %s) started at %s: %s%s",
			    n_late, n_late == 1 ? "" : "s", (int)root->pid, root->comm, started, list,
			    more);
		st = PVG_FAIL;
	}
	if (n_close) {
		pvg_problem(res, "process-maps.start-ambiguous",
			    "restart the service once the install has finished",
			    "%zu installed file%s of the change set changed within one clock tick of "
			    "the start of process %d (%s) at %s: which came first cannot be told: %s",
			    n_close, n_close == 1 ? "" : "s", (int)root->pid, root->comm, started,
			    close_list);
		st = pvg_status_worst(st, PVG_UNVERIFIABLE);
	}
	return st;
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

/* Artifact ai's installed file and the digest its mapped bytes must have. */
static enum pvg_status expect_artifact(struct pvg_ctx *ctx, size_t ai, struct expect *ex,
				       struct pvg_result *res)
{
	const char *build = ctx->arts[ai].a.build;
	const char *why;
	int r = pvg_ctx_installed_at(ctx, ai, &ex->installed, &why);
	if (r < 0) {
		pvg_summary(res, "installed artifact unknown: %s", why);
		pvg_problem(res, r == -ENOENT ? "process-maps.installed-missing"
					      : "process-maps.not-configured",
			    ctx->cfg->n_artifacts ? "set the entry's install (or python_module)"
						  : "set install.artifact (or install.python_module)",
			    "%s", why);
		return r == -ENOENT ? PVG_FAIL : PVG_UNVERIFIABLE;
	}
	if (stat(ex->installed, &ex->st) < 0 || !realpath(ex->installed, ex->canon)) {
		int e = errno;
		pvg_summary(res, "installed artifact %s: %s", ex->installed, strerror(e));
		pvg_problem(res, e == ENOENT ? "process-maps.installed-missing"
					     : "process-maps.unreadable",
			    "install the artifact", "installed artifact %s: %s", ex->installed,
			    strerror(e));
		return e == ENOENT ? PVG_FAIL : PVG_UNVERIFIABLE;
	}
	ex->name = pvg_basename(ex->canon);

	/* the digest to compare with: the build's (cached from gate 3 when unchanged) */
	const char *paths[2] = { ex->installed, build };
	const struct pvg_file_id *ids[2] = { 0 };
	pvg_ctx_hash(ctx, paths, build ? 2 : 1, ids);
	ex->inst_id = ids[0] && ids[0]->hashed ? ids[0] : NULL;
	if (ids[1] && ids[1]->hashed) {
		ex->digest = ids[1]->sha256;
		ex->digest_hex = ids[1]->hex;
		ex->digest_of = "build";
	} else if (!build && ex->inst_id) {
		ex->digest = ex->inst_id->sha256;
		ex->digest_hex = ex->inst_id->hex;
		ex->digest_of = "installed file";
	} else {
		const struct pvg_file_id *bad = build ? ids[1] : ids[0];
		pvg_summary(res, "no digest to compare the mapped bytes with");
		pvg_problem(res, "process-maps.no-digest", "check gate 3 (artifact-hash)",
			    "cannot hash %s: %s", bad ? bad->path : "?",
			    bad && bad->err ? strerror(-bad->err) : "unknown error");
		return PVG_UNVERIFIABLE;
	}
	return PVG_PASS;
}

/* Every process of the tree against artifact ai: its evidence in ev, its chain entries in
 * chain; *n_mapping counts the processes that map the installed file. */
static enum pvg_status maps_of_artifact(struct pvg_ctx *ctx, struct pvg_result *res,
					const struct pvg_targets *t,
					const struct pvg_self_view *self, struct expect *ex,
					struct proc_files *pfs, cJSON *ev, cJSON *chain,
					size_t *n_mapping_out)
{
	enum pvg_status st = PVG_PASS;
	cJSON *procs = cJSON_AddArrayToObject(ev, "processes");
	size_t n_mapping = 0, n_checked = 0, n_unscanned = 0, n_named = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct pvg_proc *p = &t->procs[i];
		if (!p->in_tree || p->self)
			continue;
		bool target = false;
		for (size_t k = 0; k < t->n_targets; k++)
			target |= t->targets[k] == p->pid;
		cJSON *pj = cJSON_CreateObject();
		bool mapped, scanned, named;
		enum pvg_status ps = check_process(ctx, res, ex, p, &pfs[i], target,
						    t->how == PVG_SELECT_MATCH, pj, &mapped, &scanned,
						    &named);
		n_named += named;
		st = pvg_status_worst(st, ps);
		n_checked++;
		n_unscanned += !scanned;
		bool listed = cJSON_GetArraySize(cJSON_GetObjectItem(pj, "mappings")) > 0;
		if (!listed && !target) {
			cJSON_Delete(pj); /* tree members without the extension say nothing */
			continue;
		}
		n_mapping += mapped;
		cJSON_AddItemToArray(procs, pj);
		cJSON *c = cJSON_CreateObject();
		cJSON_AddNumberToObject(c, "pid", p->pid);
		cJSON *sv = cJSON_GetObjectItem(pj, "start_time");
		pvg_json_add_str(c, "start_time", sv ? sv->valuestring : NULL);
		cJSON *mp = cJSON_GetObjectItem(pj, "maps_path");
		pvg_json_add_str(c, "maps_path", mp ? mp->valuestring : NULL);
		/* the same file as provgate names it; on the host, the host's path */
		cJSON *ip = cJSON_GetObjectItem(pj, "installed_path");
		pvg_json_add_str(c, "installed_path", ip ? ip->valuestring : NULL);
		pvg_json_add_str(c, "host_path", ip && !self->in_container ? ip->valuestring : NULL);
		add_identity(c, p, self);
		pvg_json_add_str(c, "comm", p->comm);
		pvg_json_add_bool(c, "target", target);
		cJSON *v = cJSON_GetObjectItem(pj, "verified");
		pvg_json_add_bool(c, "verified", v && cJSON_IsTrue(v));
		cJSON_AddItemToArray(chain, c);
	}
	/* a process that could not be read might be the one that maps it */
	if (n_mapping == 0 && n_unscanned > 0 && st == PVG_PASS) {
		pvg_problem(res, "process-maps.exited",
			    "run again while the service is up",
			    "no process of the tree of %d maps %s, and %zu of its processes exited "
			    "while they were being scanned",
			    (int)t->primary, ex->canon, n_unscanned);
		st = PVG_UNVERIFIABLE;
	}
	if (n_mapping == 0 && n_unscanned == 0 && t->how != PVG_SELECT_MATCH) {
		const struct pvg_proc *p = pvg_targets_find(t, t->primary);
		const struct pvg_proc *root = pvg_targets_find(t, t->root);
		_cleanup_free_ char *hint = not_loaded_hint(ex, root ? root : p, n_named > 0);
		pvg_problem(res, "process-maps.not-loaded", hint,
			    "no process of the tree of %d (%s, %zu process%s checked) maps %s",
			    (int)t->primary, p ? p->comm : "?", n_checked, n_checked == 1 ? "" : "es",
			    ex->canon);
		st = pvg_status_worst(st, PVG_FAIL);
	}
	*n_mapping_out = n_mapping;
	return st;
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
	size_t n_arts = ctx->n_arts;
	bool several = n_arts > 1;
	_cleanup_free_ struct expect *exs = pvg_xcalloc(n_arts, sizeof(*exs));
	cJSON *art_ev = several ? cJSON_AddArrayToObject(res->evidence, "artifacts") : NULL;
	enum pvg_status st = PVG_PASS;
	char lb[160];
	for (size_t ai = 0; ai < n_arts; ai++) {
		cJSON *ev = res->evidence;
		if (several) {
			ev = cJSON_CreateObject();
			pvg_json_add_str(ev, "name", ctx->arts[ai].a.name);
			cJSON_AddItemToArray(art_ev, ev);
		}
		size_t from = res->n_problems;
		struct expect *ex = &exs[ai];
		enum pvg_status s = expect_artifact(ctx, ai, ex, res);
		pvg_problems_label(ctx, res, from, ai);
		st = pvg_status_worst(st, s);
		if (s != PVG_PASS)
			continue;
		pvg_json_add_str(ev, "installed", ex->canon);
		pvg_json_add_u64(ev, "installed_inode", (uint64_t)ex->st.st_ino);
		pvg_json_add_str(ev, "expected_sha256", ex->digest_hex);
		pvg_json_add_str(ev, "expected_from", ex->digest_of);
	}
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
	for (size_t ai = 0; ai < n_arts; ai++)
		exs[ai].tick_ns = t->tick_ns;
	cJSON_AddItemToObject(res->evidence, "selection", pvg_targets_json(t));
	if (t->err)
		return pvg_targets_problem(t, res);

	if (ctx->pinned) {
		/* exec's after-check: a restarted service could pass every other test here */
		const struct pvg_proc *now = pvg_targets_find(t, ctx->pinned_pid);
		if (!now || now->start_ticks != ctx->pinned_start_ticks ||
		    t->primary != ctx->pinned_pid) {
			pvg_problem(res, "process-maps.service-restarted",
				    "the benchmark's numbers came from more than one service "
				    "process; run it again without restarting the service",
				    "the certified service process %d is %s; the service is now process %d",
				    (int)ctx->pinned_pid,
				    !now ? "gone"
				    : now->start_ticks != ctx->pinned_start_ticks
					    ? "gone (its pid now names another process)"
					    : "no longer the selected target",
				    (int)t->primary);
			st = PVG_FAIL;
		}
	}
	struct pvg_self_view self;
	(void)pvg_self_view_read(ctx->procfs, "/", &self);
	size_t n_mapping_all = SIZE_MAX;
	_cleanup_free_ struct proc_files *pfs = pvg_xcalloc(t->n ? t->n : 1, sizeof(*pfs));
	for (size_t ai = 0; ai < n_arts; ai++) {
		cJSON *ev = several ? cJSON_GetArrayItem(art_ev, (int)ai) : res->evidence;
		cJSON *chain = cJSON_CreateArray();
		size_t from = res->n_problems, n_mapping;
		enum pvg_status s = maps_of_artifact(ctx, res, t, &self, &exs[ai], pfs, ev, chain,
						     &n_mapping);
		pvg_problems_label(ctx, res, from, ai);
		if (s == PVG_PASS && n_mapping == 0) { /* nothing looked at is never a pass */
			pvg_problem(res, "process-maps.not-loaded", NULL, "%sno process maps %s",
				    pvg_ctx_art_label(ctx, ai, lb, sizeof(lb)), exs[ai].canon);
			s = PVG_FAIL;
		}
		if (several)
			pvg_json_add_str(ev, "status", pvg_status_name(s));
		st = pvg_status_worst(st, s);
		if (n_mapping < n_mapping_all)
			n_mapping_all = n_mapping;
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
	st = pvg_status_worst(st, check_change_set(ctx, res, t, exs, n_arts));

	if (st == PVG_PASS && !several)
		pvg_summary(res, "%zu process%s map%s the installed %s (inode %" PRIu64 ", sha256 "
			    "%.12s…, %s)",
			    n_mapping_all, n_mapping_all == 1 ? "" : "es",
			    n_mapping_all == 1 ? "s" : "", exs[0].name, (uint64_t)exs[0].st.st_ino,
			    exs[0].digest_hex, exs[0].digest_of);
	else if (st == PVG_PASS) {
		_cleanup_free_ char *names = pvg_strdup("");
		for (size_t ai = 0; ai < n_arts; ai++) {
			char *j = pvg_asprintf("%s%s%s", names, ai ? ", " : "", exs[ai].name);
			free(names);
			names = j;
		}
		pvg_summary(res, "%zu process%s map%s each of the %zu installed artifacts (%s), "
			    "their bytes those of the build",
			    n_mapping_all, n_mapping_all == 1 ? "" : "es",
			    n_mapping_all == 1 ? "s" : "", n_arts, names);
	} else
		pvg_summary(res, "%s", res->problems[0].message);
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
