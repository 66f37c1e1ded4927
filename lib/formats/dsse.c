/* SPDX-License-Identifier: MIT */
/* DSSE envelopes as bytes: base64 (libcrypto's EVP block coder), PAE, the JSON envelope. */
#include <limits.h>
#include <openssl/evp.h>

#include "formats/dsse.h"

char *pvg_base64_encode(const unsigned char *in, size_t n)
{
	if (n > PVG_DSSE_MAX_BYTES)
		return NULL;
	char *out = pvg_xcalloc(4 * ((n + 2) / 3) + 1, 1);
	/* EVP_EncodeBlock writes no newlines (unlike EVP_EncodeUpdate) and pads with '=' */
	EVP_EncodeBlock((unsigned char *)out, in, (int)n);
	return out;
}

int pvg_base64_decode(const char *in, size_t n, unsigned char **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	if (n > PVG_DSSE_MAX_BYTES / 3 * 4 + 4)
		return -EINVAL;
	size_t pad = 0;
	while (pad < 2 && n > pad && in[n - 1 - pad] == '=')
		pad++;
	size_t body = n - pad;
	bool std = false, url = false;
	for (size_t i = 0; i < body; i++) {
		char c = in[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
			continue;
		if (c == '+' || c == '/')
			std = true;
		else if (c == '-' || c == '_')
			url = true;
		else
			return -EINVAL; /* '=' inside, whitespace, anything else */
	}
	/* one leftover character carries 6 bits, less than a byte; padding only completes a
	 * 4-character group */
	if (std && url)
		return -EINVAL;
	if (body % 4 == 1 || (pad && n % 4 != 0))
		return -EINVAL;
	size_t groups = (body + 3) / 4;
	_cleanup_free_ unsigned char *norm = pvg_xcalloc(groups * 4 + 1, 1);
	for (size_t i = 0; i < body; i++)
		norm[i] = in[i] == '-' ? '+' : in[i] == '_' ? '/' : (unsigned char)in[i];
	size_t missing = groups * 4 - body;
	for (size_t i = body; i < groups * 4; i++)
		norm[i] = '=';
	unsigned char *dec = pvg_xcalloc(groups * 3 + 1, 1);
	int r = groups ? EVP_DecodeBlock(dec, norm, (int)(groups * 4)) : 0;
	/* EVP_DecodeBlock counts the bytes of the padding as decoded zero bytes */
	if (r < 0 || (size_t)r != groups * 3) {
		free(dec);
		return -EINVAL;
	}
	*out_len = groups * 3 - missing;
	dec[*out_len] = 0;
	*out = dec;
	return 0;
}

unsigned char *pvg_dsse_pae(const char *type, const unsigned char *body, size_t body_len,
			    size_t *pae_len)
{
	size_t tlen = strlen(type);
	char head[64];
	int h1 = snprintf(head, sizeof(head), "DSSEv1 %zu ", tlen);
	char mid[32];
	int h2 = snprintf(mid, sizeof(mid), " %zu ", body_len);
	size_t len = (size_t)h1 + tlen + (size_t)h2 + body_len;
	unsigned char *p = pvg_xcalloc(len + 1, 1);
	memcpy(p, head, (size_t)h1);
	memcpy(p + h1, type, tlen);
	memcpy(p + h1 + tlen, mid, (size_t)h2);
	if (body_len)
		memcpy(p + h1 + tlen + h2, body, body_len);
	*pae_len = len;
	return p;
}

void pvg_dsse_envelope_clear(struct pvg_dsse_envelope *env)
{
	free(env->payload_type);
	free(env->payload);
	for (size_t i = 0; i < env->n_signatures; i++) {
		free(env->signatures[i].keyid);
		free(env->signatures[i].sig);
	}
	free(env->signatures);
	memset(env, 0, sizeof(*env));
}

/* JSON that starts as an object or array and ends inside a string or an unclosed bracket:
 * a file cut short rather than one that is not JSON at all. */
static bool looks_truncated(const char *text, size_t len, size_t start)
{
	if (start >= len || (text[start] != '{' && text[start] != '['))
		return false;
	size_t depth = 0;
	bool in_string = false;
	for (size_t i = start; i < len; i++) {
		char c = text[i];
		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
		} else if (c == '"') {
			in_string = true;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (depth == 0)
				return false;
			depth--;
		}
	}
	return in_string || depth > 0;
}

