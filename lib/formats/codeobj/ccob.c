/* SPDX-License-Identifier: MIT */
/*
 * Compressed offload bundles ("CCOB", clang-offload-bundler --compress). Little-endian:
 *   v1: magic[4] u16 version u16 method u32 uncompressed_size u64 hash           (20 bytes)
 *   v2: magic[4] u16 version u16 method u32 total_size u32 uncompressed_size u64 hash (24)
 *   v3: magic[4] u16 version u16 method u64 total_size u64 uncompressed_size u64 hash (32)
 * method 0 = zlib, 1 = zstd; hash = low 64 bits (little-endian) of the MD5 of the
 * uncompressed bundle; total_size counts the header. Version 1 does not record its length:
 * the compressed stream's own end says where it stops.
 */
#include <openssl/evp.h>
#include <zlib.h>
#include <zstd.h>

#include "formats/codeobj/codeobj.h"

const char *pvg_ccob_method_name(unsigned method)
{
	return method == PVG_CCOB_ZLIB ? "zlib" : method == PVG_CCOB_ZSTD ? "zstd" : "unknown";
}

int pvg_ccob_parse_header(const uint8_t *p, size_t n, struct pvg_ccob *h, char **err)
{
	memset(h, 0, sizeof(*h));
	if (n < 8 || memcmp(p, PVG_CCOB_MAGIC, 4) != 0) {
		*err = pvg_strdup("truncated or missing CCOB header");
		return -EBADMSG;
	}
	uint16_t v, m;
	memcpy(&v, p + 4, 2);
	memcpy(&m, p + 6, 2);
	h->version = v;
	h->method = m;
	uint32_t u32;
	switch (v) {
	case 1:
		h->header_size = 20;
		break;
	case 2:
		h->header_size = 24;
		break;
	case 3:
		h->header_size = 32;
		break;
	default:
		*err = pvg_asprintf("unknown CCOB version %u", v);
		return -ENOTSUP;
	}
	if (n < h->header_size) {
		*err = pvg_asprintf("truncated CCOB v%u header: %zu of %" PRIu64 " bytes", v, n,
				    h->header_size);
		return -EBADMSG;
	}
	if (v == 1) {
		memcpy(&u32, p + 8, 4);
		h->uncompressed_size = u32;
		memcpy(&h->hash, p + 12, 8);
	} else if (v == 2) {
		memcpy(&u32, p + 8, 4);
		h->total_size = u32;
		memcpy(&u32, p + 12, 4);
		h->uncompressed_size = u32;
		memcpy(&h->hash, p + 16, 8);
	} else {
		memcpy(&h->total_size, p + 8, 8);
		memcpy(&h->uncompressed_size, p + 16, 8);
		memcpy(&h->hash, p + 24, 8);
	}
	if (m != PVG_CCOB_ZLIB && m != PVG_CCOB_ZSTD) {
		*err = pvg_asprintf("unknown CCOB compression method %u", m);
		return -ENOTSUP;
	}
	if (v >= 2 && h->total_size < h->header_size) {
		*err = pvg_asprintf("CCOB declared size %" PRIu64 " is smaller than its header",
				    h->total_size);
		return -EBADMSG;
	}
	if (h->uncompressed_size == 0) {
		*err = pvg_strdup("CCOB declares an empty bundle");
		return -EBADMSG;
	}
	if (h->uncompressed_size > PVG_CO_MAX_UNCOMPRESSED) {
		*err = pvg_asprintf("CCOB declares %" PRIu64 " uncompressed bytes, more than the "
				    "%llu MiB this reader accepts",
				    h->uncompressed_size, PVG_CO_MAX_UNCOMPRESSED >> 20);
		return -EFBIG;
	}
	return 0;
}

uint64_t pvg_md5_low64(const uint8_t *p, size_t n)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	uint64_t v = 0;
	if (EVP_Digest(p, n, md, &len, EVP_md5(), NULL) == 1 && len >= 8)
		memcpy(&v, md, 8);
	return v;
}

