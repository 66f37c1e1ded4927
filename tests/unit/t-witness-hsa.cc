// SPDX-License-Identifier: MIT
//
// The witness's ROCm front end (lib/witness/hsa.cc) without a GPU: ROCr is not here, so its
// API table is a stand-in (the real struct layout from hsa_api_trace.h, filled with test
// functions). What is real: the kernel symbols of a hipcc code object
// (tests/fixtures/codeobj/bundle-gfx906.bin) placed at a load address, and packets laid out
// with hsa_kernel_dispatch_packet_t. The test proves the glue: OnLoad replaces queue creation
// and executable freezing, a frozen executable's kernels are resolved from packets, every
// batch is forwarded unchanged, and the witness file holds the launches by name and grid.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <unistd.h>

#include <hsa/hsa.h>
#define AMD_INTERNAL_BUILD 1
#include <hsa/hsa_api_trace.h>

extern "C" {
#include "formats/aql.h"
#include "formats/codeobj/codeobj.h"
#include "formats/witness.h"
#include "tap.h"
#include "witness/witness.h"
bool OnLoad(HsaApiTable *table, uint64_t runtime_version, uint64_t failed_tool_count,
	    const char *const *failed_tool_names);
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

} // namespace

int main()
{
	RUN(hsa_front_end_records_dispatches_by_kernel_name);
	TAP_EXIT();
}
