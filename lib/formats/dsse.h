/* SPDX-License-Identifier: MIT */
/*
 * DSSE (Dead Simple Signing Envelope, github.com/secure-systems-lab/dsse, protocol v1) as
 * bytes: base64, the pre-authentication encoding that is signed, and the JSON envelope
 * {"payloadType", "payload", "signatures": [{"keyid", "sig"}]}. Pure: no files, no keys.
 */
#pragma once
#include "util/util.h"

/* The payload type of an in-toto Statement inside DSSE. */
#define PVG_DSSE_INTOTO_TYPE "application/vnd.in-toto+json"
/* An envelope, a payload or a signature larger than this is refused, not parsed. */
#define PVG_DSSE_MAX_BYTES (64u << 20)
#define PVG_DSSE_MAX_SIGNATURES 64

/* Standard alphabet, padded. Returns NULL only when n exceeds PVG_DSSE_MAX_BYTES. */
char *pvg_base64_encode(const unsigned char *in, size_t n);
/* Standard or URL-safe alphabet (not mixed), padded or not, no whitespace: DSSE allows
 * both alphabets. 0 with a malloc'd *out (NUL-terminated for convenience), or -EINVAL. */
int pvg_base64_decode(const char *in, size_t n, unsigned char **out, size_t *out_len);

/* PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, lengths as ASCII
 * decimal byte counts: the bytes a DSSE signature is made over. */
unsigned char *pvg_dsse_pae(const char *type, const unsigned char *body, size_t body_len,
			    size_t *pae_len);

struct pvg_dsse_signature {
	char *keyid; /* NULL when the envelope gives none */
	unsigned char *sig;
	size_t sig_len;
};

struct pvg_dsse_envelope {
	char *payload_type;
	unsigned char *payload;
	size_t payload_len;
	struct pvg_dsse_signature *signatures;
	size_t n_signatures;
};

/* Why an envelope could not be read: each is a distinct problem for the user. */
enum pvg_dsse_error {
	PVG_DSSE_OK = 0,
	PVG_DSSE_NOT_JSON,   /* empty, truncated, or not JSON at all */
	PVG_DSSE_STATEMENT,  /* a bare in-toto Statement: JSON with "_type", no envelope */
	PVG_DSSE_MALFORMED,  /* JSON, but a field is missing, of the wrong type, or bad base64 */
	PVG_DSSE_UNSIGNED,   /* an envelope with no signature at all */
	PVG_DSSE_TOO_LARGE,
};

/* Parses envelope JSON (text need not be NUL-terminated). On failure returns the error and,
 * in why->text, a sentence saying what was seen; *env is then empty. */
enum pvg_dsse_error pvg_dsse_parse(const char *text, size_t len, struct pvg_dsse_envelope *env,
				   struct pvg_msg *why);
void pvg_dsse_envelope_clear(struct pvg_dsse_envelope *env);

/* The envelope's JSON text (with a final newline). */
char *pvg_dsse_serialize(const char *payload_type, const unsigned char *payload,
			 size_t payload_len, const struct pvg_dsse_signature *sigs, size_t n_sigs);
