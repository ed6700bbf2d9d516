#!/usr/bin/env python3
"""Validate the test forge's answers against GitHub's own OpenAPI description
(the npm package @octokit/openapi, generated/api.github.com.json; OpenAPI
3.0.3), so the test forge cannot drift from the real API (issue #21).

usage: schema_check.py SPEC.json CASES.jsonl

Each line of CASES.jsonl is one captured answer:
  {"name": "...", "method": "get", "route": "/repos/{owner}/{repo}/pulls",
   "status": 200, "body": "FILE" (absent: no body), "params": ["per_page", ...],
   "headers": "FILE" (the answer's headers, for Link), "list": true}
For each case it checks, and prints one line "ok NAME" or "not ok NAME: why":
  - the operation (route + method) exists in GitHub's description;
  - every query parameter airlock sends is a documented parameter of it;
  - the status is a documented answer of it;
  - the body validates against that answer's JSON schema (nullable turned
    into JSON Schema's null type; refs resolved against the whole file);
  (GitHub documents the Link header on only some list operations, so its
  presence is checked by the forge's own tests, not here.)
Exit status: the number of failures (0: all valid)."""
import json
import sys

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012


def nullable_to_null(x):
    """OpenAPI 3.0's `nullable: true` as JSON Schema: add "null"."""
    if isinstance(x, list):
        return [nullable_to_null(v) for v in x]
    if not isinstance(x, dict):
        return x
    d = {k: nullable_to_null(v) for k, v in x.items()}
    if d.pop("nullable", False):
        if "type" in d and isinstance(d["type"], str):
            d["type"] = [d["type"], "null"]
            if "enum" in d:
                d["enum"] = list(d["enum"]) + [None]
        else:
            d = {"anyOf": [d, {"type": "null"}]}
    return d


def deref(spec, node, where=None):
    """Follow $ref chains; `where` (a list of JSON-pointer tokens) is
    updated to the final location."""
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 20:
        path = node["$ref"].lstrip("#/").split("/")
        if where is not None:
            where[:] = path
        node = spec
        for p in path:
            node = node[p.replace("~1", "/").replace("~0", "~")]
        seen += 1
    return node


def check(spec, registry, case):
    op = spec["paths"].get(case["route"], {}).get(case["method"])
    if op is None:
        return "no operation %s %s in GitHub's description" % (case["method"].upper(), case["route"])
    names = {deref(spec, p).get("name") for p in op.get("parameters", [])}
    for p in case.get("params", []):
        if p not in names:
            return "query parameter `%s` is not documented (documented: %s)" % (p, sorted(n for n in names if n))
    resp = op.get("responses", {}).get(str(case["status"]))
    if resp is None:
        return "status %s is not a documented answer (documented: %s)" % (case["status"], sorted(op.get("responses", {})))
    where = ["paths", case["route"].replace("~", "~0").replace("/", "~1"), case["method"],
             "responses", str(case["status"])]
    resp = deref(spec, resp, where)
    schema = resp.get("content", {}).get("application/json", {}).get("schema")
    if "body" not in case:
        return None if schema is None or case["status"] == 204 else "an answer without a body"
    with open(case["body"], "rb") as f:
        body = json.loads(f.read() or b"null")
    if schema is None:
        return "GitHub documents no JSON body for this answer"
    root = {"$ref": "urn:github-openapi#/" + "/".join(where + ["content", "application~1json", "schema"])}
    v = jsonschema.Draft202012Validator(root, registry=registry)
    errs = sorted(v.iter_errors(body), key=lambda e: list(e.absolute_path))
    if errs:
        e = errs[0]
        where = "/".join(str(p) for p in e.absolute_path) or "(top)"
        return "%d schema error(s); first at %s: %s" % (len(errs), where, e.message[:300])
    return None


def main():
    spec = json.load(open(sys.argv[1]))
    converted = nullable_to_null(spec)
    registry = Registry().with_resource(
        "urn:github-openapi", Resource.from_contents(converted, default_specification=DRAFT202012))
    failures = 0
    for line in open(sys.argv[2]):
        if not line.strip():
            continue
        case = json.loads(line)
        try:
            why = check(converted, registry, case)
        except Exception as e:  # a broken case is a failure, not a crash
            why = "checker error: %s" % str(e)[:300]
        if why:
            failures += 1
            print("not ok %s: %s" % (case["name"], why))
        else:
            print("ok %s" % case["name"])
    sys.exit(min(failures, 100))


if __name__ == "__main__":
    main()
