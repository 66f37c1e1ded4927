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

/* Input for the decoders: the source's bytes in place when it is memory, else read CHUNK
 * bytes at a time (a small first read when only a prefix is wanted). */
#define CCOB_CHUNK (64u << 10)
#define CCOB_FIRST_CHUNK (16u << 10)

struct ccob_input {
	const struct pvg_src *src;
	uint64_t off, len, fed; /* fed: bytes handed to the decoder so far */
	uint8_t *buf;
	size_t cap;
};

/* The next piece of input (NULL with *n = 0 at the end, or -1 when it cannot be read). */
static int next_input(struct ccob_input *in, const uint8_t **p, size_t *n)
{
	*p = NULL;
	*n = 0;
	if (in->fed >= in->len)
		return 0;
	uint64_t left = in->len - in->fed;
	if (in->src->mem) {
		size_t k = left > (1u << 30) ? (1u << 30) : (size_t)left;
		if (in->off > in->src->size || in->len > in->src->size - in->off)
			return -1;
		*p = in->src->mem + in->off + in->fed;
		*n = k;
		in->fed += k;
		return 0;
	}
	size_t k = in->fed == 0 && in->cap == CCOB_FIRST_CHUNK ? CCOB_FIRST_CHUNK : CCOB_CHUNK;
	if (k > left)
		k = (size_t)left;
	if (k > in->cap) {
		free(in->buf);
		in->buf = malloc(k);
		if (!in->buf)
			abort();
		in->cap = k;
	}
	if (pvg_src_read(in->src, in->off + in->fed, in->buf, k) < 0)
		return -1;
	*p = in->buf;
	*n = k;
	in->fed += k;
	return 0;
}

/* Decodes into out until it holds want bytes or the stream ends. whole: want is the whole
 * bundle; more output than that is refused (decoding goes on into a spare byte to find out).
 * *produced, *consumed (input bytes the stream used), *ended (the stream's own end was
 * reached). 0, or negative with *err. */
static int zlib_decode(struct ccob_input *in, uint8_t *out, size_t want, bool whole,
		       size_t *produced, uint64_t *consumed, bool *ended, char **err)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK) {
		*err = pvg_strdup("zlib cannot be initialised");
		return -ENOMEM;
	}
	uint8_t spare;
	bool in_spare = false;
	z.next_out = out;
	z.avail_out = (uInt)want; /* want <= 512 MiB fits */
	int ret = 0, r = Z_OK;
	uint64_t base = 0; /* input consumed before the current piece */
	size_t piece = 0;
	for (;;) {
		if (z.avail_in == 0) {
			const uint8_t *p;
			base += piece;
			if (next_input(in, &p, &piece) < 0) {
				*err = pvg_strdup("compressed data cannot be read");
				ret = -EIO;
				break;
			}
			z.next_in = (Bytef *)(uintptr_t)p;
			z.avail_in = (uInt)piece;
		}
		if (z.avail_out == 0) {
			if (in_spare) {
				*err = pvg_asprintf("decompressed data exceeds the declared size of "
						    "%zu bytes", want);
				ret = -EFBIG;
				break;
			}
			if (!whole)
				break; /* the prefix asked for is there */
			z.next_out = &spare;
			z.avail_out = 1;
			in_spare = true;
		}
		r = inflate(&z, Z_NO_FLUSH);
		if (r == Z_STREAM_END) {
			*ended = true;
			break;
		}
		if (r == Z_BUF_ERROR && z.avail_in == 0 && piece == 0) {
			*err = pvg_strdup("zlib stream is corrupt or truncated (ends early)");
			ret = -EBADMSG;
			break;
		}
		if (r != Z_OK && r != Z_BUF_ERROR) {
			*err = pvg_asprintf("zlib stream is corrupt or truncated (%s)",
					    r == Z_DATA_ERROR ? "data error" : "ends early");
			ret = -EBADMSG;
			break;
		}
	}
	if (in_spare && z.avail_out == 0 && ret == 0) {
		*err = pvg_asprintf("decompressed data exceeds the declared size of %zu bytes",
				    want);
		ret = -EFBIG;
	}
	*produced = in_spare ? want : want - z.avail_out;
	*consumed = base + (piece - z.avail_in);
	inflateEnd(&z);
	return ret;
}

