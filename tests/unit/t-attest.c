/* SPDX-License-Identifier: MIT */
/* Attestations: base64, DSSE PAE and envelopes, keys, Statements and their verification. */
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "core/attest.h"
#include "tap.h"

static char *b64(const char *s) { return pvg_base64_encode((const unsigned char *)s, strlen(s)); }

static int dec(const char *s, char **out, size_t *len)
{
	return pvg_base64_decode(s, strlen(s), (unsigned char **)out, len);
}

static void base64_encodes_rfc4648_vectors(void)
{
	static const char *const in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const want[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=",
					    "Zm9vYmFy" };
	for (size_t i = 0; i < ARRAY_SIZE(in); i++) {
		_cleanup_free_ char *e = b64(in[i]);
		CHECK_STR(e, want[i]);
		_cleanup_free_ char *d = NULL;
		size_t n = 99;
		CHECK_INT(dec(want[i], &d, &n), 0);
		CHECK_INT(n, strlen(in[i]));
		CHECK(d && memcmp(d, in[i], n) == 0);
	}
}

static void base64_decodes_unpadded_and_url_safe(void)
{
	_cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
	size_t n = 0;
	CHECK_INT(dec("Zm9vYg", &a, &n), 0);
	CHECK_INT(n, 4);
	CHECK(a && memcmp(a, "foob", 4) == 0);
	/* 0xfb 0xff 0xbf: "+/+/" in the standard alphabet, "-_-_" in the URL-safe one */
	CHECK_INT(dec("-_-_", &b, &n), 0);
	CHECK(n == 3 && (unsigned char)b[0] == 0xfb && (unsigned char)b[1] == 0xff &&
	      (unsigned char)b[2] == 0xbf);
	CHECK_INT(dec("+/+/", &c, &n), 0);
	CHECK(n == 3 && memcmp(b, c, 3) == 0);
}

static void base64_refuses_what_is_not_base64(void)
{
	static const char *const bad[] = { "Z", "Zg=", "Z===", "Zg==Zg==", "Zm 9v", "Zm9v\n",
					   "+/-_", "Zm9v!", "=", "Zg=a" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *d = NULL;
		size_t n = 0;
		int r = dec(bad[i], &d, &n);
		if (r != -EINVAL)
			printf("#   accepted \"%s\"\n", bad[i]);
		CHECK_INT(r, -EINVAL);
		CHECK(d == NULL);
	}
}

/* The DSSE spec's own example (protocol.md) */
static void pae_is_the_dsse_spec_encoding(void)
{
	size_t n = 0;
	_cleanup_free_ unsigned char *p =
		pvg_dsse_pae("http://example.com/HelloWorld", (const unsigned char *)"hello world", 11, &n);
	const char *want = "DSSEv1 29 http://example.com/HelloWorld 11 hello world";
	CHECK_INT(n, strlen(want));
	CHECK(memcmp(p, want, n) == 0);
	_cleanup_free_ unsigned char *e = pvg_dsse_pae("", NULL, 0, &n);
	CHECK_INT(n, strlen("DSSEv1 0  0 "));
	CHECK(memcmp(e, "DSSEv1 0  0 ", n) == 0);
}

static const char good_env[] =
	"{\"payloadType\": \"application/vnd.in-toto+json\", \"payload\": \"e30=\", "
	"\"signatures\": [{\"keyid\": \"k1\", \"sig\": \"AAEC\"}, {\"sig\": \"AwQ=\"}]}";

static enum pvg_dsse_error parse(const char *text, struct pvg_dsse_envelope *env)
{
	_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
	enum pvg_dsse_error e = pvg_dsse_parse(text, strlen(text), env, &why);
	CHECK((e == PVG_DSSE_OK) == (why.text == NULL));
	return e;
}

static void envelope_parses_fields_and_signatures(void)
{
	struct pvg_dsse_envelope env;
	CHECK_INT(parse(good_env, &env), PVG_DSSE_OK);
	CHECK_STR(env.payload_type, PVG_DSSE_INTOTO_TYPE);
	CHECK(env.payload_len == 2 && memcmp(env.payload, "{}", 2) == 0);
	CHECK_INT(env.n_signatures, 2);
	CHECK_STR(env.signatures[0].keyid, "k1");
	CHECK(env.signatures[1].keyid == NULL);
	CHECK(env.signatures[0].sig_len == 3 && env.signatures[0].sig[2] == 2);
	pvg_dsse_envelope_clear(&env);
}

