/* SPDX-License-Identifier: MIT */
/*
 * The witness library's writer (lib/witness/writer.c, compiled in with the sanitizers):
 * launches counted from many threads at once while the helper thread rewrites the file every
 * 10 ms, and a reader that keeps parsing the file meanwhile never sees a torn one. The module
 * table: the digests of what it hashes, modules bound by handle and by name (ambiguous when
 * loaded copies differ), the records' code asked once per new key, the table's bound. The
 * SHA-256 itself is t-witness-sha256's.
 */
#include <dirent.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "formats/witness.h"
#include "tap.h"
#include "util/util.h"
#include "witness/witness.h"

#define THREADS 8
#define PER_THREAD 100000
#define KERNELS 16

static char dir[] = "/tmp/pvg-witness-writer.XXXXXX";
static char file[4200];
static atomic_int stop_reader;
static long reads_ok, reads_bad;
static struct pvg_witness_entry entries[PVG_WITNESS_MAX_RECORDS];

static void *launcher(void *arg)
{
	long id = (long)arg;
	char name[32];
	for (long i = 0; i < PER_THREAD; i++) {
		unsigned k = (unsigned)((i + id) % KERNELS);
		snprintf(name, sizeof(name), "_Z6kernelILi%uEEvv", k);
		struct pvg_launch l = { .handle = 0x5000 + k, .grid = { k + 1, 1, 1 },
					.block = { 64, 1, 1 }, .via = PVG_WITNESS_VIA_DRIVER,
					.name = name };
		pvg_witness_record(&l);
	}
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	static struct pvg_witness_entry mine[PVG_WITNESS_MAX_RECORDS];
	while (!atomic_load(&stop_reader)) {
		char *buf = NULL;
		size_t len = 0;
		if (pvg_read_file(file, PVG_WITNESS_MAX_FILE, &buf, &len) == 0) {
			struct pvg_witness_file f = { .entries = mine };
			if (pvg_witness_parse((uint8_t *)buf, len, &f, NULL) == PVG_WITNESS_OK)
				reads_ok++;
			else
				reads_bad++;
			free(buf);
		}
	}
	return NULL;
}

static void writer_counts_concurrent_launches_and_never_tears(void)
{
	CHECK(mkdtemp(dir) != NULL);
	setenv("PROVGATE_WITNESS_INTERVAL_MS", "10", 1);
	CHECK_INT(pvg_witness_start(dir), 0);
	CHECK_INT(pvg_witness_start(dir), -EALREADY);
	pvg_witness_set_api(PVG_WITNESS_API_CUDA, "test", 1);
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
	if (d)
		closedir(d);
	CHECK(file[0] != '\0');
	pthread_t r, t[THREADS];
	pthread_create(&r, NULL, reader, NULL);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, launcher, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	usleep(50000);
	atomic_store(&stop_reader, 1);
	pthread_join(r, NULL);
	pvg_witness_stop();
	printf("#   %ld whole reads while writing, %ld bad\n", reads_ok, reads_bad);
	CHECK(reads_ok > 0);
	CHECK_INT(reads_bad, 0);

	char *buf = NULL;
	size_t len = 0;
	CHECK_INT(pvg_read_file(file, PVG_WITNESS_MAX_FILE, &buf, &len), 0);
	struct pvg_witness_file f = { .entries = entries };
	CHECK_INT(pvg_witness_parse((uint8_t *)buf, len, &f, NULL), PVG_WITNESS_OK);
	CHECK_INT(f.n, KERNELS);
	CHECK_INT(f.h.launches, (long)THREADS * PER_THREAD);
	CHECK(f.h.flags & PVG_WITNESS_F_FINAL);
	uint64_t total = 0;
	for (size_t i = 0; i < f.n; i++) {
		total += f.entries[i].count;
		CHECK_INT(f.entries[i].count, (long)THREADS * PER_THREAD / KERNELS);
		CHECK(f.entries[i].first_ns <= f.entries[i].last_ns);
		CHECK_INT(f.entries[i].name.n, strlen("_Z6kernelILi0EEvv") + (f.entries[i].grid[0] > 10));
	}
	CHECK_INT(total, (long)THREADS * PER_THREAD);
	CHECK_INT(f.h.pid, getpid());
	free(buf);
	unlink(file);
	rmdir(dir);
}

