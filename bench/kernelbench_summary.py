#!/usr/bin/env python3
"""Counts of bench/kernelbench_check.sh's run by outcome and cause, and the
time per task.

    kernelbench_summary.py OUTDIR

Reads OUTDIR/import.log (kevo import's lines: "[i/n] NAME: imported -> DIR
(S s)" or "[i/n] NAME: skipped (CAUSE, S s): DETAIL") and OUTDIR/check.tsv
(level, task, exit code, seconds, first finding), writes OUTDIR/per_task.tsv
(level, task, import outcome, import cause, import s, check outcome, check
cause, check s) and prints markdown tables: import by level and cause, task
check by level and cause, every cause with its tasks, the slowest tasks.
"""
import collections
import os
import re
import sys

IMPORT_RE = re.compile(r"^\[\d+/\d+\] (\S+): (imported) -> (\S+) \(([\d.]+) s\)$|"
                       r"^\[\d+/\d+\] (\S+): skipped \(([a-z_]+), ([\d.]+) s\): (.*)$")

# The first finding of a refused check, by what it says; the first that matches.
CHECK_CAUSES = [
    ("ill_posed_copy", r"a copy of input"),
    ("ill_posed_constant", r"constant (output|that ignores)"),
    ("ill_posed_zeros", r"zeros pass"),
    ("ill_posed_ignores_inputs", r"ignore (its|the) inputs"),
    ("nondeterministic_reference", r"two calls|differ(s)? between"),
    ("reference_timeout", r"no answer within|timed out|deadline"),
    ("reference_out_of_memory", r"out of memory|OutOfMemory|cannot allocate"),
    ("reference_missing_module", r"No module named|ModuleNotFoundError"),
    ("reference_error", r"reference fails|raised|Error"),
    ("tolerance", r"tolerance"),
    ("task_load", r"task\.json"),
]


def check_cause(rc, first):
    if rc == "0":
        return "ok", ""
    for cause, pat in CHECK_CAUSES:
        if re.search(pat, first):
            return "refused", cause
    return ("refused" if rc == "1" else "could_not_judge"), "other"


def level_of(task_dir):
    parts = task_dir.rstrip("/").split("/")
    return parts[-2] if len(parts) >= 2 else "?"


def main():
    out = sys.argv[1]
    tasks = collections.OrderedDict()  # (level, name) -> row
    log = os.path.join(out, "import.log")
    for line in open(log, errors="replace") if os.path.exists(log) else []:
        m = IMPORT_RE.match(line.rstrip("\n"))
        if not m:
            continue
        if m.group(2):
            key = (level_of(m.group(3)), m.group(1))
            tasks[key] = {"import": "imported", "icause": "", "is": float(m.group(4))}
        else:
            path = m.group(8).split(":", 1)[0]
            key = (level_of(path), m.group(5))
            tasks[key] = {"import": "skipped", "icause": m.group(6), "is": float(m.group(7)),
                          "detail": m.group(8)}
    tsv = os.path.join(out, "check.tsv")
    for line in open(tsv, errors="replace") if os.path.exists(tsv) else []:
        f = line.rstrip("\n").split("\t")
        if len(f) < 5:
            continue
        level, name, rc, sec, first = f[:5]
        row = tasks.setdefault((level, name), {"import": "imported", "icause": "", "is": 0.0})
        row["check"], row["ccause"] = check_cause(rc, first)
        row["cs"] = float(sec)
        row["first"] = first
    with open(os.path.join(out, "per_task.tsv"), "w") as f:
        f.write("level\ttask\timport\timport_cause\timport_s\tcheck\tcheck_cause\tcheck_s\n")
        for (level, name), r in tasks.items():
            f.write("%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\n" % (
                level, name, r["import"], r["icause"], r["is"], r.get("check", ""),
                r.get("ccause", ""), "%.1f" % r["cs"] if "cs" in r else ""))
    levels = sorted({k[0] for k in tasks})

    def table(title, outcome_key, cause_key, time_key):
        causes = sorted({r.get(cause_key, "") or r.get(outcome_key, "")
                         for r in tasks.values() if r.get(outcome_key)})
        print("\n%s\n" % title)
        print("| level | n | " + " | ".join(causes) + " | median s | max s |")
        print("|---|---|" + "---|" * len(causes) + "---|---|")
        tot = collections.Counter()
        for lv in levels + ["all"]:
            rows = [r for k, r in tasks.items() if (lv == "all" or k[0] == lv) and
                    r.get(outcome_key)]
            c = collections.Counter(r.get(cause_key) or r[outcome_key] for r in rows)
            secs = sorted(r[time_key] for r in rows if time_key in r)
            med = "%.1f" % secs[len(secs) // 2] if secs else ""
            mx = "%.1f" % secs[-1] if secs else ""
            print("| %s | %d | %s | %s | %s |" % (lv, len(rows),
                                                 " | ".join(str(c[x]) for x in causes), med, mx))
            tot.update(c)

    table("kevo import, by outcome and cause", "import", "icause", "is")
    if any(r.get("check") for r in tasks.values()):
        table("kevo task check of the imported tasks, by outcome and cause", "check", "ccause",
              "cs")
    print("\nEvery cause, with its problems:\n")
    by = collections.defaultdict(list)
    for (lv, name), r in tasks.items():
        if r["import"] != "imported":
            by["import: " + r["icause"]].append("%s/%s" % (lv, name))
        elif r.get("check") and r["check"] != "ok":
            by["check: " + r["ccause"]].append("%s/%s" % (lv, name))
    for cause in sorted(by):
        print("- **%s (%d)**: %s" % (cause, len(by[cause]), ", ".join(by[cause])))
    slow = sorted(((r.get("is", 0) + r.get("cs", 0), lv, n) for (lv, n), r in tasks.items()),
                  reverse=True)[:10]
    print("\nSlowest (import + check seconds): " +
          ", ".join("%s/%s %.1f" % (lv, n, s) for s, lv, n in slow))
    print("Per task: %s" % os.path.join(out, "per_task.tsv"))


if __name__ == "__main__":
    main()
