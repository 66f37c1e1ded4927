/* SPDX-License-Identifier: MIT */
/* in-toto Statements of provgate reports, their DSSE envelopes, and their verification. */
#include "core/attest.h"

static size_t cluster_subjects(const cJSON *doc, struct pvg_subject out[PVG_MAX_SUBJECTS]);
static size_t compare_subjects(const cJSON *doc, struct pvg_subject out[PVG_MAX_SUBJECTS]);

static const struct pvg_predicate_kind predicate_kinds[] = {
	{ PVG_PREDICATE_REPORT, "provgate.report/1", "certified", pvg_attest_report_subjects, true },
	{ PVG_PREDICATE_CLUSTER, "provgate.cluster/1", "certified", cluster_subjects, false },
	{ PVG_PREDICATE_COMPARE, "provgate.compare/1", "like_for_like", compare_subjects, false },
};

const struct pvg_predicate_kind *pvg_predicate_for_type(const char *predicate_type)
{
	for (size_t i = 0; predicate_type && i < ARRAY_SIZE(predicate_kinds); i++)
		if (strcmp(predicate_kinds[i].predicate_type, predicate_type) == 0)
			return &predicate_kinds[i];
	return NULL;
}

const struct pvg_predicate_kind *pvg_predicate_for_schema(const char *schema)
{
	for (size_t i = 0; schema && i < ARRAY_SIZE(predicate_kinds); i++)
		if (strcmp(predicate_kinds[i].schema, schema) == 0)
			return &predicate_kinds[i];
	return NULL;
}

static bool is_sha256_hex(const char *s)
{
	if (!s || strlen(s) != 64)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
			return false;
	return true;
}


static size_t add_part(const cJSON *part, struct pvg_subject *out, size_t n)
{
	const char *path = pvg_json_get_str(part, "path"), *sha = pvg_json_get_str(part, "sha256");
	if (!path || !is_sha256_hex(sha) || n >= PVG_MAX_SUBJECTS)
		return n;
	for (size_t k = 0; k < n; k++)
		if (strcmp(out[k].name, path) == 0 && strcasecmp(out[k].sha256, sha) == 0)
			return n; /* the same file named twice */
	out[n] = (struct pvg_subject){ path, sha };
	return n + 1;
}

size_t pvg_attest_report_subjects(const cJSON *report, struct pvg_subject out[PVG_MAX_SUBJECTS])
{
	const cJSON *chain = cJSON_GetObjectItemCaseSensitive(report, "chain");
	static const char *const parts[] = { "installed", "build" };
	size_t n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
		n = add_part(cJSON_GetObjectItemCaseSensitive(chain, parts[i]), out, n);
	const cJSON *a;
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(chain, "artifacts"))
		for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
			n = add_part(cJSON_GetObjectItemCaseSensitive(a, parts[i]), out, n);
	return n;
}

/* subject name and digest from two members of one object, when both are there */
static size_t add_subject(const cJSON *obj, const char *name_key, const char *sha_key,
			  struct pvg_subject *out, size_t n)
{
	const char *name = pvg_json_get_str(obj, name_key), *sha = pvg_json_get_str(obj, sha_key);
	if (!name || !is_sha256_hex(sha))
		return n;
	if (n == 1 && strcmp(out[0].name, name) == 0 && strcasecmp(out[0].sha256, sha) == 0)
		return n; /* the same file named twice */
	out[n] = (struct pvg_subject){ name, sha };
	return n + 1;
}

static size_t cluster_subjects(const cJSON *doc, struct pvg_subject out[PVG_MAX_SUBJECTS])
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(doc, "identity");
	size_t n = add_subject(id, "installed_name", "installed_sha256", out, 0);
	return add_subject(id, "build_name", "build_sha256", out, n);
}

