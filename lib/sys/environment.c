/* SPDX-License-Identifier: MIT */
/*
 * The report's environment, read from /proc, /sys and /etc through roots that tests point
 * at fixture trees. Reads are small and bounded: the service's mapped shared objects are
 * identified by their ELF build-id notes (a few hundred bytes each), never by hashing.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>

#include "util/untrusted.h"
#include "sys/environment.h"
#include "sys/maps.h"
#include "formats/codeobj/codeobj.h"

const char *const pvg_ns_names[PVG_NS__MAX] = {
	[PVG_NS_CGROUP] = "cgroup", [PVG_NS_IPC] = "ipc", [PVG_NS_MNT] = "mnt",
	[PVG_NS_NET] = "net",       [PVG_NS_PID] = "pid", [PVG_NS_USER] = "user",
	[PVG_NS_UTS] = "uts",
};

#define SMALL_MAX (64u << 10)
#define ENVIRON_MAX (8u << 20)
#define CMDLINE_MAX (1u << 20)

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void strv_sort_unique(struct pvg_strv *v)
{
	if (v->n < 2)
		return;
	qsort(v->v, v->n, sizeof(char *), cmp_str);
	size_t o = 1;
	for (size_t i = 1; i < v->n; i++) {
		if (strcmp(v->v[i], v->v[o - 1]) == 0)
			free(v->v[i]);
		else
			v->v[o++] = v->v[i];
	}
	v->n = o;
}

static void fact_clear(struct pvg_fact *f)
{
	free(f->value);
	f->value = NULL;
	f->err = 0;
}

/* Trailing whitespace (and newlines) cut; text past the first line dropped when one_line. */
static char *trimmed(const char *text, size_t len, bool one_line)
{
	size_t n = 0;
	while (n < len && text[n] && !(one_line && text[n] == '\n'))
		n++;
	while (n && isspace((unsigned char)text[n - 1]))
		n--;
	return pvg_utf8_sanitize(text, n);
}

/* A small text file into a fact: absent when it does not exist. */
static void read_fact(const char *path, bool one_line, struct pvg_fact *f)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = pvg_read_file(path, SMALL_MAX, &text, &len);
	f->value = NULL;
	f->err = 0;
	if (r == -ENOENT || r == -ENOTDIR)
		return;
	if (r < 0) {
		f->err = r;
		return;
	}
	if (one_line) {
		f->value = trimmed(text, len, true);
		return;
	}
	/* several lines: each sanitized, the newlines kept */
	size_t cap = len * 4 + 1, o = 0;
	f->value = pvg_xcalloc(cap, 1);
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
		_cleanup_free_ char *line = trimmed(text + i, n, true);
		o += (size_t)snprintf(f->value + o, cap - o, "%s%s", o ? "\n" : "", line);
		i += n + 1;
	}
}

void pvg_host_facts_read(const struct pvg_roots *roots, struct pvg_host_facts *out)
{
	memset(out, 0, sizeof(*out));
	_cleanup_free_ char *mid = pvg_asprintf("%s/machine-id", roots->etc);
	read_fact(mid, true, &out->machine_id);
	if (!out->machine_id.value && !out->machine_id.err) {
		/* systems without systemd keep it where D-Bus put it */
		_cleanup_free_ char *dbus = pvg_asprintf("%s/../var/lib/dbus/machine-id", roots->etc);
		read_fact(dbus, true, &out->machine_id);
	}
	_cleanup_free_ char *boot = pvg_asprintf("%s/sys/kernel/random/boot_id", roots->procfs);
	read_fact(boot, true, &out->boot_id);
	_cleanup_free_ char *host = pvg_asprintf("%s/sys/kernel/hostname", roots->procfs);
	read_fact(host, true, &out->hostname);
	_cleanup_free_ char *rel = pvg_asprintf("%s/sys/kernel/osrelease", roots->procfs);
	read_fact(rel, true, &out->kernel);
}

void pvg_host_facts_clear(struct pvg_host_facts *h)
{
	fact_clear(&h->machine_id);
	fact_clear(&h->boot_id);
	fact_clear(&h->hostname);
	fact_clear(&h->kernel);
}

/* "key value" lines (KFD properties) or "Key:  value" lines (NVIDIA information) */
static char *line_value(const char *text, size_t len, const char *key, char sep)
{
	size_t klen = strlen(key);
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		if ((size_t)(le - p) > klen && memcmp(p, key, klen) == 0 &&
		    (p[klen] == sep || (sep == ' ' && p[klen] == '\t'))) {
			const char *v = p + klen + 1;
			while (v < le && isspace((unsigned char)*v))
				v++;
			return trimmed(v, (size_t)(le - v), true);
		}
		p = le + (nl ? 1 : 0);
	}
	return NULL;
}

