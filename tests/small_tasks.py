#!/usr/bin/env python3
"""The end-to-end tests' copy of examples/tasks, with small bench sizes.

The examples time at sizes that fill a GPU (rowsum: a 256 MiB matrix); on a
2-core CI machine one CPU timing at those sizes costs seconds of fresh inputs
and warm-ups, and the end-to-end tests judge hundreds of candidates. The
tests show the same things (verdicts, the store, runs, resumes, reports) at
a bench size of about 4 MiB: every file is copied as it is and only the
"bench" line of task.json changes. `make demo` and install_e2e still use the
examples as shipped.

usage: small_tasks.py SRC_TASKS DST   (DST is replaced)
"""
import json
import os
import re
import shutil
import sys

SMALL = {
    "rowsum": [{"rows": 1024, "cols": 1024}],
    "softmax": [{"rows": 1024, "cols": 1024}],
    "layernorm": [{"rows": 1024, "cols": 1024}],
    "transpose": [{"rows": 1024, "cols": 1024}],
    "matmul": [{"m": 256, "n": 256, "k": 256}],
    "conv1d": [{"batch": 8, "n": 16384, "kw": 31}],
}


def main():
    src, dst = sys.argv[1], sys.argv[2]
    tmp = dst + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    for name in sorted(os.listdir(tmp)):
        path = os.path.join(tmp, name, "task.json")
        if not os.path.isfile(path):
            continue
        if name not in SMALL:
            sys.exit("small_tasks.py: examples/tasks/%s has no small bench size: add it to SMALL in %s"
                     % (name, __file__))
        text = open(path).read()
        new, n = re.subn(r'"bench": \[[^\]]*\]', '"bench": ' + json.dumps(SMALL[name]), text)
        if n != 1:
            sys.exit("small_tasks.py: %s: no one-line \"bench\": [...] to replace" % path)
        json.loads(new)
        open(path, "w").write(new)
    shutil.rmtree(dst, ignore_errors=True)
    os.rename(tmp, dst)


if __name__ == "__main__":
    main()