static size_t compare_subjects(const cJSON *doc, struct pvg_subject out[PVG_MAX_SUBJECTS])
{
	size_t n = add_subject(cJSON_GetObjectItemCaseSensitive(doc, "baseline"), "path", "sha256",
			       out, 0);
	return add_subject(cJSON_GetObjectItemCaseSensitive(doc, "candidate"), "path", "sha256",
			   out, n);
}

size_t pvg_attest_subjects(const cJSON *doc, struct pvg_subject out[PVG_MAX_SUBJECTS])
{
	const struct pvg_predicate_kind *kind = pvg_predicate_for_schema(pvg_json_get_str(doc, "schema"));
	return kind ? kind->subjects(doc, out) : 0;
}

int pvg_attest_statement(const cJSON *report, const struct pvg_subject *subjects, size_t n,
			 char **statement, struct pvg_msg *why)
{
	*statement = NULL;
	pvg_msg_clear(why);
	const struct pvg_predicate_kind *kind = pvg_predicate_for_schema(pvg_json_get_str(report, "schema"));
	if (!kind) {
		pvg_msg_set(why, NULL, "the report's schema \"%s\" has no provgate predicate type",
				    pvg_json_get_str(report, "schema") ? pvg_json_get_str(report, "schema") : "(none)");
		return -EINVAL;
	}
	if (n == 0) {
		pvg_msg_set(why, NULL, "%s", "the report names no artifact with a sha256 (gate 3 did not hash "
				  "the build or installed artifact), and an in-toto Statement needs "
				  "at least one subject");
		return -EINVAL;
	}
	_cleanup_json_ cJSON *st = cJSON_CreateObject();
	cJSON_AddStringToObject(st, "_type", PVG_STATEMENT_TYPE);
	cJSON *subj = cJSON_AddArrayToObject(st, "subject");
	for (size_t i = 0; i < n; i++) {
		if (!is_sha256_hex(subjects[i].sha256)) {
			pvg_msg_set(why, NULL, "subject %zu has no sha256", i + 1);
			return -EINVAL;
		}
		cJSON *s = cJSON_CreateObject();
		cJSON_AddItemToObject(s, "name", pvg_json_string(subjects[i].name));
		cJSON *d = cJSON_AddObjectToObject(s, "digest");
		char lower[65];
		for (size_t k = 0; k < 65; k++)
			lower[k] = (char)(subjects[i].sha256[k] | (subjects[i].sha256[k] >= 'A' &&
								  subjects[i].sha256[k] <= 'F' ? 0x20 : 0));
		cJSON_AddStringToObject(d, "sha256", lower);
		cJSON_AddItemToArray(subj, s);
	}
	cJSON_AddStringToObject(st, "predicateType", kind->predicate_type);
	cJSON_AddItemToObject(st, "predicate", cJSON_Duplicate(report, true));
	_cleanup_free_ char *text = cJSON_PrintUnformatted(st);
	*statement = pvg_asprintf("%s\n", text);
	return 0;
}

int pvg_attest_envelope(const char *statement, const struct pvg_key *key, char **envelope,
			struct pvg_msg *why)
{
	*envelope = NULL;
	pvg_msg_clear(why);
	size_t n = strlen(statement), pae_len = 0;
	_cleanup_free_ unsigned char *pae =
		pvg_dsse_pae(PVG_DSSE_INTOTO_TYPE, (const unsigned char *)statement, n, &pae_len);
	struct pvg_dsse_signature sig = { .keyid = (char *)pvg_key_keyid(key) };
	int r = pvg_key_sign(key, pae, pae_len, &sig.sig, &sig.sig_len, why);
	if (r < 0)
		return r;
	*envelope = pvg_dsse_serialize(PVG_DSSE_INTOTO_TYPE, (const unsigned char *)statement, n,
				       &sig, 1);
	free(sig.sig);
	if (!*envelope) {
		pvg_msg_set(why, NULL, "%s", "the statement is too large for an envelope");
		return -EFBIG;
	}
	return 0;
}

/* ---- verification ---- */

