/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the DSSE envelope reader, base64, and verify-attestation's whole check
 * (signature over the PAE, Statement, predicate, subjects) with a fixed Ed25519 key. */
/* Built by tests/fuzz/build.sh. */
#include "core/attest.h"

/* A throwaway key (RFC 8410's example Ed25519 private key). The fuzzer cannot forge its
 * signatures, so the checks behind the signature are reached by signing the input itself
 * as a Statement, then verifying that envelope. */
static const char key_pem[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n"
	"-----END PRIVATE KEY-----\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pvg_key *key;
	if (!key) {
		struct pvg_msg why = { 0 };
		if (pvg_key_from_pem(key_pem, sizeof(key_pem) - 1, true, &key, &why) < 0)
			abort();
	}
	struct pvg_dsse_envelope env;
	struct pvg_msg why = { 0 };
	if (pvg_dsse_parse((const char *)data, size, &env, &why) == PVG_DSSE_OK)
		pvg_dsse_envelope_clear(&env);
	pvg_msg_clear(&why);

	unsigned char *dec = NULL;
	size_t n = 0;
	if (pvg_base64_decode((const char *)data, size, &dec, &n) == 0) {
		char *enc = pvg_base64_encode(dec, n);
		free(enc);
		free(dec);
	}

	struct pvg_attest_verify_opts o = { .key = key };
	struct pvg_attest_verification v;
	pvg_attest_verify((const char *)data, size, &o, &v);
	cJSON *j = pvg_attest_verification_json(&v, "fuzz");
	cJSON_Delete(j);
	pvg_attest_verification_clear(&v);

	/* a signed envelope of the input as a Statement: the checks behind the signature */
	if (size < 65536) {
		char *st = pvg_asprintf("%.*s", (int)size, (const char *)data);
		char *envtext = NULL;
		if (pvg_attest_envelope(st, key, &envtext, &why) == 0) {
			pvg_attest_verify(envtext, strlen(envtext), &o, &v);
			pvg_attest_verification_clear(&v);
			free(envtext);
		}
		pvg_msg_clear(&why);
		free(st);
	}
	return 0;
}
