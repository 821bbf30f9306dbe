"""Validates a Compose file against the Compose specification's JSON schema.

Usage: python validate_compose.py SCHEMA.json docker-compose.yml
The schema comes from a registry package (see .ci/run); it is not kept here.
"""

import json
import sys

import jsonschema
import yaml


def main(schema_path: str, compose_path: str) -> int:
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    with open(compose_path, encoding="utf-8") as f:
        document = yaml.safe_load(f)
    # The schema names draft 2019-09 with a trailing '#' that the registry of
    # metaschemas does not list; look it up without it.
    declared = {"$schema": schema.get("$schema", "").rstrip("#")}
    validator_class = jsonschema.validators.validator_for(
        declared, default=jsonschema.Draft201909Validator
    )
    validator_class.check_schema(schema)
    errors = sorted(
        validator_class(schema).iter_errors(document), key=lambda e: list(e.path)
    )
    for error in errors:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        print(f"{compose_path}: {where}: {error.message}")
    if errors:
        return 1
    services = ", ".join(document["services"])
    print(f"{compose_path} is valid against {schema.get('title', schema_path)} (services: {services})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
