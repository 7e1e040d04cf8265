#!/usr/bin/env python3
"""Lists C function definitions by length, longest first.

Usage: scripts/funclen.py [--max N] [--top K] [PATH...]   (default: lib/)

A function is a definition that starts at column 0 (kevo's clang-format
style) and runs to its matching closing brace; braces inside strings,
character literals and comments do not count. Length is in lines, from the
line that names the function to its closing brace. With --max N it exits 1
when any function is longer than N lines (house style: functions short
enough to read at once; issue 33 asks none over 150 in lib/gate)."""
import argparse
import os
import re
import sys

START = re.compile(r'^(?!static_assert|typedef|struct\s+\w+\s*\{|enum|union|#|//|/\*|\s|\})'
                   r'[A-Za-z_][\w\s\*,()\[\]]*?\b([A-Za-z_]\w*)\s*\(')


def strip_code(text):
    """The text with comments, strings and character literals blanked
    (newlines kept, so line numbers stay)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def functions(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        lines = strip_code(f.read()).split('\n')
    i = 0
    while i < len(lines):
        m = START.match(lines[i])
        if not m:
            i += 1
            continue
        # the signature may span lines: find '{' before any ';'
        j, sig = i, ''
        while j < len(lines) and j < i + 12:
            sig += lines[j]
            if ';' in sig.split('{')[0] or '=' in sig.split('(')[0]:
                break
            if '{' in lines[j]:
                break
            j += 1
        if j >= len(lines) or '{' not in lines[j] or ';' in sig.split('{')[0] or '=' in sig.split('(')[0]:
            i += 1
            continue
        depth, k = 0, j
        while k < len(lines):
            depth += lines[k].count('{') - lines[k].count('}')
            if depth <= 0 and '}' in lines[k]:
                break
            k += 1
        yield m.group(1), i + 1, k - i + 1
        i = k + 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--max', type=int, default=0)
    ap.add_argument('--top', type=int, default=20)
    ap.add_argument('paths', nargs='*', default=['lib'])
    a = ap.parse_args()
    found = []
    for p in a.paths:
        files = [p] if os.path.isfile(p) else [
            os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs if f.endswith(('.c', '.cu'))]
        for path in sorted(files):
            found += [(n, path, line, name) for name, line, n in functions(path)]
    found.sort(reverse=True)
    for n, path, line, name in found[:a.top]:
        print(f'{n:5d}  {path}:{line}  {name}')
    over = [f for f in found if a.max and f[0] > a.max]
    if over:
        print(f'{len(over)} function(s) over {a.max} lines', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
