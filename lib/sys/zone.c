/* SPDX-License-Identifier: MIT */
/* The time zone of a process, read from its environment and its root; see zone.h. */
#include <fcntl.h>
#include <limits.h>

#include "sys/zone.h"
#include "util/untrusted.h"

#define ZONE_FILE_MAX (1u << 20)

/* How a zone file is opened: in the process's root, with its user's rights. */
struct zone_open {
	int rootfd;
	const struct pvg_creds *as;
	const char *refused; /* on a refusal: a word for it ("device", "kernel-file", ...) */
	char *refused_text;  /* and what was seen */
	enum pvg_refusal refusal;
};

/* The smallest TZif file: its 44-byte header. */
#define TZIF_MIN 44

/* The zone file at path in the process's root, opened as its user could (SPEC §11): resolved
 * O_PATH inside the root, only a regular file of at most ZONE_FILE_MAX bytes is opened, and
 * a file of the kernel's is never opened, one too short to be TZif never read. 0 (parsed into tz),
 * -ENOENT, -EINVAL (not a TZif file), -ENOTSUP (leap seconds), -errno; a refusal sets
 * o->refused. */
static int zone_file(struct zone_open *o, const char *path, struct pvg_tz *tz)
{
	const struct pvg_untrusted how = { .root_fd = o->rootfd, .max_size = ZONE_FILE_MAX,
					   .as = o->as };
	struct pvg_untrusted_file f;
	free(o->refused_text);
	o->refused_text = NULL;
	o->refused = NULL;
	o->refusal = PVG_REFUSED_NONE;
	_cleanup_close_ int fd = pvg_open_untrusted(path, &how, &f);
	if (fd < 0) {
		/* A file the service's user may not read is refused as that user was: EACCES is
		 * what the user learns by trying it themselves (and ENOENT for a missing one), so
		 * the report tells them nothing about root's files that they could not learn
		 * without it. A type is only seen where the user may look (search rights on its
		 * folders), as their own stat would. */
		if (f.refused == PVG_REFUSED_IDENTITY) {
			/* nothing was looked at: provgate could not become that user */
			o->refused = pvg_refusal_word(f.refused);
			o->refusal = f.refused;
			o->refused_text = pvg_strdup(pvg_refusal_text(f.refused));
		} else if (f.refused != PVG_REFUSED_NONE) {
			o->refused = pvg_refusal_word(f.refused);
			o->refusal = f.refused;
			o->refused_text = pvg_asprintf("%s, refused %s", pvg_refusal_text(f.refused),
						       f.refused == PVG_REFUSED_USER ||
								       f.refused == PVG_REFUSED_LINK
							       ? "as the service's user would be"
							       : "unopened");
		}
		return fd;
	}
	if (f.st.st_size < TZIF_MIN)
		return -EINVAL; /* nothing read: no TZif file is shorter than its header */
	_cleanup_free_ char *bytes = NULL;
	size_t len = 0;
	int r = pvg_read_fd(fd, ZONE_FILE_MAX, &bytes, &len);
	if (r < 0)
		return r;
	return pvg_tzif_parse(bytes, len, tz);
}

/* glibc's names for UTC, which need no file ("UTC" is no POSIX rule: it has no offset). */
static bool utc_name(const char *s)
{
	static const char *const names[] = { "UTC", "UTC0", "GMT", "GMT0", "UCT", "Universal",
					     "Zulu", "Etc/UTC", "Etc/GMT", "Etc/Universal" };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strcmp(s, names[i]) == 0)
			return true;
	return false;
}

static void set_known(struct pvg_proc_zone *z, const char *name, char *source)
{
	z->known = true;
	free(z->name);
	z->name = pvg_strdup(name);
	free(z->source);
	z->source = source;
}

static void set_unknown(struct pvg_proc_zone *z, const char *hint, char *text)
{
	z->known = false;
	pvg_tz_clear(&z->tz);
	free(z->name);
	z->name = pvg_strdup("");
	free(z->source);
	z->source = NULL;
	z->why.text = text;
	z->why.hint = hint ? pvg_strdup(hint) : NULL;
}

/* The value of NAME= in NUL-separated environ text, or NULL (the first, as getenv). */
static const char *env_get(const char *env, size_t len, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = env, *end = env + len; p < end;) {
		size_t l = strnlen(p, (size_t)(end - p));
		if (l > nl && memcmp(p, name, nl) == 0 && p[nl] == '=')
			return p + nl + 1;
		p += l + 1;
	}
	return NULL;
}

static void zone_open_clear(struct zone_open *o)
{
	free(o->refused_text);
	o->refused_text = NULL;
}

/* A zone file refused: unknown, and which refusal it was (for the caller to report). */
static void refused(struct pvg_proc_zone *z, const struct zone_open *o, char *text)
{
	set_unknown(z, pvg_refusal_hint(o->refusal,
					"set TZ in the service's environment to a zone file of its "
					"root (a TZif file its user can read) or to a POSIX TZ rule, "
					"or log timestamps with their offset (%z)"),
		    text);
	z->refused = o->refused;
}

static const char *const HINT_TZ = "set TZ in the service's environment to a zone its root "
				   "has (TZ=Asia/Shanghai with tzdata installed) or to UTC, or "
				   "log timestamps with their offset (%z)";

