#!/usr/bin/env python3
"""embed-text.py NAME INPUT OUTPUT: a C header defining `static const char
NAME[]` with INPUT's bytes (a file shipped as data and compiled in, so the
two never differ)."""
import sys

name, src, dst = sys.argv[1:4]
data = open(src, "rb").read()
with open(dst, "w") as out:
    out.write("/* generated from %s by scripts/embed-text.py; do not edit */\n" % src.split("/")[-1])
    out.write("static const char %s[] =\n" % name)
    for line in data.decode("utf-8").splitlines(keepends=True):
        esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        out.write('    "%s"\n' % esc)
    out.write("    ;\n")
