// SPDX-License-Identifier: MIT
//
// The ROCm front end: ROCr loads this library for HSA_TOOLS_LIB and calls OnLoad with its API
// table. Queue creation is replaced by an intercept queue whose handler sees every packet
// batch before it is written to the hardware queue; each kernel-dispatch packet is decoded
// (formats/aql.c) and counted, then the batch is forwarded unchanged. Kernel names come from
// the executables' kernel symbols, collected when an executable is frozen; so does the code
// identity of each kernel: the loaded code object that holds it, hashed then (ROCr's loader
// extension), so that each dispatch record names its module by its kernel object.
//
// C++ only because ROCr's hsa_api_trace.h is; nothing of the C++ library is used (it links
// as C, without libstdc++).
// Not yet run on an AMD GPU (see provgate-witness(7)).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <climits>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <hsa/hsa.h>
// Debian ships the headers flat: without this, hsa_api_trace.h looks for "inc/hsa_ext_*.h"
#define AMD_INTERNAL_BUILD 1
#include <hsa/hsa_api_trace.h>
#include <hsa/hsa_ven_amd_loader.h>

#include "witness/witness.h"
extern "C" {
#include "witness/sha256.h"
#include "formats/aql.h"
}

namespace {

CoreApiTable *core;
AmdExtTable *amd;
decltype(hsa_queue_create) *real_queue_create;
decltype(hsa_executable_freeze) *real_executable_freeze;
decltype(hsa_executable_destroy) *real_executable_destroy;

// The kernel map: a sorted array published through an atomic pointer. Freezing or destroying
// an executable (rare) copies it under a lock; the packet handler only loads the pointer.
struct kd_map {
	kd_map *prev; // the array it replaced: a handler may still be reading it, so it is kept
		      // (bounded: one per frozen or destroyed executable)
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
	c->v[c->n++] = pvg_kd_entry{ ko, name, 0, 0 };
	return HSA_STATUS_SUCCESS;
}

// ---- code identity: the loaded code objects of a frozen executable ---------------------------
//
// ROCr's loader extension (hsa_ven_amd_loader.h) names each loaded code object: its URI, the
// bytes the loader was given (ROCr: always host memory, a file reader's bytes being its mmap)
// and where it was loaded on the GPU. At freeze each code object is hashed once and added to
// the writer's module table; each kernel object is tied to the code object whose load range
// holds it, so that a dispatch's module is known from its packet alone (bind HANDLE).

hsa_ven_amd_loader_1_01_pfn_t loader;
int loader_state; // 0: not asked yet, 1: there, -1: not there (under kmap_lock)
uint32_t executables; // frozen so far: a module's api_id (under kmap_lock)

// the executables frozen and the modules each added, for hsa_executable_destroy
struct exec_modules {
	uint64_t exec;
	int *module; // indexes (< 0: not in the table)
	size_t n;
	exec_modules *next;
};
exec_modules *frozen; // under kmap_lock

constexpr uint32_t URI_MAX = 65536;
constexpr size_t HASH_CHUNK = 64u << 10;

// One loaded code object as the loader described it, and what the witness made of it.
struct code_object {
	uint64_t handle;
	uint64_t load_base, load_size;
	bool have_load;
	char *uri; // NUL-terminated copy, or NULL
	pvg_hsa_uri parsed;
	bool uri_ok;
	// what goes into the module table
	uint8_t sha256[32];
	bool hashed;
	uint64_t size, file_offset;
	uint32_t origin, arch;
	char *path; // owned; NULL: none
	uint32_t why; // not hashed: enum pvg_witness_unhashed
	// the kernels it defines, NUL-separated
	char *names;
	size_t names_len, names_cap;
	uint32_t n_names;
	int module; // its index in the writer's table; < 0: none
};

hsa_status_t lco_info(hsa_loaded_code_object_t lco, hsa_ven_amd_loader_loaded_code_object_info_t a,
		      void *v)
{
	return loader.hsa_ven_amd_loader_loaded_code_object_get_info(lco, a, v);
}

// Reads n bytes of this process's memory at addr without trusting that they are mapped: where
// a plain read would crash the service, these answer EFAULT. process_vm_readv first; where it
// reads less, the kernel's copy through a pipe (write() from addr), which checks the address
// the same way and reads what process_vm_readv cannot: where seccomp forbids that call (ENOSYS,
// EPERM: Docker's default profile without CAP_SYS_PTRACE), and a VM_IO | VM_PFNMAP mapping
// (a GPU driver's mapping of host memory, the kernel's [vvar]), which a load reads but
// process_vm_readv cannot pin (EFAULT). So the digest does not depend on the container.
int read_own(uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { reinterpret_cast<void *>(addr), n };
	ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (r == (ssize_t)n)
		return 0;
	if (r < 0 && errno != ENOSYS && errno != EPERM && errno != EFAULT)
		return -errno;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	int err = 0;
	// on from what process_vm_readv read; a page at a time, which an empty pipe always holds
	// (a write never waits for its reader), and a short count goes on where it stopped
	size_t done = r > 0 ? (size_t)r : 0;
	while (done < n && !err) {
		size_t want = n - done < 4096 ? n - done : 4096;
		ssize_t w = write(p[1], reinterpret_cast<const char *>(addr) + done, want);
		if (w <= 0) {
			err = w < 0 ? -errno : -EIO;
			break;
		}
		ssize_t got = read(p[0], static_cast<char *>(buf) + done, (size_t)w);
		if (got != w)
			err = -EIO;
		done += (size_t)w;
	}
	close(p[0]);
	close(p[1]);
	return err;
}

// The arch of an AMDGPU ELF header (EF_AMDGPU_MACH), 0 when it is not one.
uint32_t amdgpu_mach(const uint8_t *h, size_t n)
{
	if (n < 64 || memcmp(h, "\x7f" "ELF", 4) != 0 || h[4] != 2 || h[5] != 1)
		return 0;
	uint16_t machine = (uint16_t)(h[18] | h[19] << 8);
	uint32_t flags = (uint32_t)h[48] | (uint32_t)h[49] << 8 | (uint32_t)h[50] << 16 |
			 (uint32_t)h[51] << 24;
	return machine == 224 /* EM_AMDGPU */ ? (flags & 0xffu) : 0;
}

// Hashes the loader's bytes in memory.
uint32_t hash_memory(code_object *co, uint64_t base, uint64_t size)
{
	if (!base || !size)
		return PVG_WITNESS_UNHASHED_NO_IMAGE;
	if (size > PVG_WITNESS_MODULE_MAX_HASH || base + size < base)
		return PVG_WITNESS_UNHASHED_TOO_LARGE;
	auto *buf = static_cast<uint8_t *>(malloc(HASH_CHUNK));
	if (!buf)
		return PVG_WITNESS_UNHASHED_NO_MEMORY;
	struct pvg_wsha256 c;
	pvg_wsha256_init(&c);
	for (uint64_t at = 0; at < size;) {
		size_t n = size - at < HASH_CHUNK ? (size_t)(size - at) : HASH_CHUNK;
		if (read_own(base + at, buf, n) < 0) {
			free(buf);
			return PVG_WITNESS_UNHASHED_UNREADABLE;
		}
		if (at == 0)
			co->arch = amdgpu_mach(buf, n);
		pvg_wsha256_update(&c, buf, n);
		at += n;
	}
	free(buf);
	pvg_wsha256_final(&c, co->sha256);
	co->size = size;
	co->hashed = true;
	return PVG_WITNESS_UNHASHED_NOT_SAID;
}

// Hashes size bytes at offset of the file the loader holds open: through its descriptor, never
// by the URI's path (another file may have that name by now).
uint32_t hash_file(code_object *co, int fd, uint64_t offset, uint64_t size)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return PVG_WITNESS_UNHASHED_UNREADABLE;
	if (!S_ISREG(st.st_mode))
		return PVG_WITNESS_UNHASHED_UNREADABLE;
	if (offset > (uint64_t)st.st_size || size > (uint64_t)st.st_size - offset)
		return PVG_WITNESS_UNHASHED_BAD_RANGE;
	if (!size)
		return PVG_WITNESS_UNHASHED_BAD_RANGE;
	if (size > PVG_WITNESS_MODULE_MAX_HASH)
		return PVG_WITNESS_UNHASHED_TOO_LARGE;
	auto *buf = static_cast<uint8_t *>(malloc(HASH_CHUNK));
	if (!buf)
		return PVG_WITNESS_UNHASHED_NO_MEMORY;
	struct pvg_wsha256 c;
	pvg_wsha256_init(&c);
	for (uint64_t at = 0; at < size;) {
		size_t want = size - at < HASH_CHUNK ? (size_t)(size - at) : HASH_CHUNK;
		ssize_t n = pread(fd, buf, want, (off_t)(offset + at));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return PVG_WITNESS_UNHASHED_UNREADABLE;
		}
		if (at == 0)
			co->arch = amdgpu_mach(buf, (size_t)n);
		pvg_wsha256_update(&c, buf, (size_t)n);
		at += (uint64_t)n;
	}
	free(buf);
	pvg_wsha256_final(&c, co->sha256);
	co->size = size;
	co->file_offset = offset;
	co->hashed = true;
	return PVG_WITNESS_UNHASHED_NOT_SAID;
}

