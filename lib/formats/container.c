/* SPDX-License-Identifier: MIT */
/* Parsers for /proc namespace and cgroup text; see container.h. */
#include <ctype.h>

#include "formats/container.h"

int pvg_nspid_parse(const char *status, size_t len, struct pvg_nspid *out)
{
	const char *p = status, *end = status + len;
	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		if (le - p >= 6 && memcmp(p, "NSpid:", 6) == 0) {
			const char *s = p + 6;
			while (s < le) {
				while (s < le && (*s == ' ' || *s == '\t'))
					s++;
				if (s == le)
					break;
				uint64_t v = 0;
				int digits = 0;
				while (s < le && *s >= '0' && *s <= '9') {
					if (++digits > 10)
						return -EINVAL;
					v = v * 10 + (uint64_t)(*s - '0');
					s++;
				}
				if (!digits || v == 0 || v > 0x3fffffff ||
				    (s < le && *s != ' ' && *s != '\t'))
					return -EINVAL;
				if (out->n == PVG_NSPID_MAX)
					return -EINVAL;
				out->pid[out->n++] = (pid_t)v;
			}
			return out->n ? 0 : -EINVAL;
		}
		p = nl ? nl + 1 : end;
	}
	return -ENOENT;
}

/* [p, p+n) holds only hex digits, and exactly 64 of them (every engine's full id) */
static bool is_id(const char *p, size_t n)
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)p[i]))
			return false;
	return true;
}

static void set(struct pvg_container *c, const char *engine, const char *id)
{
	snprintf(c->engine, sizeof(c->engine), "%s", engine);
	memcpy(c->id, id, 64);
	c->id[64] = 0;
}

/* One path component: does it name a container? */
static bool component(const char *s, size_t n, bool under_kubepods, struct pvg_container *c)
{
	static const struct {
		const char *prefix;
		const char *engine;
		bool conmon;
	} scoped[] = {
		{ "libpod-conmon-", "podman", true },
		{ "libpod-", "podman", false },
		{ "docker-", "docker", false },
		{ "cri-containerd-", "containerd", false },
		{ "crio-conmon-", "cri-o", true },
		{ "crio-", "cri-o", false },
	};
	const char *scope = ".scope";
	size_t body = n;
	if (n > 6 && memcmp(s + n - 6, scope, 6) == 0)
		body = n - 6;
	for (size_t i = 0; i < ARRAY_SIZE(scoped); i++) {
		size_t pl = strlen(scoped[i].prefix);
		if (body > pl && memcmp(s, scoped[i].prefix, pl) == 0 && is_id(s + pl, body - pl)) {
			set(c, scoped[i].engine, s + pl);
			c->conmon = scoped[i].conmon;
			return true;
		}
	}
	/* cgroupfs layouts name the bare id: /docker/<id>, /kubepods/<qos>/pod<uid>/<id> */
	if (is_id(s, n)) {
		set(c, under_kubepods ? "containerd" : "docker", s);
		return true;
	}
	return false;
}

static int scan_path(const char *s, const char *end, struct pvg_container *c)
{
	bool kube = false;
	char pod[48] = "";
	int found = 0;
	struct pvg_container here;
	while (s < end) {
		while (s < end && *s == '/')
			s++;
		const char *e = memchr(s, '/', (size_t)(end - s));
		if (!e)
			e = end;
		size_t n = (size_t)(e - s);
		if (n >= 8 && memcmp(s, "kubepods", 8) == 0)
			kube = true;
		/* "pod<uid>" or "kubepods-burstable-pod<uid>.slice", '_' for '-' in systemd names */
		const char *pp = n > 3 ? memmem(s, n, "pod", 3) : NULL;
		while (pp && pp != s && pp[-1] != '-')
			pp = memmem(pp + 3, n - (size_t)(pp + 3 - s), "pod", 3);
		if (kube && pp) {
			size_t l = n - (size_t)(pp + 3 - s);
			if (l > 6 && memcmp(pp + 3 + l - 6, ".slice", 6) == 0)
				l -= 6;
			if (l > 0 && l < sizeof(pod)) {
				memcpy(pod, pp + 3, l);
				pod[l] = 0;
				for (char *q = pod; *q; q++)
					if (*q == '_')
						*q = '-';
			}
		}
		memset(&here, 0, sizeof(here));
		if (n && component(s, n, kube, &here)) {
			/* the innermost container wins (docker-in-docker); a monitor's cgroup never
			 * hides the container's */
			if (!found || !here.conmon)
				*c = here;
			found = 1;
		}
		s = e;
	}
	if (found && kube)
		snprintf(c->pod, sizeof(c->pod), "%s", pod);
	return found;
}