static const char *duplicate_member(const cJSON *obj)
{
	return pvg_json_find_duplicate(obj, false);
}

static enum pvg_dsse_error fail(struct pvg_msg *why, enum pvg_dsse_error e, const char *fmt, ...)
	PVG_PRINTF(3, 4);
static enum pvg_dsse_error fail(struct pvg_msg *why, enum pvg_dsse_error e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pvg_msg_clear(why);
	why->text = pvg_vasprintf(fmt, ap);
	va_end(ap);
	return e;
}

static enum pvg_dsse_error parse_signatures(const cJSON *sigs, struct pvg_dsse_envelope *env,
					    struct pvg_msg *why)
{
	if (!cJSON_IsArray(sigs))
		return fail(why, PVG_DSSE_MALFORMED, "\"signatures\" is not an array");
	int n = cJSON_GetArraySize(sigs);
	if (n == 0)
		return fail(why, PVG_DSSE_UNSIGNED, "the envelope has no signature (\"signatures\" is empty)");
	if (n > PVG_DSSE_MAX_SIGNATURES)
		return fail(why, PVG_DSSE_MALFORMED, "%d signatures, more than the %d provgate reads",
			    n, PVG_DSSE_MAX_SIGNATURES);
	env->signatures = pvg_xcalloc((size_t)n, sizeof(*env->signatures));
	int i = 0;
	for (const cJSON *s = sigs->child; s; s = s->next, i++) {
		if (!cJSON_IsObject(s))
			return fail(why, PVG_DSSE_MALFORMED, "signature %d is not an object", i + 1);
		const char *dup = duplicate_member(s);
		if (dup)
			return fail(why, PVG_DSSE_MALFORMED, "signature %d has two \"%s\" members",
				    i + 1, dup);
		const cJSON *sig = cJSON_GetObjectItemCaseSensitive(s, "sig");
		const cJSON *keyid = cJSON_GetObjectItemCaseSensitive(s, "keyid");
		if (!cJSON_IsString(sig))
			return fail(why, PVG_DSSE_MALFORMED, "signature %d has no \"sig\" string", i + 1);
		if (keyid && !cJSON_IsString(keyid) && !cJSON_IsNull(keyid))
			return fail(why, PVG_DSSE_MALFORMED, "signature %d: \"keyid\" is not a string",
				    i + 1);
		struct pvg_dsse_signature *d = &env->signatures[env->n_signatures++];
		if (pvg_base64_decode(sig->valuestring, strlen(sig->valuestring), &d->sig,
				      &d->sig_len) < 0)
			return fail(why, PVG_DSSE_MALFORMED, "signature %d: \"sig\" is not base64",
				    i + 1);
		if (cJSON_IsString(keyid) && keyid->valuestring[0])
			d->keyid = pvg_utf8_sanitize(keyid->valuestring, strlen(keyid->valuestring));
	}
	return PVG_DSSE_OK;
}