// The shared object (or the program) whose file holds [addr, addr + size) in one loaded
// segment: a HIP fat binary's code object handed to ROCr where it lies, in the .hip_fatbin
// section of the library or program that registered it.
struct holder {
	uint64_t addr, size;
	char path[PATH_MAX];
	uint64_t offset;
	bool found;
};

int find_holder(dl_phdr_info *info, size_t, void *data)
{
	auto *h = static_cast<holder *>(data);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) &ph = info->dlpi_phdr[i];
		if (ph.p_type != PT_LOAD)
			continue;
		uint64_t start = info->dlpi_addr + ph.p_vaddr;
		// only bytes that come from the file (p_filesz), not the segment's zeroed tail
		if (h->addr < start || h->addr - start > ph.p_filesz ||
		    h->size > ph.p_filesz - (h->addr - start))
			continue;
		h->offset = ph.p_offset + (h->addr - start);
		if (info->dlpi_name && info->dlpi_name[0]) {
			snprintf(h->path, sizeof(h->path), "%s", info->dlpi_name);
		} else {
			ssize_t n = readlink("/proc/self/exe", h->path, sizeof(h->path) - 1);
			h->path[n > 0 ? n : 0] = '\0';
		}
		h->found = h->path[0] != '\0';
		return 1;
	}
	return 0;
}