static void envelope_refuses_each_malformation_with_its_kind(void)
{
	static const struct {
		const char *text;
		enum pvg_dsse_error want;
	} cases[] = {
		{ "", PVG_DSSE_NOT_JSON },
		{ "  \n", PVG_DSSE_NOT_JSON },
		{ "\x7f" "ELF\x02\x01", PVG_DSSE_NOT_JSON },
		{ "{\"payloadType\": \"x\"} trailing", PVG_DSSE_NOT_JSON },
		{ "[1, 2]", PVG_DSSE_MALFORMED },
		{ "{\"_type\": \"https://in-toto.io/Statement/v1\", \"subject\": []}", PVG_DSSE_STATEMENT },
		{ "{\"payload\": \"e30=\", \"signatures\": [{\"sig\": \"AA==\"}]}", PVG_DSSE_MALFORMED },
		{ "{\"payloadType\": \"t\", \"signatures\": [{\"sig\": \"AA==\"}]}", PVG_DSSE_MALFORMED },
		{ "{\"payloadType\": \"t\", \"payload\": \"e3=0\", \"signatures\": [{\"sig\": \"AA==\"}]}",
		  PVG_DSSE_MALFORMED },
		{ "{\"payloadType\": \"t\", \"payload\": \"e30=\", \"signatures\": []}", PVG_DSSE_UNSIGNED },
		{ "{\"payloadType\": \"t\", \"payload\": \"e30=\"}", PVG_DSSE_UNSIGNED },
		{ "{\"payloadType\": \"t\", \"payload\": \"e30=\", \"signatures\": {}}", PVG_DSSE_MALFORMED },
		{ "{\"payloadType\": \"t\", \"payload\": \"e30=\", \"signatures\": [{\"keyid\": 1, \"sig\": \"AA==\"}]}",
		  PVG_DSSE_MALFORMED },
		{ "{\"payloadType\": \"t\", \"payload\": \"e30=\", \"signatures\": [{\"sig\": \"A\"}]}",
		  PVG_DSSE_MALFORMED },
		{ "{\"payloadType\": \"t\", \"payload\": \"e30=\", \"payload\": \"W10=\", \"signatures\": [{\"sig\": \"AA==\"}]}",
		  PVG_DSSE_MALFORMED },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct pvg_dsse_envelope env;
		enum pvg_dsse_error e = parse(cases[i].text, &env);
		if (e != cases[i].want)
			printf("#   case %zu: %d, expected %d\n", i, e, cases[i].want);
		CHECK_INT(e, cases[i].want);
		CHECK(env.payload == NULL && env.signatures == NULL);
	}
}

/* Every prefix of a good envelope is refused as truncated (never read as a smaller one). */
static void envelope_truncated_anywhere_is_not_json(void)
{
	size_t n = strlen(good_env);
	for (size_t cut = 0; cut < n; cut++) {
		_cleanup_free_ char *p = pvg_strdup(good_env);
		p[cut] = 0;
		struct pvg_dsse_envelope env;
		_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
		enum pvg_dsse_error e = pvg_dsse_parse(p, cut, &env, &why);
		if (e != PVG_DSSE_NOT_JSON)
			printf("#   cut at %zu: %d (%s)\n", cut, e, why.text ? why.text : "");
		CHECK_INT(e, PVG_DSSE_NOT_JSON);
	}
}

static char *pem_of(EVP_PKEY *k, bool private_key)
{
	BIO *b = BIO_new(BIO_s_mem());
	if (private_key)
		PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
	else
		PEM_write_bio_PUBKEY(b, k);
	char *p = NULL;
	long n = BIO_get_mem_data(b, &p);
	char *s = pvg_asprintf("%.*s", (int)n, p);
	BIO_free(b);
	return s;
}

