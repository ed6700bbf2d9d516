#!/usr/bin/env python3
"""The GitLab test forge's answers against GitLab's OpenAPI 2.0 description
(doc/api/openapi/openapi_v2.yaml of GitLab; issue #30 item 6), as
tests/forge-emulator/schema_check.py checks the GitHub forge against GitHub's.
No package ships GitLab's description, so a subset of it is vendored in
tests/gitlab-forge/fixtures/gitlab-openapi-v2.subset.json; this script makes
that subset and checks against it.

usage:
  openapi_subset.py extract OPENAPI_V2.yaml COMMIT > SUBSET.json
      (needs python3-yaml) the operations of ROUTES below, each with its
      parameters (name, in), its documented answers (status and schema
      reference) and tags, plus the description's tag list.
  openapi_subset.py check SUBSET.json CASES.jsonl
      Each line of CASES.jsonl is one captured answer:
        {"name": "...", "method": "get", "route": "/api/v4/projects/{id}/...",
         "status": 200, "params": ["per_page", ...], "body": "FILE" (absent: none)}
      Prints per case "ok NAME", "not ok NAME: why" or "skip NAME: why":
        - the operation (route + method) is in the description;
        - each query parameter airlock sends is a documented one of it;
        - the status is a documented answer of it;
        - where the description's answer is `type: array`, the body is a
          JSON array.
        - where the answer's schema is one of the vendored DEFINITIONS, the
          body validates against it: no field the definition lacks, each
          field of the type it gives (null allowed: Swagger 2.0 cannot say
          nullable), nested definitions likewise; a list answered where the
          description names one entity (its v2 habit, e.g. the tree) is
          validated element by element.
      A route not in the subset is a skip ("not in the vendored subset of
      GitLab's description"), never a pass. Only a few definitions are
      vendored: GitLab's v2 description types most entity fields as strings
      (ids included), so most of its entities cannot judge a body.
Exit status: the number of failures (at most 100)."""
import json
import sys

# The operations the GitLab test forge serves that GitLab's v2 description
# has (found in it at the commit the subset names). The test forge's other
# routes were not found there (see tests/gitlab-forge/README.md).
ROUTES = {
    "/api/v4/projects/{id}": ["get"],
    "/api/v4/projects/{id}/protected_branches": ["get"],
    "/api/v4/projects/{id}/members/all/{user_id}": ["get"],
    "/api/v4/projects/{id}/variables": ["get"],
    "/api/v4/projects/{id}/deploy_tokens": ["get"],
    "/api/v4/projects/{id}/repository/branches": ["get"],
    "/api/v4/projects/{id}/repository/branches/{branch}": ["get"],
    "/api/v4/projects/{id}/merge_requests": ["get", "post"],
    "/api/v4/projects/{id}/merge_requests/{merge_request_iid}": ["get"],
    "/api/v4/projects/{id}/merge_requests/{merge_request_iid}/commits": ["get"],
    "/api/v4/projects/{id}/merge_requests/{merge_request_iid}/diffs": ["get"],
    "/api/v4/projects/{id}/repository/tree": ["get"],
    "/api/v4/projects/{id}/repository/blobs/{sha}": ["get"],
    "/api/v4/projects/{id}/access_tokens": ["get", "post"],
    "/api/v4/projects/{id}/access_tokens/{token_id}": ["get", "delete"],
    "/api/v4/personal_access_tokens/self": ["get", "delete"],
}

# The definitions vendored (descriptions and examples dropped): entities whose
# fields the description types (integers, booleans), read from it.
DEFINITIONS = ["API_Entities_ProtectedBranch", "API_Entities_ProtectedRefAccess",
               "API_Entities_TreeObject"]

SOURCE = {
    "what": "A subset of GitLab's OpenAPI 2.0 description of its REST API v4: the operations "
            "the GitLab test forge serves that the description has, each operation's parameters "
            "(name and in), its documented answers (status, and the schema reference where the "
            "description gives one) and its tag. Descriptions, examples and the definitions "
            "themselves are left out.",
    "file": "doc/api/openapi/openapi_v2.yaml",
    "repository": "gitlab-org/gitlab (its GitHub mirror gitlabhq/gitlabhq)",
    "licence": "MIT Expat, Copyright (c) 2011-2015 GitLab B.V.: the repository's LICENSE puts "
               "every part distributed as GitLab Community Edition (this file among them) under it",
    "refresh": "python3 tests/gitlab-forge/openapi_subset.py extract openapi_v2.yaml COMMIT "
               "> tests/gitlab-forge/fixtures/gitlab-openapi-v2.subset.json",
}