char *copy_str(const char *s)
{
	size_t n = strlen(s);
	auto *p = static_cast<char *>(malloc(n + 1));
	if (p)
		memcpy(p, s, n + 1);
	return p;
}

// Everything the loader says about one loaded code object, and its hash.
void identify(code_object *co)
{
	uint32_t len = 0;
	if (lco_info(hsa_loaded_code_object_t{ co->handle },
		     HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI_LENGTH, &len) == HSA_STATUS_SUCCESS &&
	    len > 0 && len <= URI_MAX) {
		co->uri = static_cast<char *>(calloc(1, (size_t)len + 1));
		if (co->uri && lco_info(hsa_loaded_code_object_t{ co->handle },
					HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI,
					co->uri) != HSA_STATUS_SUCCESS) {
			free(co->uri);
			co->uri = nullptr;
		}
		if (co->uri) {
			co->uri[len] = '\0'; // ROCr copies the characters only
			co->uri_ok = pvg_hsa_uri_parse(co->uri, len, &co->parsed, nullptr) == 0;
		}
	}
	co->have_load = lco_info(hsa_loaded_code_object_t{ co->handle },
				 HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_BASE,
				 &co->load_base) == HSA_STATUS_SUCCESS &&
			lco_info(hsa_loaded_code_object_t{ co->handle },
				 HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_SIZE,
				 &co->load_size) == HSA_STATUS_SUCCESS &&
			co->load_size > 0 && co->load_base + co->load_size > co->load_base;

	uint32_t storage = 0;
	co->origin = PVG_WITNESS_ORIGIN_UNKNOWN;
	if (lco_info(hsa_loaded_code_object_t{ co->handle },
		     HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_TYPE,
		     &storage) != HSA_STATUS_SUCCESS) {
		co->why = PVG_WITNESS_UNHASHED_QUERY_FAILED;
	} else if (storage == HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_MEMORY) {
		uint64_t base = 0, size = 0;
		if (lco_info(hsa_loaded_code_object_t{ co->handle },
			     HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_BASE,
			     &base) != HSA_STATUS_SUCCESS ||
		    lco_info(hsa_loaded_code_object_t{ co->handle },
			     HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_MEMORY_SIZE,
			     &size) != HSA_STATUS_SUCCESS)
			co->why = PVG_WITNESS_UNHASHED_QUERY_FAILED;
		else
			co->why = hash_memory(co, base, size);
		holder h{};
		h.addr = base;
		h.size = size;
		if (co->hashed)
			dl_iterate_phdr(find_holder, &h);
		if (h.found) {
			co->origin = PVG_WITNESS_ORIGIN_EMBEDDED;
			co->path = copy_str(h.path);
			co->file_offset = h.offset;
		} else if (co->uri_ok && co->parsed.scheme == PVG_HSA_URI_FILE) {
			// a file the loader mapped itself (a file reader): its name as the loader
			// had it, not reopened
			co->origin = PVG_WITNESS_ORIGIN_FILE;
			co->path = copy_str(co->parsed.path);
			co->file_offset = co->parsed.has_range ? co->parsed.offset : 0;
		} else {
			co->origin = PVG_WITNESS_ORIGIN_MEMORY;
			co->path = co->uri ? copy_str(co->uri) : nullptr;
		}
	} else if (storage == HSA_VEN_AMD_LOADER_CODE_OBJECT_STORAGE_TYPE_FILE) {
		co->origin = PVG_WITNESS_ORIGIN_FILE;
		int fd = -1;
		if (lco_info(hsa_loaded_code_object_t{ co->handle },
			     HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_CODE_OBJECT_STORAGE_FILE,
			     &fd) != HSA_STATUS_SUCCESS) {
			co->why = PVG_WITNESS_UNHASHED_QUERY_FAILED;
		} else if (!co->uri_ok || co->parsed.scheme != PVG_HSA_URI_FILE) {
			co->why = PVG_WITNESS_UNHASHED_BAD_URI;
		} else if (co->parsed.has_range) {
			co->why = hash_file(co, fd, co->parsed.offset, co->parsed.size);
		} else {
			struct stat st;
			co->why = fstat(fd, &st) < 0 ? (uint32_t)PVG_WITNESS_UNHASHED_UNREADABLE
						     : hash_file(co, fd, 0, (uint64_t)st.st_size);
		}
		if (co->uri_ok && co->parsed.scheme == PVG_HSA_URI_FILE) {
			co->path = copy_str(co->parsed.path);
			co->file_offset = co->parsed.has_range ? co->parsed.offset : 0;
		} else if (co->uri) {
			co->path = copy_str(co->uri);
		}
	} else {
		co->why = PVG_WITNESS_UNHASHED_STORAGE;
		co->path = co->uri ? copy_str(co->uri) : nullptr;
	}
}