static int cmp_dirent_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int not_dot(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* For each entry of dir, the value of key in dir/ENTRY/file, pushed as prefix + value. */
static int gpu_ids_from(const char *dir, const char *file, const char *key, char sep,
			const char *prefix, bool kfd, struct pvg_strv *ids)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, not_dot, cmp_dirent_name);
	if (n < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	int err = 0;
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *path = pvg_asprintf("%s/%s/%s", dir, ents[i]->d_name, file);
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		int r = pvg_read_file(path, SMALL_MAX, &text, &len);
		free(ents[i]);
		if (r == -ENOENT)
			continue;
		if (r < 0) {
			err = err ? err : r;
			continue;
		}
		if (kfd) {
			/* CPU nodes have gfx_target_version 0 and no GPU identity */
			_cleanup_free_ char *gfx = line_value(text, len, "gfx_target_version", ' ');
			if (!gfx || strcmp(gfx, "0") == 0)
				continue;
		}
		_cleanup_free_ char *v = line_value(text, len, key, sep);
		if (v && v[0] && strcmp(v, "0") != 0)
			pvg_strv_push(ids, pvg_asprintf("%s%s", prefix, v));
	}
	free(ents);
	return err;
}

int pvg_kfd_gpu_archs(const char *sysfs, struct pvg_strv *out)
{
	memset(out, 0, sizeof(*out));
	_cleanup_free_ char *dir = pvg_asprintf("%s/class/kfd/kfd/topology/nodes", sysfs);
	struct pvg_strv versions = { 0 };
	int err = gpu_ids_from(dir, "properties", "gfx_target_version", ' ', "", true, &versions);
	for (size_t i = 0; i < versions.n; i++) {
		char *end = NULL, name[32];
		unsigned long v = strtoul(versions.v[i], &end, 10);
		if (end && !*end && pvg_gfx_name_of_version(v, name, sizeof(name)) == 0)
			pvg_strv_push(out, pvg_strdup(name));
		else
			pvg_strv_push(out, pvg_asprintf("unknown (gfx_target_version %s)", versions.v[i]));
	}
	pvg_strv_clear(&versions);
	return err ? err : (int)out->n;
}

void pvg_gpu_facts_read(const struct pvg_roots *roots, struct pvg_gpu_facts *out)
{
	memset(out, 0, sizeof(*out));
	_cleanup_free_ char *mod = pvg_asprintf("%s/module/amdgpu", roots->sysfs);
	struct stat st;
	out->amdgpu_loaded = stat(mod, &st) == 0;
	_cleanup_free_ char *ver = pvg_asprintf("%s/module/amdgpu/version", roots->sysfs);
	read_fact(ver, true, &out->amdgpu_version);
	_cleanup_free_ char *nv = pvg_asprintf("%s/driver/nvidia/version", roots->procfs);
	read_fact(nv, true, &out->nvidia_version);

	_cleanup_free_ char *kfd = pvg_asprintf("%s/class/kfd/kfd/topology/nodes", roots->sysfs);
	int r = gpu_ids_from(kfd, "properties", "unique_id", ' ', "kfd:", true, &out->ids);
	_cleanup_free_ char *gpus = pvg_asprintf("%s/driver/nvidia/gpus", roots->procfs);
	int r2 = gpu_ids_from(gpus, "information", "GPU UUID", ':', "nvidia:", false, &out->ids);
	out->ids_err = r ? r : r2;
	strv_sort_unique(&out->ids);
}

void pvg_gpu_facts_clear(struct pvg_gpu_facts *g)
{
	fact_clear(&g->amdgpu_version);
	fact_clear(&g->nvidia_version);
	pvg_strv_clear(&g->ids);
	g->ids_err = 0;
}

static const char *const steering_prefixes[] = {
	"VLLM_", "HIP_",  "HSA_",   "ROCM_",   "ROCR_",  "AMD_", "CUDA_", "PYTORCH_", "NCCL_",
	"RCCL_", "TORCH_", "TRITON_", "MIOPEN_", "NVTX_", "ROCP_",
	/* what Nsight tools set in the processes they inject into */
	"NV_NSIGHT_", "NVIDIA_PROCESS_INJECTION_", "NV_COMPUTE_PROFILER_",
};
static const char *const steering_names[] = { "LD_PRELOAD", "LD_LIBRARY_PATH" };

