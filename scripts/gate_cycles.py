#!/usr/bin/env python3
"""Circles among lib/gate's files, read from the kevo_gate library's objects.

Usage: scripts/gate_cycles.py [--allow A.c,B.c,...]... [PATH...]

Each PATH is a build directory (its lib/gate/libkevo_gate.a, else any
libkevo_gate.a below it), the archive itself, or a kevo_gate.dir folder of
objects. Without a PATH: the repository's build/ and build-asan/ (CI's
layout: .ci/run builds in build/, `make test-asan` in build-asan/), each
that has the library; a PATH given names the one to read.

For every object of kevo_gate, nm gives the symbols it defines (T, D, R, B,
and the weak W, V) and those it uses (U). There is an edge A -> B when A uses
a symbol that B defines. The strongly connected components of more than one
file are printed, each with its edges and the symbols behind them.

--allow names the files of one component that may stay (issue 33's
remaining work); a component whose files all lie within one allowed set
passes (a circle that shrinks still passes, one that grows or a new one does
not). Exit 1 when any other component exists, 2 when no objects are found."""
import argparse
import glob
import os
import subprocess
import sys

DEFINES = set('TDRBWV')
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_objects(path):
    """The archive or object files that PATH names, or [] when none."""
    if os.path.isfile(path):
        return [path]
    # CMake's layout, in any build dir (build/, build-asan/, build-release/);
    # the archive holds exactly the library's objects (rebuilt whole).
    lib = os.path.join(path, 'lib', 'gate', 'libkevo_gate.a')
    if os.path.isfile(lib):
        return [lib]
    found = sorted(glob.glob(os.path.join(path, '**', 'libkevo_gate.a'), recursive=True))
    if found:
        return found[:1]
    if os.path.basename(os.path.normpath(path)) == 'kevo_gate.dir':
        return sorted(glob.glob(os.path.join(path, '*.o')))
    return []


def file_of(member):
    """gate.c for gate.c.o (CMake's object names)."""
    base = os.path.basename(member)
    return base[:-2] if base.endswith('.o') else base


def read_symbols(paths):
    """{file: (defined set, used set)} from nm -A over PATHS."""
    out = subprocess.run(['nm', '-A', '--'] + paths, check=True, capture_output=True,
                         text=True).stdout
    files = {}
    for line in out.splitlines():
        # archive:member.o:ADDR KIND SYM, or object.o:ADDR KIND SYM (nm -A;
        # ADDR is blank for U): the member is the last field naming an object.
        parts = line.split()
        if len(parts) < 2:
            continue
        sym, kind = parts[-1], parts[-2]
        name = next((m for m in reversed(parts[0].split(':')) if m.endswith('.o')), None)
        if name is None:
            continue
        defs, uses = files.setdefault(file_of(name), (set(), set()))
        if kind == 'U':
            uses.add(sym)
        elif kind in DEFINES:
            defs.add(sym)
    return files


def edges_of(files):
    """{(a, b): sorted symbols} for every file a using a symbol b defines."""
    owner = {}
    for f, (defs, _) in files.items():
        for s in defs:
            owner.setdefault(s, f)
    edges = {}
    for f, (_, uses) in files.items():
        for s in uses:
            b = owner.get(s)
            if b is not None and b != f:
                edges.setdefault((f, b), []).append(s)
    return {k: sorted(v) for k, v in edges.items()}


def components(nodes, edges):
    """Tarjan's strongly connected components (iterative), each sorted."""
    succ = {n: sorted(b for (a, b) in edges if a == n) for n in nodes}
    index, low, stack, on, out = {}, {}, [], set(), []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            if i < len(succ[v]):
                work.append((v, i + 1))
                w = succ[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def report(label, files, allowed):
    """Prints LABEL's components; returns how many are not allowed."""
    edges = edges_of(files)
    comps = [c for c in components(set(files), edges) if len(c) > 1]
    comps.sort(key=lambda c: (-len(c), c))
    bad = 0
    print(f'{label}: {len(files)} files, {len(comps)} component(s) of more than one file')
    for comp in comps:
        ok = any(set(comp) <= a for a in allowed)
        bad += not ok
        tag = 'allowed' if ok else 'NOT ALLOWED'
        print(f'  component ({tag}): {" ".join(comp)}')
        for (a, b), syms in sorted(edges.items()):
            if a in comp and b in comp:
                shown = ', '.join(syms[:8]) + (f', ... ({len(syms)})' if len(syms) > 8 else '')
                print(f'    {a} -> {b}: {shown}')
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--allow', action='append', default=[],
                    help='files of one component that may stay, comma-separated')
    ap.add_argument('paths', nargs='*')
    args = ap.parse_args()
    allowed = [set(x.strip() for x in a.split(',') if x.strip()) for a in args.allow]
    paths = args.paths or [p for p in (os.path.join(ROOT, 'build'), os.path.join(ROOT, 'build-asan'))
                           if find_objects(p)]
    if not paths:
        print('gate_cycles: no kevo_gate objects found (build first, or name a build dir)',
              file=sys.stderr)
        return 2
    bad = 0
    for p in paths:
        objs = find_objects(p)
        if not objs:
            print(f'gate_cycles: no kevo_gate objects under {p}', file=sys.stderr)
            return 2
        files = read_symbols(objs)
        if not files:
            print(f'gate_cycles: nm found no objects in {p}', file=sys.stderr)
            return 2
        bad += report(os.path.relpath(objs[0]) if len(objs) == 1 else p, files, allowed)
    if bad:
        print(f'gate_cycles: {bad} component(s) not in the allowlist: a new circle among '
              "lib/gate's files (break it: move the shared part into a lower file)")
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
