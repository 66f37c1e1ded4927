/* SPDX-License-Identifier: MIT */
/* libFuzzer: CCOB header and bounded decompression. Declared sizes above 16 MiB are
 * skipped here (the reader's own cap is 512 MiB) so that runs stay fast. */
#include "formats/codeobj/codeobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pvg_ccob h;
	char *err = NULL;
	if (pvg_ccob_parse_header(data, size, &h, &err) < 0 || h.uncompressed_size > (16u << 20)) {
		free(err);
		return 0;
	}
	uint8_t *out = NULL;
	size_t used = 0;
	uint64_t avail = size - h.header_size;
	if (h.version >= 2 && h.total_size - h.header_size < avail)
		avail = h.total_size - h.header_size;
	if (pvg_ccob_decompress(&h, data + h.header_size, avail, &out, &used, &err) == 0 &&
	    used > avail)
		__builtin_trap();
	free(out);
	free(err);
	return 0;
}
