/* SPDX-License-Identifier: MIT */
/* provgate's own outputs by content: reports, later kinds, in-toto statements, DSSE. */
#include "formats/report-kind.h"
#include "tap.h"

static bool kind_of(const char *text, const char *want)
{
	char kind[128];
	bool is = pvg_report_kind(text, strlen(text), kind, sizeof(kind));
	if (want && (!is || strcmp(kind, want) != 0)) {
		printf("#   [%s]: kind [%s], expected [%s]\n", text, is ? kind : "(none)", want);
		return false;
	}
	if (!want && is) {
		printf("#   [%s] taken for [%s]\n", text, kind);
		return false;
	}
	return true;
}

static void reports_and_later_kinds_are_recognised(void)
{
	CHECK(kind_of("{\"schema\": \"provgate.report/1\", \"gates\": []}", "provgate.report/1"));
	CHECK(kind_of("  \n{\"tool\": {}, \"schema\": \"provgate.compare/1\"}", "provgate.compare/1"));
	CHECK(kind_of("{\"schema\": \"provgate.cluster/1\"}", "provgate.cluster/1"));
	CHECK(kind_of("{\"schema\": \"provgate.somethingnew/7\"}", "provgate.somethingnew/7"));
}

static void attestations_are_recognised(void)
{
	CHECK(kind_of("{\"_type\": \"https://in-toto.io/Statement/v1\", \"subject\": [], "
		      "\"predicateType\": \"https://provgate.dev/report/v1\"}",
		      "in-toto:https://provgate.dev/report/v1"));
	/* base64 of {"_type":"https://in-toto.io/Statement/v1","predicateType":"urn:provgate:report:1"} */
	CHECK(kind_of("{\"payloadType\": \"application/vnd.in-toto+json\", \"payload\": "
		      "\"eyJfdHlwZSI6Imh0dHBzOi8vaW4tdG90by5pby9TdGF0ZW1lbnQvdjEiLCJwcmVkaWNhdGVUeXBlIjoidXJuOnByb3ZnYXRlOnJlcG9ydDoxIn0=\", "
		      "\"signatures\": []}",
		      "dsse:in-toto:urn:provgate:report:1"));
	/* URL-safe alphabet, no padding */
	CHECK(kind_of("{\"payloadType\": \"x\", \"payload\": "
		      "\"eyJfdHlwZSI6Imh0dHBzOi8vaW4tdG90by5pby9TdGF0ZW1lbnQvdjEiLCJwcmVkaWNhdGVUeXBlIjoidXJuOnByb3ZnYXRlOnJlcG9ydDoxIn0\"}",
		      "dsse:in-toto:urn:provgate:report:1"));
}

static void look_alikes_are_not_provgate_output(void)
{
	CHECK(kind_of("{\"schema\": \"other.report/1\"}", NULL));
	CHECK(kind_of("{\"schema\": \"provgate.report\"}", NULL));
	CHECK(kind_of("{\"schema\": 1}", NULL));
	CHECK(kind_of("{\"name\": \"provgate.report/1\"}", NULL));
	CHECK(kind_of("[{\"schema\": \"provgate.report/1\"}]", NULL));
	CHECK(kind_of("{\"schema\": \"provgate.report/1\",", NULL)); /* cut short */
	CHECK(kind_of("schema provgate.report/1", NULL));
	CHECK(kind_of("{\"_type\": \"https://in-toto.io/Statement/v1\", "
		      "\"predicateType\": \"https://slsa.dev/provenance/v1\"}", NULL));
	CHECK(kind_of("{\"predicateType\": \"provgate\"}", NULL)); /* no in-toto type */
	CHECK(kind_of("{\"payloadType\": \"x\", \"payload\": \"!!!not base64\"}", NULL));
	CHECK(kind_of("{\"payloadType\": \"x\", \"payload\": \"e30=\"}", NULL)); /* {} */
	/* a DSSE envelope inside a DSSE payload is not followed further */
	CHECK(kind_of("", NULL));
	/* bytes are not text: no crash, no verdict */
	const char bin[] = { '{', 0, '"', (char)0xff, '}' };
	CHECK(!pvg_report_kind(bin, sizeof(bin), NULL, 0));
	CHECK(pvg_report_kind_maybe("\xef\xbb\xbf {", 5));
	CHECK(!pvg_report_kind_maybe("  [", 3));
}

int main(void)
{
	RUN(reports_and_later_kinds_are_recognised);
	RUN(attestations_are_recognised);
	RUN(look_alikes_are_not_provgate_output);
	TAP_EXIT();
}
