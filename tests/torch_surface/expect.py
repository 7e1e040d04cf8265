"""The verdicts run.sh's three batches must get, in its order: each line of
a batch's JSON Lines is one candidate's result."""
import json
import sys

# name, the verdicts that are right, what its detail must say, what its
# stderr must say and must never say
A = [
    ("fallback_module", {"wrong_output"}, "", "no reference Model in this process", "FALLBACK"),
    ("fallback_file", {"wrong_output"}, "", "Permission denied", "FALLBACK"),
    ("steal_ref_output", {"wrong_output"}, "", "steal: listing /proc", "ESCAPED"),
    ("cache_ptr", {"stale_output"}, "cached by address", "", None),
    ("cache_alloc", {"stale_output", "wrong_output"}, "", "", None),
    # its cache is primed by the LOAD's warm-up call: wrong at the first check
    ("cache_last", {"wrong_output", "stale_output"}, "", "", None),
    ("mutate_input", {"input_mutated"}, "input x", "", None),
    ("mutate_weight", {"input_mutated"}, "input fc_bias", "", None),
]
B = [
    ("defer_thread", {"wrong_output"}, "", "", None),
    # refused at the LOAD's warm-up call already
    ("defer_lazy", {"load_error", "crash"}, "not a plain torch.Tensor", "", None),
    ("write_past_out", {"wrong_output"}, "past the end", "", None),
    ("write_before_in", {"input_mutated"}, "x: the candidate wrote before its first element", "",
     None),
    ("side_import", {"ok"}, "", "blocked: tcp 1.1.1.1", "ESCAPED"),
    ("side_ctor", {"ok"}, "", "blocked: subprocess from forward", "ESCAPED"),
    ("side_daemon", {"load_error"}, "left 1 process running", "", None),
]
T = [
    ("ok_torch", {"ok"}, "", "", None),
    ("ok_triton", {"ok"}, "", "", None),
    ("clock_patch", {"implausible", "ok"}, "", "", None),
    ("event_patch", {"implausible", "ok"}, "", "", None),
]
P = [
    ("ok_packed_bn", {"ok"}, "", "", None),
    ("renamed_weights", {"load_error"}, "ModelNew has no parameter or buffer norm.weight", "",
     None),
]
# more of stderr that must be there (side effects refused, one line each)
BLOCKED = {
    "side_import": ["blocked: tcp 127.0.0.1", "blocked: udp", "blocked: unix socket",
                    "blocked: write /tmp/kevo-torch-surface-pwned",
                    "blocked: write /dev/shm/kevo-torch-surface-pwned",
                    "ESCAPED: write scratch (allowed)"],
    "side_ctor": ["blocked: tcp6 ::1 from the constructor",
                  "blocked: write /tmp from the constructor", "blocked: fork from forward"],
    "steal_ref_output": ["steal: process_vm_readv: Operation not permitted"],
}


def lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def main():
    bad = 0
    results = {}
    for path, want in zip(sys.argv[1:], (A, B, T, P)):
        got = lines(path)
        if len(got) != len(want):
            print("FAIL: %s has %d results, %d candidates were given" % (path, len(got), len(want)))
            return 1
        for (name, verdicts, detail, err, never), r in zip(want, got):
            results[name] = r
            v, d, e = r.get("verdict"), r.get("detail", ""), r.get("stderr", "")
            t = r.get("timing") or {}
            line = "%-17s %-15s %s" % (name, v, d[:150])
            if t:
                line += " [%.2fx, kevo %.1f us/call, reported/kevo %.2f]" % (
                    t.get("speedup", 0), (t.get("clock") or {}).get("parent_us_per_call", 0),
                    (t.get("clock") or {}).get("reported_over_parent", 0))
            print(line)
            whys = []
            if v not in verdicts:
                whys.append("verdict %s, expected %s" % (v, " or ".join(sorted(verdicts))))
            if detail and detail not in d:
                whys.append("detail lacks %r" % detail)
            for need in [err] + BLOCKED.get(name, []):
                if need and need not in e:
                    whys.append("stderr lacks %r" % need)
            if never is not None and never in e.replace("ESCAPED: write scratch", ""):
                whys.append("stderr says %r" % never)
            if r.get("surface") != "torch":
                whys.append("surface %r" % r.get("surface"))
            for w in whys:
                print("  FAIL: %s: %s" % (name, w))
                if e:
                    print("    stderr: %s" % e[-600:].replace("\n", "\n    "))
            bad += bool(whys)
    # Timing: the honest ones timed by kevo's clock; the forgers never a
    # speedup (the honest speedup is about 1/40 of the reference's work).
    for name in ("ok_torch", "ok_triton"):
        t = results[name].get("timing") or {}
        if not t.get("speedup", 0) > 0 or not (t.get("clock") or {}).get("phases", 0) > 0:
            print("FAIL: %s was not timed by kevo's clock" % name)
            bad += 1
    if not results["ok_torch"].get("compile", {}).get("jit_s", 0) > 0:
        print("FAIL: ok_torch: no jit_s (the LOAD's time, reported apart)")
        bad += 1
    # The forgers do 40x the honest work and forge the clocks they can reach.
    # What must hold is about the candidate's own time (the reference's is
    # the host's noise to bear): its median, as kevo took it, at least 5x the
    # honest ok_torch's (kevo's clock raises a forged median to what its
    # phases took), or the verdict implausible.
    honest = (results["ok_torch"].get("timing") or {}).get("median_us", 0)
    for name in ("clock_patch", "event_patch"):
        r = results[name]
        t = r.get("timing") or {}
        if r["verdict"] == "ok" and not t.get("median_us", 0) > 5 * honest:
            print("FAIL: %s: taken as %.1f us a call, the honest ok_torch %.1f us: its forged "
                  "clock flattered it (%s)" % (name, t.get("median_us", 0), honest, t.get("clock")))
            bad += 1
    print("%d of %d candidates as expected" % (len(results) - bad, len(results)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
