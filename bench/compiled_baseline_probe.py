#!/usr/bin/env python3
"""Why a module under torch.compile costs kevo up to 2.9x its do_bench time:
each cause measured apart, on two operators of KernelBench's form
(out = A.unsqueeze(1) * B at 4096 x 4096, as level1/12, and the tanh GELU of
level1/88 at 4096 x 4096... the same formulas, written here), eager and
torch.compile(dynamic=False), in these regimes:

  do_bench      triton.testing.do_bench, median (L2 flushed, host runs ahead)
  idle          kevo's torch worker today: fresh buffers per call, the device
                synchronized before each call, events around forward
  lead          the same with a lead kernel (torch.cuda._sleep) queued just
                before the start event, long enough to cover the host's
                dispatch: launch latency leaves the events
  lead+check    lead, and the call counted only when the start event had not
                completed once forward returned on the host (the proof that
                no host time fell inside the events)
  1600 us       lead, with a lead of 1.6 ms (does a long near-idle spin
                slow what follows?)
  host          the host's time to dispatch forward (no synchronization)

Prints a Markdown table of medians (us) and coefficients of variation, and
dynamo's recompile counters.
usage: bench/compiled_baseline_probe.py [OUT_MD]
"""
import statistics as st
import sys
import time

import torch
import triton.testing

dev = torch.device("cuda")
N = 4096
REPS = 60


class Diag(torch.nn.Module):
    def forward(self, A, B):
        return A.unsqueeze(1) * B


class Gelu(torch.nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0))))


def inputs(name, k):
    if name == "diag":
        return [(torch.rand(N, device=dev), torch.rand(N, N, device=dev)) for _ in range(k)]
    return [(torch.rand(N, N, device=dev) * 4 - 2,) for _ in range(k)]


flush = torch.empty(64 << 20, dtype=torch.int8, device=dev)


def cycles_per_us():
    torch.cuda._sleep(1000)  # loads the kernel: a lazy load inside the events below shrinks the rate
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    torch.cuda._sleep(1000000)
    b.record()
    torch.cuda.synchronize()
    return 1000000 / (a.elapsed_time(b) * 1000)


def kevo_like(fn, data, lead_cycles, check):
    ev = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    ts, host, skipped = [], [], 0
    with torch.no_grad():
        for i in range(REPS):
            args = data[i % len(data)]
            flush.fill_(i & 0x7F)
            torch.cuda.synchronize()
            if lead_cycles:
                torch.cuda._sleep(lead_cycles)
            t0 = time.perf_counter_ns()
            ev[0].record()
            fn(*args)
            ev[1].record()
            started = ev[0].query()
            host.append((time.perf_counter_ns() - t0) / 1e3)
            torch.cuda.synchronize()
            if check and started:
                skipped += 1
                continue
            ts.append(ev[0].elapsed_time(ev[1]) * 1000)
    return ts, host, skipped


def fmt(ts):
    if not ts:
        return "n/a"
    m = st.median(ts)
    cv = st.pstdev(ts) / st.mean(ts) * 100 if len(ts) > 1 else 0
    return "%.1f (CV %.0f%%)" % (m, cv)


def main():
    cpu = cycles_per_us()
    rows = []
    for name, cls in (("diag", Diag), ("gelu", Gelu)):
        data = inputs(name, 16)
        for side in ("eager", "compile"):
            m = cls().to(dev)
            fn = torch.compile(m, dynamic=False) if side == "compile" else m
            with torch.no_grad():
                for _ in range(5):
                    fn(*data[0])
            torch.cuda.synchronize()
            torch._dynamo.utils.counters.clear()
            with torch.no_grad():
                db = triton.testing.do_bench(lambda: fn(*data[0]), warmup=25, rep=200,
                                             return_mode="median") * 1000
            idle, host, _ = kevo_like(fn, data, 0, False)
            lead_us = max(50.0, 3 * st.median(host))
            lead, _, _ = kevo_like(fn, data, int(lead_us * cpu), False)
            chk, _, sk = kevo_like(fn, data, int(lead_us * cpu), True)
            long_lead, _, _ = kevo_like(fn, data, int(1600 * cpu), False)
            rec = dict(torch._dynamo.utils.counters.get("stats", {}))
            rows.append((name, side, db, fmt(idle), fmt(lead), "%s, %d of %d left out" % (fmt(chk), sk, REPS),
                         fmt(long_lead),
                         fmt(host), "%.0f" % lead_us, rec.get("unique_graphs", 0)))
            print(rows[-1], flush=True)
    out = ["### torch.compile baseline: causes apart (%s, %s)" % (time.strftime("%Y-%m-%d"),
                                                                     torch.cuda.get_device_name(0)), "",
           "| op | side | do_bench us | idle (kevo today) | lead | lead+check | lead of 1600 us | host dispatch us | lead us | graphs compiled while timed |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %s |" % r)
    text = "\n".join(out)
    print(text)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "a") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