#define REPLAYERS 4
#define REPLAYS 50000
#define EXEC 0xe1e1u
#define EXEC2 0xe2e2u

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *replayer(void *arg)
{
	(void)arg;
	for (long i = 0; i < REPLAYS; i++)
		pvg_witness_graph_replay(EXEC);
	return NULL;
}

static const struct pvg_witness_entry *find_via(const struct pvg_witness_file *f, const char *name,
						 uint32_t via)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->entries[i].via == via && f->entries[i].name.n == strlen(name) &&
		    memcmp(f->entries[i].name.p, name, f->entries[i].name.n) == 0)
			return &f->entries[i];
	return NULL;
}

/* Replays counted from several threads while the exec's list is replaced and the file
 * rewritten: every replay is counted once, in the list it found; a request is answered. */
static void graph_replays_counted_while_lists_change(void)
{
	char gdir[] = "/tmp/pvg-witness-graphs.XXXXXX";
	CHECK(mkdtemp(gdir) != NULL);
	setenv("PROVGATE_WITNESS_INTERVAL_MS", "10", 1);
	CHECK_INT(pvg_witness_start(gdir), 0);
	pvg_witness_set_api(PVG_WITNESS_API_CUDA, "test", 1);
	struct pvg_graph_kernel k[3] = {
		{ .node = 1, .handle = 0xa, .grid = { 4, 1, 1 }, .block = { 64, 1, 1 }, .name = "_Z1av" },
		{ .node = 2, .handle = 0xa, .grid = { 4, 1, 1 }, .block = { 64, 1, 1 }, .name = "_Z1av" },
		{ .node = 3, .handle = 0xb, .grid = { 8, 1, 1 }, .block = { 32, 1, 1 }, .name = "_Z1bv" },
	};
	CHECK_INT(pvg_witness_graph_set(EXEC, k, 3, 0), 0);
	pthread_t t[REPLAYERS];
	for (long i = 0; i < REPLAYERS; i++)
		pthread_create(&t[i], NULL, replayer, NULL);
	/* node 3 now runs another kernel, a few times over; and a child graph marker is no kernel */
	for (int u = 0; u < 20; u++) {
		usleep(1000);
		size_t n;
		uint32_t flags;
		struct pvg_graph_kernel *v = pvg_witness_graph_get(EXEC, &n, &flags);
		CHECK(v && n == 3);
		if (!v)
			break;
		v[2].handle = u % 2 ? 0xb : 0xc;
		v[2].name = u % 2 ? "_Z1bv" : "_Z1cv";
		CHECK_INT(pvg_witness_graph_set(EXEC, v, n, 0), 0);
		free(v);
	}
	for (int i = 0; i < REPLAYERS; i++)
		pthread_join(t[i], NULL);
	/* then, with nothing running alongside: a list with d for node 3, replayed 7 times */
	k[2].handle = 0xd;
	k[2].name = "_Z1dv";
	CHECK_INT(pvg_witness_graph_set(EXEC, k, 3, 0), 0);
	const uint64_t t7a = realtime_ns();
	for (int i = 0; i < 7; i++)
		pvg_witness_graph_replay(EXEC);
	const uint64_t t7b = realtime_ns();
	/* an exec never seen instantiated: counted, not itemized */
	pvg_witness_graph_replay(0xdead);
	/* one thread replays an exec, whose list then changes, and which is then destroyed: each
	 * replay is counted in the list current at the time (this thread's last exec is not
	 * taken for the new list, nor for the exec gone) */
	struct pvg_graph_kernel e = { .node = 1, .handle = 0xe, .grid = { 2, 1, 1 },
				      .block = { 32, 1, 1 }, .name = "_Z1ev" };
	CHECK_INT(pvg_witness_graph_set(EXEC2, &e, 1, 0), 0);
	for (int i = 0; i < 3; i++)
		pvg_witness_graph_replay(EXEC2);
	e.handle = 0xf;
	e.name = "_Z1fv";
	CHECK_INT(pvg_witness_graph_set(EXEC2, &e, 1, 0), 0);
	for (int i = 0; i < 5; i++)
		pvg_witness_graph_replay(EXEC2);
	pvg_witness_graph_drop(EXEC2);
	pvg_witness_graph_replay(EXEC2);

	/* a request: answered by the helper thread with a file whose answered is the token */
	char req[4300];
	snprintf(req, sizeof(req), "%s/%s00000000deadbeef", gdir, PVG_WITNESS_REQUEST_PREFIX);
	FILE *rf = fopen(req, "w");
	CHECK(rf != NULL);
	if (rf)
		fclose(rf);
	char gfile[4200] = "";
	DIR *d = opendir(gdir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			snprintf(gfile, sizeof(gfile), "%s/%s", gdir, de->d_name);
	if (d)
		closedir(d);
	struct pvg_witness_file f = { .entries = entries };
	char *buf = NULL;
	size_t len = 0;
	int answered = 0;
	for (int tries = 0; tries < 200 && !answered; tries++) {
		free(buf);
		buf = NULL;
		if (pvg_read_file(gfile, PVG_WITNESS_MAX_FILE, &buf, &len) == 0 &&
		    pvg_witness_parse((uint8_t *)buf, len, &f, NULL) == PVG_WITNESS_OK)
			answered = f.h.answered == 0xdeadbeefu;
		if (!answered)
			usleep(10000);
	}
	CHECK(answered);
	CHECK_INT(f.h.version, PVG_WITNESS_VERSION);
	const uint64_t total = (uint64_t)REPLAYERS * REPLAYS + 7;
	CHECK_INT(f.h.graph_launches, total + 1 + 9);
	CHECK_INT(f.h.graph_replays_itemized, total + 8);
	CHECK_INT(f.h.graph_replays_opaque, 2);
	CHECK(f.h.graph_opaque_why & PVG_WITNESS_OPAQUE_UNKNOWN);
	CHECK_INT(f.h.graph_kernel_launches, 3 * total + 8);
	CHECK_INT(f.h.graph_execs, 24);
	const struct pvg_witness_entry *ek = find_via(&f, "_Z1ev", PVG_WITNESS_VIA_GRAPH);
	const struct pvg_witness_entry *fk = find_via(&f, "_Z1fv", PVG_WITNESS_VIA_GRAPH);
	CHECK(ek && ek->count == 3);
	CHECK(fk && fk->count == 5);
	const struct pvg_witness_entry *a = find_via(&f, "_Z1av", PVG_WITNESS_VIA_GRAPH);
	const struct pvg_witness_entry *b = find_via(&f, "_Z1bv", PVG_WITNESS_VIA_GRAPH);
	const struct pvg_witness_entry *c = find_via(&f, "_Z1cv", PVG_WITNESS_VIA_GRAPH);
	const struct pvg_witness_entry *dk = find_via(&f, "_Z1dv", PVG_WITNESS_VIA_GRAPH);
	CHECK(a && dk);
	if (a && dk) {
		/* which of b and c a replay ran depends on when it came; each is counted once */
		CHECK_INT(a->count, 2 * total);
		CHECK_INT((b ? b->count : 0) + (c ? c->count : 0), total - 7);
		CHECK_INT(dk->count, 7);
		CHECK(a->grid[0] == 4 && dk->grid[0] == 8 && a->first_ns <= a->last_ns);
		/* the times are CLOCK_REALTIME's (the last one is stamped with the TSC where that
		 * is the kernel's clock, and converted when the file is written): within a
		 * millisecond of the clock read around the replays */
		printf("#   d's replays: first %+lld ns, last %+lld ns from the clock read before them, "
		       "%lld ns between the reads\n",
		       (long long)(dk->first_ns - t7a), (long long)(dk->last_ns - t7a),
		       (long long)(t7b - t7a));
		CHECK(dk->first_ns >= t7a && dk->first_ns <= t7b);
		CHECK(dk->last_ns + 1000000 >= t7a && dk->last_ns <= t7b + 1000000);
		CHECK(dk->first_ns <= dk->last_ns);
	}
	free(buf);
	pvg_witness_stop();
	unlink(req);
	unlink(gfile);
	rmdir(gdir);
}

static atomic_int code_of_calls;

/* a front end's code_of: the handle's module, else the one by name */
static uint32_t code_of(uint64_t handle, const char *name, uint32_t *bind)
{
	atomic_fetch_add(&code_of_calls, 1);
	int idx = pvg_witness_module_by_handle(handle);
	if (idx >= 0) {
		*bind = PVG_WITNESS_BIND_HANDLE;
		return (uint32_t)idx + 1;
	}
	return pvg_witness_module_by_name(name, bind);
}

static void launch(uint64_t handle, const char *name, uint32_t grid)
{
	struct pvg_launch l = { .handle = handle, .grid = { grid, 1, 1 }, .block = { 32, 1, 1 },
				.via = PVG_WITNESS_VIA_DRIVER, .name = name, .code_of = code_of };
	pvg_witness_record(&l);
}

static const struct pvg_witness_entry *find_grid(const struct pvg_witness_file *f, const char *name,
						  uint32_t grid)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->entries[i].grid[0] == grid && f->entries[i].name.n == strlen(name) &&
		    memcmp(f->entries[i].name.p, name, f->entries[i].name.n) == 0)
			return &f->entries[i];
	return NULL;
}

