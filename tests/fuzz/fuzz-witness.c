/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the witness file parser (records and modules) and attribution, and the AQL packet decoder and
 * kernel descriptor symbol reader, on arbitrary bytes. Built by tests/fuzz/build.sh. */
#include <string.h>

#include "formats/aql.h"
#include "formats/witness.h"

static struct pvg_witness_entry entries[PVG_WITNESS_MAX_RECORDS];
static struct pvg_witness_mod modules[PVG_WITNESS_MAX_MODULES];

static bool count_kd(void *opaque, const char *name, size_t len, uint64_t value)
{
	(void)name;
	(void)value;
	*(size_t *)opaque += len;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_witness_file f = { .entries = entries, .modules = modules };
	size_t at;
	/* the bytes as they are, and sealed (their checksum made right) so that mutations reach
	 * the checks of the layout, the records and the modules behind the checksum */
	static uint8_t sealed[PVG_WITNESS_MAX_FILE];
	if (size <= sizeof(sealed)) {
		memcpy(sealed, data, size);
		if (pvg_witness_seal(sealed, size) == 0 &&
		    pvg_witness_parse(sealed, size, &f, &at) == PVG_WITNESS_OK)
			for (size_t i = 0; i < f.n; i++)
				if (f.entries[i].code > f.n_modules)
					__builtin_trap();
	}
	if (pvg_witness_parse(data, size, &f, &at) == PVG_WITNESS_OK) {
		const struct pvg_witness_target t[] = { { 100, 100, 5000 }, { 4242, 7, 6000 } };
		(void)pvg_witness_attribute(&f.h, f.h.boot_id, t, 2, NULL);
		volatile size_t sum = 0;
		for (size_t i = 0; i < f.n; i++) {
			sum += f.entries[i].name.n ? (unsigned char)f.entries[i].name.p[f.entries[i].name.n - 1] : 0;
			/* a record's module is one the file holds (the parser checked it) */
			if (f.entries[i].code && f.entries[i].code > f.n_modules)
				__builtin_trap();
		}
		for (size_t i = 0; i < f.n_modules; i++)
			sum += f.modules[i].path.n ? (unsigned char)f.modules[i].path.p[f.modules[i].path.n - 1] : 0;
	}
	for (size_t off = 0; off + PVG_AQL_PACKET_SIZE <= size && off < 64 * PVG_AQL_PACKET_SIZE;
	     off += PVG_AQL_PACKET_SIZE) {
		struct pvg_aql_dispatch d;
		(void)pvg_aql_decode(data + off, &d);
	}
	size_t names = 0;
	(void)pvg_amdgpu_kd_symbols(data, size, count_kd, &names);
	return 0;
}
