/* SPDX-License-Identifier: MIT */
/*
 * Signing keys in PEM, through libcrypto's EVP: Ed25519 (pure, no digest) and ECDSA over
 * NIST P-256 with SHA-256 (DER signatures). Nothing else is accepted.
 *
 * keyid: the SHA-256 (lowercase hex) of the public key's DER SubjectPublicKeyInfo, the
 * bytes of `openssl pkey -pubout -outform DER`. securesystemslib computes its keyids from
 * its own key metadata instead (SHA-256 of the canonical JSON {"keyid_hash_algorithms",
 * "keytype", "keyval": {"public"}, "scheme"}, where "public" is the raw key in hex for
 * Ed25519 and the PEM text for ECDSA); pvg_key_sslib_keyid gives that one too, so that an
 * envelope signed with securesystemslib's keyid is recognised as this key's.
 */
#pragma once
#include "util/util.h"

enum pvg_key_type {
	PVG_KEY_ED25519 = 1,
	PVG_KEY_ECDSA_P256,
};

struct pvg_key;

/* A private key for signing. The file must be a regular file that neither group nor others
 * may read or write (like ssh): -EPERM with why saying so. An encrypted key, another key
 * type or bytes that are no PEM key are -EINVAL with why. -errno from open/read. */
int pvg_key_load_private(const char *path, struct pvg_key **key, struct pvg_msg *why);
/* A public key (PEM "PUBLIC KEY"; a private key file is accepted as well, its public half is
 * used, without the permission check). */
int pvg_key_load_public(const char *path, struct pvg_key **key, struct pvg_msg *why);
/* The same, from PEM text in memory (tests, fuzzing). */
int pvg_key_from_pem(const char *pem, size_t len, bool private_key, struct pvg_key **key,
		     struct pvg_msg *why);
void pvg_key_free(struct pvg_key *key);
static inline void pvg_key_freep(struct pvg_key **k) { pvg_key_free(*k); }

enum pvg_key_type pvg_key_type(const struct pvg_key *key);
const char *pvg_key_type_name(const struct pvg_key *key); /* "ed25519", "ecdsa-p256" */
const char *pvg_key_keyid(const struct pvg_key *key);       /* 64 hex digits */
const char *pvg_key_sslib_keyid(const struct pvg_key *key); /* securesystemslib's, 64 hex */
/* keyid names this key: provgate's keyid or one securesystemslib gives it (for ECDSA its
 * generated and its imported keys differ by the PEM's final newline; both count). */
bool pvg_key_has_keyid(const struct pvg_key *key, const char *keyid);

/* Signs msg: 0 with a malloc'd signature, or -EIO with why (libcrypto's reason). */
int pvg_key_sign(const struct pvg_key *key, const unsigned char *msg, size_t n,
		 unsigned char **sig, size_t *sig_len, struct pvg_msg *why);
/* 1 the signature verifies, 0 it does not (a malformed signature included). */
int pvg_key_verify(const struct pvg_key *key, const unsigned char *msg, size_t n,
		   const unsigned char *sig, size_t sig_len);