static int read_witness(const char *wdir, char **buf, struct pvg_witness_file *f)
{
	char path[4300] = "";
	DIR *d = opendir(wdir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			snprintf(path, sizeof(path), "%s/%s", wdir, de->d_name);
	if (d)
		closedir(d);
	size_t len = 0;
	if (pvg_read_file(path, PVG_WITNESS_MAX_FILE, buf, &len) != 0)
		return -1;
	size_t at = 0;
	enum pvg_witness_error e = pvg_witness_parse((uint8_t *)*buf, len, f, &at);
	if (e != PVG_WITNESS_OK)
		printf("#   parse: %s at %zu\n", pvg_witness_strerror(e), at);
	return e == PVG_WITNESS_OK ? 0 : -1;
}

static struct pvg_witness_mod mods[PVG_WITNESS_MAX_MODULES];

/* Three images define a kernel "dup": the artifact's, a vendor's older copy (other bytes) and
 * a second load of the artifact's bytes. A launch binds by its handle where the front end
 * knows it, else by name: one module or copies of the same bytes bind (ONLY_NAME), differing
 * copies are AMBIGUOUS; an unloaded module binds no more. code_of is asked once a new key. */
static void modules_bound_by_handle_and_name(void)
{
	char mdir[] = "/tmp/pvg-witness-modules.XXXXXX";
	CHECK(mkdtemp(mdir) != NULL);
	setenv("PROVGATE_WITNESS_INTERVAL_MS", "60000", 1);
	CHECK_INT(pvg_witness_start(mdir), 0);
	pvg_witness_set_api(PVG_WITNESS_API_CUDA, "test", 1);
	static const char art[] = "artifact image bytes", ven[] = "vendor image, older";
	static const char art_names[] = "dup\0only_art\0", ven_names[] = "dup\0";
	struct pvg_module_load a = { .image = art, .size = sizeof(art), .handle = 0xa0, .api_id = 1,
				     .origin = PVG_WITNESS_ORIGIN_EMBEDDED, .arch = 90,
				     .path = "/opt/x/libpvgdup.so", .file_offset = 4096,
				     .names = art_names, .names_len = sizeof(art_names) - 1,
				     .n_names = 2 };
	int ia = pvg_witness_module_add(&a);
	CHECK_INT(ia, 0);
	uint32_t bind = 99;
	CHECK_INT(pvg_witness_module_by_name("dup", &bind), ia + 1);
	CHECK_INT(bind, PVG_WITNESS_BIND_ONLY_NAME);
	CHECK_INT(pvg_witness_module_by_name("du", &bind), 0);
	CHECK_INT(bind, PVG_WITNESS_BIND_NONE);
	launch(0x111, "dup", 1); /* before the vendor's copy: the one module by name */

	struct pvg_module_load v = { .image = ven, .size = sizeof(ven), .api_id = 2,
				     .origin = PVG_WITNESS_ORIGIN_FILE, .arch = 90,
				     .path = "/opt/v/libvendor_ops.so", .names = ven_names,
				     .names_len = sizeof(ven_names) - 1, .n_names = 1 };
	int iv = pvg_witness_module_add(&v);
	CHECK_INT(iv, 1);
	CHECK_INT(pvg_witness_module_by_handle(0xb0), -ENOENT);
	pvg_witness_module_set_handle(iv, 0xb0);
	CHECK_INT(pvg_witness_module_by_handle(0xb0), iv);
	CHECK_INT(pvg_witness_module_by_api_id(2), iv);
	CHECK_INT(pvg_witness_module_by_name("dup", &bind), ia + 1);
	CHECK_INT(bind, PVG_WITNESS_BIND_AMBIGUOUS);
	CHECK_INT(pvg_witness_module_by_name("only_art", &bind), ia + 1);
	CHECK_INT(bind, PVG_WITNESS_BIND_ONLY_NAME);

	atomic_store(&code_of_calls, 0);
	for (int i = 0; i < 12; i++)
		launch(0xb0, "dup", 2); /* the front end knows the vendor's handle */
	for (int i = 0; i < 3; i++)
		launch(0x222, "dup", 3); /* no handle known: two differing copies by name */
	CHECK_INT(atomic_load(&code_of_calls), 2);

	/* the vendor's copy unloaded: the name binds to the artifact alone again */
	pvg_witness_module_unload(iv);
	CHECK_INT(pvg_witness_module_by_handle(0xb0), -ENOENT);
	CHECK_INT(pvg_witness_module_by_api_id(2), -ENOENT);
	launch(0x333, "dup", 4);
	/* a second load of the artifact's bytes: the same code, so not ambiguous */
	struct pvg_module_load a2 = a;
	a2.handle = 0xa2;
	a2.api_id = 3;
	int ia2 = pvg_witness_module_add(&a2);
	CHECK_INT(pvg_witness_module_by_name("dup", &bind), ia + 1);
	CHECK_INT(bind, PVG_WITNESS_BIND_ONLY_NAME);
	launch(0x444, "nobody_defines_me", 5);
	/* an image given by digest, and one with no bytes at all */
	uint8_t given[32];
	memset(given, 0x5a, sizeof(given));
	struct pvg_module_load g = { .sha256 = given, .size = 1234, .api_id = 4,
				     .origin = PVG_WITNESS_ORIGIN_PTX_JIT };
	int ig = pvg_witness_module_add(&g);
	struct pvg_module_load none = { .size = 77, .api_id = 5, .origin = PVG_WITNESS_ORIGIN_MEMORY };
	int in = pvg_witness_module_add(&none);
	CHECK(ig == 3 && in == 4);
	uint8_t d[32];
	CHECK_INT(pvg_witness_module_digest(in, d), -ENOENT);
	CHECK_INT(pvg_witness_module_digest(ig, d), 0);
	/* a path learnt after the load: set once, never over one the module has */
	pvg_witness_module_set_path(in, "/opt/l/liblazy.so", 8192);
	pvg_witness_module_set_path(in, "/opt/l/other.so", 1);
	pvg_witness_module_set_path(ia, "/opt/l/other.so", 1);

	CHECK_INT(pvg_witness_flush(), 0);
	char *buf = NULL;
	struct pvg_witness_file f = { .entries = entries, .modules = mods };
	CHECK_INT(read_witness(mdir, &buf, &f), 0);
	CHECK_INT(f.n_modules, 5);
	CHECK_INT(f.h.modules_loaded, 5);
	CHECK_INT(f.h.modules_dropped, 0);
	CHECK(!(f.h.flags & PVG_WITNESS_F_MODULE_TABLE_FULL));
	if (f.n_modules == 5) {
		uint8_t want[32];
		SHA256((const uint8_t *)art, sizeof(art), want);
		CHECK(memcmp(f.modules[ia].sha256, want, 32) == 0);
		CHECK(memcmp(f.modules[ia2].sha256, want, 32) == 0);
		SHA256((const uint8_t *)ven, sizeof(ven), want);
		CHECK(memcmp(f.modules[iv].sha256, want, 32) == 0);
		CHECK(memcmp(f.modules[ig].sha256, given, 32) == 0);
		CHECK(f.modules[in].flags & PVG_WITNESS_M_NOT_HASHED);
		CHECK_INT(f.modules[ia].size, sizeof(art));
		CHECK_INT(f.modules[ia].names, 2);
		CHECK_INT(f.modules[ia].arch, 90);
		CHECK_INT(f.modules[ia].file_offset, 4096);
		CHECK_INT(f.modules[ia].origin, PVG_WITNESS_ORIGIN_EMBEDDED);
		CHECK_INT(f.modules[ia].handle, 0xa0);
		CHECK_INT(f.modules[iv].handle, 0xb0);
		CHECK(f.modules[ia].path.n == strlen(a.path) &&
		      memcmp(f.modules[ia].path.p, a.path, f.modules[ia].path.n) == 0);
		CHECK(f.modules[iv].unload_ns >= f.modules[iv].load_ns && f.modules[iv].unload_ns);
		CHECK_INT(f.modules[ia].unload_ns, 0);
		static const char lazy[] = "/opt/l/liblazy.so";
		CHECK(f.modules[in].path.n == strlen(lazy) &&
		      memcmp(f.modules[in].path.p, lazy, f.modules[in].path.n) == 0);
		CHECK_INT(f.modules[in].file_offset, 8192);
		CHECK_INT(f.modules[ig].path.n, 0);
	}
	const struct pvg_witness_entry *e1 = find_grid(&f, "dup", 1), *e2 = find_grid(&f, "dup", 2),
				       *e3 = find_grid(&f, "dup", 3), *e4 = find_grid(&f, "dup", 4),
				       *e5 = find_grid(&f, "nobody_defines_me", 5);
	CHECK(e1 && e2 && e3 && e4 && e5);
	if (e1 && e2 && e3 && e4 && e5) {
		CHECK(e1->code == (uint32_t)ia + 1 && e1->bind == PVG_WITNESS_BIND_ONLY_NAME);
		CHECK(e2->code == (uint32_t)iv + 1 && e2->bind == PVG_WITNESS_BIND_HANDLE);
		CHECK_INT(e2->count, 12);
		CHECK(e3->code == (uint32_t)ia + 1 && e3->bind == PVG_WITNESS_BIND_AMBIGUOUS);
		CHECK(e4->code == (uint32_t)ia + 1 && e4->bind == PVG_WITNESS_BIND_ONLY_NAME);
		CHECK(e5->code == 0 && e5->bind == PVG_WITNESS_BIND_NONE);
	}
	free(buf);

	/* the table's bound: loads past it are counted and dropped, and said so */
	int last = 0;
	for (uint32_t i = (uint32_t)f.n_modules; i < PVG_WITNESS_MAX_MODULES + 3; i++) {
		struct pvg_module_load m = { .image = &i, .size = sizeof(i), .api_id = 100 + i };
		last = pvg_witness_module_add(&m);
	}
	CHECK_INT(last, -ENOSPC);
	CHECK_INT(pvg_witness_flush(), 0);
	buf = NULL;
	CHECK_INT(read_witness(mdir, &buf, &f), 0);
	CHECK_INT(f.n_modules, PVG_WITNESS_MAX_MODULES);
	CHECK_INT(f.h.modules_loaded, PVG_WITNESS_MAX_MODULES + 3);
	CHECK_INT(f.h.modules_dropped, 3);
	CHECK(f.h.flags & PVG_WITNESS_F_MODULE_TABLE_FULL);
	free(buf);
	pvg_witness_stop();
	DIR *dd = opendir(mdir);
	struct dirent *de;
	char p[4300];
	while (dd && (de = readdir(dd)))
		if (de->d_name[0] != '.' || strlen(de->d_name) > 2) {
			snprintf(p, sizeof(p), "%s/%s", mdir, de->d_name);
			unlink(p);
		}
	if (dd)
		closedir(dd);
	rmdir(mdir);
}

int main(void)
{
	RUN(writer_counts_concurrent_launches_and_never_tears);
	RUN(graph_replays_counted_while_lists_change);
	RUN(modules_bound_by_handle_and_name);
	TAP_EXIT();
}
