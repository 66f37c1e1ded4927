/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the witness file parser and attribution, and the AQL packet decoder and
 * kernel descriptor symbol reader, on arbitrary bytes. Built by tests/fuzz/build.sh. */
#include "formats/aql.h"
#include "formats/witness.h"

static struct pvg_witness_entry entries[PVG_WITNESS_MAX_RECORDS];

static bool count_kd(void *opaque, const char *name, size_t len, uint64_t value)
{
	(void)name;
	(void)value;
	*(size_t *)opaque += len;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_witness_file f = { .entries = entries };
	size_t at;
	if (pvg_witness_parse(data, size, &f, &at) == PVG_WITNESS_OK) {
		const struct pvg_witness_target t[] = { { 100, 100, 5000 }, { 4242, 7, 6000 } };
		(void)pvg_witness_attribute(&f.h, f.h.boot_id, t, 2, NULL);
		volatile size_t sum = 0;
		for (size_t i = 0; i < f.n; i++)
			sum += f.entries[i].name.n ? (unsigned char)f.entries[i].name.p[f.entries[i].name.n - 1] : 0;
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