static int inflate_bounded(const uint8_t *in, size_t n, uint8_t *out, size_t cap,
			   size_t *consumed, size_t *produced, char **err)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK) {
		*err = pvg_strdup("zlib cannot be initialised");
		return -ENOMEM;
	}
	z.next_in = (Bytef *)(uintptr_t)in;
	z.next_out = out;
	z.avail_out = (uInt)cap; /* cap <= 512 MiB fits */
	int r = Z_OK;
	size_t left = n;
	while (r == Z_OK) {
		if (z.avail_in == 0) {
			uInt chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
			z.avail_in = chunk;
			left -= chunk;
		}
		r = inflate(&z, Z_NO_FLUSH);
		if (r == Z_BUF_ERROR && z.avail_out == 0) {
			/* full: is there more? probe with one spare byte */
			uint8_t spare;
			z.next_out = &spare;
			z.avail_out = 1;
			r = inflate(&z, Z_NO_FLUSH);
			if (r == Z_OK || (r == Z_STREAM_END && z.avail_out == 0)) {
				*err = pvg_asprintf("decompressed data exceeds the declared size of "
						    "%zu bytes",
						    cap);
				inflateEnd(&z);
				return -EFBIG;
			}
		}
		if (r == Z_BUF_ERROR && z.avail_in == 0 && left == 0)
			break;
	}
	*consumed = z.total_in;
	*produced = z.total_out;
	inflateEnd(&z);
	if (r != Z_STREAM_END) {
		*err = pvg_asprintf("zlib stream is corrupt or truncated (%s)",
				    r == Z_DATA_ERROR ? "data error" : "ends early");
		return -EBADMSG;
	}
	return 0;
}

static int zstd_bounded(const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *consumed,
			size_t *produced, char **err)
{
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	if (!dc) {
		*err = pvg_strdup("zstd cannot be initialised");
		return -ENOMEM;
	}
	ZSTD_inBuffer ib = { in, n, 0 };
	ZSTD_outBuffer ob = { out, cap, 0 };
	size_t r;
	int ret = 0;
	for (;;) {
		r = ZSTD_decompressStream(dc, &ob, &ib);
		if (ZSTD_isError(r)) {
			*err = pvg_asprintf("zstd stream is corrupt: %s", ZSTD_getErrorName(r));
			ret = -EBADMSG;
			break;
		}
		if (r == 0) /* frame complete */
			break;
		if (ob.pos == ob.size) {
			uint8_t spare;
			ZSTD_outBuffer sb = { &spare, 1, 0 };
			r = ZSTD_decompressStream(dc, &sb, &ib);
			if (!ZSTD_isError(r) && sb.pos > 0) {
				*err = pvg_asprintf("decompressed data exceeds the declared size of "
						    "%zu bytes",
						    cap);
				ret = -EFBIG;
				break;
			}
			if (!ZSTD_isError(r) && r == 0)
				break;
			if (ib.pos == ib.size) {
				*err = pvg_strdup("zstd stream is truncated");
				ret = -EBADMSG;
				break;
			}
			continue;
		}
		if (ib.pos == ib.size) {
			*err = pvg_strdup("zstd stream is truncated");
			ret = -EBADMSG;
			break;
		}
	}
	*consumed = ib.pos;
	*produced = ob.pos;
	ZSTD_freeDCtx(dc);
	return ret;
}

int pvg_ccob_decompress(const struct pvg_ccob *h, const uint8_t *data, size_t n, uint8_t **out,
			size_t *consumed, char **err)
{
	*out = NULL;
	size_t cap = (size_t)h->uncompressed_size;
	uint8_t *buf = malloc(cap ? cap : 1);
	if (!buf) {
		*err = pvg_strdup("out of memory");
		return -ENOMEM;
	}
	size_t produced = 0;
	int r = h->method == PVG_CCOB_ZLIB
			? inflate_bounded(data, n, buf, cap, consumed, &produced, err)
			: zstd_bounded(data, n, buf, cap, consumed, &produced, err);
	if (r == 0 && produced != cap) {
		*err = pvg_asprintf("decompressed %zu bytes but the header declares %zu", produced,
				    cap);
		r = -EBADMSG;
	}
	if (r == 0 && h->version >= 2 && *consumed != n) {
		*err = pvg_asprintf("declared size is %" PRIu64 " bytes but the compressed stream "
				    "ends after %zu",
				    h->total_size, (size_t)h->header_size + *consumed);
		r = -EBADMSG;
	}
	if (r == 0) {
		uint64_t got = pvg_md5_low64(buf, cap);
		if (got != h->hash) {
			*err = pvg_asprintf("hash mismatch: header says %016" PRIx64
					    ", the decompressed bundle hashes to %016" PRIx64,
					    h->hash, got);
			r = -EBADMSG;
		}
	}
	if (r < 0) {
		free(buf);
		return r;
	}
	*out = buf;
	return 0;
}
