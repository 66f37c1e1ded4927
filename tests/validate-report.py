#!/usr/bin/python3
"""Validates provgate reports against lib/report.schema.json: validate-report.py REPORT..."""
import json
import os
import sys

import jsonschema

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "lib", "report.schema.json")) as f:
    schema = json.load(f)
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
bad = 0
for path in sys.argv[1:]:
    with open(path) as f:
        report = json.load(f)
    for err in validator.iter_errors(report):
        bad += 1
        print(f"{path}: {'/'.join(map(str, err.absolute_path))}: {err.message}")
sys.exit(1 if bad else 0)