static EVP_PKEY *gen(const char *type)
{
	if (strcmp(type, "P-256") == 0 || strcmp(type, "P-384") == 0)
		return EVP_PKEY_Q_keygen(NULL, NULL, "EC", type);
	if (strcmp(type, "RSA") == 0)
		return EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	return EVP_PKEY_Q_keygen(NULL, NULL, type);
}

static void load_pair(const char *type, struct pvg_key **priv, struct pvg_key **pub)
{
	EVP_PKEY *k = gen(type);
	_cleanup_free_ char *sp = pem_of(k, true), *pp = pem_of(k, false);
	_cleanup_(pvg_msg_clear) struct pvg_msg w1 = { 0 }, w2 = { 0 };
	CHECK_INT(pvg_key_from_pem(sp, strlen(sp), true, priv, &w1), 0);
	CHECK_INT(pvg_key_from_pem(pp, strlen(pp), false, pub, &w2), 0);
	/* the keyid is the sha256 of the DER SubjectPublicKeyInfo */
	unsigned char *der = NULL;
	int dl = i2d_PUBKEY(k, &der);
	unsigned char d[32];
	unsigned int l = 0;
	EVP_Digest(der, (size_t)dl, d, &l, EVP_sha256(), NULL);
	char hex[65];
	pvg_hex(d, 32, hex);
	OPENSSL_free(der);
	CHECK_STR(pvg_key_keyid(*priv), hex);
	CHECK_STR(pvg_key_keyid(*pub), hex);
	CHECK_STR(pvg_key_sslib_keyid(*priv), pvg_key_sslib_keyid(*pub));
	EVP_PKEY_free(k);
}

static void keys_sign_and_verify_ed25519_and_p256(void)
{
	static const char *const types[] = { "ED25519", "P-256" };
	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		struct pvg_key *priv = NULL, *pub = NULL, *other = NULL, *other_pub = NULL;
		load_pair(types[i], &priv, &pub);
		load_pair(types[i], &other, &other_pub);
		if (!priv || !pub || !other_pub)
			return;
		CHECK_INT(pvg_key_type(pub), i == 0 ? PVG_KEY_ED25519 : PVG_KEY_ECDSA_P256);
		unsigned char msg[] = "DSSEv1 3 abc 2 {}";
		unsigned char *sig = NULL;
		size_t sl = 0;
		_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
		CHECK_INT(pvg_key_sign(priv, msg, sizeof(msg) - 1, &sig, &sl, &why), 0);
		if (i == 0)
			CHECK_INT(sl, 64);
		else
			CHECK(sl >= 8 && sl <= 72 && sig[0] == 0x30); /* DER SEQUENCE */
		CHECK_INT(pvg_key_verify(pub, msg, sizeof(msg) - 1, sig, sl), 1);
		CHECK_INT(pvg_key_verify(other_pub, msg, sizeof(msg) - 1, sig, sl), 0);
		msg[7] ^= 1;
		CHECK_INT(pvg_key_verify(pub, msg, sizeof(msg) - 1, sig, sl), 0);
		msg[7] ^= 1;
		sig[sl - 1] ^= 0x40;
		CHECK_INT(pvg_key_verify(pub, msg, sizeof(msg) - 1, sig, sl), 0);
		CHECK_INT(pvg_key_verify(pub, msg, sizeof(msg) - 1, sig, 0), 0);
		free(sig);
		pvg_key_free(priv);
		pvg_key_free(pub);
		pvg_key_free(other);
		pvg_key_free(other_pub);
	}
}

