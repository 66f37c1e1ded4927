/* SPDX-License-Identifier: MIT */
/* The time zone of a process, read from its environment and its root; see zone.h. */
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/syscall.h>

#include "sys/zone.h"

#define ZONE_FILE_MAX (1u << 20)

/* Opens path (absolute, in the process's view) inside the root rootfd: symlinks and ".."
 * never leave it, as they do not for the process itself. fd or -errno. */
static int open_in_root(int rootfd, const char *path)
{
	while (*path == '/')
		path++;
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	long fd = syscall(SYS_openat2, rootfd, *path ? path : ".", &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

/* Reads a regular file's bytes from fd (closed here). 0 or -errno (-EFBIG over max). */
static int read_all(int fd, size_t max, char **out, size_t *len)
{
	_cleanup_close_ int f = fd;
	struct stat st;
	*out = NULL;
	if (fstat(f, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	return pvg_read_fd(f, max, out, len);
}

/* The zone file at path in the process's root: 0 (parsed into tz), -ENOENT, -EINVAL (not a
 * TZif file), -ENOTSUP (leap seconds), -errno. */
static int zone_file(int rootfd, const char *path, struct pvg_tz *tz)
{
	int fd = open_in_root(rootfd, path);
	if (fd < 0)
		return fd;
	_cleanup_free_ char *bytes = NULL;
	size_t len = 0;
	int r = read_all(fd, ZONE_FILE_MAX, &bytes, &len);
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
		int fr = rootfd < 0 ? -root_err : zone_file(rootfd, file, &out->tz);
		if (fr == 0) {
			set_known(out, name, pvg_asprintf("TZ=%s in its environment, %s in its root",
							  tz, file));
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
	int fr = zone_file(rootfd, "/etc/localtime", &out->tz);
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
