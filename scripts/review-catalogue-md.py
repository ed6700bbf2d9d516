#!/usr/bin/env python3
"""Print the review catalogue (src/lib/review/catalogue.c) as the
Markdown tables of docs/review.md: one table per family, in table order.
Run after changing the catalogue and paste the output between the
markers in docs/review.md (the unit test `review-catalogue` checks that
every pattern is listed)."""
import re
import sys

src = open(sys.argv[1] if len(sys.argv) > 1 else "src/lib/review/catalogue.c").read()
fams = re.findall(r'^\s*\{"(\w+)", "([^"]+)"\},$', src.split("static const al_review_rule")[0], re.M)
body = src.split("static const al_review_rule rules[] = {")[1].split("};")[0]
rules = re.findall(r'^\s*\{(NULL|"\w+"), "((?:[^"\\]|\\.)*)", (NULL|"(?:[^"\\]|\\.)*")\},', body, re.M)
cbody = src.split("static const al_review_content_rule content_rules[] = {")[1].split("};")[0]
crules = re.findall(r'^\s*\{"(\w+)", "((?:[^"\\]|\\.)*)", "((?:[^"\\]|\\.)*)", "((?:[^"\\]|\\.)*)"\},', cbody, re.M)

def cell(s):
    return s.replace("\\\"", '"').replace("|", "\\|")

out = []
for fid, title in fams:
    rows = [(p, w) for f, p, w in rules if f == '"%s"' % fid]
    if not rows:
        continue
    out.append("### %s (`%s`)\n\n| pattern | why |\n|---|---|" % (title, fid))
    for p, w in rows:
        out.append("| `%s` | %s |" % (cell(p), cell(w.strip('"'))))
    out.append("")
ordinary = [p for f, p, w in rules if f == "NULL"]
if ordinary:
    out.append("Ordinary content despite a catch-all: " + ", ".join("`%s`" % p for p in ordinary) + ".\n")
out.append("### Content rules\n\nA file whose path matches and whose added text holds the needle:\n\n| path | needle | family | why |\n|---|---|---|---|")
for f, p, n, w in crules:
    out.append("| `%s` | `%s` | %s | %s |" % (cell(p), cell(n.replace('\\"', '"')), f, cell(w)))
print("\n".join(out))