static void problem(struct pvg_attest_verification *v, const char *code, const char *fmt, ...)
	PVG_PRINTF(3, 4);
static void problem(struct pvg_attest_verification *v, const char *code, const char *fmt, ...)
{
	v->problems = pvg_xrealloc(v->problems, v->n_problems + 1, sizeof(*v->problems));
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *msg = pvg_vasprintf(fmt, ap);
	va_end(ap);
	v->problems[v->n_problems++] = (struct pvg_attest_problem){
		pvg_strdup(code), pvg_utf8_sanitize(msg, strlen(msg))
	};
}

static const char *envelope_error_code(enum pvg_dsse_error e)
{
	switch (e) {
	case PVG_DSSE_NOT_JSON:
		return "attestation.not-json";
	case PVG_DSSE_STATEMENT:
		return "attestation.unsigned";
	case PVG_DSSE_UNSIGNED:
		return "attestation.no-signature";
	case PVG_DSSE_TOO_LARGE:
		return "attestation.too-large";
	default:
		return "attestation.malformed";
	}
}


/* Which signature verifies with the key over the PAE; problems otherwise. */
static void check_signature(struct pvg_attest_verification *v, const struct pvg_dsse_envelope *env,
			    const struct pvg_attest_verify_opts *o)
{
	size_t pae_len = 0;
	_cleanup_free_ unsigned char *pae =
		pvg_dsse_pae(env->payload_type, env->payload, env->payload_len, &pae_len);
	v->signed_by = -1;
	bool ours = false;
	for (size_t i = 0; i < env->n_signatures; i++) {
		const struct pvg_dsse_signature *s = &env->signatures[i];
		ours |= pvg_key_has_keyid(o->key, s->keyid);
		if (v->signed_by < 0 && pvg_key_verify(o->key, pae, pae_len, s->sig, s->sig_len) == 1)
			v->signed_by = (int)i;
	}
	if (v->signed_by >= 0) {
		const char *kid = env->signatures[v->signed_by].keyid;
		if (o->keyid && !(kid && strcasecmp(kid, o->keyid) == 0))
			problem(v, "attestation.keyid",
				"the signature that verifies carries keyid %s, not the %s that --keyid "
				"requires", kid ? kid : "(none)", o->keyid);
		return;
	}
	if (ours) {
		problem(v, "attestation.signature-invalid",
			"the signature by this key (keyid %s) does not verify over the envelope: the "
			"payload or its type was changed after it was signed", pvg_key_keyid(o->key));
		return;
	}
	_cleanup_free_ char *ids = pvg_strdup("");
	for (size_t i = 0; i < env->n_signatures; i++)
		if (env->signatures[i].keyid) {
			char *n = pvg_asprintf("%s%s%s", ids, ids[0] ? ", " : "",
					       env->signatures[i].keyid);
			free(ids);
			ids = n;
		}
	if (ids[0])
		problem(v, "attestation.other-key",
			"not signed by this key: the envelope's signature%s by keyid %s, this %s key is "
			"keyid %s", env->n_signatures > 1 ? "s are" : " is", ids,
			pvg_key_type_name(o->key), pvg_key_keyid(o->key));
	else
		problem(v, "attestation.other-key",
			"none of the envelope's %zu signature%s (without keyid) verifies with this "
			"key: signed by another key, or changed after it was signed",
			env->n_signatures, env->n_signatures > 1 ? "s" : "");
}

