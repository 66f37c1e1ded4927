/* SPDX-License-Identifier: MIT */
/*
 * Test helper for the dispatch witness (never installed):
 *   witness-tool dump FILE             parse FILE with the gate's parser, print header, records
 *                                      (with their code module and how it was bound) and, for
 *                                      version 3, the module table
 *   witness-tool drive LIB DIR N [S]   as a process of its own: dlopen LIB with
 *                                      PROVGATE_WITNESS_DIR=DIR (its constructor starts the
 *                                      witness), count N distinct launches (kernel i, grid i)
 *                                      plus 3 repeats of the first through the library's
 *                                      exported pvg_witness_record, flush, then sleep S
 *                                      seconds (default 0; SIGTERM ends the wait) and exit
 *                                      (the exit handler writes the final file)
 *   witness-tool restamp IN DIR PID NSPID LEVELS TICKS BOOT [ANSWERED [FLAGS]]
 *                                      a recorded file with another writer's identity (pid,
 *                                      NSpid, levels, start ticks, boot id), as a version 2
 *                                      file that has answered requests up to ANSWERED (default
 *                                      every request: 0xffffffffffffffff; 0: none; v1: keep
 *                                      it a version 1 file, which cannot answer), header
 *                                      flags FLAGS (default: kept; 1 final, 2 recording; a version 1
 *                                      file's graph launches become opaque replays), resealed, written
 *                                      to DIR under the name the library would give it;
 *                                      prints the path
 *   witness-tool request DIR           makes a request file in DIR as gate 7 does (prints its
 *                                      name)
 *   witness-tool build DESC OUT        a sealed witness file written from a text description
 *                                      (recording, api cuda) to OUT; its writer's identity is
 *                                      the builder's (give it a live process's with restamp)
 *   witness-tool build DESC DIR PID NSPID LEVELS TICKS BOOT
 *                                      the same with that writer's identity, answering every
 *                                      request, written now to DIR under the name the library
 *                                      would give it (by rename, as the library replaces it);
 *                                      prints the path
 *                                      DESC: one item a line, fields KEY=VALUE separated by
 *                                      blanks, '#' starts a comment:
 *                                        version 2|3       (default 3; 2: no modules, every
 *                                                           record's module unknown)
 *                                        api cuda|hsa|none
 *                                        flags N           header flags (default: recording,
 *                                                           and, when the description has a
 *                                                           module line, modules: a writer
 *                                                           that records no module at all
 *                                                           is one whose API cannot say)
 *                                        module [sha256=HEX] size=N origin=file|memory|
 *                                               ptx-jit|embedded|unknown [path=P] [load_ns=N]
 *                                               [unload_ns=N] [flags=N] [arch=N]
 *                                               (no sha256: one made up from path and load
 *                                               time; load_ns may be now, now-S, now+S in
 *                                               seconds; default now)
 *                                        record name=N [demangled=D] [grid=X,Y,Z] [block=X,Y,Z]
 *                                               [count=N] [via=N] [module=K (1-based)]
 *                                               [bind=none|handle|loaded-in-call|only-name|
 *                                               ambiguous] (default: handle with a module)
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "formats/witness.h"
#include "witness/witness.h"

static struct pvg_witness_entry entries[PVG_WITNESS_MAX_RECORDS];
static struct pvg_witness_mod modules[PVG_WITNESS_MAX_MODULES];

static void put(const char *key, struct pvg_witness_str s)
{
	printf(" %s=\"", key);
	for (size_t i = 0; i < s.n; i++) {
		unsigned char c = (unsigned char)s.p[i];
		if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static int dump(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 2;
	}
	static uint8_t buf[PVG_WITNESS_MAX_FILE + 1];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(buf) && (r = read(fd, buf + n, sizeof(buf) - n)) > 0)
		n += (size_t)r;
	close(fd);
	struct pvg_witness_file f = { .entries = entries, .modules = modules };
	size_t at;
	enum pvg_witness_error e = pvg_witness_parse(buf, n, &f, &at);
	if (e != PVG_WITNESS_OK) {
		printf("error %s at %zu\n", pvg_witness_strerror(e), at);
		return 1;
	}
	const struct pvg_witness_header *h = &f.h;
	printf("header pid=%d nspid=%d levels=%u start_ticks=%llu boot_id=%s api=%u flags=%u "
	       "launches=%llu dropped=%llu graph_launches=%llu nested_driver=%llu captured=%llu "
	       "records=%u note=\"%s\"\n",
	       h->pid, h->nspid, h->nspid_levels, (unsigned long long)h->start_ticks, h->boot_id,
	       h->api, h->flags, (unsigned long long)h->launches,
	       (unsigned long long)h->launches_dropped, (unsigned long long)h->graph_launches,
	       (unsigned long long)h->nested_driver, (unsigned long long)h->captured, h->n_records,
	       h->note);
	if (h->version >= 2)
		printf("graphs itemized=%llu opaque=%llu partial=%llu kernel_launches=%llu execs=%u "
		       "opaque_why=0x%x answered=%llu\n",
		       (unsigned long long)h->graph_replays_itemized,
		       (unsigned long long)h->graph_replays_opaque,
		       (unsigned long long)h->graph_replays_partial,
		       (unsigned long long)h->graph_kernel_launches, h->graph_execs,
		       h->graph_opaque_why, (unsigned long long)h->answered);
	for (size_t i = 0; i < f.n; i++) {
		const struct pvg_witness_entry *x = &f.entries[i];
		printf("record");
		put("name", x->name);
		put("demangled", x->demangled);
		put("module", x->module);
		printf(" grid=%u,%u,%u block=%u,%u,%u via=%u flags=%u count=%llu first_ns=%llu "
		       "last_ns=%llu",
		       x->grid[0], x->grid[1], x->grid[2], x->block[0], x->block[1], x->block[2], x->via,
		       x->flags, (unsigned long long)x->count, (unsigned long long)x->first_ns,
		       (unsigned long long)x->last_ns);
		/* version 3: the code module (1 + index into the module lines; 0 unknown) */
		if (h->version >= 3)
			printf(" code=%u bind=%u", x->code, x->bind);
		putchar('\n');
	}
	if (h->version >= 3)
		printf("modules n=%u loaded=%llu dropped=%llu\n", h->n_modules,
		       (unsigned long long)h->modules_loaded, (unsigned long long)h->modules_dropped);
	for (size_t i = 0; i < f.n_modules; i++) {
		const struct pvg_witness_mod *m = &f.modules[i];
		printf("module index=%zu sha256=", i + 1);
		for (int b = 0; b < 32; b++)
			printf("%02x", m->sha256[b]);
		printf(" size=%llu origin=%u flags=%u arch=%u api_id=%u names=%u handle=0x%llx "
		       "file_offset=%llu load_ns=%llu unload_ns=%llu",
		       (unsigned long long)m->size, m->origin, m->flags, m->arch, m->api_id, m->names,
		       (unsigned long long)m->handle, (unsigned long long)m->file_offset,
		       (unsigned long long)m->load_ns, (unsigned long long)m->unload_ns);
		if (m->flags & PVG_WITNESS_M_NOT_HASHED)
			printf(" unhashed=%s", pvg_witness_unhashed_name(m->unhashed));
		put("path", m->path);
		putchar('\n');
	}
	return 0;
}

