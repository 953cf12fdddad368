#!/usr/bin/env python3
"""Writes a C file defining `const char NAME[]` with the bytes of INPUT."""
import sys

name, src, dst = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(src, "rb").read()
with open(dst, "w") as out:
    out.write("/* generated from %s by scripts/embed.py; do not edit */\n" % src.split("/")[-1])
    out.write("const char %s[] = {\n" % name)
    for i in range(0, len(data), 16):
        out.write("\t" + " ".join("0x%02x," % b for b in data[i:i + 16]) + "\n")
    out.write("\t0x00\n};\n")
