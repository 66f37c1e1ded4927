/* SPDX-License-Identifier: MIT */
/*
 * The witness library's own SHA-256 (lib/witness/sha256.c; it links no libcrypto) against
 * libcrypto's, for each of its block functions: the portable one everywhere, and the SHA
 * extensions (SHA-NI) where the CPU has them. Every length 0..1100 (the block and padding
 * edges, many times over), large random buffers, each fed whole and in odd-sized pieces.
 * What the library selects must agree with the kernel's CPU flags (/proc/cpuinfo).
 */
#include <openssl/sha.h>
#include <stdint.h>
#include <time.h>

#include "tap.h"
#include "witness/sha256.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(next() >> 24);
}

/* p[0..n) fed to impl in pieces of the sizes cuts[] gives in turn (NULL: whole) */
static void digest(enum pvg_wsha256_impl impl, const uint8_t *p, size_t n, const size_t *cuts,
		   size_t ncuts, uint8_t out[32])
{
	struct pvg_wsha256 c;
	if (pvg_wsha256_init_impl(&c, impl) != 0) {
		memset(out, 0, 32);
		return;
	}
	size_t at = 0;
	for (size_t k = 0; cuts && at < n; k++) {
		size_t take = cuts[k % ncuts] < n - at ? cuts[k % ncuts] : n - at;
		pvg_wsha256_update(&c, p + at, take);
		at += take;
	}
	pvg_wsha256_update(&c, p + at, n - at);
	pvg_wsha256_final(&c, out);
}

static const size_t odd_cuts[] = { 1, 7, 64, 13, 65, 3, 127, 63, 1000, 4097 };
#define NCUTS (sizeof(odd_cuts) / sizeof(odd_cuts[0]))

/* Returns the number of mismatches, and names the first few. */
static int matches_libcrypto(enum pvg_wsha256_impl impl)
{
	const char *name = pvg_wsha256_impl_name(impl);
	static uint8_t small[1100];
	fill(small, sizeof(small));
	int bad = 0;
	for (size_t n = 0; n <= sizeof(small); n++) {
		uint8_t want[32], whole[32], pieces[32], from[32];
		SHA256(small, n, want);
		digest(impl, small, n, NULL, 0, whole);
		digest(impl, small, n, odd_cuts + n % NCUTS, NCUTS - n % NCUTS, pieces);
		/* the same bytes at an odd address: the block functions load unaligned */
		uint8_t *moved = malloc(n + 1);
		memcpy(moved + 1, small, n);
		digest(impl, moved + 1, n, NULL, 0, from);
		free(moved);
		int b = (memcmp(whole, want, 32) != 0) + (memcmp(pieces, want, 32) != 0) +
			(memcmp(from, want, 32) != 0);
		if (b && bad < 5)
			printf("#   %s: %zu bytes: digest differs from libcrypto's\n", name, n);
		bad += b;
	}
	/* large random buffers, sizes random around powers of two */
	for (int i = 0; i < 6; i++) {
		size_t n = ((size_t)1 << (16 + 3 * (i % 3))) + (size_t)(next() % 4096);
		uint8_t *p = malloc(n);
		fill(p, n);
		uint8_t want[32], whole[32], pieces[32], random_pieces[32];
		SHA256(p, n, want);
		digest(impl, p, n, NULL, 0, whole);
		digest(impl, p, n, odd_cuts, NCUTS, pieces);
		size_t rc[16];
		for (int k = 0; k < 16; k++)
			rc[k] = 1 + (size_t)(next() % 20000);
		digest(impl, p, n, rc, 16, random_pieces);
		int b = (memcmp(whole, want, 32) != 0) + (memcmp(pieces, want, 32) != 0) +
			(memcmp(random_pieces, want, 32) != 0);
		if (b)
			printf("#   %s: random buffer of %zu bytes: digest differs from libcrypto's\n",
			       name, n);
		bad += b;
		free(p);
	}
	/* FIPS 180-4's example "abc", and the one-shot call */
	static const uint8_t abc[32] = {
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
		0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
	};
	uint8_t out[32];
	digest(impl, (const uint8_t *)"abc", 3, NULL, 0, out);
	if (memcmp(out, abc, 32) != 0) {
		printf("#   %s: sha256(\"abc\") is not FIPS 180-4's\n", name);
		bad++;
	}
	return bad;
}