static volatile sig_atomic_t terminated;

static void on_term(int sig)
{
	(void)sig;
	terminated = 1;
}

static int drive(const char *lib, const char *dir, long n, long sleep_s)
{
	setenv(PVG_WITNESS_DIR_ENV, dir, 1);
	void *h = dlopen(lib, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	void (*rec)(const struct pvg_launch *) = (void (*)(const struct pvg_launch *))dlsym(
		h, "pvg_witness_record");
	int (*flush)(void) = (int (*)(void))dlsym(h, "pvg_witness_flush");
	if (!rec || !flush) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 2;
	}
	char name[64];
	for (long i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "_Z10pvg_test_%ldPf", i % 100000);
		struct pvg_launch l = { .handle = 0x1000 + (uint64_t)i,
					.grid = { (uint32_t)i + 1, 1, 1 },
					.block = { 128, 1, 1 },
					.via = PVG_WITNESS_VIA_DRIVER,
					.name = name };
		rec(&l);
		if (i == 0)
			for (int k = 0; k < 3; k++)
				rec(&l);
	}
	int r = flush();
	if (r < 0)
		fprintf(stderr, "flush: %s\n", strerror(-r));
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	/* SIGTERM ends it the way a service that handles it does: by returning from main, so
	 * the exit handlers (the witness's final write) run */
	signal(SIGTERM, on_term);
	for (long t = 0; t < sleep_s && !terminated; t++)
		sleep(1);
	return r < 0 ? 1 : 0;
}

