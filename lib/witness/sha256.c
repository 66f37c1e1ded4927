/* SPDX-License-Identifier: MIT */
/* SHA-256 (FIPS 180-4) for the witness library; see sha256.h for why it is its own. */
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define PVG_WSHA256_HAVE_SHANI 1
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "witness/sha256.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n)
{
	return x >> n | x << (32 - n);
}

static void block_portable(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		k = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

static void blocks_portable(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	for (; nblocks; nblocks--, p += 64)
		block_portable(h, p);
}

#ifdef PVG_WSHA256_HAVE_SHANI
/*
 * The SHA extensions: sha256rnds2 does two rounds on the state held as ABEF and CDGH,
 * sha256msg1 / sha256msg2 the two halves of the message schedule. Quad-round i uses w[i % 4]
 * (words 4i..4i+3) and then, for i in 3..14, computes words 4i+4..4i+7 into w[(i + 1) % 4],
 * the slot of the words 4i-12.. that no later round reads.
 */
#define SHANI_QUAD(i)                                                                      \
	do {                                                                               \
		if ((i) < 4)                                                               \
			w[(i) % 4] = _mm_shuffle_epi8(                                     \
				_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * (i))), \
				bswap);                                                    \
		__m128i x = _mm_add_epi32(w[(i) % 4],                                      \
					  _mm_loadu_si128((const __m128i *)(const void *)&K[4 * (i)])); \
		cdgh = _mm_sha256rnds2_epu32(cdgh, abef, x);                               \
		abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(x, 0x0e));     \
		if ((i) >= 3 && (i) <= 14) {                                               \
			__m128i t = _mm_sha256msg1_epu32(w[((i) + 1) % 4], w[((i) + 2) % 4]); \
			t = _mm_add_epi32(t, _mm_alignr_epi8(w[(i) % 4], w[((i) + 3) % 4], 4)); \
			w[((i) + 1) % 4] = _mm_sha256msg2_epu32(t, w[(i) % 4]);            \
		}                                                                          \
	} while (0)

__attribute__((target("sha,sse4.1"))) static void blocks_shani(uint32_t h[8], const uint8_t *p,
								size_t nblocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
	__m128i dcba = _mm_loadu_si128((const __m128i *)(const void *)&h[0]);
	__m128i hgfe = _mm_loadu_si128((const __m128i *)(const void *)&h[4]);
	__m128i cdab = _mm_shuffle_epi32(dcba, 0xb1);
	__m128i efgh = _mm_shuffle_epi32(hgfe, 0x1b);
	__m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
	__m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xf0);
	for (; nblocks; nblocks--, p += 64) {
		__m128i abef0 = abef, cdgh0 = cdgh, w[4];
		SHANI_QUAD(0); SHANI_QUAD(1); SHANI_QUAD(2); SHANI_QUAD(3);
		SHANI_QUAD(4); SHANI_QUAD(5); SHANI_QUAD(6); SHANI_QUAD(7);
		SHANI_QUAD(8); SHANI_QUAD(9); SHANI_QUAD(10); SHANI_QUAD(11);
		SHANI_QUAD(12); SHANI_QUAD(13); SHANI_QUAD(14); SHANI_QUAD(15);
		abef = _mm_add_epi32(abef, abef0);
		cdgh = _mm_add_epi32(cdgh, cdgh0);
	}
	__m128i feba = _mm_shuffle_epi32(abef, 0x1b);
	__m128i dchg = _mm_shuffle_epi32(cdgh, 0xb1);
	_mm_storeu_si128((__m128i *)(void *)&h[0], _mm_blend_epi16(feba, dchg, 0xf0));
	_mm_storeu_si128((__m128i *)(void *)&h[4], _mm_alignr_epi8(dchg, feba, 8));
}

/* CPUID: leaf 7 EBX bit 29 (SHA), leaf 1 ECX bits 9 (SSSE3) and 19 (SSE4.1). The instructions
 * use only the XMM state, which every x86-64 kernel saves, so no XGETBV. */
static int cpu_has_shani(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1))
		return 0;
	if (__get_cpuid_max(0, NULL) < 7)
		return 0;
	__cpuid_count(7, 0, a, b, c, d);
	return (b & (1u << 29)) != 0;
}
#endif

/* 0 not yet known; read once per process. Threads that race both compute the same answer. */
static atomic_int selected;

enum pvg_wsha256_impl pvg_wsha256_selected(void)
{
	int s = atomic_load_explicit(&selected, memory_order_relaxed);
	if (!s) {
		s = PVG_WSHA256_PORTABLE;
#ifdef PVG_WSHA256_HAVE_SHANI
		if (cpu_has_shani())
			s = PVG_WSHA256_SHANI;
#endif
		atomic_store_explicit(&selected, s, memory_order_relaxed);
	}
	return (enum pvg_wsha256_impl)s;
}

const char *pvg_wsha256_impl_name(enum pvg_wsha256_impl impl)
{
	if (impl == PVG_WSHA256_AUTO)
		impl = pvg_wsha256_selected();
	return impl == PVG_WSHA256_SHANI ? "sha-ni" : "portable";
}

int pvg_wsha256_init_impl(struct pvg_wsha256 *c, enum pvg_wsha256_impl impl)
{
	static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	if (impl == PVG_WSHA256_AUTO)
		impl = pvg_wsha256_selected();
	if (impl == PVG_WSHA256_SHANI) {
#ifdef PVG_WSHA256_HAVE_SHANI
		if (pvg_wsha256_selected() != PVG_WSHA256_SHANI)
			return -1;
		c->blocks = blocks_shani;
#else
		return -1;
#endif
	} else {
		c->blocks = blocks_portable;
	}
	memcpy(c->h, iv, sizeof(iv));
	c->len = 0;
	c->fill = 0;
	return 0;
}

void pvg_wsha256_init(struct pvg_wsha256 *c)
{
	pvg_wsha256_init_impl(c, PVG_WSHA256_AUTO);
}

void pvg_wsha256_update(struct pvg_wsha256 *c, const void *data, size_t n)
{
	const uint8_t *p = data;
	c->len += n;
	if (c->fill) {
		size_t take = 64 - c->fill < n ? 64 - c->fill : n;
		memcpy(c->buf + c->fill, p, take);
		c->fill += take;
		p += take;
		n -= take;
		if (c->fill < 64)
			return;
		c->blocks(c->h, c->buf, 1);
		c->fill = 0;
	}
	if (n >= 64) {
		c->blocks(c->h, p, n / 64);
		p += n / 64 * 64;
		n %= 64;
	}
	memcpy(c->buf, p, n);
	c->fill = n;
}

void pvg_wsha256_final(struct pvg_wsha256 *c, uint8_t out[32])
{
	uint64_t bits = c->len * 8;
	uint8_t pad[72] = { 0x80 };
	size_t padn = (c->fill < 56 ? 56 : 120) - c->fill;
	for (int i = 0; i < 8; i++)
		pad[padn + i] = (uint8_t)(bits >> (56 - 8 * i));
	pvg_wsha256_update(c, pad, padn + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(c->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)c->h[i];
	}
}

void pvg_wsha256(const void *p, size_t n, uint8_t out[32])
{
	struct pvg_wsha256 c;
	pvg_wsha256_init(&c);
	pvg_wsha256_update(&c, p, n);
	pvg_wsha256_final(&c, out);
}