bool pvg_env_name_steers(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(steering_prefixes); i++) {
		size_t pl = strlen(steering_prefixes[i]);
		if (len > pl && memcmp(name, steering_prefixes[i], pl) == 0)
			return true;
	}
	for (size_t i = 0; i < ARRAY_SIZE(steering_names); i++)
		if (len == strlen(steering_names[i]) && memcmp(name, steering_names[i], len) == 0)
			return true;
	return false;
}

static bool holds_word(const char *s, size_t len, const char *word)
{
	size_t wl = strlen(word);
	for (size_t i = 0; i + wl <= len; i++)
		if (strncasecmp(s + i, word, wl) == 0)
			return true;
	return false;
}

bool pvg_env_name_secret(const char *name, size_t len)
{
	/* a report is 0644 and travels (CI artifacts, merge): a value that may be a credential
	 * stays out of it; a word too many only hides a value, a word too few leaks one */
	static const char *const words[] = { "TOKEN",	 "KEY",	 "SECRET",  "PASSWORD", "PASSWD",
					     "CREDENTIAL", "AUTH", "PRIVATE", "COOKIE",	  "SESSION" };
	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		if (holds_word(name, len, words[i]))
			return true;
	return false;
}

static int cmp_env(const void *a, const void *b)
{
	return strcmp(((const struct pvg_env_var *)a)->name, ((const struct pvg_env_var *)b)->name);
}

void pvg_environ_parse(const char *text, size_t len, struct pvg_env_var **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *z = memchr(p, '\0', (size_t)(end - p));
		const char *e = z ? z : end;
		const char *eq = memchr(p, '=', (size_t)(e - p));
		if (eq && eq > p && pvg_env_name_steers(p, (size_t)(eq - p))) {
			size_t nl = (size_t)(eq - p);
			/* a name given twice: the C library's getenv takes the first */
			bool dup = false;
			for (size_t i = 0; i < *n && !dup; i++)
				dup = strlen((*out)[i].name) == nl && memcmp((*out)[i].name, p, nl) == 0;
			if (!dup) {
				*out = pvg_xrealloc(*out, *n + 1, sizeof(**out));
				struct pvg_env_var *v = &(*out)[(*n)++];
				v->name = pvg_utf8_sanitize(p, nl);
				v->redacted = pvg_env_name_secret(p, nl);
				v->value = v->redacted ? pvg_strdup("<redacted>")
						       : pvg_utf8_sanitize(eq + 1, (size_t)(e - eq - 1));
			}
		}
		p = e + 1;
	}
	if (*n > 1)
		qsort(*out, *n, sizeof(**out), cmp_env);
}

void pvg_env_vars_free(struct pvg_env_var *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].value);
	}
	free(v);
}

int pvg_build_id_fd(int fd, char hex[PVG_BUILD_ID_HEX])
{
	unsigned char head[4096];
	hex[0] = '\0';
	ssize_t got = pvg_pread_full(fd, head, sizeof(head), 0);
	if (got < 0)
		return (int)got;
	struct pvg_elf_head h;
	int r = pvg_elf_head_parse(head, (size_t)got, &h);
	if (r < 0)
		return r;
	_cleanup_free_ unsigned char *far = NULL;
	const unsigned char *phdrs;
	if (h.phoff <= (size_t)got && h.phdrs_bytes <= (size_t)got - h.phoff) {
		phdrs = head + h.phoff;
	} else {
		if (h.phdrs_bytes > PVG_ELF_MAX_NOTE_BYTES)
			return -EINVAL;
		far = pvg_xcalloc(1, h.phdrs_bytes);
		got = pvg_pread_full(fd, far, h.phdrs_bytes, h.phoff);
		if (got < 0)
			return (int)got;
		if ((size_t)got < h.phdrs_bytes)
			return -EINVAL;
		phdrs = far;
	}
	r = pvg_elf_note_segments(&h, phdrs, h.phdrs_bytes);
	if (r < 0)
		return r;
	for (size_t i = 0; i < h.n_notes; i++) {
		uint64_t size = h.notes[i].size;
		if (size == 0 || size > PVG_ELF_MAX_NOTE_BYTES)
			continue;
		_cleanup_free_ unsigned char *notes = pvg_xcalloc(1, (size_t)size);
		got = pvg_pread_full(fd, notes, (size_t)size, h.notes[i].offset);
		if (got < 0)
			return (int)got;
		if ((uint64_t)got < size)
			return -EINVAL;
		unsigned char id[PVG_BUILD_ID_MAX];
		int n = pvg_elf_find_build_id(notes, (size_t)size, h.msb, id);
		if (n < 0)
			return n;
		if (n > 0) {
			pvg_hex(id, (size_t)n, hex);
			return 0;
		}
	}
	return -ENOENT;
}