static int restamp(char **a, int n)
{
	FILE *f = fopen(a[0], "rb");
	if (!f)
		return 2;
	static uint8_t buf[PVG_WITNESS_MAX_FILE], out[PVG_WITNESS_MAX_FILE + 4096];
	size_t len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	struct pvg_witness_file wf = { .entries = entries };
	if (pvg_witness_parse(buf, len, &wf, NULL) != PVG_WITNESS_OK)
		return 2;
	/* the records (and modules) and strings as they were, after a current header */
	struct pvg_witness_header old, h = wf.h;
	memcpy(&old, buf, PVG_WITNESS_V1_HEADER_SIZE);
	if (n > 7 && strcmp(a[7], "v1") == 0) {
		if (old.version != 1)
			return 2;
		/* a version 1 file, as an older library wrote it */
		old.pid = atoi(a[2]);
		old.nspid = atoi(a[3]);
		old.nspid_levels = (uint32_t)atoi(a[4]);
		old.start_ticks = strtoull(a[5], NULL, 10);
		snprintf(old.boot_id, sizeof(old.boot_id), "%.39s", a[6]);
		if (n > 8)
			old.flags = (uint32_t)strtoul(a[8], NULL, 0);
		memcpy(buf, &old, PVG_WITNESS_V1_HEADER_SIZE);
		memcpy(out, buf, len);
		h = old;
		if (pvg_witness_seal(out, len) < 0)
			return 2;
		goto write;
	}
	size_t body = len - old.header_size;
	/* a version 1 writer itemized no graph replay */
	if (wf.h.version < 2)
		h.graph_replays_opaque = wf.h.graph_launches;
	/* records of an older file keep their size: version 2 is the newest header they fit */
	h.version = wf.h.version < 3 ? 2 : PVG_WITNESS_VERSION;
	h.header_size = h.version == 2 ? PVG_WITNESS_V2_HEADER_SIZE : sizeof(h);
	h.pid = atoi(a[2]);
	h.nspid = atoi(a[3]);
	h.nspid_levels = (uint32_t)atoi(a[4]);
	h.start_ticks = strtoull(a[5], NULL, 10);
	snprintf(h.boot_id, sizeof(h.boot_id), "%.39s", a[6]);
	h.answered = n > 7 ? strtoull(a[7], NULL, 0) : UINT64_MAX;
	if (n > 8)
		h.flags = (uint32_t)strtoul(a[8], NULL, 0);
	memcpy(out, &h, h.header_size);
	memcpy(out + h.header_size, buf + old.header_size, body);
	len = h.header_size + body;
	if (pvg_witness_seal(out, len) < 0)
		return 2;
write:;
	char path[4200];
	snprintf(path, sizeof(path), "%s/witness-%d-%llu-%.8s%s", a[1], h.nspid,
		 (unsigned long long)h.start_ticks, h.boot_id, PVG_WITNESS_SUFFIX);
	f = fopen(path, "wb");
	if (!f || fwrite(out, 1, len, f) != len || fclose(f) != 0)
		return 2;
	printf("%s\n", path);
	return 0;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t load_time(const char *s)
{
	if (strncmp(s, "now", 3) != 0)
		return strtoull(s, NULL, 0);
	double off = s[3] ? strtod(s + 3, NULL) : 0;
	return (uint64_t)((double)realtime_ns() + off * 1e9);
}

static int request(const char *dir)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s%016llx", dir, PVG_WITNESS_REQUEST_PREFIX,
		 (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return 2;
	close(fd);
	printf("%s\n", strrchr(path, '/') + 1);
	return 0;
}

/* ---- build: a file from a text description ---- */

static uint8_t b_strings[1u << 20];
static size_t b_n_strings;

static uint32_t b_add_string(const char *v, uint32_t *len)
{
	size_t n = strlen(v);
	if (b_n_strings + n > sizeof(b_strings))
		exit(2);
	memcpy(b_strings + b_n_strings, v, n);
	*len = (uint32_t)n;
	b_n_strings += n;
	return (uint32_t)(b_n_strings - n);
}

/* The value of KEY=VALUE in a line's fields (NULL: absent). */
static const char *b_field(char **f, int n, const char *key)
{
	size_t k = strlen(key);
	for (int i = 1; i < n; i++)
		if (strncmp(f[i], key, k) == 0 && f[i][k] == '=')
			return f[i] + k + 1;
	return NULL;
}

static void b_dims(const char *v, uint32_t d[3])
{
	d[0] = d[1] = d[2] = 1;
	if (v && sscanf(v, "%u,%u,%u", &d[0], &d[1], &d[2]) < 1)
		exit(2);
}

/* ident: NULL (the builder's identity, written to out) or DIR PID NSPID LEVELS TICKS BOOT
 * (that writer's, answering every request, written to DIR under the library's name) */
static int build(const char *desc, const char *out_path, char **ident)
{
	FILE *in = fopen(desc, "r");
	if (!in)
		return 2;
	static struct pvg_witness_record recs[PVG_WITNESS_MAX_RECORDS];
	static struct pvg_witness_module mods[1024];
	size_t n_recs = 0, n_mods = 0;
	uint32_t version = 3, api = PVG_WITNESS_API_CUDA, flags = 0;
	bool flags_set = false;
	uint64_t launches = 0;
	char line[8192];
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	while (fgets(line, sizeof(line), in)) {
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *f[64];
		int n = 0;
		for (char *t = strtok(line, " \t\r\n"); t && n < 64; t = strtok(NULL, " \t\r\n"))
			f[n++] = t;
		if (n == 0)
			continue;
		if (strcmp(f[0], "version") == 0 && n == 2) {
			version = (uint32_t)atoi(f[1]);
			if (version != 2 && version != 3)
				return 2;
		} else if (strcmp(f[0], "api") == 0 && n == 2) {
			api = strcmp(f[1], "cuda") == 0  ? PVG_WITNESS_API_CUDA
			      : strcmp(f[1], "hsa") == 0 ? PVG_WITNESS_API_HSA
							 : PVG_WITNESS_API_NONE;
		} else if (strcmp(f[0], "flags") == 0 && n == 2) {
			flags = (uint32_t)strtoul(f[1], NULL, 0);
			flags_set = true;
		} else if (strcmp(f[0], "module") == 0 && n_mods < 1024) {
			struct pvg_witness_module *m = &mods[n_mods++];
			const char *sha = b_field(f, n, "sha256"), *o = b_field(f, n, "origin"), *v;
			if ((sha && strlen(sha) != 64) || !o)
				return 2;
			m->load_ns = (v = b_field(f, n, "load_ns")) ? load_time(v) : now_ns;
			for (int i = 0; sha && i < 32; i++) {
				unsigned b;
				if (sscanf(sha + 2 * i, "%2x", &b) != 1)
					return 2;
				m->sha256[i] = (uint8_t)b;
			}
			if (!sha) { /* made up from its path and load time: distinct, stable */
				const char *p = (v = b_field(f, n, "path")) ? v : "-";
				uint64_t d = pvg_witness_fnv(PVG_FNV_INIT, p, strlen(p));
				d = pvg_witness_fnv(d, &m->load_ns, sizeof(m->load_ns));
				for (size_t i = 0; i < sizeof(m->sha256); i++)
					m->sha256[i] = (uint8_t)(d >> (8 * (i % 8))) ^ (uint8_t)i;
			}
			m->origin = strcmp(o, "file") == 0	     ? PVG_WITNESS_ORIGIN_FILE
				    : strcmp(o, "memory") == 0	     ? PVG_WITNESS_ORIGIN_MEMORY
				    : strcmp(o, "ptx-jit") == 0	     ? PVG_WITNESS_ORIGIN_PTX_JIT
				    : strcmp(o, "embedded") == 0     ? PVG_WITNESS_ORIGIN_EMBEDDED
								     : PVG_WITNESS_ORIGIN_UNKNOWN;
			m->size = (v = b_field(f, n, "size")) ? strtoull(v, NULL, 0) : 0;
			m->unload_ns = (v = b_field(f, n, "unload_ns")) ? strtoull(v, NULL, 0) : 0;
			m->flags = (v = b_field(f, n, "flags")) ? (uint32_t)strtoul(v, NULL, 0) : 0;
			m->arch = (v = b_field(f, n, "arch")) ? (uint32_t)strtoul(v, NULL, 0) : 0;
			m->handle = 0x7000 + n_mods;
			m->api_id = (uint32_t)n_mods;
			if ((v = b_field(f, n, "path")))
				m->path_off = b_add_string(v, &m->path_len);
		} else if (strcmp(f[0], "record") == 0 && n_recs < PVG_WITNESS_MAX_RECORDS) {
			struct pvg_witness_record *r = &recs[n_recs++];
			const char *v = b_field(f, n, "name");
			if (!v)
				return 2;
			r->name_off = b_add_string(v, &r->name_len);
			if ((v = b_field(f, n, "demangled")))
				r->demangled_off = b_add_string(v, &r->demangled_len);
			b_dims(b_field(f, n, "grid"), r->grid);
			b_dims(b_field(f, n, "block"), r->block);
			r->count = (v = b_field(f, n, "count")) ? strtoull(v, NULL, 0) : 1;
			r->via = (v = b_field(f, n, "via")) ? (uint32_t)atoi(v) : PVG_WITNESS_VIA_DRIVER;
			r->module = (v = b_field(f, n, "module")) ? (uint32_t)atoi(v) : 0;
			v = b_field(f, n, "bind");
			r->bind = !v ? (r->module ? PVG_WITNESS_BIND_HANDLE : PVG_WITNESS_BIND_NONE)
				  : strcmp(v, "handle") == 0	     ? PVG_WITNESS_BIND_HANDLE
				  : strcmp(v, "loaded-in-call") == 0 ? PVG_WITNESS_BIND_LOADED_IN_CALL
				  : strcmp(v, "only-name") == 0	     ? PVG_WITNESS_BIND_ONLY_NAME
				  : strcmp(v, "ambiguous") == 0	     ? PVG_WITNESS_BIND_AMBIGUOUS
								     : PVG_WITNESS_BIND_NONE;
			r->first_ns = now_ns - 1000000;
			r->last_ns = now_ns;
			launches += r->count;
		} else {
			fprintf(stderr, "build: cannot read: %s\n", f[0]);
			return 2;
		}
	}
	fclose(in);
	if (version == 2)
		n_mods = 0;
	struct pvg_witness_header h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, PVG_WITNESS_MAGIC, 8);
	h.version = version;
	h.header_size = version == 2 ? PVG_WITNESS_V2_HEADER_SIZE : sizeof(h);
	h.record_size = version == 2 ? PVG_WITNESS_V2_RECORD_SIZE : sizeof(struct pvg_witness_record);
	h.n_records = (uint32_t)n_recs;
	h.strings_size = (uint32_t)b_n_strings;
	h.api = api;
	h.flags = flags_set ? flags
			    : PVG_WITNESS_F_RECORDING |
				      (version >= 3 && n_mods ? PVG_WITNESS_F_MODULES : 0);
	h.pid = h.nspid = (int32_t)getpid();
	h.nspid_levels = 1;
	if (ident) {
		h.pid = atoi(ident[1]);
		h.nspid = atoi(ident[2]);
		h.nspid_levels = (uint32_t)atoi(ident[3]);
		h.start_ticks = strtoull(ident[4], NULL, 10);
		snprintf(h.boot_id, sizeof(h.boot_id), "%.39s", ident[5]);
		h.answered = UINT64_MAX;
	}
	h.init_ns = now_ns - 2000000;
	h.written_ns = now_ns;
	h.launches = launches;
	snprintf(h.note, sizeof(h.note), "composed");
	if (version >= 3) {
		h.n_modules = (uint32_t)n_mods;
		h.module_size = sizeof(struct pvg_witness_module);
		h.modules_loaded = n_mods;
	}
	static uint8_t out[PVG_WITNESS_MAX_FILE];
	size_t len = 0;
	memcpy(out, &h, h.header_size);
	len = h.header_size;
	for (size_t i = 0; i < n_recs; i++) {
		memcpy(out + len, &recs[i], h.record_size);
		len += h.record_size;
	}
	for (size_t i = 0; i < n_mods; i++) {
		memcpy(out + len, &mods[i], sizeof(mods[i]));
		len += sizeof(mods[i]);
	}
	memcpy(out + len, b_strings, b_n_strings);
	len += b_n_strings;
	if (pvg_witness_seal(out, len) < 0)
		return 2;
	if (!ident) {
		FILE *o = fopen(out_path, "wb");
		return !o || fwrite(out, 1, len, o) != len || fclose(o) != 0 ? 2 : 0;
	}
	char path[4200], tmp[4300];
	snprintf(path, sizeof(path), "%s/witness-%d-%llu-%.8s%s", ident[0], h.nspid,
		 (unsigned long long)h.start_ticks, h.boot_id, PVG_WITNESS_SUFFIX);
	/* replaced by rename, as the library does: a reader sees the old file or the new one */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *o = fopen(tmp, "wb");
	if (!o || fwrite(out, 1, len, o) != len || fclose(o) != 0 || rename(tmp, path) != 0)
		return 2;
	printf("%s\n", path);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 9 && argc <= 11 && strcmp(argv[1], "restamp") == 0)
		return restamp(argv + 2, argc - 2);
	if (argc == 4 && strcmp(argv[1], "build") == 0)
		return build(argv[2], argv[3], NULL);
	if (argc == 9 && strcmp(argv[1], "build") == 0)
		return build(argv[2], NULL, argv + 3);
	if (argc == 3 && strcmp(argv[1], "request") == 0)
		return request(argv[2]);
	if (argc == 3 && strcmp(argv[1], "dump") == 0)
		return dump(argv[2]);
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "drive") == 0)
		return drive(argv[2], argv[3], atol(argv[4]), argc == 6 ? atol(argv[5]) : 0);
	fprintf(stderr, "usage: witness-tool dump FILE | drive LIB DIR N [SLEEP] | build DESC OUT | ...\n");
	return 2;
}
