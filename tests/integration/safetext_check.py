#!/usr/bin/python3
"""What GitHub would act on in posted Markdown (issue #26): the same rules as
tests/fuzz/safetext_check.h, written apart from the rewriter, broader than
GitHub where in doubt. live(text, forge) lists every live pattern found, as
(kind, excerpt): html (`<`, which starts every HTML block and tag: comments,
img, picture, details, a), entity, mention, image (`![` not on the forge),
link (a URL, protocol-relative link or www. autolink to another host),
keyword (a closing keyword with a reference within 300 non-blank bytes).

As a program: safetext_check.py FORGE_HOST FILE... prints one line per
pattern found in each file ("FILE KIND EXCERPT"), exits 1 when any is."""
import re
import sys

KEYWORDS = ["close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved"]
ALWAYS = {"http", "https", "ftp", "ftps", "mailto", "file", "ws", "wss"}
HOST_END = set("/?#<>\"'`()[]{}|")


def _alnum(c):
    return c.isascii() and c.isalnum()


def _forge(s, i, forge, image=False):
    if s[i:i + len(forge)].lower() != forge.lower():
        return False
    j = i + len(forge)
    if j < len(s) and s[j] == ":":
        m = re.match(r":[0-9]+", s[j:])
        if not m:
            return False
        j += len(m.group(0))
    if j == len(s):
        return True
    c = s[j]
    if image:
        return c == "/"
    return ord(c) <= 0x20 or ord(c) == 0x7F or c in HOST_END


def _keywords(s):
    k = "".join(c for c in s if c not in "*_~`\\")
    low = k.lower()
    found = []
    for i in range(len(k)):
        if i > 0 and _alnum(k[i - 1]):
            continue
        for w in KEYWORDS:
            if not low.startswith(w, i) or (i + len(w) < len(k) and _alnum(k[i + len(w)])):
                continue
            counted, j = 0, i + len(w)
            while j < len(k) and counted <= 300:
                if (re.match(r"#[0-9]", k[j:j + 2]) or re.match(r"gh-[0-9]", low[j:j + 4])
                        or low.startswith(("://", "/issues/", "/pull/", "/pulls/"), j)):
                    found.append(("keyword", k[i:j + 8]))
                    break
                if k[j].isascii() and k[j] not in " \t\n\r\f\v":
                    counted += 1
                j += 1
    return found


def live(s, forge):
    out = []
    n = len(s)
    for i, c in enumerate(s):
        prev = s[i - 1] if i else " "
        ex = s[max(0, i - 10):i + 30]
        if c == "<":
            out.append(("html", ex))
        elif c == "&" and i + 1 < n and (s[i + 1] == "#" or _alnum(s[i + 1])) \
                and not s.startswith(("&lt;", "&amp;"), i):
            out.append(("entity", ex))
        elif c == "@" and i + 1 < n and _alnum(s[i + 1]):
            out.append(("mention", ex))
        elif c == "!" and s.startswith("![", i):
            m = re.match(r"!\[[^\[\]\n\\]*\]\((https?)://", s[i:])
            if not m or not _forge(s, i + len(m.group(0)), forge, image=True):
                out.append(("image", ex))
        elif c == ":":
            b = i
            while b > 0 and s[b - 1].isascii() and s[b - 1].isalpha():
                b -= 1
            scheme = s[b:i].lower()
            if (i + 1 < n and s[i + 1] in "/\\") or scheme in ALWAYS:
                if scheme not in ("http", "https") or not s.startswith("://", i) \
                        or not _forge(s, i + 3, forge):
                    out.append(("link", ex))
        elif c in "/\\" and i + 1 < n and s[i + 1] in "/\\" and not _alnum(prev) \
                and prev not in ":/\\" and s[max(0, i - 3):i] != "[:]":
            j = i
            while j < n and s[j] in "/\\":
                j += 1
            if j < n and ord(s[j]) > 0x20 and s[j] not in HOST_END and s[j] != "\\":
                out.append(("link", ex))
        if s[i:i + 4].lower() == "www." and not _alnum(prev):
            m = re.match(r"[^\s/?#\\<>\"'`()\[\]{}|]*", s[i:])
            if m.group(0).lower() != forge.lower():
                out.append(("link", ex))
    return out + _keywords(s)


def main():
    forge = sys.argv[1]
    bad = 0
    for f in sys.argv[2:]:
        for kind, ex in live(open(f, encoding="utf-8").read(), forge):
            print(f, kind, repr(ex))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