static void keys_refuse_other_types_encrypted_and_non_pem(void)
{
	static const char *const types[] = { "RSA", "P-384", "X25519" };
	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		EVP_PKEY *k = gen(types[i]);
		_cleanup_free_ char *pem = pem_of(k, true);
		EVP_PKEY_free(k);
		struct pvg_key *key = NULL;
		_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
		CHECK_INT(pvg_key_from_pem(pem, strlen(pem), true, &key, &why), -EINVAL);
		CHECK(key == NULL && why.text && strstr(why.text, "Ed25519 or ECDSA P-256"));
	}
	EVP_PKEY *k = gen("ED25519");
	BIO *b = BIO_new(BIO_s_mem());
	PEM_write_bio_PKCS8PrivateKey(b, k, EVP_aes_256_cbc(), NULL, 0, NULL, (void *)"secret");
	char *p = NULL;
	long n = BIO_get_mem_data(b, &p);
	struct pvg_key *key = NULL;
	struct pvg_msg why = { 0 };
	CHECK_INT(pvg_key_from_pem(p, (size_t)n, true, &key, &why), -EINVAL);
	CHECK(why.text && strstr(why.text, "encrypted"));
	pvg_msg_clear(&why);
	BIO_free(b);
	_cleanup_free_ char *pub = pem_of(k, false);
	CHECK_INT(pvg_key_from_pem(pub, strlen(pub), true, &key, &why), -EINVAL);
	CHECK(why.text && strstr(why.text, "--sign-key takes the private one"));
	pvg_msg_clear(&why);
	EVP_PKEY_free(k);
	CHECK_INT(pvg_key_from_pem("hello", 5, false, &key, &why), -EINVAL);
	CHECK(why.text != NULL);
	pvg_msg_clear(&why);
}

static void private_key_file_readable_by_others_is_refused(void)
{
	char dir[] = "/tmp/t-attest.XXXXXX";
	if (!mkdtemp(dir))
		return;
	_cleanup_free_ char *path = pvg_asprintf("%s/key.pem", dir);
	EVP_PKEY *k = gen("ED25519");
	_cleanup_free_ char *pem = pem_of(k, true);
	EVP_PKEY_free(k);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0 && write(fd, pem, strlen(pem)) == (ssize_t)strlen(pem));
	close(fd);
	static const mode_t modes[] = { 0644, 0640, 0604, 0620, 0602 };
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
		chmod(path, modes[i]);
		struct pvg_key *key = NULL;
		_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
		CHECK_INT(pvg_key_load_private(path, &key, &why), -EPERM);
		CHECK(key == NULL && why.text && strstr(why.text, "too open") && strstr(why.text, "chmod 600"));
		/* verification reads the public half and does not care */
		_cleanup_(pvg_msg_clear) struct pvg_msg why2 = { 0 };
		CHECK_INT(pvg_key_load_public(path, &key, &why2), 0);
		pvg_key_free(key);
	}
	chmod(path, 0400);
	struct pvg_key *key = NULL;
	_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
	CHECK_INT(pvg_key_load_private(path, &key, &why), 0);
	pvg_key_free(key);
	unlink(path);
	_cleanup_(pvg_msg_clear) struct pvg_msg why3 = { 0 };
	CHECK_INT(pvg_key_load_private(path, &key, &why3), -ENOENT);
	rmdir(dir);
}

/* A report as the runner writes one, reduced to what attestations read. */
static cJSON *report(bool certified, const char *build_sha, const char *inst_sha)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "schema", "provgate.report/1");
	cJSON_AddStringToObject(r, "name", "unit");
	cJSON_AddStringToObject(r, "started_at", "2026-12-01T08:00:00Z");
	cJSON_AddBoolToObject(r, "certified", certified);
	cJSON *gates = cJSON_AddArrayToObject(r, "gates");
	for (int i = 1; i <= 7; i++) {
		cJSON *g = cJSON_CreateObject();
		cJSON_AddNumberToObject(g, "id", i);
		cJSON_AddStringToObject(g, "name", pvg_gate_name(i));
		cJSON_AddStringToObject(g, "status", certified || i < 4 ? "pass" : i == 4 ? "fail" : "blocked");
		cJSON_AddItemToArray(gates, g);
	}
	cJSON *chain = cJSON_AddObjectToObject(r, "chain");
	cJSON *b = cJSON_AddObjectToObject(chain, "build");
	cJSON_AddStringToObject(b, "path", "/b/_C.so");
	cJSON_AddStringToObject(b, "sha256", build_sha);
	cJSON *in = cJSON_AddObjectToObject(chain, "installed");
	cJSON_AddStringToObject(in, "path", "/site/_C.so");
	cJSON_AddStringToObject(in, "sha256", inst_sha);
	return r;
}

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static char *envelope_for(cJSON *rep, const struct pvg_key *key)
{
	struct pvg_subject s[PVG_MAX_SUBJECTS];
	size_t n = pvg_attest_report_subjects(rep, s);
	_cleanup_free_ char *st = NULL;
	_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 }, why2 = { 0 };
	CHECK_INT(pvg_attest_statement(rep, s, n, &st, &why), 0);
	char *env = NULL;
	CHECK_INT(pvg_attest_envelope(st, key, &env, &why2), 0);
	return env;
}