static void check_subjects(struct pvg_attest_verification *v, const cJSON *subjects,
			   const cJSON *predicate, const struct pvg_predicate_kind *kind)
{
	if (!cJSON_IsArray(subjects) || cJSON_GetArraySize(subjects) == 0) {
		problem(v, "attestation.subject-malformed",
			"the Statement has no subject (an in-toto Statement names at least one)");
		return;
	}
	v->subjects = cJSON_Duplicate(subjects, true);
	int i = 0;
	for (const cJSON *s = subjects->child; s; s = s->next, i++) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(s, "digest");
		if (!cJSON_IsObject(s) || !is_sha256_hex(pvg_json_get_str(d, "sha256"))) {
			problem(v, "attestation.subject-malformed",
				"subject %d has no digest.sha256 of 64 hex digits", i + 1);
			return;
		}
	}
	if (!kind || !cJSON_IsObject(predicate))
		return;
	/* the subjects are what the report's chain says was hashed: an attestation whose
	 * subjects were swapped for other files is not the report's */
	struct pvg_subject rs[PVG_MAX_SUBJECTS];
	size_t n = kind->subjects(predicate, rs);
	bool same = (size_t)cJSON_GetArraySize(subjects) == n;
	i = 0;
	for (const cJSON *s = subjects->child; same && s; s = s->next, i++)
		same = pvg_json_get_str(s, "name") && strcmp(pvg_json_get_str(s, "name"), rs[i].name) == 0 &&
		       strcasecmp(pvg_json_get_str(cJSON_GetObjectItemCaseSensitive(s, "digest"), "sha256"),
				  rs[i].sha256) == 0;
	if (!same) {
		_cleanup_free_ char *want = pvg_strdup("");
		for (size_t k = 0; k < n; k++) {
			char *w = pvg_asprintf("%s%s%s sha256 %.12s…", want, k ? ", " : "", rs[k].name,
					       rs[k].sha256);
			free(want);
			want = w;
		}
		problem(v, "attestation.subject-report",
			"the Statement's subjects are not the artifacts of its report's chain (%s)",
			n ? want : "the report hashed no artifact");
	}
}

static void check_certified(struct pvg_attest_verification *v, const cJSON *predicate,
			    const struct pvg_predicate_kind *kind)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(predicate, kind->verdict_key);
	v->certified = cJSON_IsBool(c) ? cJSON_IsTrue(c) : -1;
	if (!kind->has_gates) {
		if (v->certified < 0)
			problem(v, "attestation.not-certified", "the %s document has no boolean \"%s\"",
				kind->schema, kind->verdict_key);
		else if (!v->certified)
			problem(v, "attestation.not-certified", "the %s document says %s is false",
				kind->schema, kind->verdict_key);
		return;
	}
	if (v->certified == 1) {
		/* a report that says certified has all seven gates passed, before and after */
		const cJSON *gates = cJSON_GetObjectItemCaseSensitive(predicate, "gates"), *g;
		int passed = 0;
		cJSON_ArrayForEach(g, gates)
		{
			const char *st = pvg_json_get_str(g, "status");
			passed += st && strcmp(st, "pass") == 0;
		}
		if (passed != PVG_N_GATES) {
			problem(v, "attestation.predicate-malformed",
				"the report says certified, but %d of its gates passed, not all %d",
				passed, PVG_N_GATES);
			v->certified = -1;
		}
		return;
	}
	if (v->certified < 0) {
		problem(v, "attestation.not-certified", "the report has no boolean \"%s\"",
			kind->verdict_key);
		return;
	}
	/* the first gate that did not pass, the same one the text verdict names */
	const cJSON *lists[2] = { cJSON_GetObjectItemCaseSensitive(predicate, "gates"),
				  cJSON_GetObjectItemCaseSensitive(
					  cJSON_GetObjectItemCaseSensitive(predicate, "after"), "gates") };
	for (int l = 0; l < 2; l++) {
		const cJSON *g;
		cJSON_ArrayForEach(g, lists[l])
		{
			const char *st = pvg_json_get_str(g, "status");
			if (st && strcmp(st, "pass") != 0 && strcmp(st, "skipped") != 0) {
				const cJSON *id = cJSON_GetObjectItemCaseSensitive(g, "id");
				problem(v, "attestation.not-certified",
					"the report says not certified: gate %d %s: %s%s",
					cJSON_IsNumber(id) ? id->valueint : 0,
					pvg_json_get_str(g, "name") ? pvg_json_get_str(g, "name") : "?", st,
					l ? " after the command" : "");
				return;
			}
		}
	}
	/* every gate passed, and exec's benchmark failed or never ran: no certified run */
	const cJSON *ex = cJSON_GetObjectItemCaseSensitive(predicate, "exec");
	const char *outcome = pvg_json_get_str(ex, "outcome");
	if (outcome && strcmp(outcome, "succeeded") != 0) {
		const cJSON *status = cJSON_GetObjectItemCaseSensitive(ex, "exit_status");
		const char *err = pvg_json_get_str(ex, "error");
		if (strcmp(outcome, "failed") == 0)
			problem(v, "attestation.not-certified",
				"the report says not certified: the chain held, but the benchmark "
				"failed (exit status %d)", cJSON_IsNumber(status) ? status->valueint : -1);
		else
			problem(v, "attestation.not-certified",
				"the report says not certified: the chain held, but the benchmark did "
				"not run%s%s", err ? ": " : "", err ? err : "");
		return;
	}
	/* every evaluated gate passed: fewer than seven were selected (run --gates, a phase) */
	_cleanup_free_ char *sel = pvg_strdup("");
	const cJSON *id;
	cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(predicate, "selected_gates"))
	{
		char *n = pvg_asprintf("%s%s%d", sel, sel[0] ? "," : "", id->valueint);
		free(sel);
		sel = n;
	}
	if (sel[0])
		problem(v, "attestation.not-certified",
			"the report says not certified: it evaluated gates %s, not all seven", sel);
	else
		problem(v, "attestation.not-certified", "the report says not certified (%s is false)",
			kind->verdict_key);
}

