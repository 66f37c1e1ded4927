// SPDX-License-Identifier: MIT
//
// The witness's ROCm front end (lib/witness/hsa.cc) without a GPU: ROCr is not here, so its
// API table is a stand-in (the real struct layout from hsa_api_trace.h, filled with test
// functions). What is real: the kernel symbols of a hipcc code object
// (tests/fixtures/codeobj/bundle-gfx906.bin) placed at a load address, and packets laid out
// with hsa_kernel_dispatch_packet_t. The test proves the glue: OnLoad replaces queue creation
// and executable freezing, a frozen executable's kernels are resolved from packets, every
// batch is forwarded unchanged, and the witness file holds the launches by name and grid.
// The second test adds a stand-in for ROCr's loader extension that serves real gfx90a code
// objects (tests/fixtures/hsa-loader, made by hipcc and clang-offload-bundler-15) from memory,
// from a file at an offset, and from the .hip_fatbin of a loaded shared object, as ROCr
// describes them (hsa_ven_amd_loader.h), plus loaders that give bad answers.
// The third runs the code objects loaded from memory in forked children, one without a filter
// and others under a seccomp filter that makes process_vm_readv fail with EPERM (Docker's
// default profile without CAP_SYS_PTRACE) or ENOSYS, so that the witness copies the bytes
// through a pipe: the same digests, a code object larger than a pipe holds (64 KiB), a
// VM_PFNMAP page (the kernel's [vvar]) hashed in every child, and memory that cannot be read
// (unmapped, a range past a mapping's end, PROT_NONE, a file mapping past its file's end)
// named unreadable, not a crash; one child also has its pipe writes cut short.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hsa/hsa.h>
#define AMD_INTERNAL_BUILD 1
#include <hsa/hsa_api_trace.h>
#include <hsa/hsa_ven_amd_loader.h>
#include <openssl/sha.h>

extern "C" {
#include "formats/aql.h"
#include "formats/codeobj/codeobj.h"
#include "formats/witness.h"
#include "tap.h"
#include "witness/witness.h"
bool OnLoad(HsaApiTable *table, uint64_t runtime_version, uint64_t failed_tool_count,
	    const char *const *failed_tool_names);
}

// A write to a pipe that stops short, as POSIX allows a write to: at most 1000 bytes, and
// where those bytes reach memory that cannot be read, only the bytes before it (what a
// kernel that copies up to the fault answers). Only while short_pipe_writes is set (in one
// child of the seccomp test); every other write goes to the kernel as asked. Defined here, it
// stands for libc's write (and the sanitizer's check of it) in the whole program.
static bool short_pipe_writes;
static unsigned long cut_pipe_writes; // writes answered with fewer bytes than asked

extern "C" ssize_t write(int fd, const void *p, size_t n)
{
	struct stat st;
	if (!short_pipe_writes || fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode))
		return syscall(SYS_write, fd, p, n);
	size_t want = n < 1000 ? n : 1000;
	long r = syscall(SYS_write, fd, p, want);
	if (r < 0 && errno == EFAULT) {
		uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
		size_t before = (size_t)(page - (uintptr_t)p % page);
		if (before < want)
			r = syscall(SYS_write, fd, p, before);
	}
	cut_pipe_writes += r >= 0 && (size_t)r < n;
	return r;
}