struct co_list {
	code_object *v;
	size_t n, cap;
};
constexpr size_t CO_MAX = 4096; // loaded code objects of one executable

hsa_status_t on_code_object(hsa_executable_t, hsa_loaded_code_object_t lco, void *data)
{
	auto *l = static_cast<co_list *>(data);
	if (l->n == CO_MAX)
		return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 4;
		auto *v = static_cast<code_object *>(realloc(l->v, cap * sizeof(code_object)));
		if (!v)
			return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
		l->v = v;
		l->cap = cap;
	}
	code_object *co = &l->v[l->n++];
	memset(co, 0, sizeof(*co));
	co->handle = lco.handle;
	co->module = -1;
	return HSA_STATUS_SUCCESS;
}

void co_list_clear(co_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].uri);
		free(l->v[i].path);
		free(l->v[i].names);
	}
	free(l->v);
}

void add_name(code_object *co, const char *name)
{
	size_t n = strlen(name) + 1;
	if (co->names_len + n > co->names_cap) {
		size_t cap = co->names_cap ? 2 * co->names_cap : 256;
		while (cap < co->names_len + n)
			cap *= 2;
		auto *p = static_cast<char *>(realloc(co->names, cap));
		if (!p)
			return;
		co->names = p;
		co->names_cap = cap;
	}
	memcpy(co->names + co->names_len, name, n);
	co->names_len += n;
	co->n_names++;
}

