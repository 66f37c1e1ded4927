#!/usr/bin/python3
"""Validates provgate documents against their JSON Schema: lib/report.schema.json, or
lib/compare.schema.json for a provgate.compare/1 document: validate-report.py FILE..."""
import json
import os
import sys

import jsonschema

here = os.path.dirname(os.path.abspath(__file__))
validators = {}
for name, file in (("provgate.report/1", "report.schema.json"),
                   ("provgate.compare/1", "compare.schema.json")):
    with open(os.path.join(here, "..", "lib", file)) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validators[name] = jsonschema.Draft202012Validator(schema)
bad = 0
for path in sys.argv[1:]:
    with open(path) as f:
        report = json.load(f)
    kind = report.get("schema") if isinstance(report, dict) else None
    validator = validators.get(kind, validators["provgate.report/1"])
    for err in validator.iter_errors(report):
        bad += 1
        print(f"{path}: {'/'.join(map(str, err.absolute_path))}: {err.message}")
sys.exit(1 if bad else 0)