int pvg_proc_zone_read(const char *procfs, pid_t pid, struct pvg_proc_zone *out)
{
	memset(out, 0, sizeof(*out));
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%d/environ", procfs, (int)pid);
	_cleanup_free_ char *env = NULL;
	size_t env_len = 0;
	int r = pvg_read_file(path, 1u << 20, &env, &env_len);
	if (r == -ENOENT || r == -ESRCH)
		return -ESRCH;
	if (r < 0) {
		set_unknown(out, "run provgate as root or as the service's user, so that it can read "
			    "the service's environment and root",
			    pvg_asprintf("the service's environment (%s) cannot be read: %s", path,
					 strerror(-r)));
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%d/root", procfs, (int)pid);
	_cleanup_close_ int rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int root_err = rootfd < 0 ? errno : 0;
	/* The question is what the service's C library reads: its files are opened with its
	 * user's rights (ours only where that user is us). */
	struct pvg_creds creds;
	int cr = pvg_proc_creds(procfs, pid, &creds);
	if (cr == -ESRCH)
		return -ESRCH;
	if (cr < 0) {
		set_unknown(out, "run provgate as root or as the service's user, so that it can read "
			    "the service's credentials",
			    pvg_asprintf("the service's user (%s/%d/status) cannot be read: %s", procfs,
					 (int)pid, strerror(-cr)));
		return 0;
	}
	_cleanup_(zone_open_clear) struct zone_open zo = {
		.rootfd = rootfd, .as = &creds };
	const char *tz = env_get(env, env_len, "TZ");
	if (tz && (!*tz || utc_name(*tz == ':' ? tz + 1 : tz))) {
		set_known(out, "UTC", pvg_asprintf("TZ=%s in its environment", tz));
		pvg_tz_utc(&out->tz);
		return 0;
	}
	if (tz) {
		const char *name = *tz == ':' ? tz + 1 : tz;
		const char *dir = env_get(env, env_len, "TZDIR");
		_cleanup_free_ char *file = name[0] == '/' ? pvg_strdup(name)
				: pvg_asprintf("%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", name);
		int fr = rootfd < 0 ? -root_err : zone_file(&zo, file, &out->tz);
		if (fr == 0) {
			set_known(out, name, pvg_asprintf("TZ=%s in its environment, %s in its root",
							  tz, file));
			return 0;
		}
		if (zo.refused) {
			refused(out, &zo,
				pvg_asprintf("TZ=%s in its environment names %s in its root: %s; "
					     "provgate reads no zone from it", tz, file,
					     zo.refused_text));
			return 0;
		}
		/* glibc reads TZ as a POSIX rule when no file has its name */
		if ((fr == -ENOENT || fr == -EINVAL) && pvg_tz_posix_parse(name, &out->tz) == 0) {
			set_known(out, name, pvg_asprintf("TZ=%s in its environment (a POSIX TZ rule)",
							  tz));
			return 0;
		}
		set_unknown(out, HINT_TZ,
			    pvg_asprintf("TZ=%s in its environment names no zone provgate can read "
					 "(%s in its root: %s) and is no POSIX TZ rule; its C library "
					 "then writes UTC, other runtimes may not",
					 tz, file, strerror(-fr)));
		return 0;
	}
	if (rootfd < 0) {
		set_unknown(out, "run provgate as root or as the service's user, so that it can read "
			    "the service's root",
			    pvg_asprintf("the service's root (%s) cannot be opened: %s", path,
					 strerror(root_err)));
		return 0;
	}
	int fr = zone_file(&zo, "/etc/localtime", &out->tz);
	if (zo.refused) {
		refused(out, &zo,
			pvg_asprintf("no TZ in its environment, and /etc/localtime in its root %s %s",
				     zo.refusal == PVG_REFUSED_IDENTITY ? "was" : "is",
				     zo.refused_text));
		return 0;
	}
	struct stat lst;
	if (fr == -ENOENT && fstatat(rootfd, "etc/localtime", &lst, AT_SYMLINK_NOFOLLOW) == 0) {
		set_unknown(out, HINT_TZ,
			    pvg_strdup("no TZ in its environment, and /etc/localtime in its root is a "
				       "link to a file that root does not have"));
		return 0;
	}
	if (fr == -ENOENT) {
		set_known(out, "UTC", pvg_strdup("no TZ in its environment and no /etc/localtime in "
						 "its root: the C library's default"));
		pvg_tz_utc(&out->tz);
		return 0;
	}
	if (fr < 0) {
		set_unknown(out, HINT_TZ,
			    pvg_asprintf("no TZ in its environment, and /etc/localtime in its root "
					 "cannot be read as a zone: %s",
					 fr == -EINVAL ? "not a TZif file" : strerror(-fr)));
		return 0;
	}
	/* the zone's name, from where the link points ("../usr/share/zoneinfo/Asia/Shanghai") */
	char link[PATH_MAX];
	ssize_t n = readlinkat(rootfd, "etc/localtime", link, sizeof(link) - 1);
	const char *name = "/etc/localtime";
	if (n > 0) {
		link[n] = '\0';
		const char *zi = strstr(link, "zoneinfo/");
		name = zi ? zi + 9 : link;
	}
	set_known(out, name, pvg_strdup("no TZ in its environment: /etc/localtime in its root"));
	return 0;
}

void pvg_proc_zone_clear(struct pvg_proc_zone *z)
{
	pvg_tz_clear(&z->tz);
	free(z->name);
	free(z->source);
	pvg_msg_clear(&z->why);
	memset(z, 0, sizeof(*z));
}