static int zstd_decode(struct ccob_input *in, uint8_t *out, size_t want, bool whole,
		       size_t *produced, uint64_t *consumed, bool *ended, char **err)
{
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	if (!dc) {
		*err = pvg_strdup("zstd cannot be initialised");
		return -ENOMEM;
	}
	uint8_t spare;
	bool in_spare = false;
	ZSTD_inBuffer ib = { NULL, 0, 0 };
	ZSTD_outBuffer ob = { out, want, 0 };
	uint64_t base = 0;
	int ret = 0;
	for (;;) {
		if (ib.pos == ib.size) {
			const uint8_t *p;
			size_t n;
			base += ib.size;
			if (next_input(in, &p, &n) < 0) {
				*err = pvg_strdup("compressed data cannot be read");
				ret = -EIO;
				break;
			}
			static const uint8_t none[1];
			ib = (ZSTD_inBuffer){ p ? p : none, n, 0 };
		}
		if (ob.pos == ob.size) {
			if (in_spare) {
				*err = pvg_asprintf("decompressed data exceeds the declared size of "
						    "%zu bytes", want);
				ret = -EFBIG;
				break;
			}
			if (!whole)
				break;
			ob = (ZSTD_outBuffer){ &spare, 1, 0 };
			in_spare = true;
		}
		size_t r = ZSTD_decompressStream(dc, &ob, &ib);
		if (ZSTD_isError(r)) {
			*err = pvg_asprintf("zstd stream is corrupt: %s", ZSTD_getErrorName(r));
			ret = -EBADMSG;
			break;
		}
		if (r == 0) { /* frame complete */
			*ended = true;
			break;
		}
		if (ib.pos == ib.size && ib.size == 0 && ob.pos < ob.size) {
			*err = pvg_strdup("zstd stream is truncated");
			ret = -EBADMSG;
			break;
		}
	}
	if (in_spare && ob.pos == 1 && ret == 0) {
		*err = pvg_asprintf("decompressed data exceeds the declared size of %zu bytes",
				    want);
		ret = -EFBIG;
	}
	*produced = in_spare ? want : ob.pos;
	*consumed = base + ib.pos;
	ZSTD_freeDCtx(dc);
	return ret;
}

int pvg_ccob_inflate(const struct pvg_ccob *h, const struct pvg_src *src, uint64_t in_off,
		     uint64_t in_len, uint8_t *out, size_t want, size_t *consumed, char **err)
{
	bool whole = want >= h->uncompressed_size;
	if (whole)
		want = (size_t)h->uncompressed_size;
	struct ccob_input in = { .src = src, .off = in_off, .len = in_len,
				 .cap = whole ? 0 : CCOB_FIRST_CHUNK };
	if (!whole && !src->mem) {
		in.buf = malloc(CCOB_FIRST_CHUNK);
		if (!in.buf)
			abort();
	}
	size_t produced = 0;
	uint64_t used = 0;
	bool ended = false;
	int r = h->method == PVG_CCOB_ZLIB
			? zlib_decode(&in, out, want, whole, &produced, &used, &ended, err)
			: zstd_decode(&in, out, want, whole, &produced, &used, &ended, err);
	free(in.buf);
	*consumed = (size_t)used;
	if (r < 0)
		return r;
	if (produced != want) {
		*err = whole ? pvg_asprintf("decompressed %zu bytes but the header declares %zu",
					    produced, want)
			     : pvg_asprintf("the stream ends after %zu bytes, before the %zu "
					    "needed (the header declares %" PRIu64 ")",
					    produced, want, h->uncompressed_size);
		return -EBADMSG;
	}
	if (!whole)
		return 0;
	if (!ended) {
		*err = pvg_strdup(h->method == PVG_CCOB_ZLIB
					  ? "zlib stream is corrupt or truncated (ends early)"
					  : "zstd stream is truncated");
		return -EBADMSG;
	}
	if (h->version >= 2 && used != in_len) {
		*err = pvg_asprintf("declared size is %" PRIu64 " bytes but the compressed stream "
				    "ends after %" PRIu64,
				    h->total_size, h->header_size + used);
		return -EBADMSG;
	}
	uint64_t got = pvg_md5_low64(out, want);
	if (got != h->hash) {
		*err = pvg_asprintf("hash mismatch: header says %016" PRIx64
				    ", the decompressed bundle hashes to %016" PRIx64,
				    h->hash, got);
		return -EBADMSG;
	}
	return 0;
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
	struct pvg_src src = { .mem = data, .fd = -1, .size = n };
	int r = pvg_ccob_inflate(h, &src, 0, n, buf, cap, consumed, err);
	if (r < 0) {
		free(buf);
		return r;
	}
	*out = buf;
	return 0;
}
