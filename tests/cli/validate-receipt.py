#!/usr/bin/python3
"""Validates receipt files against docs/receipt.schema.json (draft 2020-12)."""
import json
import sys

import jsonschema

schema_path, *receipts = sys.argv[1:]
schema = json.load(open(schema_path))
validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
bad = 0
for path in receipts:
    for error in validator.iter_errors(json.load(open(path))):
        print(f"{path}: {'/'.join(map(str, error.path))}: {error.message}")
        bad += 1
sys.exit(1 if bad else 0)