static int cmp_object(const void *a, const void *b)
{
	return strcmp(((const struct pvg_shared_object *)a)->path,
		      ((const struct pvg_shared_object *)b)->path);
}

/* Opens what the mapping maps: the path inside the process's root (its mount namespace),
 * checked to be the mapped inode, else the mapping itself through map_files. What is not a
 * regular file (a GPU's /dev/nvidia0, /dev/kfd mapped by its driver) is never opened: it
 * is -ENOTSUP, not a shared object. */
static int open_mapped(const char *procfs, pid_t pid, const struct pvg_mapping *m,
		       const char **why)
{
	/* the path is the process's, resolved inside its root (its links cannot leave it) and
	 * looked at as O_PATH first: only a regular file is opened (SPEC §11) */
	_cleanup_free_ char *root = pvg_asprintf("%s/%d/root", procfs, (int)pid);
	_cleanup_close_ int root_fd = m->deleted ? -1 : open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct pvg_untrusted_file f;
	if (root_fd >= 0) {
		const struct pvg_untrusted in_root = { .root_fd = root_fd };
		int fd = pvg_open_untrusted(m->path, &in_root, &f);
		if (fd >= 0 && (uint64_t)f.st.st_ino == m->inode)
			return fd;
		if (fd >= 0)
			close(fd);
		else if (f.refused != PVG_REFUSED_NONE && (uint64_t)f.st.st_ino == m->inode &&
			 f.refused != PVG_REFUSED_USER && f.refused != PVG_REFUSED_LINK)
			return -ENOTSUP;
	}
	_cleanup_free_ char *mf = pvg_map_files_path(procfs, pid, m);
	const struct pvg_untrusted link = { .root_fd = -1 };
	int fd = pvg_open_untrusted(mf, &link, &f);
	if (fd >= 0)
		return fd;
	if (f.refused != PVG_REFUSED_NONE && f.refused != PVG_REFUSED_USER &&
	    f.refused != PVG_REFUSED_LINK)
		return -ENOTSUP; /* a device's memory, a FIFO ...: never opened */
	*why = m->deleted ? "deleted, and map_files unreadable" : "replaced or unreadable";
	return fd;
}

static void read_objects(const struct pvg_roots *roots, pid_t pid, bool build_ids,
			 struct pvg_service_facts *s)
{
	struct pvg_maps maps = { 0 };
	int r = pvg_maps_read(roots->procfs, pid, &maps);
	if (r < 0) {
		s->maps_err = r;
		return;
	}
	for (size_t i = 0; i < maps.n; i++) {
		const struct pvg_mapping *m = &maps.m[i];
		if (m->kind != PVG_MAPPING_FILE || !m->inode)
			continue;
		s->n_mappings++;
		uint64_t dev = (uint64_t)m->dev_major << 32 | m->dev_minor;
		bool seen = false;
		/* mappings of one file are adjacent in maps; look back a little, then everywhere */
		for (size_t k = s->n_objects; k-- > 0 && !seen;)
			seen = s->objects[k].ino == m->inode && s->objects[k].dev == dev &&
			       strcmp(s->objects[k].path, m->path) == 0;
		if (seen)
			continue;
		struct pvg_shared_object o = { .dev = dev, .ino = m->inode, .deleted = m->deleted };
		int fd = !build_ids ? -EAGAIN : open_mapped(roots->procfs, pid, m, &o.why);
		if (fd == -ENOTSUP) {
			continue; /* a device's memory, not code */
		} else if (fd == -EAGAIN) {
			o.err = 0; /* not read: names only */
		} else if (fd < 0) {
			o.err = fd;
		} else {
			struct stat st;
			if (fstat(fd, &st) == 0)
				o.size = (uint64_t)st.st_size;
			int b = pvg_build_id_fd(fd, o.build_id);
			close(fd);
			if (b == -ENOEXEC)
				continue; /* a mapped data file (locale archive, weights): not code */
			if (b < 0) {
				o.err = b;
				o.why = b == -ENOENT ? "no build-id note"
					: b == -EINVAL ? "malformed ELF"
						       : "read";
			}
		}
		o.path = pvg_strdup(m->path);
		s->objects = pvg_xrealloc(s->objects, s->n_objects + 1, sizeof(*s->objects));
		s->objects[s->n_objects++] = o;
	}
	pvg_maps_clear(&maps);
	if (s->n_objects > 1)
		qsort(s->objects, s->n_objects, sizeof(*s->objects), cmp_object);
}

