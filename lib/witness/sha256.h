/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (FIPS 180-4) for libprovgate-witness.so: the digest of each code module as it is
 * loaded. Self-contained on purpose: the library is loaded into GPU services, which may bundle
 * their own libcrypto; linking one (or dlopen'ing the system's) could put two of them in one
 * process. Two block functions: portable C (no tables beyond the round constants), and on
 * x86-64 the SHA extensions (SHA-NI), taken when CPUID says the CPU has them.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Which block function a context uses. AUTO: SHA-NI where the CPU has it (CPUID, read once
 * per process), else the portable one. The others are for tests and the bench. */
enum pvg_wsha256_impl {
	PVG_WSHA256_AUTO,
	PVG_WSHA256_PORTABLE,
	PVG_WSHA256_SHANI,
};

struct pvg_wsha256 {
	uint32_t h[8];
	uint64_t len;   /* bytes hashed */
	uint8_t buf[64];
	size_t fill;
	void (*blocks)(uint32_t h[8], const uint8_t *p, size_t nblocks);
};

void pvg_wsha256_init(struct pvg_wsha256 *c);
void pvg_wsha256_update(struct pvg_wsha256 *c, const void *p, size_t n);
void pvg_wsha256_final(struct pvg_wsha256 *c, uint8_t out[32]);
/* The digest of p[0..n) at once. */
void pvg_wsha256(const void *p, size_t n, uint8_t out[32]);

/* pvg_wsha256_init with a chosen block function: 0, or -1 (c untouched) for SHANI where this
 * build or CPU has none. */
int pvg_wsha256_init_impl(struct pvg_wsha256 *c, enum pvg_wsha256_impl impl);
/* What AUTO takes in this process: PVG_WSHA256_PORTABLE or PVG_WSHA256_SHANI. */
enum pvg_wsha256_impl pvg_wsha256_selected(void);
/* "portable", "sha-ni" (AUTO: the selected one's name) */
const char *pvg_wsha256_impl_name(enum pvg_wsha256_impl impl);