static void portable_matches_libcrypto(void)
{
	CHECK_INT(matches_libcrypto(PVG_WSHA256_PORTABLE), 0);
}

static void sha_ni_matches_libcrypto(void)
{
	CHECK_INT(matches_libcrypto(PVG_WSHA256_SHANI), 0);
}

/* The selected block function: what pvg_wsha256 and pvg_wsha256_init use. */
static void selected_matches_libcrypto(void)
{
	uint8_t p[3000], want[32], a[32];
	fill(p, sizeof(p));
	int bad = 0;
	for (size_t n = 0; n <= sizeof(p); n += 37) {
		SHA256(p, n, want);
		pvg_wsha256(p, n, a);
		bad += memcmp(a, want, 32) != 0;
	}
	CHECK_INT(bad, 0);
	struct pvg_wsha256 auto_ctx, chosen;
	pvg_wsha256_init(&auto_ctx);
	CHECK_INT(pvg_wsha256_init_impl(&chosen, pvg_wsha256_selected()), 0);
	CHECK(auto_ctx.blocks == chosen.blocks);
}

/* Is FLAG one of the words of /proc/cpuinfo's first "flags" line? -1: no such line. */
static int cpuinfo_flag(const char *flag)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return -1;
	char line[8192];
	int found = -1;
	while (found < 0 && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0 || !strchr(line, ':'))
			continue;
		found = 0;
		for (char *w = strtok(strchr(line, ':') + 1, " \t\n"); w; w = strtok(NULL, " \t\n"))
			if (strcmp(w, flag) == 0)
				found = 1;
	}
	fclose(f);
	return found;
}

static int cpu_lists_sha_ni(void)
{
	return cpuinfo_flag("sha_ni") == 1 && cpuinfo_flag("ssse3") == 1 &&
	       cpuinfo_flag("sse4_1") == 1;
}

/* The kernel's own reading of CPUID and the library's agree: SHA-NI taken where the CPU has it
 * (else the service pays the portable speed), never where it has not (SIGILL in the service). */
static void selection_follows_cpu_flags(void)
{
#if defined(__x86_64__)
	CHECK(cpuinfo_flag("sha_ni") >= 0);
	CHECK_STR(pvg_wsha256_impl_name(PVG_WSHA256_AUTO), cpu_lists_sha_ni() ? "sha-ni" : "portable");
#else
	CHECK_STR(pvg_wsha256_impl_name(PVG_WSHA256_AUTO), "portable");
#endif
	struct pvg_wsha256 c;
	CHECK_INT(pvg_wsha256_init_impl(&c, PVG_WSHA256_SHANI),
		  pvg_wsha256_selected() == PVG_WSHA256_SHANI ? 0 : -1);
}

int main(void)
{
	/* a new seed each run, printed so that a failure can be replayed (PVG_SEED) */
	rng ^= getenv("PVG_SEED") ? strtoull(getenv("PVG_SEED"), NULL, 0) : (uint64_t)time(NULL);
	if (!rng)
		rng = 1;
	printf("# seed %#llx, selected %s\n", (unsigned long long)rng,
	       pvg_wsha256_impl_name(PVG_WSHA256_AUTO));
	RUN(portable_matches_libcrypto);
	if (pvg_wsha256_selected() == PVG_WSHA256_SHANI)
		RUN(sha_ni_matches_libcrypto);
#if defined(__x86_64__)
	else if (cpu_lists_sha_ni()) {
		printf("not ok - sha_ni_matches_libcrypto: /proc/cpuinfo lists sha_ni, ssse3 and "
		       "sse4_1 but the library did not take its SHA-NI code\n");
		tap_any_failed = 1;
	} else
		printf("skip - sha_ni_matches_libcrypto: this CPU lacks the SHA extensions (CPUID "
		       "leaf 7 EBX bit 29 with SSSE3 and SSE4.1; /proc/cpuinfo does not list all of "
		       "sha_ni, ssse3, sse4_1), so the portable code is the one in use\n");
#else
	else
		printf("skip - sha_ni_matches_libcrypto: not an x86-64 build, so the portable code "
		       "is the one in use\n");
#endif
	RUN(selected_matches_libcrypto);
	RUN(selection_follows_cpu_flags);
	TAP_EXIT();
}