static uint64_t ns_inode(const char *link)
{
	/* "mnt:[4026531841]" */
	const char *b = strchr(link, '[');
	return b ? strtoull(b + 1, NULL, 10) : 0;
}

static void read_namespaces(const struct pvg_roots *roots, pid_t pid, struct pvg_service_facts *s)
{
	for (int i = 0; i < PVG_NS__MAX; i++) {
		char link[256], mine[256];
		_cleanup_free_ char *p = pvg_asprintf("%s/%d/ns/%s", roots->procfs, (int)pid,
						      pvg_ns_names[i]);
		_cleanup_free_ char *self = pvg_asprintf("%s/self/ns/%s", roots->procfs,
							 pvg_ns_names[i]);
		ssize_t n = readlink(p, link, sizeof(link) - 1);
		if (n < 0) {
			s->ns[i].err = -errno;
			continue;
		}
		link[n] = '\0';
		s->ns[i].ino = ns_inode(link);
		ssize_t m = readlink(self, mine, sizeof(mine) - 1);
		if (m >= 0) {
			mine[m] = '\0';
			s->ns[i].shared = ns_inode(mine) == s->ns[i].ino;
		}
	}
}

int pvg_cmdline_read(const char *procfs, pid_t pid, struct pvg_strv *argv)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	_cleanup_free_ char *cl = pvg_asprintf("%s/%d/cmdline", procfs, (int)pid);
	int r = pvg_read_file(cl, CMDLINE_MAX, &text, &len);
	if (r < 0)
		return r;
	/* a process that rewrote its title (setproctitle, vLLM's VLLM::EngineCore) leaves the
	 * rest of its argument area zeroed: padding, not empty arguments */
	while (len && text[len - 1] == '\0')
		len--;
	for (size_t o = 0; o < len;) {
		const char *z = memchr(text + o, '\0', len - o);
		size_t n = z ? (size_t)(z - (text + o)) : len - o;
		pvg_strv_push(argv, pvg_utf8_sanitize(text + o, n));
		o += n + 1;
	}
	return argv->n ? 0 : -ESRCH; /* a zombie or kernel thread: nothing to describe */
}

int pvg_service_facts_read(const struct pvg_roots *roots, pid_t pid, bool build_ids,
			   struct pvg_service_facts *s)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = pvg_cmdline_read(roots->procfs, pid, &s->argv);
	if (r == -ENOENT)
		return -ESRCH;
	s->argv_err = r;
	_cleanup_free_ char *ev = pvg_asprintf("%s/%d/environ", roots->procfs, (int)pid);
	r = pvg_read_file(ev, ENVIRON_MAX, &text, &len);
	if (r < 0)
		s->env_err = r;
	else
		pvg_environ_parse(text, len, &s->env, &s->n_env);
	read_namespaces(roots, pid, s);
	_cleanup_free_ char *cg = pvg_asprintf("%s/%d/cgroup", roots->procfs, (int)pid);
	read_fact(cg, false, &s->cgroup);
	read_objects(roots, pid, build_ids, s);
	return 0;
}

void pvg_service_facts_clear(struct pvg_service_facts *s)
{
	pvg_strv_clear(&s->argv);
	pvg_env_vars_free(s->env, s->n_env);
	fact_clear(&s->cgroup);
	for (size_t i = 0; i < s->n_objects; i++)
		free(s->objects[i].path);
	free(s->objects);
	memset(s, 0, sizeof(*s));
}

int pvg_held_devices(const char *procfs, const pid_t *pids, size_t n, const struct pvg_strv *globs,
		     struct pvg_strv *out)
{
	int err = 0;
	char link[4096];
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *dir = pvg_asprintf("%s/%d/fd", procfs, (int)pids[i]);
		DIR *d = opendir(dir);
		if (!d) {
			if (errno != ENOENT && !err)
				err = -errno;
			continue;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			ssize_t l = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
			if (l <= 0 || link[0] != '/')
				continue;
			link[l] = '\0';
			for (size_t g = 0; g < globs->n; g++)
				if (fnmatch(globs->v[g], link, FNM_PATHNAME) == 0) {
					pvg_strv_push(out, pvg_utf8_sanitize(link, (size_t)l));
					break;
				}
		}
		closedir(d);
	}
	strv_sort_unique(out);
	return err;
}