static char *verify_codes(const char *env, const struct pvg_key *key, bool *verified)
{
	struct pvg_attest_verify_opts o = { .key = key };
	struct pvg_attest_verification v;
	CHECK_INT(pvg_attest_verify(env, strlen(env), &o, &v), 0);
	char *codes = pvg_strdup("");
	for (size_t i = 0; i < v.n_problems; i++) {
		char *c = pvg_asprintf("%s%s%s", codes, i ? " " : "", v.problems[i].code);
		free(codes);
		codes = c;
	}
	*verified = v.verified;
	pvg_attest_verification_clear(&v);
	return codes;
}

/* Re-signs an edited Statement: what a signer with the key (or a buggy one) could write. */
static char *resign(const char *statement, const struct pvg_key *key)
{
	char *env = NULL;
	struct pvg_msg why = { 0 };
	CHECK_INT(pvg_attest_envelope(statement, key, &env, &why), 0);
	pvg_msg_clear(&why);
	return env;
}

static char *payload_of(const char *env)
{
	struct pvg_dsse_envelope e;
	_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
	if (pvg_dsse_parse(env, strlen(env), &e, &why) != PVG_DSSE_OK)
		return pvg_strdup("");
	char *p = pvg_asprintf("%.*s", (int)e.payload_len, (const char *)e.payload);
	pvg_dsse_envelope_clear(&e);
	return p;
}

static char *replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	CHECK(at != NULL);
	if (!at)
		return pvg_strdup(s);
	return pvg_asprintf("%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
}

static void statement_verifies_and_each_tamper_has_its_code(void)
{
	struct pvg_key *priv = NULL, *pub = NULL, *other = NULL, *other_pub = NULL;
	load_pair("ED25519", &priv, &pub);
	load_pair("P-256", &other, &other_pub);
	if (!priv || !other)
		return;
	_cleanup_json_ cJSON *rep = report(true, SHA_A, SHA_A);
	_cleanup_free_ char *env = envelope_for(rep, priv);
	bool ok = false;
	_cleanup_free_ char *c0 = verify_codes(env, pub, &ok);
	CHECK_STR(c0, "");
	CHECK(ok);
	_cleanup_free_ char *st = payload_of(env);
	CHECK(strstr(st, "\"_type\":\"https://in-toto.io/Statement/v1\"") != NULL);
	CHECK(strstr(st, "\"predicateType\":\"" PVG_PREDICATE_REPORT "\"") != NULL);
	CHECK(strstr(st, "{\"name\":\"/site/_C.so\",\"digest\":{\"sha256\":\"" SHA_A "\"}}") != NULL);

	struct {
		char *env;
		const char *code;
	} t[10];
	size_t n = 0;
	/* payload edited: one base64 character of the payload changed */
	_cleanup_free_ char *p_edit = pvg_strdup(env);
	char *pl = strstr(p_edit, "\"payload\":");
	CHECK(pl != NULL);
	if (pl && (pl = strchr(pl + strlen("\"payload\":"), '"'))) {
		pl += 1 + 40;
		*pl = *pl == 'A' ? 'B' : 'A';
	}
	t[n++] = (typeof(t[0])){ pvg_strdup(p_edit), "attestation.signature-invalid" };
	t[n++] = (typeof(t[0])){ envelope_for(rep, other), "attestation.other-key" };
	t[n++] = (typeof(t[0])){ replace(env, "application/vnd.in-toto+json", "application/json"),
				 "attestation.payload-type" };
	_cleanup_free_ char *s1 = replace(st, "Statement/v1", "Statement/v0.1");
	t[n++] = (typeof(t[0])){ resign(s1, priv), "attestation.statement-type" };
	_cleanup_free_ char *s2 = replace(st, "attestation/report/v1", "attestation/report/v2");
	t[n++] = (typeof(t[0])){ resign(s2, priv), "attestation.predicate-type" };
	_cleanup_free_ char *s3 = replace(st, "\"digest\":{\"sha256\":\"a", "\"digest\":{\"sha256\":\"c");
	t[n++] = (typeof(t[0])){ resign(s3, priv), "attestation.subject-report" };
	_cleanup_json_ cJSON *bad = report(false, SHA_A, SHA_B);
	t[n++] = (typeof(t[0])){ envelope_for(bad, priv), "attestation.not-certified" };
	_cleanup_free_ char *s4 = replace(st, "\"certified\":true", "\"certified\":true,\"certified\":false");
	t[n++] = (typeof(t[0])){ resign(s4, priv), "attestation.statement-malformed" };
	(void)s4;
	t[n++] = (typeof(t[0])){ pvg_asprintf("%.*s", (int)(strlen(env) / 2), env),
				 "attestation.not-json" };
	/* signed, says certified, but a gate failed: not a report provgate writes */
	_cleanup_json_ cJSON *forged = report(true, SHA_A, SHA_A);
	cJSON *g4 = cJSON_GetArrayItem(cJSON_GetObjectItem(forged, "gates"), 3);
	cJSON_ReplaceItemInObject(g4, "status", cJSON_CreateString("fail"));
	t[n++] = (typeof(t[0])){ envelope_for(forged, priv), "attestation.predicate-malformed" };
	for (size_t i = 0; i < n; i++) {
		bool v = true;
		_cleanup_free_ char *codes = verify_codes(t[i].env, pub, &v);
		if (strcmp(codes, t[i].code) != 0)
			printf("#   tamper %zu: [%s], expected [%s]\n", i, codes, t[i].code);
		CHECK_STR(codes, t[i].code);
		CHECK(!v);
		free(t[i].env);
	}
	pvg_key_free(priv);
	pvg_key_free(pub);
	pvg_key_free(other);
	pvg_key_free(other_pub);
}