enum pvg_dsse_error pvg_dsse_parse(const char *text, size_t len, struct pvg_dsse_envelope *env,
				   struct pvg_msg *why)
{
	memset(env, 0, sizeof(*env));
	pvg_msg_clear(why);
	if (len > PVG_DSSE_MAX_BYTES)
		return fail(why, PVG_DSSE_TOO_LARGE, "%zu bytes, more than the %u an envelope may have",
			    len, PVG_DSSE_MAX_BYTES);
	size_t ws = 0;
	while (ws < len && strchr(" \t\r\n", text[ws]) && text[ws])
		ws++;
	if (ws == len)
		return fail(why, PVG_DSSE_NOT_JSON, "the file is empty");
	const char *end = NULL;
	_cleanup_json_ cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		size_t off = at && at >= text && at <= text + len ? (size_t)(at - text) : len;
		if (off >= len || looks_truncated(text, len, ws))
			return fail(why, PVG_DSSE_NOT_JSON,
				    "the JSON ends after %zu bytes before the envelope is closed "
				    "(truncated file?)", len);
		return fail(why, PVG_DSSE_NOT_JSON, "not JSON: a syntax error at byte %zu", off);
	}
	for (const char *p = end; p && p < text + len; p++)
		if (!strchr(" \t\r\n", *p) || !*p)
			return fail(why, PVG_DSSE_NOT_JSON, "more text after the JSON, at byte %zu",
				    (size_t)(p - text));
	if (!cJSON_IsObject(root))
		return fail(why, PVG_DSSE_MALFORMED, "the JSON is not an object");
	const char *dup = duplicate_member(root);
	if (dup)
		return fail(why, PVG_DSSE_MALFORMED, "two \"%s\" members in the envelope", dup);
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "payloadType");
	const cJSON *payload = cJSON_GetObjectItemCaseSensitive(root, "payload");
	const cJSON *sigs = cJSON_GetObjectItemCaseSensitive(root, "signatures");
	if (!type && !payload && cJSON_GetObjectItemCaseSensitive(root, "_type"))
		return fail(why, PVG_DSSE_STATEMENT,
			    "a bare in-toto Statement, not a DSSE envelope: it carries no signature "
			    "(written by --attest without --sign-key)");
	if (!cJSON_IsString(type))
		return fail(why, PVG_DSSE_MALFORMED, "no \"payloadType\" string: not a DSSE envelope");
	if (!cJSON_IsString(payload))
		return fail(why, PVG_DSSE_MALFORMED, "no \"payload\" string: not a DSSE envelope");
	if (!sigs)
		return fail(why, PVG_DSSE_UNSIGNED, "the envelope has no \"signatures\"");
	env->payload_type = pvg_strdup(type->valuestring);
	if (pvg_base64_decode(payload->valuestring, strlen(payload->valuestring), &env->payload,
			      &env->payload_len) < 0) {
		pvg_dsse_envelope_clear(env);
		return fail(why, PVG_DSSE_MALFORMED, "\"payload\" is not base64");
	}
	enum pvg_dsse_error e = parse_signatures(sigs, env, why);
	if (e)
		pvg_dsse_envelope_clear(env);
	return e;
}

char *pvg_dsse_serialize(const char *payload_type, const unsigned char *payload,
			 size_t payload_len, const struct pvg_dsse_signature *sigs, size_t n_sigs)
{
	_cleanup_json_ cJSON *env = cJSON_CreateObject();
	cJSON_AddStringToObject(env, "payloadType", payload_type);
	_cleanup_free_ char *b64 = pvg_base64_encode(payload, payload_len);
	if (!b64)
		return NULL;
	cJSON_AddStringToObject(env, "payload", b64);
	cJSON *arr = cJSON_AddArrayToObject(env, "signatures");
	for (size_t i = 0; i < n_sigs; i++) {
		cJSON *s = cJSON_CreateObject();
		if (sigs[i].keyid)
			cJSON_AddStringToObject(s, "keyid", sigs[i].keyid);
		_cleanup_free_ char *sb = pvg_base64_encode(sigs[i].sig, sigs[i].sig_len);
		cJSON_AddStringToObject(s, "sig", sb);
		cJSON_AddItemToArray(arr, s);
	}
	_cleanup_free_ char *text = cJSON_Print(env);
	return pvg_asprintf("%s\n", text);
}