namespace {

constexpr uint64_t BASE = 0x7f1200000000ull; // where the "loader" put the code object

struct sym {
	char name[128];
	uint64_t kernel_object;
};
sym syms[8];
size_t n_syms;

bool add_sym(void *, const char *name, size_t len, uint64_t value)
{
	if (n_syms == 8 || len + 4 >= sizeof(syms[0].name))
		return false;
	// ROCr names a kernel symbol with its ".kd" for code object v3+; the front end drops it
	snprintf(syms[n_syms].name, sizeof(syms[0].name), "%.*s.kd", (int)len, name);
	syms[n_syms].kernel_object = BASE + value;
	n_syms++;
	return true;
}

hsa_status_t stand_in_freeze(hsa_executable_t, const char *) { return HSA_STATUS_SUCCESS; }

hsa_status_t stand_in_iterate(hsa_executable_t exec,
			      hsa_status_t (*cb)(hsa_executable_t, hsa_executable_symbol_t, void *),
			      void *data)
{
	for (size_t i = 0; i < n_syms; i++)
		cb(exec, hsa_executable_symbol_t{ i + 1 }, data);
	// a variable symbol: not a kernel, never a record
	cb(exec, hsa_executable_symbol_t{ 100 }, data);
	return HSA_STATUS_SUCCESS;
}

hsa_status_t stand_in_get_info(hsa_executable_symbol_t s, hsa_executable_symbol_info_t a, void *v)
{
	if (s.handle == 100) {
		if (a == HSA_EXECUTABLE_SYMBOL_INFO_TYPE)
			*(hsa_symbol_kind_t *)v = HSA_SYMBOL_KIND_VARIABLE;
		return HSA_STATUS_SUCCESS;
	}
	const sym &y = syms[s.handle - 1];
	switch (a) {
	case HSA_EXECUTABLE_SYMBOL_INFO_TYPE:
		*(hsa_symbol_kind_t *)v = HSA_SYMBOL_KIND_KERNEL;
		return HSA_STATUS_SUCCESS;
	case HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH:
		*(uint32_t *)v = (uint32_t)strlen(y.name);
		return HSA_STATUS_SUCCESS;
	case HSA_EXECUTABLE_SYMBOL_INFO_NAME:
		memcpy(v, y.name, strlen(y.name)); // not NUL-terminated, as ROCr's
		return HSA_STATUS_SUCCESS;
	case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT:
		*(uint64_t *)v = y.kernel_object;
		return HSA_STATUS_SUCCESS;
	default:
		return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	}
}

hsa_status_t stand_in_queue_create(hsa_agent_t, uint32_t, hsa_queue_type32_t,
				   void (*)(hsa_status_t, hsa_queue_t *, void *), void *, uint32_t,
				   uint32_t, hsa_queue_t **)
{
	return HSA_STATUS_ERROR; // the front end must use the intercept queue instead
}

hsa_queue_t the_queue;
hsa_amd_queue_intercept_handler handler;
int intercept_created, registered;

hsa_status_t stand_in_intercept_create(hsa_agent_t, uint32_t, hsa_queue_type32_t,
				       void (*)(hsa_status_t, hsa_queue_t *, void *), void *,
				       uint32_t, uint32_t, hsa_queue_t **q)
{
	intercept_created++;
	*q = &the_queue;
	return HSA_STATUS_SUCCESS;
}

hsa_status_t stand_in_register(hsa_queue_t *q, hsa_amd_queue_intercept_handler h, void *)
{
	registered += q == &the_queue;
	handler = h;
	return HSA_STATUS_SUCCESS;
}

const void *written_pkts;
uint64_t written_count;

void writer(const void *pkts, uint64_t count)
{
	written_pkts = pkts;
	written_count = count;
}

hsa_kernel_dispatch_packet_t dispatch(uint64_t ko, uint16_t wg, uint32_t gx, uint32_t gy)
{
	hsa_kernel_dispatch_packet_t p;
	memset(&p, 0, sizeof(p));
	p.header = HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE;
	p.setup = 2 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
	p.workgroup_size_x = wg;
	p.workgroup_size_y = 1;
	p.workgroup_size_z = 1;
	p.grid_size_x = gx;
	p.grid_size_y = gy;
	p.grid_size_z = 1;
	p.kernel_object = ko;
	return p;
}

pvg_witness_entry entries[PVG_WITNESS_MAX_RECORDS];

const pvg_witness_entry *find(const pvg_witness_file &f, const char *name)
{
	for (size_t i = 0; i < f.n; i++)
		if (f.entries[i].name.n == strlen(name) &&
		    memcmp(f.entries[i].name.p, name, f.entries[i].name.n) == 0)
			return &f.entries[i];
	return nullptr;
}

void hsa_front_end_records_dispatches_by_kernel_name()
{
	// the kernel descriptors of a real gfx906 code object
	const char *src = getenv("PVG_SRC");
	char path[4096];
	snprintf(path, sizeof(path), "%s/tests/fixtures/codeobj/bundle-gfx906.bin", src ? src : ".");
	char *buf = nullptr;
	size_t len = 0;
	CHECK(pvg_read_file(path, 64u << 20, &buf, &len) == 0);
	if (!buf)
		return;
	pvg_src bs{ (const uint8_t *)buf, -1, len };
	pvg_bundle bundle;
	char *err = nullptr;
	CHECK(pvg_bundle_parse(&bs, 0, len, &bundle, &err) == 0);
	for (uint64_t i = 0; i < bundle.n_entries; i++)
		if (strstr(bundle.entries[i].id, "gfx906"))
			pvg_amdgpu_kd_symbols((const uint8_t *)buf + bundle.entries[i].offset,
					      bundle.entries[i].size, add_sym, nullptr);
	pvg_bundle_clear(&bundle);
	free(err);
	free(buf);
	CHECK_INT(n_syms, 2);
	const sym *wv = nullptr, *sa = nullptr;
	for (size_t i = 0; i < n_syms; i++) {
		if (strcmp(syms[i].name, "wvSplitK.kd") == 0)
			wv = &syms[i];
		if (strcmp(syms[i].name, "_Z9scale_addILi4EEvPff.kd") == 0)
			sa = &syms[i];
	}
	CHECK(wv && sa);
	if (!wv || !sa)
		return;

	char dir[] = "/tmp/pvg-witness-hsa.XXXXXX";
	CHECK(mkdtemp(dir) != nullptr);
	CHECK_INT(pvg_witness_start(dir), 0);

	CoreApiTable core;
	AmdExtTable amd;
	HsaApiTable table;
	memset(&core, 0, sizeof(core));
	memset(&amd, 0, sizeof(amd));
	memset(&table, 0, sizeof(table));
	core.hsa_queue_create_fn = stand_in_queue_create;
	core.hsa_executable_freeze_fn = stand_in_freeze;
	core.hsa_executable_iterate_symbols_fn = stand_in_iterate;
	core.hsa_executable_symbol_get_info_fn = stand_in_get_info;
	amd.hsa_amd_queue_intercept_create_fn = stand_in_intercept_create;
	amd.hsa_amd_queue_intercept_register_fn = stand_in_register;
	table.core_ = &core;
	table.amd_ext_ = &amd;
	CHECK(OnLoad(&table, 1, 0, nullptr));
	CHECK(core.hsa_queue_create_fn != stand_in_queue_create);
	CHECK(core.hsa_executable_freeze_fn != stand_in_freeze);

	CHECK_INT(core.hsa_executable_freeze_fn(hsa_executable_t{ 1 }, ""), HSA_STATUS_SUCCESS);
	hsa_queue_t *q = nullptr;
	CHECK_INT(core.hsa_queue_create_fn(hsa_agent_t{ 1 }, 1024, HSA_QUEUE_TYPE_MULTI, nullptr,
					   nullptr, 0, 0, &q),
		  HSA_STATUS_SUCCESS);
	CHECK(q == &the_queue);
	CHECK_INT(intercept_created, 1);
	CHECK_INT(registered, 1);
	CHECK(handler != nullptr);
	if (!handler)
		return;

	hsa_kernel_dispatch_packet_t pk[5];
	pk[0] = dispatch(wv->kernel_object, 64, 80 * 64, 1); // wvSplitK<<<80, 64>>>
	pk[1] = pk[0];
	memset(&pk[2], 0, sizeof(pk[2]));
	pk[2].header = HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE;
	pk[3] = dispatch(sa->kernel_object, 64, 64, 1);
	pk[4] = dispatch(BASE + 0x9999000, 64, 64, 1); // a kernel of no frozen executable
	handler(pk, 5, 0, nullptr, writer);
	CHECK(written_pkts == pk);
	CHECK_INT(written_count, 5);
	handler(pk, 1, 5, nullptr, writer);
	CHECK_INT(pvg_witness_flush(), 0);

	char file[4200] = "";
	DIR *d = opendir(dir);
	for (dirent *de; d && (de = readdir(d));)
		if (de->d_name[0] != '.')
			snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
	if (d)
		closedir(d);
	char *fb = nullptr;
	size_t fl = 0;
	CHECK(pvg_read_file(file, PVG_WITNESS_MAX_FILE, &fb, &fl) == 0);
	pvg_witness_file f;
	f.entries = entries;
	CHECK_INT(pvg_witness_parse((const uint8_t *)fb, fl, &f, nullptr), PVG_WITNESS_OK);
	CHECK_INT(f.h.api, PVG_WITNESS_API_HSA);
	CHECK(f.h.flags & PVG_WITNESS_F_RECORDING);
	CHECK_INT(f.h.launches, 5);
	CHECK_INT(f.n, 3);
	const pvg_witness_entry *e = find(f, "wvSplitK");
	CHECK(e && e->count == 3 && e->grid[0] == 80 && e->grid[1] == 1 && e->block[0] == 64 &&
	      e->via == PVG_WITNESS_VIA_HSA_PACKET);
	e = find(f, "_Z9scale_addILi4EEvPff");
	CHECK(e && e->count == 1 && e->grid[0] == 1);
	size_t unnamed = 0;
	for (size_t i = 0; i < f.n; i++)
		unnamed += (f.entries[i].flags & PVG_WITNESS_R_NO_NAME) != 0;
	CHECK_INT(unnamed, 1);
	// this runtime's table has no loader extension: no module is known, and the file says so
	CHECK(!(f.h.flags & PVG_WITNESS_F_MODULES));
	for (size_t i = 0; i < f.n; i++)
		CHECK(f.entries[i].code == 0 && f.entries[i].bind == PVG_WITNESS_BIND_NONE);
	free(fb);

	// A hipGraph replay: ROCm's HIP (ROCm/clr hipamd/src/hip_graph_internal.hpp, FillCommands)
	// turns each kernel node of the exec into the same command an eager launch makes, and
	// its dependencies into barrier packets; the queue sees ordinary kernel-dispatch packets.
	// Three replays of a graph of wvSplitK -> scale_add (a barrier-AND between them), as one
	// batch per replay with the barrier bit set on the dependent dispatch: counted like eager
	// launches (no packet says it came from a graph).
	hsa_kernel_dispatch_packet_t g[3];
	g[0] = dispatch(wv->kernel_object, 64, 80 * 64, 1);
	memset(&g[1], 0, sizeof(g[1]));
	g[1].header = HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE;
	g[2] = dispatch(sa->kernel_object, 64, 64, 1);
	g[2].header |= 1 << HSA_PACKET_HEADER_BARRIER;
	for (int replay = 0; replay < 3; replay++) {
		written_count = 0;
		handler(g, 3, 6 + 3 * (uint64_t)replay, nullptr, writer);
		CHECK_INT(written_count, 3);
	}
	CHECK_INT(pvg_witness_flush(), 0);
	fb = nullptr;
	CHECK(pvg_read_file(file, PVG_WITNESS_MAX_FILE, &fb, &fl) == 0);
	CHECK_INT(pvg_witness_parse((const uint8_t *)fb, fl, &f, nullptr), PVG_WITNESS_OK);
	CHECK_INT(f.h.launches, 11);
	CHECK_INT(f.h.graph_launches, 0);
	e = find(f, "wvSplitK");
	CHECK(e && e->count == 6 && e->via == PVG_WITNESS_VIA_HSA_PACKET);
	e = find(f, "_Z9scale_addILi4EEvPff");
	CHECK(e && e->count == 4 && e->via == PVG_WITNESS_VIA_HSA_PACKET);
	free(fb);
	pvg_witness_stop();
	unlink(file);
	rmdir(dir);
}

// ---- code identity: the loader extension -----------------------------------------------------

// One loaded code object as the stand-in loader describes it.
struct lco {
	uint64_t handle, exec;
	uint32_t storage; // HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_*
	uint64_t mem_base, mem_size;
	int fd;
	uint64_t load_base, load_size;
	char uri[8192];
	bool fail_storage; // the storage type query fails
};
lco lcos[16];
size_t n_lcos;

// The kernel symbols of every executable: name.kd at the code object's load base + value.
struct esym {
	uint64_t exec;
	char name[128];
	uint64_t kernel_object;
};
esym esyms[64];
size_t n_esyms;

struct sym_add {
	uint64_t exec, base;
};

bool add_esym(void *opaque, const char *name, size_t len, uint64_t value)
{
	auto *a = static_cast<sym_add *>(opaque);
	if (n_esyms == 64 || len + 4 >= sizeof(esyms[0].name))
		return false;
	esym &e = esyms[n_esyms++];
	e.exec = a->exec;
	snprintf(e.name, sizeof(e.name), "%.*s.kd", (int)len, name);
	e.kernel_object = a->base + value;
	return true;
}

hsa_status_t loader_iterate(hsa_executable_t exec,
			    hsa_status_t (*cb)(hsa_executable_t, hsa_loaded_code_object_t, void *),
			    void *data)
{
	for (size_t i = 0; i < n_lcos; i++)
		if (lcos[i].exec == exec.handle) {
			hsa_status_t st = cb(exec, hsa_loaded_code_object_t{ lcos[i].handle }, data);
			if (st != HSA_STATUS_SUCCESS)
				return st;
		}
	return HSA_STATUS_SUCCESS;
}

hsa_status_t loader_get_info(hsa_loaded_code_object_t h,
			     hsa_ven_amd_loader_loaded_code_object_info_t a, void *v)
{
	const lco *c = nullptr;
	for (size_t i = 0; i < n_lcos; i++)
		if (lcos[i].handle == h.handle)
			c = &lcos[i];
	if (!c)
		return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
	switch (a) {
	case HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_TYPE:
		if (c->fail_storage)
			return HSA_STATUS_ERROR;
		*(uint32_t *)v = c->storage;
		return HSA_STATUS_SUCCESS;
	case HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_BASE:
		if (c->storage != HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY)
			return HSA_STATUS_ERROR_INVALID_ARGUMENT;
		*(uint64_t *)v = c->mem_base;
		return HSA_STATUS_SUCCESS;
	case HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_SIZE:
		if (c->storage != HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY)
			return HSA_STATUS_ERROR_INVALID_ARGUMENT;
		*(uint64_t *)v = c->mem_size;
		return HSA_STATUS_SUCCESS;
	case HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_FILE:
		if (c->storage != HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_FILE)
			return HSA_STATUS_ERROR_INVALID_ARGUMENT;
		*(int *)v = c->fd;
		return HSA_STATUS_SUCCESS;
	case HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_BASE:
		*(uint64_t *)v = c->load_base;
		return HSA_STATUS_SUCCESS;
	case HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_SIZE:
		*(uint64_t *)v = c->load_size;
		return HSA_STATUS_SUCCESS;
	case HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI_LENGTH:
		*(uint32_t *)v = (uint32_t)strlen(c->uri);
		return HSA_STATUS_SUCCESS;
	case HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI:
		memcpy(v, c->uri, strlen(c->uri)); // the characters only, as ROCr's
		return HSA_STATUS_SUCCESS;
	default:
		return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	}
}

int ext_table_calls;

hsa_status_t stand_in_major_extension_table(uint16_t ext, uint16_t major, size_t length,
					    void *table)
{
	ext_table_calls++;
	if (ext != HSA_EXTENSION_AMD_LOADER || major != 1)
		return HSA_STATUS_ERROR;
	// as ROCr: its newest table, cut to the length asked for
	hsa_ven_amd_loader_1_03_pfn_t t;
	memset(&t, 0, sizeof(t));
	t.hsa_ven_amd_loader_executable_iterate_loaded_code_objects = loader_iterate;
	t.hsa_ven_amd_loader_loaded_code_object_get_info = loader_get_info;
	memcpy(table, &t, length < sizeof(t) ? length : sizeof(t));
	return HSA_STATUS_SUCCESS;
}

hsa_status_t exec_iterate(hsa_executable_t exec,
			  hsa_status_t (*cb)(hsa_executable_t, hsa_executable_symbol_t, void *),
			  void *data)
{
	for (size_t i = 0; i < n_esyms; i++)
		if (esyms[i].exec == exec.handle)
			cb(exec, hsa_executable_symbol_t{ i + 1 }, data);
	return HSA_STATUS_SUCCESS;
}

hsa_status_t exec_sym_info(hsa_executable_symbol_t s, hsa_executable_symbol_info_t a, void *v)
{
	if (s.handle == 0 || s.handle > n_esyms)
		return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
	const esym &y = esyms[s.handle - 1];
	switch (a) {
	case HSA_EXECUTABLE_SYMBOL_INFO_TYPE:
		*(hsa_symbol_kind_t *)v = HSA_SYMBOL_KIND_KERNEL;
		return HSA_STATUS_SUCCESS;
	case HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH:
		*(uint32_t *)v = (uint32_t)strlen(y.name);
		return HSA_STATUS_SUCCESS;
	case HSA_EXECUTABLE_SYMBOL_INFO_NAME:
		memcpy(v, y.name, strlen(y.name));
		return HSA_STATUS_SUCCESS;
	case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT:
		*(uint64_t *)v = y.kernel_object;
		return HSA_STATUS_SUCCESS;
	default:
		return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	}
}

uint64_t destroyed[8];
size_t n_destroyed;

hsa_status_t stand_in_destroy(hsa_executable_t exec)
{
	if (n_destroyed < 8)
		destroyed[n_destroyed++] = exec.handle;
	return HSA_STATUS_SUCCESS;
}

bool read_fixture(const char *rel, uint8_t **buf, size_t *len)
{
	const char *src = getenv("PVG_SRC");
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", src ? src : ".", rel);
	char *b = nullptr;
	if (pvg_read_file(path, 64u << 20, &b, len) != 0 || !b)
		return false;
	*buf = reinterpret_cast<uint8_t *>(b);
	return true;
}

// The test's own digest (OpenSSL), not the witness's
void digest(const uint8_t *p, size_t n, uint8_t out[32])
{
	SHA256(p, n, out);
}

// A loaded code object, its kernels placed at load_base.
lco *add_lco(uint64_t exec, uint64_t handle, const uint8_t *bytes, size_t size, uint64_t load_base)
{
	lco *c = &lcos[n_lcos++];
	memset(c, 0, sizeof(*c));
	c->handle = handle;
	c->exec = exec;
	c->fd = -1;
	c->load_base = load_base;
	c->load_size = 0x10000;
	sym_add a{ exec, load_base };
	if (bytes)
		pvg_amdgpu_kd_symbols(bytes, size, add_esym, &a);
	return c;
}

uint64_t ko_of(uint64_t exec, const char *name)
{
	char kd[160];
	snprintf(kd, sizeof(kd), "%s.kd", name);
	for (size_t i = 0; i < n_esyms; i++)
		if (esyms[i].exec == exec && strcmp(esyms[i].name, kd) == 0)
			return esyms[i].kernel_object;
	return 0;
}

pvg_witness_mod modules[PVG_WITNESS_MAX_MODULES];

const pvg_witness_mod *module_of_handle(const pvg_witness_file &f, uint64_t handle)
{
	for (size_t i = 0; i < f.n_modules; i++)
		if (f.modules[i].handle == handle)
			return &f.modules[i];
	return nullptr;
}

// The record of name with grid[0] == gx whose code is the module of the loaded code object
// handle.
const pvg_witness_entry *record_of(const pvg_witness_file &f, const char *name, uint32_t gx,
				   uint64_t handle)
{
	for (size_t i = 0; i < f.n; i++) {
		const pvg_witness_entry &e = f.entries[i];
		if (e.name.n != strlen(name) || memcmp(e.name.p, name, e.name.n) != 0 ||
		    e.grid[0] != gx)
			continue;
		if (e.code && e.code <= f.n_modules && f.modules[e.code - 1].handle == handle)
			return &e;
	}
	return nullptr;
}

bool path_is(const pvg_witness_mod *m, const char *want)
{
	return m && m->path.n == strlen(want) && memcmp(m->path.p, want, m->path.n) == 0;
}

bool read_witness(const char *dir, pvg_witness_file *f, char **fb)
{
	char file[4200] = "";
	DIR *d = opendir(dir);
	for (dirent *de; d && (de = readdir(d));)
		if (de->d_name[0] != '.')
			snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
	if (d)
		closedir(d);
	size_t fl = 0;
	*fb = nullptr;
	if (pvg_read_file(file, PVG_WITNESS_MAX_FILE, fb, &fl) != 0)
		return false;
	f->entries = entries;
	f->modules = modules;
	size_t at = 0;
	return pvg_witness_parse((const uint8_t *)*fb, fl, f, &at) == PVG_WITNESS_OK;
}

// Where the gfx906 code object of a shared object's .hip_fatbin lies: in its file, and in
// memory once the object is loaded (libelf and the bundle parser, not the witness's code).
bool fatbin_entry(const char *path, void *dl, uint64_t *file_off, uint64_t *size, uint64_t *addr)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, nullptr);
	size_t shstrndx = 0;
	bool ok = false;
	uint64_t sec_off = 0, sec_addr = 0, sec_size = 0;
	if (e && elf_getshdrstrndx(e, &shstrndx) == 0)
		for (Elf_Scn *scn = nullptr; (scn = elf_nextscn(e, scn));) {
			GElf_Shdr sh;
			const char *n = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name)
							       : nullptr;
			if (n && strcmp(n, ".hip_fatbin") == 0) {
				sec_off = sh.sh_offset;
				sec_addr = sh.sh_addr;
				sec_size = sh.sh_size;
				ok = true;
			}
		}
	if (e)
		elf_end(e);
	struct stat st;
	if (!ok || fstat(fd, &st) < 0) {
		close(fd);
		return false;
	}
	pvg_src src{ nullptr, fd, (uint64_t)st.st_size };
	pvg_bundle b;
	char *err = nullptr;
	ok = pvg_bundle_parse(&src, sec_off, sec_size, &b, &err) == 0;
	bool found = false;
	for (uint64_t i = 0; ok && i < b.n_entries; i++)
		if (strstr(b.entries[i].id, "gfx906")) {
			*file_off = sec_off + b.entries[i].offset;
			*size = b.entries[i].size;
			found = true;
		}
	if (ok)
		pvg_bundle_clear(&b);
	free(err);
	close(fd);
	link_map *lm = nullptr;
	if (!found || dlinfo(dl, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
		return false;
	*addr = lm->l_addr + sec_addr + (*file_off - sec_off);
	return true;
}

void hsa_dispatches_name_their_code_objects()
{
	uint8_t *a = nullptr, *b = nullptr;
	size_t la = 0, lb = 0;
	CHECK(read_fixture("tests/fixtures/hsa-loader/axpy-a-gfx90a.co", &a, &la));
	CHECK(read_fixture("tests/fixtures/hsa-loader/axpy-b-gfx90a.co", &b, &lb));
	if (!a || !b)
		return;
	uint8_t sha_a[32], sha_b[32];
	digest(a, la, sha_a);
	digest(b, lb, sha_b);
	CHECK(memcmp(sha_a, sha_b, 32) != 0);

	// a HIP library's .hip_fatbin, loaded: its plain bundle's gfx906 code object is what HIP
	// hands ROCr where it lies (ROCm/clr hipamd/src/hip_fatbin.cpp)
	const char *src = getenv("PVG_SRC");
	char so[4096];
	snprintf(so, sizeof(so), "%s/tests/fixtures/codeobj/hip-ccob.so", src ? src : ".");
	void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	CHECK(dl != nullptr);
	uint64_t emb_off = 0, emb_size = 0, emb_addr = 0;
	CHECK(dl && fatbin_entry(so, dl, &emb_off, &emb_size, &emb_addr));
	uint8_t sha_emb[32] = {};
	uint8_t *emb_bytes = static_cast<uint8_t *>(malloc(emb_size ? emb_size : 1));
	{
		int fd = open(so, O_RDONLY | O_CLOEXEC);
		CHECK(fd >= 0 && pread(fd, emb_bytes, emb_size, (off_t)emb_off) == (ssize_t)emb_size);
		if (fd >= 0)
			close(fd);
		digest(emb_bytes, emb_size, sha_emb);
	}

	// code object b in a file, at offset 4096, in a folder whose name ROCr would %-encode
	char fdir[] = "/tmp/pvg hsa co.XXXXXX";
	CHECK(mkdtemp(fdir) != nullptr);
	char fpath[256];
	snprintf(fpath, sizeof(fpath), "%s/lib b.co", fdir);
	int ffd = open(fpath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(ffd >= 0);
	uint8_t pad[4096];
	memset(pad, 0x5a, sizeof(pad));
	CHECK(write(ffd, pad, sizeof(pad)) == (ssize_t)sizeof(pad));
	CHECK(write(ffd, b, lb) == (ssize_t)lb);
	CHECK(write(ffd, pad, 100) == 100);
	char enc[512] = "";
	for (const char *p = fpath; *p; p++) {
		size_t o = strlen(enc);
		if (*p == ' ')
			snprintf(enc + o, sizeof(enc) - o, "%%20");
		else
			snprintf(enc + o, sizeof(enc) - o, "%c", *p);
	}
	uint8_t *heap_a = static_cast<uint8_t *>(malloc(la));
	memcpy(heap_a, a, la);
	uint8_t *heap_b = static_cast<uint8_t *>(malloc(lb));
	memcpy(heap_b, b, lb);
	void *unmapped = nullptr; // a page no one may read

	n_lcos = n_esyms = 0;
	// 11: a from memory (memory://, as ROCr names a heap copy)
	lco *c = add_lco(11, 0x1011, a, la, 0x7f2000000000ull);
	c->storage = HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY;
	c->mem_base = (uint64_t)(uintptr_t)heap_a;
	c->mem_size = la;
	snprintf(c->uri, sizeof(c->uri), "memory://%d#offset=0x%llx&size=%zu", (int)getpid(),
		 (unsigned long long)c->mem_base, la);
	// 12: b from a file at an offset: the same kernel names as 11, other bytes
	c = add_lco(12, 0x1012, b, lb, 0x7f2000100000ull);
	c->storage = HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_FILE;
	c->fd = ffd;
	snprintf(c->uri, sizeof(c->uri), "file://%s#offset=4096&size=%zu", enc, lb);
	// 13: two code objects in one executable: the shared object's embedded gfx906 one, and
	// b again from memory; each kernel belongs to the one whose load range holds it
	c = add_lco(13, 0x1013, emb_bytes, emb_size, 0x7f2000200000ull);
	c->storage = HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY;
	c->mem_base = emb_addr;
	c->mem_size = emb_size;
	snprintf(c->uri, sizeof(c->uri), "file://%s#offset=%llu&size=%llu", so,
		 (unsigned long long)emb_off, (unsigned long long)emb_size);
	c = add_lco(13, 0x1014, b, lb, 0x7f2000300000ull);
	c->storage = HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY;
	c->mem_base = (uint64_t)(uintptr_t)heap_b;
	c->mem_size = lb;
	snprintf(c->uri, sizeof(c->uri), "memory://%d#offset=0x%llx&size=%zu", (int)getpid(),
		 (unsigned long long)c->mem_base, lb);
	// bad answers, each an executable of a's kernels: never a crash, never a digest
	// 14: a file URI with a range but no size
	c = add_lco(14, 0x1015, a, la, 0x7f2000400000ull);
	c->storage = HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_FILE;
	c->fd = ffd;
	snprintf(c->uri, sizeof(c->uri), "file://%s#offset=4096", enc);
	// 15: a size larger than the file
	c = add_lco(15, 0x1016, a, la, 0x7f2000500000ull);
	c->storage = HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_FILE;
	c->fd = ffd;
	snprintf(c->uri, sizeof(c->uri), "file://%s#offset=4096&size=%zu", enc, lb + 101);
	// 16: the storage query fails
	c = add_lco(16, 0x1017, a, la, 0x7f2000600000ull);
	c->fail_storage = true;
	snprintf(c->uri, sizeof(c->uri), "memory://%d#offset=0x1000&size=%zu", (int)getpid(), la);
	// 17: memory that cannot be read (a plain read of it would crash the service)
	unmapped = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(unmapped != MAP_FAILED);
	c = add_lco(17, 0x1018, a, la, 0x7f2000700000ull);
	c->storage = HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY;
	c->mem_base = (uint64_t)(uintptr_t)unmapped;
	c->mem_size = 4096;
	snprintf(c->uri, sizeof(c->uri), "memory://%d#offset=0x%llx&size=4096", (int)getpid(),
		 (unsigned long long)c->mem_base);
	CHECK_INT(n_esyms, 2 * 7 + 2); // a's and b's two kernels, the embedded object's two

	char dir[] = "/tmp/pvg-witness-hsa-mod.XXXXXX";
	CHECK(mkdtemp(dir) != nullptr);
	CHECK_INT(pvg_witness_start(dir), 0);
	CoreApiTable core;
	AmdExtTable amd;
	HsaApiTable table;
	memset(&core, 0, sizeof(core));
	memset(&amd, 0, sizeof(amd));
	memset(&table, 0, sizeof(table));
	core.hsa_queue_create_fn = stand_in_queue_create;
	core.hsa_executable_freeze_fn = stand_in_freeze;
	core.hsa_executable_destroy_fn = stand_in_destroy;
	core.hsa_executable_iterate_symbols_fn = exec_iterate;
	core.hsa_executable_symbol_get_info_fn = exec_sym_info;
	core.hsa_system_get_major_extension_table_fn = stand_in_major_extension_table;
	amd.hsa_amd_queue_intercept_create_fn = stand_in_intercept_create;
	amd.hsa_amd_queue_intercept_register_fn = stand_in_register;
	table.core_ = &core;
	table.amd_ext_ = &amd;
	CHECK(OnLoad(&table, 1, 0, nullptr));
	CHECK(ext_table_calls >= 1);
	CHECK(core.hsa_executable_destroy_fn != stand_in_destroy);
	for (uint64_t e = 11; e <= 17; e++)
		CHECK_INT(core.hsa_executable_freeze_fn(hsa_executable_t{ e }, ""), HSA_STATUS_SUCCESS);
	hsa_queue_t *q = nullptr;
	handler = nullptr;
	CHECK_INT(core.hsa_queue_create_fn(hsa_agent_t{ 1 }, 1024, HSA_QUEUE_TYPE_MULTI, nullptr,
					   nullptr, 0, 0, &q),
		  HSA_STATUS_SUCCESS);
	CHECK(handler != nullptr);
	if (!handler)
		return;

	// the same name and grid from 11 and from 12 (the duplicate case), 12's pvg_fill, both
	// kernels of 13, and a dispatch of each bad executable
	hsa_kernel_dispatch_packet_t pk[16];
	size_t np = 0;
	pk[np++] = dispatch(ko_of(11, "pvg_axpy"), 64, 64 * 7, 1);
	pk[np++] = dispatch(ko_of(11, "pvg_axpy"), 64, 64 * 7, 1);
	pk[np++] = dispatch(ko_of(12, "pvg_axpy"), 64, 64 * 7, 1);
	pk[np++] = dispatch(ko_of(12, "pvg_fill"), 64, 64 * 7, 1);
	pk[np++] = dispatch(ko_of(13, "wvSplitK"), 64, 64 * 7, 1);
	pk[np++] = dispatch(ko_of(13, "pvg_fill"), 64, 64 * 7, 1);
	for (uint64_t e = 14; e <= 17; e++)
		pk[np++] = dispatch(ko_of(e, "pvg_axpy"), 64, 64 * (uint32_t)e, 1);
	for (size_t i = 0; i < np; i++)
		CHECK(pk[i].kernel_object != 0);
	handler(pk, np, 0, nullptr, writer);
	CHECK_INT(written_count, np);

	// 11 destroyed; 18 loads b from memory where 11's code was: a dispatch of the same kernel
	// object and grid is another code's, and makes a record of its own
	CHECK_INT(core.hsa_executable_destroy_fn(hsa_executable_t{ 11 }), HSA_STATUS_SUCCESS);
	CHECK(n_destroyed == 1 && destroyed[0] == 11);
	c = add_lco(18, 0x1019, b, lb, 0x7f2000000000ull);
	c->storage = HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY;
	c->mem_base = (uint64_t)(uintptr_t)heap_b;
	c->mem_size = lb;
	snprintf(c->uri, sizeof(c->uri), "memory://%d#offset=0x%llx&size=%zu", (int)getpid(),
		 (unsigned long long)c->mem_base, lb);
	CHECK_INT(core.hsa_executable_freeze_fn(hsa_executable_t{ 18 }, ""), HSA_STATUS_SUCCESS);
	CHECK(ko_of(18, "pvg_axpy") == ko_of(11, "pvg_axpy"));
	pk[0] = dispatch(ko_of(18, "pvg_axpy"), 64, 64 * 7, 1);
	handler(pk, 1, np, nullptr, writer);
	CHECK_INT(pvg_witness_flush(), 0);

	pvg_witness_file f;
	char *fb = nullptr;
	CHECK(read_witness(dir, &f, &fb));
	CHECK(f.h.flags & PVG_WITNESS_F_MODULES);
	CHECK_INT(f.n_modules, 9);

	const pvg_witness_mod *m = module_of_handle(f, 0x1011);
	CHECK(m && m->origin == PVG_WITNESS_ORIGIN_MEMORY && m->size == la && !m->flags &&
	      memcmp(m->sha256, sha_a, 32) == 0 && m->arch == 0x3f /* gfx90a */ && m->names == 2 &&
	      m->unload_ns >= m->load_ns && m->unload_ns != 0);
	char uri[256];
	snprintf(uri, sizeof(uri), "memory://%d#offset=0x%llx&size=%zu", (int)getpid(),
		 (unsigned long long)(uintptr_t)heap_a, la);
	CHECK(path_is(m, uri));
	uint32_t api_11 = m ? m->api_id : 0;

	m = module_of_handle(f, 0x1012);
	CHECK(m && m->origin == PVG_WITNESS_ORIGIN_FILE && m->size == lb && !m->flags &&
	      memcmp(m->sha256, sha_b, 32) == 0 && m->file_offset == 4096 && m->unload_ns == 0 &&
	      m->api_id != api_11);
	CHECK(path_is(m, fpath)); // decoded: the spaces back

	m = module_of_handle(f, 0x1013);
	CHECK(m && m->origin == PVG_WITNESS_ORIGIN_EMBEDDED && m->size == emb_size && !m->flags &&
	      memcmp(m->sha256, sha_emb, 32) == 0 && m->file_offset == emb_off &&
	      m->arch == 0x2f /* gfx906 */);
	CHECK(path_is(m, so));
	const pvg_witness_mod *m2 = module_of_handle(f, 0x1014);
	CHECK(m2 && m2->origin == PVG_WITNESS_ORIGIN_MEMORY && memcmp(m2->sha256, sha_b, 32) == 0 &&
	      m && m2->api_id == m->api_id);

	m = module_of_handle(f, 0x1015);
	CHECK(m && (m->flags & PVG_WITNESS_M_NOT_HASHED) &&
	      m->unhashed == PVG_WITNESS_UNHASHED_BAD_URI && m->origin == PVG_WITNESS_ORIGIN_FILE);
	m = module_of_handle(f, 0x1016);
	CHECK(m && (m->flags & PVG_WITNESS_M_NOT_HASHED) &&
	      m->unhashed == PVG_WITNESS_UNHASHED_BAD_RANGE && m->origin == PVG_WITNESS_ORIGIN_FILE &&
	      path_is(m, fpath));
	m = module_of_handle(f, 0x1017);
	CHECK(m && (m->flags & PVG_WITNESS_M_NOT_HASHED) &&
	      m->unhashed == PVG_WITNESS_UNHASHED_QUERY_FAILED);
	m = module_of_handle(f, 0x1018);
	CHECK(m && (m->flags & PVG_WITNESS_M_NOT_HASHED) &&
	      m->unhashed == PVG_WITNESS_UNHASHED_UNREADABLE &&
	      m->origin == PVG_WITNESS_ORIGIN_MEMORY);
	static const uint8_t zero[32] = {};
	for (uint64_t h = 0x1015; h <= 0x1018; h++) {
		m = module_of_handle(f, h);
		CHECK(m && memcmp(m->sha256, zero, 32) == 0);
	}
	m = module_of_handle(f, 0x1019);
	CHECK(m && memcmp(m->sha256, sha_b, 32) == 0 && m->unload_ns == 0);

	// each dispatch names its code object, by its kernel object
	const pvg_witness_entry *e = record_of(f, "pvg_axpy", 7, 0x1011);
	CHECK(e && e->count == 2 && e->bind == PVG_WITNESS_BIND_HANDLE);
	e = record_of(f, "pvg_axpy", 7, 0x1012);
	CHECK(e && e->count == 1 && e->bind == PVG_WITNESS_BIND_HANDLE);
	e = record_of(f, "pvg_fill", 7, 0x1012);
	CHECK(e && e->count == 1 && e->bind == PVG_WITNESS_BIND_HANDLE);
	e = record_of(f, "wvSplitK", 7, 0x1013);
	CHECK(e && e->count == 1 && e->bind == PVG_WITNESS_BIND_HANDLE);
	e = record_of(f, "pvg_fill", 7, 0x1014);
	CHECK(e && e->count == 1 && e->bind == PVG_WITNESS_BIND_HANDLE);
	for (uint64_t x = 14; x <= 17; x++) {
		e = record_of(f, "pvg_axpy", (uint32_t)x, 0x1007 + x); // 0x1015..0x1018
		CHECK(e && e->count == 1 && e->bind == PVG_WITNESS_BIND_HANDLE);
	}
	e = record_of(f, "pvg_axpy", 7, 0x1019);
	CHECK(e && e->count == 1 && e->bind == PVG_WITNESS_BIND_HANDLE);
	size_t axpy7 = 0;
	for (size_t i = 0; i < f.n; i++)
		axpy7 += f.entries[i].name.n == 8 && memcmp(f.entries[i].name.p, "pvg_axpy", 8) == 0 &&
			 f.entries[i].grid[0] == 7;
	CHECK_INT(axpy7, 3); // 11's, 12's and 18's: never merged by name or kernel object
	free(fb);

	pvg_witness_stop();
	DIR *d = opendir(dir);
	for (dirent *de; d && (de = readdir(d));)
		if (de->d_name[0] != '.') {
			char p[4200];
			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
	rmdir(dir);
	close(ffd);
	unlink(fpath);
	rmdir(fdir);
	free(heap_a);
	free(heap_b);
	free(emb_bytes);
	free(a);
	free(b);
	if (dl)
		dlclose(dl);
	if (unmapped != MAP_FAILED)
		munmap(unmapped, 4096);
}

// ---- the copy through a pipe: process_vm_readv forbidden by seccomp -------------------------

#if defined(__x86_64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TEST_AUDIT_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__riscv) && __riscv_xlen == 64
#define TEST_AUDIT_ARCH AUDIT_ARCH_RISCV64
#elif defined(__s390x__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_S390X
#endif

// What a container's seccomp profile does: process_vm_readv fails with err, every other call
// (and a call of another arch's numbering) is let through.
int forbid_process_vm_readv(int err)
{
#ifdef TEST_AUDIT_ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((uint32_t)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		return -errno;
	return 0;
#else
	(void)err;
	return -ENOTSUP;
#endif
}

struct read_mode {
	const char *name;
	int err; // process_vm_readv fails with this (0: no filter)
	bool short_writes; // the pipe's writes stop short
};

// Why a child failed, by its exit status.
enum child_exit {
	CHILD_OK = 0,
	CHILD_NO_FILTER = 10, // the filter could not be installed
	CHILD_FILTER_IGNORED = 11, // process_vm_readv still reads, or fails otherwise
	CHILD_NO_WITNESS = 12,
	CHILD_FREEZE = 13,
	CHILD_FLUSH = 14,
	CHILD_NOT_CUT = 15, // no pipe write was cut short where they were to be
};

// In a child: the filter of mode, then OnLoad and the freeze of executables first..last (the
// stand-in loader's code objects), the witness file written into dir.
[[noreturn]] void freeze_in_child(const read_mode &mode, const char *dir, uint64_t first,
				  uint64_t last)
{
	if (mode.err) {
		if (forbid_process_vm_readv(mode.err) != 0)
			_exit(CHILD_NO_FILTER);
		char from[16] = "0123456789abcde", to[16] = "";
		struct iovec l = { to, sizeof(to) }, r = { from, sizeof(from) };
		errno = 0;
		if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != -1 || errno != mode.err)
			_exit(CHILD_FILTER_IGNORED);
	}
	short_pipe_writes = mode.short_writes;
	if (pvg_witness_start(dir) != 0)
		_exit(CHILD_NO_WITNESS);
	CoreApiTable core;
	AmdExtTable amd;
	HsaApiTable table;
	memset(&core, 0, sizeof(core));
	memset(&amd, 0, sizeof(amd));
	memset(&table, 0, sizeof(table));
	core.hsa_queue_create_fn = stand_in_queue_create;
	core.hsa_executable_freeze_fn = stand_in_freeze;
	core.hsa_executable_destroy_fn = stand_in_destroy;
	core.hsa_executable_iterate_symbols_fn = exec_iterate;
	core.hsa_executable_symbol_get_info_fn = exec_sym_info;
	core.hsa_system_get_major_extension_table_fn = stand_in_major_extension_table;
	amd.hsa_amd_queue_intercept_create_fn = stand_in_intercept_create;
	amd.hsa_amd_queue_intercept_register_fn = stand_in_register;
	table.core_ = &core;
	table.amd_ext_ = &amd;
	if (!OnLoad(&table, 1, 0, nullptr))
		_exit(CHILD_FREEZE);
	for (uint64_t e = first; e <= last; e++)
		if (core.hsa_executable_freeze_fn(hsa_executable_t{ e }, "") != HSA_STATUS_SUCCESS)
			_exit(CHILD_FREEZE);
	if (mode.short_writes && cut_pipe_writes == 0)
		_exit(CHILD_NOT_CUT);
	if (pvg_witness_flush() != 0)
		_exit(CHILD_FLUSH);
	pvg_witness_stop();
	_exit(CHILD_OK); // no exit handlers: the parent's witness and leak checks are its own
}

void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	for (dirent *de; d && (de = readdir(d));)
		if (de->d_name[0] != '.') {
			char p[4200];
			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

bool same_module(const pvg_witness_mod *x, const pvg_witness_mod *y)
{
	return x && y && memcmp(x->sha256, y->sha256, 32) == 0 && x->size == y->size &&
	       x->origin == y->origin && x->flags == y->flags && x->unhashed == y->unhashed &&
	       x->arch == y->arch && x->file_offset == y->file_offset && x->path.n == y->path.n &&
	       memcmp(x->path.p, y->path.p, x->path.n) == 0;
}

void hsa_code_objects_hash_where_seccomp_forbids_process_vm_readv()
{
	uint8_t *a = nullptr, *b = nullptr, *big = nullptr;
	size_t la = 0, lb = 0, lbig = 0;
	CHECK(read_fixture("tests/fixtures/hsa-loader/axpy-a-gfx90a.co", &a, &la));
	CHECK(read_fixture("tests/fixtures/hsa-loader/axpy-b-gfx90a.co", &b, &lb));
	CHECK(read_fixture("tests/fixtures/hsa-loader/big-gfx90a.co", &big, &lbig));
	if (!a || !b || !big)
		return;
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	// larger than a pipe holds by default, and than the witness's 64 KiB chunk; not a whole
	// number of pages
	CHECK(lbig > (64u << 10) && lbig % page != 0);
	uint8_t sha_a[32], sha_b[32], sha_big[32];
	digest(a, la, sha_a);
	digest(b, lb, sha_b);
	digest(big, lbig, sha_big);

	const char *src = getenv("PVG_SRC");
	char so[4096];
	snprintf(so, sizeof(so), "%s/tests/fixtures/codeobj/hip-ccob.so", src ? src : ".");
	void *dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	CHECK(dl != nullptr);
	uint64_t emb_off = 0, emb_size = 0, emb_addr = 0;
	CHECK(dl && fatbin_entry(so, dl, &emb_off, &emb_size, &emb_addr));
	uint8_t sha_emb[32] = {};
	if (emb_size) {
		uint8_t *emb = static_cast<uint8_t *>(malloc(emb_size));
		int fd = open(so, O_RDONLY | O_CLOEXEC);
		CHECK(emb && fd >= 0 && pread(fd, emb, emb_size, (off_t)emb_off) == (ssize_t)emb_size);
		if (fd >= 0)
			close(fd);
		if (emb)
			digest(emb, emb_size, sha_emb);
		free(emb);
	}

	// the heap copies ROCr makes of a code object it was handed
	uint8_t *heap_a = static_cast<uint8_t *>(malloc(la));
	uint8_t *heap_b = static_cast<uint8_t *>(malloc(lb));
	uint8_t *heap_big = static_cast<uint8_t *>(malloc(lbig));
	if (!heap_a || !heap_b || !heap_big)
		return;
	memcpy(heap_a, a, la);
	memcpy(heap_b, b, lb);
	memcpy(heap_big, big, lbig);
	// big, its last byte the last of a mapping whose next page is unmapped: read up to the
	// edge and not a byte past it
	size_t edge_pages = (lbig + page - 1) / page;
	auto *edge = static_cast<uint8_t *>(mmap(nullptr, (edge_pages + 1) * page,
						 PROT_READ | PROT_WRITE,
						 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	CHECK(edge != MAP_FAILED);
	if (edge == MAP_FAILED)
		return;
	CHECK(munmap(edge + edge_pages * page, page) == 0);
	uint8_t *edge_big = edge + edge_pages * page - lbig;
	memcpy(edge_big, big, lbig);
	// a page mapped then unmapped: nothing there
	void *gone = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(gone != MAP_FAILED && munmap(gone, page) == 0);
	// two pages, the second unmapped: a range that runs off the end of the first
	auto *two = static_cast<uint8_t *>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	CHECK(two != MAP_FAILED);
	if (two == MAP_FAILED)
		return;
	memset(two, 0x5a, page);
	CHECK(munmap(two + page, page) == 0);
	// a page that may not be read
	void *none = mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(none != MAP_FAILED);
	// a file of one page mapped as two: a plain read of the second page raises SIGBUS
	char fdir[] = "/tmp/pvg-hsa-seccomp.XXXXXX";
	CHECK(mkdtemp(fdir) != nullptr);
	char fpath[256];
	snprintf(fpath, sizeof(fpath), "%s/short", fdir);
	int ffd = open(fpath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(ffd >= 0 && ftruncate(ffd, (off_t)page) == 0);
	void *past_eof = mmap(nullptr, 2 * page, PROT_READ, MAP_SHARED, ffd, 0);
	CHECK(past_eof != MAP_FAILED);

	// a page that process_vm_readv cannot pin but a load reads: a VM_IO | VM_PFNMAP mapping,
	// as the kernel's [vvar] (and a driver's mapping of host memory, such as
	// hipHostMalloc's through the GPU's render node) is; its bytes are the kernel's clock
	uint64_t pfnmap = 0;
	if (FILE *maps = fopen("/proc/self/maps", "re")) {
		char line[512];
		unsigned long lo = 0, hi = 0;
		while (!pfnmap && fgets(line, sizeof(line), maps))
			if (strstr(line, "[vvar]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
			    hi - lo >= page)
				pfnmap = lo;
		fclose(maps);
	}
	CHECK(pfnmap != 0);

	// executables 21..30, one code object each but 22 (two)
	n_lcos = n_esyms = 0;
	struct {
		uint64_t exec, handle;
		const uint8_t *bytes; // its kernels' symbols
		size_t sym_size;
		uint64_t base, size;
	} const cos[] = {
		{ 21, 0x2021, a, la, (uint64_t)(uintptr_t)heap_a, la },
		{ 22, 0x2022, nullptr, 0, emb_addr, emb_size },
		{ 22, 0x2023, b, lb, (uint64_t)(uintptr_t)heap_b, lb },
		{ 23, 0x2024, big, lbig, (uint64_t)(uintptr_t)heap_big, lbig },
		{ 24, 0x2025, big, lbig, (uint64_t)(uintptr_t)edge_big, lbig },
		{ 25, 0x2026, nullptr, 0, pfnmap, 64 },
		// unreadable: never a crash, never a digest
		{ 26, 0x2027, nullptr, 0, (uint64_t)(uintptr_t)gone, page },
		{ 27, 0x2028, nullptr, 0, (uint64_t)(uintptr_t)two + 100, page },
		{ 28, 0x2029, nullptr, 0, (uint64_t)(uintptr_t)edge_big, lbig + 1 },
		{ 29, 0x202a, nullptr, 0, (uint64_t)(uintptr_t)none, page },
		{ 30, 0x202b, nullptr, 0, (uint64_t)(uintptr_t)past_eof + page - 100, 200 },
	};
	const size_t n_cos = sizeof(cos) / sizeof(cos[0]);
	for (size_t i = 0; i < n_cos; i++) {
		lco *c = add_lco(cos[i].exec, cos[i].handle, cos[i].bytes, cos[i].sym_size,
				 0x7f3000000000ull + i * 0x100000);
		c->storage = HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY;
		c->mem_base = cos[i].base;
		c->mem_size = cos[i].size;
		snprintf(c->uri, sizeof(c->uri), "memory://%d#offset=0x%llx&size=%llu",
			 (int)getpid(), (unsigned long long)cos[i].base,
			 (unsigned long long)cos[i].size);
	}
	const uint8_t *const want_sha[] = { sha_a, sha_emb, sha_b, sha_big, sha_big, nullptr };
	const size_t n_hashed = sizeof(want_sha) / sizeof(want_sha[0]);

	static const read_mode modes[] = {
		{ "process_vm_readv", 0, false },
		{ "process_vm_readv forbidden: EPERM", EPERM, false },
		{ "process_vm_readv forbidden: ENOSYS", ENOSYS, false },
		{ "process_vm_readv forbidden: EPERM, pipe writes cut short", EPERM, true },
	};
	static pvg_witness_mod plain[16]; // the unfiltered run's modules
	char *plain_fb = nullptr; // and its file, which their paths point into
	static const uint8_t zero[32] = {};
	for (const read_mode &mode : modes) {
		printf("# %s\n", mode.name);
		char dir[] = "/tmp/pvg-witness-hsa-seccomp.XXXXXX";
		CHECK(mkdtemp(dir) != nullptr);
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			freeze_in_child(mode, dir, 21, 30);
		CHECK(pid > 0);
		int status = -1;
		CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
		CHECK(!WIFSIGNALED(status)); // a crash
		if (WIFSIGNALED(status))
			printf("#   the child died of signal %d\n", WTERMSIG(status));
		CHECK(WIFEXITED(status));
		CHECK_INT(WEXITSTATUS(status), CHILD_OK);

		pvg_witness_file f{};
		char *fb = nullptr;
		bool got = read_witness(dir, &f, &fb);
		CHECK(got);
		if (!got) {
			free(fb);
			remove_dir(dir);
			continue;
		}
		CHECK(f.h.flags & PVG_WITNESS_F_MODULES);
		// each code object once (the table also holds what the earlier cases of this
		// process loaded: a forked child keeps it)
		size_t ours = 0;
		for (size_t k = 0; k < f.n_modules; k++)
			ours += f.modules[k].handle >= cos[0].handle &&
				f.modules[k].handle <= cos[n_cos - 1].handle;
		CHECK_INT(ours, n_cos);
		static_assert(sizeof(cos) / sizeof(cos[0]) <= sizeof(plain) / sizeof(plain[0]),
			      "the unfiltered run's modules");
		for (size_t i = 0; i < n_cos; i++) {
			const pvg_witness_mod *m = module_of_handle(f, cos[i].handle);
			CHECK(m != nullptr);
			if (!m)
				continue;
			int failed_before = tap_case_failed;
			tap_case_failed = 0;
			if (i < n_hashed) {
				// the reference digest of the bytes, and the unfiltered run's module
				CHECK(!(m->flags & PVG_WITNESS_M_NOT_HASHED));
				CHECK_INT(m->size, cos[i].size);
				if (want_sha[i]) {
					CHECK(memcmp(m->sha256, want_sha[i], 32) == 0);
					CHECK_INT(m->arch, i == 1 ? 0x2f /* gfx906 */ : 0x3f /* gfx90a */);
				} else { // the clock: hashed, not the same bytes twice
					CHECK(memcmp(m->sha256, zero, 32) != 0);
					CHECK_INT(m->arch, 0);
				}
				CHECK_INT(m->origin, i == 1 ? PVG_WITNESS_ORIGIN_EMBEDDED
							    : PVG_WITNESS_ORIGIN_MEMORY);
			} else {
				CHECK(m->flags & PVG_WITNESS_M_NOT_HASHED);
				CHECK_INT(m->unhashed, PVG_WITNESS_UNHASHED_UNREADABLE);
				CHECK(memcmp(m->sha256, zero, 32) == 0);
				CHECK_INT(m->origin, PVG_WITNESS_ORIGIN_MEMORY);
			}
			if (!mode.err && !mode.short_writes) {
				plain[i] = *m;
			} else {
				pvg_witness_mod seen = *m;
				if (i < n_hashed && !want_sha[i])
					memcpy(seen.sha256, plain[i].sha256, 32);
				CHECK(same_module(&seen, &plain[i]));
			}
			if (tap_case_failed)
				printf("#   module %#llx: size %llu, unhashed %u, arch %#x\n",
				       (unsigned long long)cos[i].handle,
				       (unsigned long long)m->size, m->unhashed, m->arch);
			tap_case_failed |= failed_before;
		}
		if (!mode.err && !mode.short_writes && !plain_fb)
			plain_fb = fb;
		else
			free(fb);
		remove_dir(dir);
	}
	free(plain_fb);

	if (past_eof != MAP_FAILED)
		munmap(past_eof, 2 * page);
	if (ffd >= 0)
		close(ffd);
	unlink(fpath);
	rmdir(fdir);
	if (none != MAP_FAILED)
		munmap(none, page);
	munmap(two, page);
	munmap(edge, edge_pages * page);
	free(heap_a);
	free(heap_b);
	free(heap_big);
	free(a);
	free(b);
	free(big);
	if (dl)
		dlclose(dl);
}

} // namespace

int main()
{
	RUN(hsa_front_end_records_dispatches_by_kernel_name);
	RUN(hsa_dispatches_name_their_code_objects);
	RUN(hsa_code_objects_hash_where_seccomp_forbids_process_vm_readv);
	TAP_EXIT();
}