static void statement_needs_a_subject_and_a_known_schema(void)
{
	_cleanup_json_ cJSON *rep = report(false, "", "");
	struct pvg_subject s[PVG_MAX_SUBJECTS];
	CHECK_INT(pvg_attest_report_subjects(rep, s), 0);
	char *st = NULL;
	struct pvg_msg why = { 0 };
	CHECK_INT(pvg_attest_statement(rep, s, 0, &st, &why), -EINVAL);
	CHECK(st == NULL && why.text && strstr(why.text, "no artifact"));
	pvg_msg_clear(&why);
	_cleanup_json_ cJSON *other = cJSON_Parse("{\"schema\": \"provgate.nothing/1\"}");
	struct pvg_subject one = { "x", SHA_A };
	CHECK_INT(pvg_attest_statement(other, &one, 1, &st, &why), -EINVAL);
	CHECK(why.text && strstr(why.text, "provgate.nothing/1"));
	pvg_msg_clear(&why);
	/* the build and the installed artifact are two subjects, the installed first */
	_cleanup_json_ cJSON *two = report(false, SHA_A, SHA_B);
	CHECK_INT(pvg_attest_report_subjects(two, s), 2);
	CHECK_STR(s[0].name, "/site/_C.so");
	CHECK_STR(s[1].sha256, SHA_A);
}

int main(void)
{
	RUN(base64_encodes_rfc4648_vectors);
	RUN(base64_decodes_unpadded_and_url_safe);
	RUN(base64_refuses_what_is_not_base64);
	RUN(pae_is_the_dsse_spec_encoding);
	RUN(envelope_parses_fields_and_signatures);
	RUN(envelope_refuses_each_malformation_with_its_kind);
	RUN(envelope_truncated_anywhere_is_not_json);
	RUN(keys_sign_and_verify_ed25519_and_p256);
	RUN(keys_refuse_other_types_encrypted_and_non_pem);
	RUN(private_key_file_readable_by_others_is_refused);
	RUN(statement_verifies_and_each_tamper_has_its_code);
	RUN(statement_needs_a_subject_and_a_known_schema);
	TAP_EXIT();
}