int pvg_cgroup_container(const char *text, size_t len, struct pvg_container *out)
{
	const char *p = text, *end = text + len;
	memset(out, 0, sizeof(*out));
	size_t lines = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		if (le > p) {
			/* "hierarchy-id:controllers:path"; the path may itself hold ':' */
			const char *c1 = memchr(p, ':', (size_t)(le - p));
			const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
			if (!c1 || !c2 || c2 + 1 >= le || c2[1] != '/')
				return -EINVAL;
			for (const char *d = p; d < c1; d++)
				if (*d < '0' || *d > '9')
					return -EINVAL;
			lines++;
			struct pvg_container c;
			memset(&c, 0, sizeof(c));
			if (scan_path(c2 + 1, le, &c) > 0) {
				*out = c;
				return 1;
			}
		}
		p = nl ? nl + 1 : end;
	}
	return lines ? 0 : -EINVAL;
}

int pvg_ns_link_parse(const char *link, const char *kind, uint64_t *ino)
{
	size_t kl = strlen(kind);
	if (strncmp(link, kind, kl) != 0 || link[kl] != ':' || link[kl + 1] != '[')
		return -EINVAL;
	const char *s = link + kl + 2;
	uint64_t v = 0;
	int digits = 0;
	while (*s >= '0' && *s <= '9') {
		if (++digits > 20 || v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s++ - '0');
	}
	if (!digits || s[0] != ']' || s[1])
		return -EINVAL;
	*ino = v;
	return 0;
}

/* A mountinfo field, its \NNN escapes (space, tab, newline, backslash) decoded. */
static char *unescape_field(const char *p, size_t n)
{
	char *s = pvg_xcalloc(n + 1, 1), *o = s;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\\' && i + 3 < n && p[i + 1] >= '0' && p[i + 1] <= '3' &&
		    p[i + 2] >= '0' && p[i + 2] <= '7' && p[i + 3] >= '0' && p[i + 3] <= '7') {
			*o++ = (char)((p[i + 1] - '0') * 64 + (p[i + 2] - '0') * 8 + (p[i + 3] - '0'));
			i += 3;
		} else {
			*o++ = p[i];
		}
	}
	*o = '\0';
	return s;
}

void pvg_rootfs_clear(struct pvg_rootfs *r)
{
	free(r->source);
	free(r->lowerdir);
	memset(r, 0, sizeof(*r));
}

/* the value of key= in a comma-separated option list (overlay escapes a comma in a path
 * with a backslash) */
static char *option_value(const char *opts, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = opts; *p;) {
		const char *e = p;
		while (*e && *e != ',') {
			if (*e == '\\' && e[1])
				e++;
			e++;
		}
		if ((size_t)(e - p) > kl && strncmp(p, key, kl) == 0 && p[kl] == '=')
			return pvg_asprintf("%.*s", (int)((size_t)(e - p) - kl - 1), p + kl + 1);
		p = *e ? e + 1 : e;
	}
	return NULL;
}