static void check_artifacts(struct pvg_attest_verification *v, const struct pvg_attest_verify_opts *o)
{
	if (!o->n_artifacts)
		return;
	v->artifacts = pvg_xcalloc(o->n_artifacts, sizeof(*v->artifacts));
	v->n_artifacts = o->n_artifacts;
	for (size_t i = 0; i < o->n_artifacts; i++) {
		struct pvg_attest_artifact *a = &v->artifacts[i];
		a->path = pvg_strdup(o->artifacts[i]);
		struct pvg_file_id id = { 0 };
		int r = pvg_hash_file(o->artifacts[i], &id);
		if (r < 0 || !id.hashed) {
			a->err = pvg_asprintf("%s%s%s", id.err_what ? id.err_what : "",
					      id.err_what ? ": " : "", strerror(r < 0 ? -r : id.err ? -id.err : EIO));
			problem(v, "attestation.artifact-unreadable", "artifact %s cannot be hashed: %s",
				a->path, a->err);
			pvg_file_id_clear(&id);
			continue;
		}
		memcpy(a->sha256, id.hex, 65);
		pvg_file_id_clear(&id);
		const cJSON *s;
		cJSON_ArrayForEach(s, v->subjects)
		{
			const char *d = pvg_json_get_str(cJSON_GetObjectItemCaseSensitive(s, "digest"), "sha256");
			if (d && strcasecmp(d, a->sha256) == 0) {
				a->subject = pvg_strdup(pvg_json_get_str(s, "name") ? pvg_json_get_str(s, "name") : "");
				break;
			}
		}
		if (!a->subject)
			problem(v, "attestation.artifact-mismatch",
				"artifact %s has sha256 %s, which no subject of the Statement has: these "
				"are not the bytes that were certified", a->path, a->sha256);
	}
}

int pvg_attest_verify(const char *text, size_t len, const struct pvg_attest_verify_opts *o,
		      struct pvg_attest_verification *v)
{
	memset(v, 0, sizeof(*v));
	v->signed_by = -1;
	v->certified = -1;
	v->keyid = pvg_strdup(pvg_key_keyid(o->key));

