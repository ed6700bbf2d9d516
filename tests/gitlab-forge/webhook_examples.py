#!/usr/bin/env python3
"""Compare the GitLab webhook payloads airlock's tests use with GitLab's own
documented examples (issue #30 item 6), so the fixtures cannot drift from
what GitLab sends.

usage: webhook_examples.py MD WEBHOOK_C EVENT FIXTURE.json
  MD         GitLab's doc/user/project/integrations/webhook_events.md, or
             the verbatim excerpt tests/gitlab-forge/fixtures/webhook_events.excerpt.md
  WEBHOOK_C  src/lib/serve/webhook_gitlab.c (the fields airlock reads are
             checked to be the ones listed in READS below)
  EVENT      "Issue Hook" or "Note Hook"
  FIXTURE    a payload a test sends as that event

The example is the first ```json block after "X-Gitlab-Event: Issue Hook"
(Work item events), or after the heading "### Comment on an issue" for a Note
Hook. Prints one line per check, "ok WHAT" or "not ok WHAT: why", and
"# ..." notes (the example's fields the fixture leaves out: a fixture may be
a subset). Fails when:
  - a field airlock reads (READS) is missing from GitLab's example or from
    the fixture, or is typed differently in them (null in the example does
    not count as a type);
  - the fixture has a field GitLab's example does not (an invented field);
  - a field both have is typed differently (a null on either side is not
    compared: GitLab's examples show null for unset values);
  - webhook_gitlab.c reads a dotted field not listed in READS.
Exit status: the number of failures (at most 100)."""
import json
import re
import sys

# The payload fields src/lib/serve/webhook_gitlab.c reads, per event;
# "[]" is each element of an array.
READS = {
    "Issue Hook": ["object_kind", "project.path_with_namespace", "project.id", "user.username",
                   "object_attributes.iid", "object_attributes.action",
                   "changes.labels.current", "changes.labels.current[].title",
                   "changes.labels.previous", "changes.labels.previous[].title"],
    "Note Hook": ["object_kind", "project.path_with_namespace", "project.id", "user.username",
                  "object_attributes.noteable_type", "object_attributes.action",
                  "object_attributes.note", "issue.iid"],
}


def example(md, event):
    """GitLab's payload example for EVENT from the Markdown text."""
    anchor = "X-Gitlab-Event: Issue Hook" if event == "Issue Hook" else "### Comment on an issue"
    at = md.find(anchor)
    if at < 0:
        raise ValueError("no `%s` in the Markdown" % anchor)
    m = re.compile(r"```json\n(.*?)\n```", re.S).search(md, at)
    if not m:
        raise ValueError("no ```json block after `%s`" % anchor)
    return json.loads(m.group(1))


def kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def walk(v, path=""):
    """(path, value) for every field under v; an array's elements as
    path[] (each of them)."""
    if isinstance(v, dict):
        for k, x in v.items():
            p = path + "." + k if path else k
            yield p, x
            yield from walk(x, p)
    elif isinstance(v, list):
        for x in v:
            yield from walk(x, path + "[]") if isinstance(x, (dict, list)) else ()


def lookup(v, path):
    """The values at a dotted path (with [] for array elements): a list,
    empty when the path is absent."""
    vals = [v]
    for part in path.split("."):
        arr = part.endswith("[]")
        key = part[:-2] if arr else part
        nxt = []
        for x in vals:
            if isinstance(x, dict) and key in x:
                if arr:
                    if isinstance(x[key], list):
                        nxt.extend(x[key])
                else:
                    nxt.append(x[key])
        vals = nxt
    return vals


def types(vals):
    return {kind(x) for x in vals} - {"null"}


def main():
    md_path, c_path, event, fixture_path = sys.argv[1:5]
    fails = 0

    def report(what, why):
        nonlocal fails
        if why:
            fails += 1
            print("not ok %s: %s" % (what, why))
        else:
            print("ok %s" % what)

    md = open(md_path, encoding="utf-8").read()
    ex = example(md, event)
    fx = json.load(open(fixture_path, encoding="utf-8"))
    name = fixture_path.rsplit("/", 1)[-1]

    # the fields airlock reads
    for p in READS[event]:
        e, f = lookup(ex, p), lookup(fx, p)
        if not e:
            why = "not in GitLab's %s example" % event
        elif not types(e):
            why = "null in GitLab's %s example: its type is not shown" % event
        elif not f:
            why = "not in the fixture"
        elif types(f) and types(f) != types(e):
            why = "%s in the fixture, %s in GitLab's example" % ("/".join(sorted(types(f))),
                                                                "/".join(sorted(types(e))))
        else:
            why = None
        report("%s %s: `%s` (airlock reads it)" % (event, name, p), why)

    # every field of the fixture is one of GitLab's, of the same type
    ex_paths = {}
    for p, v in walk(ex):
        ex_paths.setdefault(p, set()).add(kind(v))
    extra, mistyped, seen = [], [], set()
    for p, v in walk(fx):
        if p in seen:
            continue
        seen.add(p)
        if p not in ex_paths:
            extra.append(p)
            continue
        got = types(lookup(fx, p))
        want = ex_paths[p] - {"null"}
        if got and want and not got <= want:
            mistyped.append("%s (%s, GitLab: %s)" % (p, "/".join(sorted(got)), "/".join(sorted(want))))
    report("%s %s: every field is in GitLab's example" % (event, name),
           "not in GitLab's example: %s" % ", ".join(extra) if extra else None)
    report("%s %s: every field is typed as in GitLab's example" % (event, name),
           "typed differently: %s" % ", ".join(mistyped) if mistyped else None)
    left_out = sorted(p for p in ex_paths if p not in seen)
    if left_out:
        print("# %s %s leaves out %d of GitLab's fields: %s" % (event, name, len(left_out),
                                                                ", ".join(left_out)))

    # READS is what the parser reads: its dotted field paths, all listed
    src = open(c_path, encoding="utf-8").read()
    dotted = set(re.findall(r'"((?:object_attributes|project|user|issue|changes)\.[a-z_.]+)"', src))
    listed = {p for ps in READS.values() for p in ps}
    report("webhook_gitlab.c reads only fields listed in READS",
           "not listed: %s" % ", ".join(sorted(dotted - listed)) if dotted - listed else None)
    sys.exit(min(fails, 100))


if __name__ == "__main__":
    main()