// The code object a kernel object lies in: the executable's only one, else the one whose
// load range holds it (none when the ranges are unknown or overlap).
code_object *holder_of(co_list *l, uint64_t ko)
{
	if (l->n == 1)
		return &l->v[0];
	code_object *found = nullptr;
	for (size_t i = 0; i < l->n; i++) {
		code_object *co = &l->v[i];
		if (co->have_load && ko >= co->load_base && ko - co->load_base < co->load_size) {
			if (found)
				return nullptr;
			found = co;
		}
	}
	return found;
}

// The loader extension's table (version 1.01: the loaded code object queries), asked of the
// runtime in OnLoad and, had that failed, once more at the first freeze.
bool get_loader()
{
	memset(&loader, 0, sizeof(loader));
	if (core->hsa_system_get_major_extension_table_fn &&
	    core->hsa_system_get_major_extension_table_fn(HSA_EXTENSION_AMD_LOADER, 1, sizeof(loader),
							  &loader) == HSA_STATUS_SUCCESS &&
	    loader.hsa_ven_amd_loader_executable_iterate_loaded_code_objects &&
	    loader.hsa_ven_amd_loader_loaded_code_object_get_info) {
		loader_state = 1;
		pvg_witness_modules_recording();
		return true;
	}
	return false;
}

// Under kmap_lock: the executable's loaded code objects, identified and added to the
// writer's module table, and each kernel entry given its module.
void add_modules(hsa_executable_t exec, collect *c)
{
	if (loader_state == 0 && !get_loader())
		loader_state = -1;
	if (loader_state != 1)
		return;
	uint32_t api_id = ++executables;
	co_list l{ nullptr, 0, 0 };
	loader.hsa_ven_amd_loader_executable_iterate_loaded_code_objects(exec, on_code_object, &l);
	for (size_t i = 0; i < l.n; i++)
		identify(&l.v[i]);
	code_object **owner = c->n ? static_cast<code_object **>(calloc(c->n, sizeof(*owner)))
				   : nullptr;
	for (size_t k = 0; owner && k < c->n; k++) {
		owner[k] = holder_of(&l, c->v[k].kernel_object);
		if (owner[k])
			add_name(owner[k], c->v[k].name);
	}
	auto *em = static_cast<exec_modules *>(calloc(1, sizeof(exec_modules)));
	int *idx = l.n ? static_cast<int *>(calloc(l.n, sizeof(int))) : nullptr;
	for (size_t i = 0; i < l.n; i++) {
		code_object *co = &l.v[i];
		pvg_module_load m{};
		m.sha256 = co->hashed ? co->sha256 : nullptr;
		m.size = co->size;
		m.handle = co->handle;
		m.file_offset = co->file_offset;
		m.api_id = api_id;
		m.origin = co->origin;
		m.flags = co->hashed ? 0 : PVG_WITNESS_M_NOT_HASHED;
		m.arch = co->arch;
		m.path = co->path;
		m.names = co->names;
		m.names_len = co->names_len;
		m.n_names = co->names ? co->n_names : 0;
		m.unhashed = co->hashed ? 0u : co->why ? co->why : (uint32_t)PVG_WITNESS_UNHASHED_UNREADABLE;
		co->module = pvg_witness_module_add(&m);
		if (idx)
			idx[i] = co->module;
	}
	for (size_t k = 0; owner && k < c->n; k++)
		if (owner[k] && owner[k]->module >= 0)
			c->v[k].module = (uint32_t)owner[k]->module + 1;
	if (em && (idx || !l.n)) {
		em->exec = exec.handle;
		em->module = idx;
		em->n = l.n;
		em->next = frozen;
		frozen = em;
	} else {
		free(em);
		free(idx);
	}
	free(owner);
	co_list_clear(&l);
}

