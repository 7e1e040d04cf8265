#!/usr/bin/env python3
"""kl_replies.py KEVO EXPERT OUTDIR [HARDWARE]: scripted stand-in replies for a
KLineage walk of an annotated CUDA (or C) expert, as a model would give
them: each backward step removes the next mechanism in kevo's removal order
(the kernels are kevo lineage resolve's), with its preconditions, an audit
whose citations are the real line numbers of the two kernels, and a
re-derivation that is the richer kernel plus a comment (not identical, so
the round trip is timed). Writes OUTDIR/k0.EXT (the expert, every mechanism
on), k1.EXT ..., and OUTDIR/replies.txt; prints the mechanisms."""
import os
import re
import subprocess
import sys

kevo, expert, out = sys.argv[1], sys.argv[2], sys.argv[3]
hardware = sys.argv[4] if len(sys.argv) > 4 else "gpu"
ext = os.path.splitext(expert)[1]
src = open(expert).read()


def resolve(off):
    args = [kevo, "lineage", "resolve"] + (["--off", ",".join(off)] if off else []) + [expert]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


order = subprocess.run([kevo, "lineage", "resolve", "--order", expert], capture_output=True,
                       text=True, check=True).stdout.split()
intent = {m.group(1): m.group(2).strip() for m in
          re.finditer(r"kevo:mechanism (\w+)[^\n]*? -- ([^\n]*)", src)}
anchor = {m.group(1): m.group(2) for m in
          re.finditer(r'kevo:mechanism (\w+)[^\n]*? anchor="([^"]*)"', src)}
kernels = [resolve(order[:i]) for i in range(len(order) + 1)]
for i, k in enumerate(kernels):
    open(os.path.join(out, f"k{i}{ext}"), "w").write(k)


def squash(t):
    return " ".join(t.split())


def first_new(a, b):
    """(line number in a, text) of the first code line of a that b lacks."""
    have = squash(b)
    for n, l in enumerate(a.splitlines(), 1):
        t = l.strip()
        if len(t) >= 10 and not t.startswith(("//", "/*", "*", "#endif", "#else")) and \
                squash(t) not in have:
            return n, t
    for n, l in enumerate(a.splitlines(), 1):  # nothing new: a decisive line all the same
        if "__global__" in l or "void " in l:
            return n, l.strip()
    return 1, a.splitlines()[0].strip()


pre = ("Dtypes: f32\nLayout: row-major\nStorage: global, shared, registers\nPipeline: none\n"
       f"Hardware: {hardware}\nScope: *\nRequires: none\nConflicts: none\n")
lang = "cuda" if ext == ".cu" else "c"
r = []
for i, m in enumerate(order):
    rich, simple = kernels[i], kernels[i + 1]
    pn, pq = first_new(rich, simple)
    a = anchor.get(m)
    if a and squash(a) in squash(rich) and squash(a) not in squash(simple):
        pn, pq = next((n, a) for n, l in enumerate(rich.splitlines(), 1)
                      if squash(a) in squash(l) and not l.strip().startswith("//"))
    an, aq = first_new(simple, rich)
    removed = ", ".join(order[:i]) if i else "none"
    r.append(f"=== when A proposed de-optimization claims &&& remove ONE mechanism, {m} (\n"
             f"Verdict: removed\nPresent: L{pn} `{pq}`\nAbsent: L{an} `{aq}`\n"
             f"Reason: {intent.get(m, m)}; the simpler kernel does without it.\n")
    r.append(f"=== when Skill card: &&& Mechanism: {m}\\nIntent\n"
             f"```{lang}\n{rich}// re-derived from the card: {m}\n```\n")
    r.append(f"=== when removed so far: {removed}.\n"
             f"Mechanism: {m}\nIntent: {intent.get(m, m)}\nAnchor: {pq}\n{pre}\n"
             f"```{lang}\n{simple}```\n")
r.append(f"=== when removed so far: {', '.join(order)}.\nNAIVE\n")
open(os.path.join(out, "replies.txt"), "w").write("".join(r))
print(" ".join(order))