	struct pvg_dsse_envelope env;
	_cleanup_(pvg_msg_clear) struct pvg_msg why = { 0 };
	enum pvg_dsse_error e = pvg_dsse_parse(text, len, &env, &why);
	if (e) {
		problem(v, envelope_error_code(e), "%s", why.text);
		return 0;
	}
	v->payload_type = pvg_utf8_sanitize(env.payload_type, strlen(env.payload_type));
	v->n_signatures = env.n_signatures;
	if (strcmp(env.payload_type, PVG_DSSE_INTOTO_TYPE) != 0) {
		problem(v, "attestation.payload-type",
			"payloadType is \"%s\", not %s: not an in-toto attestation, or its type was "
			"changed", v->payload_type, PVG_DSSE_INTOTO_TYPE);
		pvg_dsse_envelope_clear(&env);
		return 0;
	}
	check_signature(v, &env, o);
	if (v->signed_by < 0) {
		/* an unauthenticated payload is not looked into: nothing in it may be believed */
		pvg_dsse_envelope_clear(&env);
		return 0;
	}
	_cleanup_json_ cJSON *st = cJSON_ParseWithLength((const char *)env.payload, env.payload_len);
	pvg_dsse_envelope_clear(&env);
	if (!cJSON_IsObject(st)) {
		problem(v, "attestation.payload-not-json",
			"the signed payload is not a JSON object, so not an in-toto Statement");
		return 0;
	}
	const char *dup = pvg_json_find_duplicate(st, true);
	if (dup) {
		problem(v, "attestation.statement-malformed",
			"two \"%s\" members in one object of the Statement: JSON readers would "
			"disagree on what it says", dup);
		return 0;
	}
	const char *type = pvg_json_get_str(st, "_type");
	v->statement_type = type ? pvg_utf8_sanitize(type, strlen(type)) : NULL;
	if (!type || strcmp(type, PVG_STATEMENT_TYPE) != 0)
		problem(v, "attestation.statement-type",
			"the Statement's _type is %s%s%s, not %s", type ? "\"" : "",
			type ? v->statement_type : "missing", type ? "\"" : "", PVG_STATEMENT_TYPE);

	const char *ptype = pvg_json_get_str(st, "predicateType");
	v->predicate_type = ptype ? pvg_utf8_sanitize(ptype, strlen(ptype)) : NULL;
	const struct pvg_predicate_kind *kind = pvg_predicate_for_type(ptype);
	const cJSON *pred = cJSON_GetObjectItemCaseSensitive(st, "predicate");
	if (!kind) {
		problem(v, "attestation.predicate-type",
			"predicateType is %s%s%s, not provgate's %s (nor its cluster/v1 or "
			"compare/v1)",
			ptype ? "\"" : "", ptype ? v->predicate_type : "missing", ptype ? "\"" : "",
			PVG_PREDICATE_REPORT);
	} else if (!cJSON_IsObject(pred)) {
		problem(v, "attestation.predicate-malformed", "the Statement has no predicate object");
		kind = NULL;
	} else if (!pvg_json_get_str(pred, "schema") || strcmp(pvg_json_get_str(pred, "schema"), kind->schema) != 0) {
		problem(v, "attestation.predicate-malformed",
			"the predicate is not a %s report (its schema is %s), as predicateType %s says",
			kind->schema, pvg_json_get_str(pred, "schema") ? pvg_json_get_str(pred, "schema") : "missing",
			kind->predicate_type);
		kind = NULL;
	}
	if (kind) {
		const char *name = pvg_json_get_str(pred, "name"), *at = pvg_json_get_str(pred, "started_at");
		v->report_name = name ? pvg_utf8_sanitize(name, strlen(name)) : NULL;
		v->report_started_at = at ? pvg_utf8_sanitize(at, strlen(at)) : NULL;
	}
	check_subjects(v, cJSON_GetObjectItemCaseSensitive(st, "subject"), pred, kind);
	if (kind)
		check_certified(v, pred, kind);
	check_artifacts(v, o);
	v->verified = v->n_problems == 0 && v->signed_by >= 0 && v->certified == 1;
	return 0;
}

