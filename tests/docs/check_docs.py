#!/usr/bin/env python3
"""The README and docs/ against the code (issue 33, must-hold 2 and 4).

Usage: check_docs.py SOURCE_DIR KEVO

- README.md is a new user's page: under 400 lines, its two commands
  (`make demo`, `make test`: .ci/run and CI run the second) are Makefile
  targets;
- its "Commands at a glance" table names every command `kevo help` lists,
  and no command kevo does not have;
- every option the README or docs/ show on a `kevo CMD` (or `build/kevo
  CMD`) command line in a code block is one `kevo help CMD` describes;
- every relative link in README.md and docs/*.md resolves to a file, and a
  link's #anchor to a heading of that file.
Exits 1 naming each failure."""
import os
import re
import subprocess
import sys

src, kevo = sys.argv[1], sys.argv[2]
failures = []


def bad(msg):
    failures.append(msg)
    print('FAIL: ' + msg)


def read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


readme = read(os.path.join(src, 'README.md'))
lines = readme.split('\n')
if len(lines) >= 400:
    bad(f'README.md has {len(lines)} lines; a new user\'s page stays under 400')

# The two commands, the first code block of "## Two commands".
m = re.search(r'^## Two commands\n\n```sh\n(.*?)```', readme, re.S | re.M)
if not m:
    bad('README.md: no "## Two commands" section opening with a sh code block')
else:
    cmds = [l.split('#')[0].strip() for l in m.group(1).split('\n') if l.strip() and
            not l.startswith(' ')]
    if cmds != ['make demo', 'make test']:
        bad(f'README.md: the two commands are {cmds}, not make demo and make test')
    makefile = read(os.path.join(src, 'Makefile'))
    for target in ('demo', 'test'):
        if not re.search(rf'^{target}:', makefile, re.M):
            bad(f'Makefile has no {target} target')
    if 'make test ' not in read(os.path.join(src, '.ci', 'run')) + ' ':
        bad('.ci/run does not run make test')

# Every command kevo has, in the table, and nothing else.
out = subprocess.run([kevo, 'help'], capture_output=True, text=True).stdout
have = re.findall(r'^  ([a-z]+) ', out, re.M)
if len(have) < 20:
    bad(f'kevo help lists {len(have)} commands: {have}')
sec = re.search(r'^## Commands at a glance\n(.*?)^## ', readme, re.S | re.M)
table = sec.group(1) if sec else ''
named = set(re.findall(r'^\| `kevo ([a-z]+)', table, re.M))
for c in have:
    if c not in named:
        bad(f'README.md "Commands at a glance": no row for kevo {c}')
for c in named - set(have):
    bad(f'README.md "Commands at a glance": kevo {c} is not a command')

# Options shown on command lines are the ones kevo help describes.
helps = {}


def described(cmd):
    if cmd not in helps:
        r = subprocess.run([kevo, 'help', cmd], capture_output=True, text=True)
        helps[cmd] = set(re.findall(r'^  (--?[a-z][a-z0-9-]*)', r.stdout, re.M)) if \
            r.returncode == 0 else None
    return helps[cmd]


def code_blocks(text, kinds):
    """The fenced blocks of text whose info string is one of kinds."""
    out, cur, kind = [], None, None
    for line in text.split('\n'):
        if line.startswith('```'):
            if cur is None:
                cur, kind = [], line[3:].strip()
            else:
                if kind in kinds:
                    out.append('\n'.join(cur))
                cur = None
        elif cur is not None:
            cur.append(line)
    return out


docs_dir = os.path.join(src, 'docs')
pages = ['README.md'] + ['docs/' + f for f in sorted(os.listdir(docs_dir)) if f.endswith('.md')]
checked = 0
for page in pages:
    text = read(os.path.join(src, page))
    for block in code_blocks(text, ('', 'sh', 'bash')):
        block = block.replace('\\\n', ' ')
        for line in block.split('\n'):
            line = line.split('#')[0]
            for m in re.finditer(r'(?:^|[\s;|&(])(?:build/)?kevo ([a-z]+)((?: [^;|&]*)?)', line):
                cmd, rest = m.group(1), m.group(2)
                opts = described(cmd)
                if opts is None:
                    continue  # `kevo` as a word in prose-like lines
                for f in re.findall(r'(?:^|\s)(--?[a-z][a-z0-9-]*)', rest):
                    checked += 1
                    if f not in opts and f not in ('-h', '--help'):
                        bad(f'{page}: `kevo {cmd} ... {f}`: kevo help {cmd} does not describe {f}')
if checked < 30:
    bad(f'only {checked} options found on command lines in the docs; the scan is broken')


# Links.
def anchors(path):
    out = set()
    for h in re.findall(r'^#{1,6} (.*)$', read(path), re.M):
        a = re.sub(r'[^\w\- ]', '', h.strip().lower()).replace(' ', '-')
        out.add(a)
    return out


nlinks = 0
for page in pages:
    base = os.path.dirname(os.path.join(src, page))
    text = re.sub(r'^```.*?^```', '', read(os.path.join(src, page)), flags=re.S | re.M)
    for target in re.findall(r'\]\(([^)\s]+)\)', text):
        if re.match(r'[a-z]+:', target):
            continue
        nlinks += 1
        path, _, frag = target.partition('#')
        full = os.path.normpath(os.path.join(base, path)) if path else os.path.join(src, page)
        if not os.path.exists(full):
            bad(f'{page}: link {target}: no such file')
        elif frag and full.endswith('.md') and frag not in anchors(full):
            bad(f'{page}: link {target}: no heading #{frag} there')
if nlinks < 30:
    bad(f'only {nlinks} relative links found; the scan is broken')

print(f'docs: {len(have)} commands, {checked} options on command lines, {nlinks} links, '
      f'{len(failures)} failures')
sys.exit(1 if failures else 0)
