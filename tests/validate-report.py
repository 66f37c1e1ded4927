#!/usr/bin/python3
"""Validates provgate's JSON files against the schemas in lib/: validate-report.py FILE...
A report against report.schema.json; an attestation (an in-toto Statement, or a DSSE
envelope and the Statement in its payload) and a verify-attestation --json output against
attestation.schema.json, whose predicate is a report; provgate merge's cluster report
against cluster.schema.json; provgate compare's provgate.compare/1 document against
compare.schema.json."""
import base64
import json
import os
import sys

import jsonschema

here = os.path.dirname(os.path.abspath(__file__))


def load(name):
    with open(os.path.join(here, "..", "lib", name)) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


report_schema = load("report.schema.json")
attestation_schema = load("attestation.schema.json")
cluster_schema = load("cluster.schema.json")
compare_schema = load("compare.schema.json")
# a Statement's predicate is validated on its own, against the schema its "schema" names
# (report, cluster or compare): the attestation schema only ties it to predicateType
PREDICATE_SCHEMAS = {"provgate.report/1": report_schema, "provgate.cluster/1": cluster_schema,
                     "provgate.compare/1": compare_schema}


def validator(defn=None):
    schema = report_schema
    if defn:
        schema = dict(attestation_schema, **{"$ref": f"#/$defs/{defn}"})
        schema.pop("oneOf")
    return jsonschema.Draft202012Validator(schema)


bad = 0


def check(path, doc, v, what=""):
    global bad
    for err in v.iter_errors(doc):
        bad += 1
        print(f"{path}{what}: {'/'.join(map(str, err.absolute_path))}: {err.message}")
    if v.schema.get("$ref") == "#/$defs/statement" and isinstance(doc, dict):
        pred = doc.get("predicate")
        schema = PREDICATE_SCHEMAS.get(pred.get("schema") if isinstance(pred, dict) else None,
                                       report_schema)
        check(path, pred, jsonschema.Draft202012Validator(schema), what + " (predicate)")


for path in sys.argv[1:]:
    with open(path) as f:
        doc = json.load(f)
    if isinstance(doc, dict) and "payloadType" in doc:
        check(path, doc, validator("envelope"))
        check(path, json.loads(base64.b64decode(doc.get("payload", ""))), validator("statement"),
              " (payload)")
    elif isinstance(doc, dict) and "_type" in doc:
        check(path, doc, validator("statement"))
    elif isinstance(doc, dict) and doc.get("schema") == "provgate.cluster/1":
        check(path, doc, jsonschema.Draft202012Validator(cluster_schema))
    elif isinstance(doc, dict) and doc.get("schema") == "provgate.compare/1":
        check(path, doc, jsonschema.Draft202012Validator(compare_schema))
    elif isinstance(doc, dict) and doc.get("schema") == "provgate.attestation-verify/1":
        check(path, doc, validator("verification"))
    else:
        check(path, doc, validator())
sys.exit(1 if bad else 0)