void pvg_attest_verification_clear(struct pvg_attest_verification *v)
{
	free(v->payload_type);
	free(v->keyid);
	free(v->statement_type);
	free(v->predicate_type);
	cJSON_Delete(v->subjects);
	free(v->report_name);
	free(v->report_started_at);
	for (size_t i = 0; i < v->n_artifacts; i++) {
		free(v->artifacts[i].path);
		free(v->artifacts[i].err);
		free(v->artifacts[i].subject);
	}
	free(v->artifacts);
	for (size_t i = 0; i < v->n_problems; i++) {
		free(v->problems[i].code);
		free(v->problems[i].message);
	}
	free(v->problems);
	memset(v, 0, sizeof(*v));
}

cJSON *pvg_attest_verification_json(const struct pvg_attest_verification *v, const char *file)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "schema", "provgate.attestation-verify/1");
	cJSON *tool = cJSON_AddObjectToObject(j, "tool");
	cJSON_AddStringToObject(tool, "name", "provgate");
	cJSON_AddStringToObject(tool, "version", pvg_version());
	pvg_json_add_str(j, "file", file);
	pvg_json_add_bool(j, "verified", v->verified);
	pvg_json_add_str(j, "payload_type", v->payload_type);
	pvg_json_add_int(j, "signatures", (int)v->n_signatures);
	cJSON *key = cJSON_AddObjectToObject(j, "key");
	pvg_json_add_str(key, "keyid", v->keyid);
	if (v->signed_by >= 0)
		pvg_json_add_int(j, "signed_by", v->signed_by);
	else
		cJSON_AddNullToObject(j, "signed_by");
	cJSON *st = cJSON_AddObjectToObject(j, "statement");
	pvg_json_add_str(st, "type", v->statement_type);
	pvg_json_add_str(st, "predicate_type", v->predicate_type);
	cJSON *subj = cJSON_AddArrayToObject(st, "subjects");
	const cJSON *s;
	cJSON_ArrayForEach(s, v->subjects)
	{
		cJSON *o = cJSON_CreateObject();
		pvg_json_add_str(o, "name", pvg_json_get_str(s, "name"));
		pvg_json_add_str(o, "sha256",
				 pvg_json_get_str(cJSON_GetObjectItemCaseSensitive(s, "digest"), "sha256"));
		cJSON_AddItemToArray(subj, o);
	}
	cJSON *rep = cJSON_AddObjectToObject(j, "report");
	pvg_json_add_str(rep, "name", v->report_name);
	pvg_json_add_str(rep, "started_at", v->report_started_at);
	if (v->certified >= 0)
		pvg_json_add_bool(rep, "certified", v->certified == 1);
	else
		cJSON_AddNullToObject(rep, "certified");
	cJSON *arts = cJSON_AddArrayToObject(j, "artifacts");
	for (size_t i = 0; i < v->n_artifacts; i++) {
		cJSON *a = cJSON_CreateObject();
		pvg_json_add_str(a, "path", v->artifacts[i].path);
		pvg_json_add_str(a, "sha256", v->artifacts[i].sha256[0] ? v->artifacts[i].sha256 : NULL);
		pvg_json_add_str(a, "subject", v->artifacts[i].subject);
		pvg_json_add_str(a, "error", v->artifacts[i].err);
		cJSON_AddItemToArray(arts, a);
	}
	cJSON *probs = cJSON_AddArrayToObject(j, "problems");
	for (size_t i = 0; i < v->n_problems; i++) {
		cJSON *p = cJSON_CreateObject();
		pvg_json_add_str(p, "code", v->problems[i].code);
		pvg_json_add_str(p, "message", v->problems[i].message);
		cJSON_AddItemToArray(probs, p);
	}
	return j;
}