int pvg_mountinfo_root(const char *text, size_t len, struct pvg_rootfs *out)
{
	memset(out, 0, sizeof(*out));
	const char *p = text, *end = text + len;
	size_t lines = 0;
	int found = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		if (le == p) {
			p = nl ? nl + 1 : end;
			continue;
		}
		/* the fields, split at spaces; at most 32 optional fields */
		const char *f[48];
		size_t fl[48], nf = 0;
		for (const char *q = p; q < le && nf < 48;) {
			while (q < le && *q == ' ')
				q++;
			if (q >= le)
				break;
			const char *s = q;
			while (q < le && *q != ' ')
				q++;
			f[nf] = s;
			fl[nf++] = (size_t)(q - s);
		}
		size_t dash = 0;
		for (size_t i = 6; i < nf; i++)
			if (fl[i] == 1 && f[i][0] == '-') {
				dash = i;
				break;
			}
		if (nf < 10 || !dash || dash + 3 > nf || !isdigit((unsigned char)f[0][0])) {
			pvg_rootfs_clear(out);
			return -EINVAL;
		}
		lines++;
		if (fl[4] == 1 && f[4][0] == '/') {
			/* a later mount at "/" is stacked over the earlier one */
			pvg_rootfs_clear(out);
			snprintf(out->fstype, sizeof(out->fstype), "%.*s",
				 (int)(fl[dash + 1] < sizeof(out->fstype) ? fl[dash + 1]
									    : sizeof(out->fstype) - 1),
				 f[dash + 1]);
			out->source = unescape_field(f[dash + 2], fl[dash + 2]);
			if (strcmp(out->fstype, "overlay") == 0 && dash + 3 < nf) {
				_cleanup_free_ char *opts = unescape_field(f[dash + 3], fl[dash + 3]);
				out->lowerdir = option_value(opts, "lowerdir");
			}
			found = 1;
		}
		p = nl ? nl + 1 : end;
	}
	return lines ? found : -EINVAL;
}

int pvg_conmon_log_parse(const char *cmdline, size_t len, const char *id, char **path,
			 char **drivers)
{
	*path = NULL;
	*drivers = pvg_strdup("");
	bool ours = false;
	const char *end = cmdline + len;
	for (const char *a = cmdline; a < end;) {
		size_t l = strnlen(a, (size_t)(end - a));
		const char *next = a + l + 1, *val = NULL;
		bool log = false, cid = false;
		/* "-l VALUE", "--log-path VALUE", "--log-path=VALUE", "-c ID", "--cid=ID" */
		for (int k = 0; k < 2; k++) {
			const char *shrt = k ? "-c" : "-l", *lng = k ? "--cid" : "--log-path";
			size_t ll = strlen(lng);
			if (strcmp(a, shrt) == 0 || strcmp(a, lng) == 0) {
				val = next < end ? next : NULL;
				next = val ? val + strnlen(val, (size_t)(end - val)) + 1 : end;
			} else if (strncmp(a, lng, ll) == 0 && a[ll] == '=') {
				val = a + ll + 1;
			} else {
				continue;
			}
			log = !k;
			cid = k;
			break;
		}
		if (val && cid && strcmp(val, id) == 0)
			ours = true;
		if (val && log) {
			const char *colon = val[0] == '/' ? NULL : strchr(val, ':');
			_cleanup_free_ char *drv = colon ? pvg_asprintf("%.*s", (int)(colon - val), val)
						: val[0] == '/' ? pvg_strdup("k8s-file") : pvg_strdup(val);
			const char *file = colon ? colon + 1 : val[0] == '/' ? val : NULL;
			char *j = pvg_asprintf("%s%s%s", *drivers, **drivers ? "," : "", drv);
			free(*drivers);
			*drivers = j;
			if (!*path && file && file[0] == '/' &&
			    (strcmp(drv, "k8s-file") == 0 || strcmp(drv, "json-file") == 0))
				*path = pvg_strdup(file);
		}
		a = next;
	}
	if (!ours) {
		free(*path);
		*path = NULL;
	}
	return ours ? 1 : 0;
}
