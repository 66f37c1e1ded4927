/* SPDX-License-Identifier: MIT */
/*
 * AMD GPU dispatch decoding for the witness's ROCm path, as pure functions over bytes: one
 * AQL kernel-dispatch packet (the layout of HSA's hsa_kernel_dispatch_packet_t, 64 bytes),
 * and the kernel descriptor symbols ("name.kd") of an AMDGPU code object, whose loaded
 * address is the packet's kernel_object. Depends on nothing but libc (the injection library
 * compiles it).
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PVG_AQL_PACKET_SIZE 64u
#define PVG_AQL_TYPE_KERNEL_DISPATCH 2u /* HSA_PACKET_TYPE_KERNEL_DISPATCH */

struct pvg_aql_dispatch {
	unsigned dims;           /* setup bits 0-1: 1, 2 or 3 */
	uint32_t workgroup[3];   /* work-items per workgroup */
	uint32_t grid[3];        /* work-items in the grid (HSA's grid_size) */
	uint32_t workgroups[3];  /* ceil(grid / workgroup): what hipLaunchKernel calls gridDim */
	uint64_t kernel_object;  /* address of the kernel descriptor */
};

/* Decodes one packet of 64 bytes. 1: a kernel dispatch (*out filled); 0: another packet
 * type (barrier, agent dispatch, vendor, invalid type); -EINVAL: a kernel dispatch whose
 * dimensions or sizes are impossible (0 dims, a zero workgroup size, kernel_object 0). */
int pvg_aql_decode(const uint8_t pkt[PVG_AQL_PACKET_SIZE], struct pvg_aql_dispatch *out);

/* Calls fn for every kernel descriptor symbol of an AMDGPU ELF code object (64-bit,
 * little-endian; .symtab, else .dynsym) with the kernel name (without ".kd") and the
 * symbol's value. fn returns false to stop. Returns the number of symbols reported, or
 * -EINVAL for bytes that are not such an ELF, -EBADMSG for a table that leaves the file. */
typedef bool (*pvg_kd_fn)(void *opaque, const char *name, size_t name_len, uint64_t value);
int pvg_amdgpu_kd_symbols(const uint8_t *elf, size_t size, pvg_kd_fn fn, void *opaque);

/* Kernel objects to names: the loaded executables' kernels, sorted by kernel object. */
struct pvg_kd_entry {
	uint64_t kernel_object;
	const char *name;
	uint64_t owner;  /* the executable that holds it (0: not said) */
	uint32_t module; /* 1 + the witness's index of its loaded code object; 0: not known */
};
void pvg_kd_sort(struct pvg_kd_entry *v, size_t n);
/* The entry of the kernel whose descriptor is at kernel_object, or NULL. */
const struct pvg_kd_entry *pvg_kd_find(const struct pvg_kd_entry *v, size_t n,
				       uint64_t kernel_object);
/* Its name, or NULL. */
const char *pvg_kd_lookup(const struct pvg_kd_entry *v, size_t n, uint64_t kernel_object);

/* A loaded code object's URI, as ROCr's loader names it
 * (HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI, hsa_ven_amd_loader.h):
 *   file://PATH[#offset=N&size=N]      PATH URI-encoded (%XX); no range: the whole file
 *   memory://PID#offset=N&size=N       N: a C literal (0x hex, 0 octal, decimal); '?' may
 *                                      stand for '#' */
enum pvg_hsa_uri_scheme { PVG_HSA_URI_FILE = 1, PVG_HSA_URI_MEMORY = 2 };
#define PVG_HSA_URI_MAX_PATH 4096u
struct pvg_hsa_uri {
	int scheme;                       /* enum pvg_hsa_uri_scheme */
	char path[PVG_HSA_URI_MAX_PATH];  /* file: the decoded path, NUL-terminated */
	uint64_t pid;                     /* memory: the process */
	bool has_range;                   /* offset and size were given */
	uint64_t offset, size;
};
/* Parses uri[0..len) (the runtime's text: hostile). 0, or -EINVAL with *why saying what is
 * wrong (a static string). */
int pvg_hsa_uri_parse(const char *uri, size_t len, struct pvg_hsa_uri *out, const char **why);
