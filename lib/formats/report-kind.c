/* SPDX-License-Identifier: MIT */
/*
 * provgate's own outputs by content. A predicateType is provgate's when its text holds
 * "provgate" (the predicate URIs are provgate's own; a later one is covered without a change
 * here), as is any "schema" of the form "provgate.<kind>/...".
 */
#include <ctype.h>

#include "formats/report-kind.h"

bool pvg_report_kind_maybe(const char *bytes, size_t len)
{
	size_t i = 0;
	if (len >= 3 && (unsigned char)bytes[0] == 0xef && (unsigned char)bytes[1] == 0xbb &&
	    (unsigned char)bytes[2] == 0xbf)
		i = 3; /* a UTF-8 byte order mark */
	while (i < len && isspace((unsigned char)bytes[i]))
		i++;
	return i < len && bytes[i] == '{';
}

static void set_kind(char *kind, size_t size, const char *a, const char *b)
{
	if (kind && size)
		snprintf(kind, size, "%s%s", a, b ? b : "");
}

static bool is_provgate_schema(const cJSON *j)
{
	return cJSON_IsString(j) && strncmp(j->valuestring, "provgate.", 9) == 0 &&
	       strchr(j->valuestring + 9, '/') != NULL;
}

static bool is_provgate_predicate(const cJSON *j)
{
	return cJSON_IsString(j) && strstr(j->valuestring, "provgate") != NULL;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Standard or URL-safe base64, padding optional; NULL when s is not base64. */
static char *b64_decode(const char *s, size_t *out_len)
{
	size_t n = strlen(s);
	char *out = pvg_xcalloc(n / 4 * 3 + 4, 1);
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '=')
			break;
		int v = b64_value((unsigned char)s[i]);
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	*out_len = o;
	return out;
}

static bool object_kind(const cJSON *root, char *kind, size_t size, int depth)
{
	if (!cJSON_IsObject(root))
		return false;
	const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
	if (is_provgate_schema(schema)) {
		set_kind(kind, size, schema->valuestring, NULL);
		return true;
	}
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "_type");
	const cJSON *pred = cJSON_GetObjectItemCaseSensitive(root, "predicateType");
	if (cJSON_IsString(type) && strstr(type->valuestring, "in-toto") &&
	    is_provgate_predicate(pred)) {
		set_kind(kind, size, "in-toto:", pred->valuestring);
		return true;
	}
	/* DSSE: {"payloadType": ..., "payload": base64(Statement), "signatures": [...]} */
	const cJSON *ptype = cJSON_GetObjectItemCaseSensitive(root, "payloadType");
	const cJSON *payload = cJSON_GetObjectItemCaseSensitive(root, "payload");
	if (depth == 0 && cJSON_IsString(ptype) && cJSON_IsString(payload)) {
		size_t n = 0;
		_cleanup_free_ char *inner = b64_decode(payload->valuestring, &n);
		if (!inner)
			return false;
		_cleanup_json_ cJSON *st = cJSON_ParseWithLength(inner, n);
		if (!object_kind(st, kind, size, depth + 1))
			return false;
		if (kind && size) {
			_cleanup_free_ char *k = pvg_strdup(kind);
			set_kind(kind, size, "dsse:", k);
		}
		return true;
	}
	return false;
}

bool pvg_report_kind(const char *bytes, size_t len, char *kind, size_t kind_size)
{
	if (kind && kind_size)
		kind[0] = '\0';
	if (len > PVG_REPORT_KIND_MAX || !pvg_report_kind_maybe(bytes, len))
		return false;
	_cleanup_json_ cJSON *root = cJSON_ParseWithLength(bytes, len);
	return object_kind(root, kind, kind_size, 0);
}