hsa_status_t executable_freeze(hsa_executable_t exec, const char *options)
{
	hsa_status_t st = real_executable_freeze(exec, options);
	if (st != HSA_STATUS_SUCCESS)
		return st;
	collect c{ nullptr, 0, 0 };
	core->hsa_executable_iterate_symbols_fn(exec, on_symbol, &c);
	pthread_mutex_lock(&kmap_lock);
	add_modules(exec, &c);
	for (size_t k = 0; k < c.n; k++)
		c.v[k].owner = exec.handle;
	if (c.n) {
		kd_map *old = kmap;
		size_t n_old = old ? old->n : 0;
		size_t n = n_old + c.n < KMAP_MAX ? n_old + c.n : KMAP_MAX;
		auto *m = static_cast<kd_map *>(malloc(sizeof(kd_map) + n * sizeof(pvg_kd_entry)));
		if (m) {
			if (old)
				memcpy(m->v, old->v, n_old * sizeof(pvg_kd_entry));
			memcpy(m->v + n_old, c.v, (n - n_old) * sizeof(pvg_kd_entry));
			m->n = n;
			m->prev = old;
			pvg_kd_sort(m->v, m->n);
			__atomic_store_n(&kmap, m, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&kmap_lock);
	free(c.v);
	return st;
}

// An executable destroyed: its modules are unloaded, and its kernel objects leave the map
// before the memory they name can be given to another executable's code.
hsa_status_t executable_destroy(hsa_executable_t exec)
{
	pthread_mutex_lock(&kmap_lock);
	for (exec_modules **pp = &frozen; *pp; pp = &(*pp)->next) {
		exec_modules *em = *pp;
		if (em->exec != exec.handle)
			continue;
		*pp = em->next;
		for (size_t i = 0; i < em->n; i++)
			if (em->module[i] >= 0)
				pvg_witness_module_unload(em->module[i]);
		free(em->module);
		free(em);
		break;
	}
	kd_map *old = kmap;
	size_t keep = 0;
	for (size_t i = 0; old && i < old->n; i++)
		keep += old->v[i].owner != exec.handle;
	if (old && keep != old->n) {
		auto *m = static_cast<kd_map *>(malloc(sizeof(kd_map) + keep * sizeof(pvg_kd_entry)));
		if (m) {
			m->n = 0;
			m->prev = old;
			for (size_t i = 0; i < old->n; i++)
				if (old->v[i].owner != exec.handle)
					m->v[m->n++] = old->v[i];
			__atomic_store_n(&kmap, m, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&kmap_lock);
	return real_executable_destroy(exec);
}

// The writer's key of a dispatch: its kernel object and module together, so that a kernel
// object reused by another executable's code after a destroy makes a record of its own. A
// kernel object is a host virtual address (below 2^47 on Linux unless asked for higher):
// the module (< 2^16) goes above it. A higher kernel object is keyed alone, its module not
// said (bit 63 marks such keys apart).
constexpr unsigned KEY_SHIFT = 47;

uint64_t launch_key(uint64_t ko, uint32_t module)
{
	if (ko >> KEY_SHIFT)
		return ko | 1ull << 63;
	return ko | (uint64_t)(module & 0xffffu) << KEY_SHIFT;
}

uint32_t code_of_key(uint64_t key, const char *, uint32_t *bind)
{
	uint32_t module = key >> 63 ? 0 : (uint32_t)(key >> KEY_SHIFT) & 0xffffu;
	*bind = module ? PVG_WITNESS_BIND_HANDLE : PVG_WITNESS_BIND_NONE;
	return module;
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
		const pvg_kd_entry *e = m ? pvg_kd_find(m->v, m->n, d.kernel_object) : nullptr;
		pvg_launch l{};
		l.handle = launch_key(d.kernel_object, e ? e->module : 0);
		memcpy(l.grid, d.workgroups, sizeof(l.grid));
		memcpy(l.block, d.workgroup, sizeof(l.block));
		l.via = PVG_WITNESS_VIA_HSA_PACKET;
		l.name = e ? e->name : nullptr;
		l.code_of = code_of_key;
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
	real_executable_destroy = core->hsa_executable_destroy_fn;
	core->hsa_queue_create_fn = queue_create;
	core->hsa_executable_freeze_fn = executable_freeze;
	if (real_executable_destroy)
		core->hsa_executable_destroy_fn = executable_destroy;
	pthread_mutex_lock(&kmap_lock);
	bool modules = get_loader();
	pthread_mutex_unlock(&kmap_lock);
	char note[128];
	snprintf(note, sizeof(note), "hsa: ROCr runtime version %llu, queue interception%s",
		 (unsigned long long)runtime_version,
		 modules ? ", code objects by the loader extension" : "");
	pvg_witness_set_api(PVG_WITNESS_API_HSA, note, 1);
	return true;
}

extern "C" PVG_WITNESS_EXPORT void OnUnload(void)
{
	pvg_witness_flush();
}