def extract(yaml_path, commit):
    import yaml  # only here: the check needs no YAML
    spec = yaml.safe_load(open(yaml_path, encoding="utf-8"))
    out = {"_source": dict(SOURCE, commit=commit), "tags": [t["name"] for t in spec.get("tags", [])],
           "paths": {}}
    for route, methods in ROUTES.items():
        for m in methods:
            op = spec["paths"].get(route, {}).get(m)
            if op is None:
                continue
            resp = {}
            for st, r in op.get("responses", {}).items():
                resp[str(st)] = {"schema": r["schema"]} if "schema" in r else {}
            out["paths"].setdefault(route, {})[m] = {
                "tags": op.get("tags", []),
                "parameters": [{"in": p.get("in"), "name": p.get("name")} for p in op.get("parameters", [])],
                "responses": resp,
            }
    out["definitions"] = {n: strip(spec["definitions"][n]) for n in DEFINITIONS}
    return out


def strip(x):
    """A schema without its descriptions and examples."""
    if isinstance(x, list):
        return [strip(v) for v in x]
    if not isinstance(x, dict):
        return x
    return {k: strip(v) for k, v in x.items() if k not in ("description", "example")}


KINDS = {"integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
         "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
         "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
         "array": lambda v: isinstance(v, list), "object": lambda v: isinstance(v, dict)}


def validate(spec, schema, v, where):
    """The first disagreement of value v with schema, or None."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = spec["definitions"][name]
    if v is None:
        return None
    t = schema.get("type", "object" if "properties" in schema else None)
    if t in KINDS and not KINDS[t](v):
        return "%s: %s where GitLab documents %s" % (where, type(v).__name__, t)
    if t == "array" and "items" in schema:
        for i, x in enumerate(v):
            why = validate(spec, schema["items"], x, "%s/%d" % (where, i))
            if why:
                return why
    if isinstance(v, dict) and "properties" in schema:
        extra = sorted(k for k in v if k not in schema["properties"])
        if extra:
            return "%s: field(s) GitLab does not document: %s" % (where, ", ".join(extra))
        for k, x in v.items():
            why = validate(spec, schema["properties"][k], x, "%s/%s" % (where, k))
            if why:
                return why
    return None


def vendored(spec, schema):
    """Whether the schema is (an array of) a vendored definition."""
    s = schema.get("items", schema)
    return "$ref" in s and s["$ref"].rsplit("/", 1)[-1] in spec.get("definitions", {})


def check(spec, case):
    """None when the case agrees; ("skip", why) or ("fail", why) otherwise."""
    ops = spec["paths"].get(case["route"])
    if ops is None:
        return ("skip", "not in the vendored subset of GitLab's description")
    op = ops.get(case["method"])
    if op is None:
        return ("fail", "no operation %s %s in GitLab's description (it has %s)"
                % (case["method"].upper(), case["route"], ", ".join(sorted(ops)).upper()))
    names = {p["name"] for p in op["parameters"] if p["in"] == "query"}
    for p in case.get("params", []):
        if p not in names:
            return ("fail", "query parameter `%s` is not documented (documented: %s)" % (p, sorted(names)))
    resp = op["responses"].get(str(case["status"]))
    if resp is None:
        return ("fail", "status %s is not a documented answer (documented: %s)"
                % (case["status"], sorted(op["responses"])))
    if resp.get("schema", {}).get("type") == "array":
        if "body" not in case:
            return ("fail", "GitLab documents a JSON array; the answer has no body")
        body = json.load(open(case["body"], "rb"))
        if not isinstance(body, list):
            return ("fail", "GitLab documents a JSON array; the answer is %s" % type(body).__name__)
    schema = resp.get("schema")
    if schema and vendored(spec, schema):
        body = json.load(open(case["body"], "rb")) if "body" in case else None
        if body is None:
            return ("fail", "GitLab documents a body; the answer has none")
        if isinstance(body, list) and schema.get("type") != "array":
            schema = {"type": "array", "items": schema}  # v2 names one entity for a list
        why = validate(spec, schema, body, "(body)")
        if why:
            return ("fail", why)
    return None


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "extract":
        json.dump(extract(sys.argv[2], sys.argv[3]), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    if len(sys.argv) != 4 or sys.argv[1] != "check":
        sys.exit("usage: openapi_subset.py extract OPENAPI_V2.yaml COMMIT | check SUBSET.json CASES.jsonl")
    spec = json.load(open(sys.argv[2], encoding="utf-8"))
    fails = 0
    for line in open(sys.argv[3], encoding="utf-8"):
        if not line.strip():
            continue
        case = json.loads(line)
        try:
            r = check(spec, case)
        except Exception as e:  # a broken case is a failure, not a crash
            r = ("fail", "checker error: %s" % str(e)[:300])
        if r is None:
            print("ok %s" % case["name"])
        elif r[0] == "skip":
            print("skip %s: %s" % (case["name"], r[1]))
        else:
            fails += 1
            print("not ok %s: %s" % (case["name"], r[1]))
    sys.exit(min(fails, 100))


if __name__ == "__main__":
    main()
