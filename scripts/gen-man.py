#!/usr/bin/env python3
"""gen-man.py AIRLOCK VERSION DOCDIR OUT [CMD]: the man page of `airlock CMD`
(airlock-CMD.1), or of `airlock` itself without CMD (airlock.1), made from
the binary's own --help text at build time, so the page and --help can
never differ. Sections: NAME (the command's line in `airlock --help`),
SYNOPSIS (the usage lines), DESCRIPTION (the rest, verbatim), EXIT STATUS
(when the help has one), SEE ALSO (where the docs/X.md and examples/X
the text names are: DOCDIR, where meson installs them). roff per man-pages(7) and groff_man(7)."""
import re
import subprocess
import sys


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        sys.exit("gen-man: %s exited %d: %s" % (" ".join(argv), r.returncode, r.stderr))
    return r.stdout


def roff(line):
    """One line of text as roff: backslashes escaped, no leading control."""
    line = line.replace("\\", "\\e").replace("-", "\\-")
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


def main():
    airlock, version, docdir, out = sys.argv[1:5]
    cmd = sys.argv[5] if len(sys.argv) > 5 else None
    top = run([airlock, "--help"])
    commands = {}
    # the "commands:" section only: the exit status table below it is
    # indented the same way ("  0    success") and is no page
    section = top.split("\ncommands:\n", 1)[-1].split("\n\n", 1)[0]
    for m in re.finditer(r"^  ([a-z]\w*) +(.*)$", section, re.M):
        commands.setdefault(m.group(1), m.group(2))
    text = run([airlock, cmd, "--help"]) if cmd else top
    name = "airlock-" + cmd if cmd else "airlock"
    if cmd:
        summary = commands.get(cmd, "").split(": airlock")[0] or "airlock " + cmd
    else:
        summary = "run a coding agent on one ticket in a sandbox; only a pull request gets out"
    # the usage lines as the CLI prints them on a usage error (cli.c): the
    # first line and those indented by 4 or more after it, up to a blank
    # line or a line indented less; the rest is the description
    lines = text.split("\n")
    n = 1
    while n < len(lines) and lines[n].strip() and len(lines[n]) - len(lines[n].lstrip(" ")) >= 4:
        n += 1
    head = "\n".join(lines[:n])
    body = "\n".join(lines[n:]).lstrip("\n")
    usage = [re.sub(r"^usage: ", "", l).strip() if l.startswith("usage: ") else l.strip()
             for l in head.splitlines()]
    exit_part = ""
    m = re.search(r"^(Exit status[^\n]*|exit[^\n]*)$", body, re.M | re.I)
    if m:
        exit_part = body[m.start():]
        body = body[:m.start()]
    o = []
    o.append('.TH %s 1 "" "airlock %s" "airlock manual"' % (name.upper(), version))
    o.append(".SH NAME")
    o.append("%s \\- %s" % (roff(name), roff(summary)))
    o.append(".SH SYNOPSIS")
    o.append(".nf")
    o.extend(roff(l) for l in usage)
    o.append(".fi")
    o.append(".SH DESCRIPTION")
    o.append("This page is the output of")
    o.append(".B %s" % roff("airlock %s --help" % cmd if cmd else "airlock --help"))
    o.append("(the two are made from one text).")
    o.append(".PP")
    o.append(".nf")
    o.extend(roff(l) for l in body.rstrip("\n").splitlines())
    o.append(".fi")
    if exit_part:
        o.append(".SH EXIT STATUS")
        o.append(".nf")
        o.extend(roff(l) for l in exit_part.rstrip("\n").splitlines())
        o.append(".fi")
    o.append(".SH SEE ALSO")
    if cmd:
        o.append(".BR airlock (1)")
    else:
        o.append(", ".join("airlock\\-%s(1)" % c for c in commands
                           if c not in ("help", "version")))
    o.append(".PP")
    o.append(roff("The docs/ and examples/ paths this page names are under %s "
                  "(installed by meson install), as in the source tree." % docdir))
    with open(out, "w") as f:
        f.write("\n".join(o) + "\n")


main()
