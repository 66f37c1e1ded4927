/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (FIPS 180-4) for libprovgate-witness.so: the digest of each code module as it is
 * loaded. Self-contained on purpose: the library is loaded into GPU services, which may bundle
 * their own libcrypto; linking one (or dlopen'ing the system's) could put two of them in one
 * process. Portable C, no tables beyond the round constants.
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct pvg_wsha256 {
	uint32_t h[8];
	uint64_t len;   /* bytes hashed */
	uint8_t buf[64];
	size_t fill;
};

void pvg_wsha256_init(struct pvg_wsha256 *c);
void pvg_wsha256_update(struct pvg_wsha256 *c, const void *p, size_t n);
void pvg_wsha256_final(struct pvg_wsha256 *c, uint8_t out[32]);
/* The digest of p[0..n) at once. */
void pvg_wsha256(const void *p, size_t n, uint8_t out[32]);
