// SPDX-License-Identifier: MIT
//
// The ROCm front end: ROCr loads this library for HSA_TOOLS_LIB and calls OnLoad with its API
// table. Queue creation is replaced by an intercept queue whose handler sees every packet
// batch before it is written to the hardware queue; each kernel-dispatch packet is decoded
// (formats/aql.c) and counted, then the batch is forwarded unchanged. Kernel names come from
// the executables' kernel symbols, collected when an executable is frozen.
//
// C++ only because ROCr's hsa_api_trace.h is; nothing of the C++ library is used (it links
// as C, without libstdc++).
// Not yet run on an AMD GPU (see provgate-witness(7)).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>

#include <hsa/hsa.h>
// Debian ships the headers flat: without this, hsa_api_trace.h looks for "inc/hsa_ext_*.h"
#define AMD_INTERNAL_BUILD 1
#include <hsa/hsa_api_trace.h>

#include "witness/witness.h"
extern "C" {
#include "formats/aql.h"
}

namespace {

CoreApiTable *core;
AmdExtTable *amd;
decltype(hsa_queue_create) *real_queue_create;
decltype(hsa_executable_freeze) *real_executable_freeze;

// The kernel map: a sorted array published through an atomic pointer. Freezing an executable
// (rare) copies it under a lock; the packet handler only loads the pointer.
struct kd_map {
	size_t n;
	pvg_kd_entry v[1];
};
kd_map *kmap; // read with __atomic_load_n (acquire), replaced under kmap_lock
pthread_mutex_t kmap_lock = PTHREAD_MUTEX_INITIALIZER;
constexpr size_t KMAP_MAX = 65536;

struct collect {
	pvg_kd_entry *v;
	size_t n, cap;
};

hsa_status_t on_symbol(hsa_executable_t, hsa_executable_symbol_t sym, void *data)
{
	auto *c = static_cast<collect *>(data);
	hsa_symbol_kind_t kind;
	if (core->hsa_executable_symbol_get_info_fn(sym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind) !=
		    HSA_STATUS_SUCCESS ||
	    kind != HSA_SYMBOL_KIND_KERNEL)
		return HSA_STATUS_SUCCESS;
	uint32_t len = 0;
	uint64_t ko = 0;
	if (core->hsa_executable_symbol_get_info_fn(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH,
						    &len) != HSA_STATUS_SUCCESS ||
	    len == 0 || len > PVG_WITNESS_MAX_NAME ||
	    core->hsa_executable_symbol_get_info_fn(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
						    &ko) != HSA_STATUS_SUCCESS)
		return HSA_STATUS_SUCCESS;
	char *name = static_cast<char *>(calloc(1, len + 1));
	if (!name)
		return HSA_STATUS_SUCCESS;
	core->hsa_executable_symbol_get_info_fn(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME, name);
	if (len > 3 && strcmp(name + len - 3, ".kd") == 0)
		name[len - 3] = '\0';
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		auto *v = static_cast<pvg_kd_entry *>(realloc(c->v, cap * sizeof(pvg_kd_entry)));
		if (!v) {
			free(name);
			return HSA_STATUS_SUCCESS;
		}
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = pvg_kd_entry{ ko, name };
	return HSA_STATUS_SUCCESS;
}

hsa_status_t executable_freeze(hsa_executable_t exec, const char *options)
{
	hsa_status_t st = real_executable_freeze(exec, options);
	if (st != HSA_STATUS_SUCCESS)
		return st;
	collect c{ nullptr, 0, 0 };
	core->hsa_executable_iterate_symbols_fn(exec, on_symbol, &c);
	if (c.n) {
		pthread_mutex_lock(&kmap_lock);
		kd_map *old = kmap;
		size_t n_old = old ? old->n : 0;
		size_t n = n_old + c.n < KMAP_MAX ? n_old + c.n : KMAP_MAX;
		auto *m = static_cast<kd_map *>(malloc(sizeof(kd_map) + n * sizeof(pvg_kd_entry)));
		if (m) {
			if (old)
				memcpy(m->v, old->v, n_old * sizeof(pvg_kd_entry));
			memcpy(m->v + n_old, c.v, (n - n_old) * sizeof(pvg_kd_entry));
			m->n = n;
			pvg_kd_sort(m->v, m->n);
			__atomic_store_n(&kmap, m, __ATOMIC_RELEASE);
			// the old array stays: a handler may still be reading it (bounded: one
			// per frozen executable)
		}
		pthread_mutex_unlock(&kmap_lock);
	}
	free(c.v);
	return st;
}

void on_packets(const void *pkts, uint64_t count, uint64_t, void *,
		hsa_amd_queue_intercept_packet_writer writer)
{
	const uint8_t *p = static_cast<const uint8_t *>(pkts);
	for (uint64_t i = 0; i < count; i++) {
		pvg_aql_dispatch d;
		if (pvg_aql_decode(p + i * PVG_AQL_PACKET_SIZE, &d) != 1)
			continue;
		kd_map *m = __atomic_load_n(&kmap, __ATOMIC_ACQUIRE);
		const char *name = m ? pvg_kd_lookup(m->v, m->n, d.kernel_object) : nullptr;
		pvg_launch l{};
		l.handle = d.kernel_object;
		memcpy(l.grid, d.workgroups, sizeof(l.grid));
		memcpy(l.block, d.workgroup, sizeof(l.block));
		l.via = PVG_WITNESS_VIA_HSA_PACKET;
		l.name = name;
		pvg_witness_record(&l);
	}
	writer(pkts, count);
}

hsa_status_t queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
			  void (*callback)(hsa_status_t, hsa_queue_t *, void *), void *data,
			  uint32_t private_segment_size, uint32_t group_segment_size,
			  hsa_queue_t **queue)
{
	hsa_status_t st = amd->hsa_amd_queue_intercept_create_fn(
		agent, size, type, callback, data, private_segment_size, group_segment_size, queue);
	if (st != HSA_STATUS_SUCCESS)
		return real_queue_create(agent, size, type, callback, data, private_segment_size,
					 group_segment_size, queue);
	amd->hsa_amd_queue_intercept_register_fn(*queue, on_packets, nullptr);
	return st;
}

} // namespace

extern "C" PVG_WITNESS_EXPORT bool OnLoad(HsaApiTable *table, uint64_t runtime_version,
					   uint64_t failed_tool_count,
					   const char *const *failed_tool_names)
{
	(void)failed_tool_count;
	(void)failed_tool_names;
	if (!pvg_witness_active())
		return true;
	if (!table || !table->core_ || !table->amd_ext_ ||
	    !table->amd_ext_->hsa_amd_queue_intercept_create_fn ||
	    !table->amd_ext_->hsa_amd_queue_intercept_register_fn) {
		pvg_witness_set_api(PVG_WITNESS_API_HSA, "hsa: the runtime's API table has no queue "
					"interception", 0);
		return true;
	}
	core = table->core_;
	amd = table->amd_ext_;
	real_queue_create = core->hsa_queue_create_fn;
	real_executable_freeze = core->hsa_executable_freeze_fn;
	core->hsa_queue_create_fn = queue_create;
	core->hsa_executable_freeze_fn = executable_freeze;
	char note[128];
	snprintf(note, sizeof(note), "hsa: ROCr runtime version %llu, queue interception",
		 (unsigned long long)runtime_version);
	pvg_witness_set_api(PVG_WITNESS_API_HSA, note, 1);
	return true;
}

extern "C" PVG_WITNESS_EXPORT void OnUnload(void)
{
	pvg_witness_flush();
}
