#!/usr/bin/python3
"""Validates provgate configs against lib/config.schema.json: validate-config.py CONFIG...

provgate allows // and /* */ comments; they are removed first (outside strings), as
provgate does, so the rest must be JSON that the schema accepts. A file named "-" is read
from stdin."""
import json
import os
import sys

import jsonschema

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "lib", "config.schema.json")) as f:
    schema = json.load(f)
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)


def strip_comments(s):
    out, i, in_str = [], 0, False
    while i < len(s):
        c = s[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < len(s):
                out.append(s[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif s.startswith("//", i):
            while i < len(s) and s[i] != "\n":
                i += 1
            continue
        elif s.startswith("/*", i):
            end = s.find("*/", i + 2)
            i = len(s) if end < 0 else end + 2
            out.append(" ")
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


bad = 0
for path in sys.argv[1:]:
    text = sys.stdin.read() if path == "-" else open(path).read()
    config = json.loads(strip_comments(text))
    for err in validator.iter_errors(config):
        bad += 1
        print(f"{path}: {'/'.join(map(str, err.absolute_path))}: {err.message}")
sys.exit(1 if bad else 0)
