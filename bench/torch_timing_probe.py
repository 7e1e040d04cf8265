#!/usr/bin/env python3
"""Why kevo's torch reference times differ from KernelBench's: one operator
(KernelBench level1/12, out = A.unsqueeze(1) * B at 4096 x 4096) timed with
CUDA events, eager and under torch.compile, in the ways the two harnesses
differ: the same buffers every call (KernelBench) or fresh buffers per call
(kevo), plain tensors or float views of uint8 buffers (kevo's worker), and
compiled with dynamic=False (kevo) or the default. Prints a table of medians.
"""
import statistics
import sys

import torch

N = M = 4096
dev = torch.device("cuda")


class Model(torch.nn.Module):
    def forward(self, A, B):
        return A.unsqueeze(1) * B


def sets(n, views):
    out = []
    for _ in range(n):
        if views:
            ra = torch.empty(N * 4, dtype=torch.uint8, device=dev)
            rb = torch.empty(N * M * 4, dtype=torch.uint8, device=dev)
            A, B = ra.view(torch.float32), rb.view(torch.float32).view(N, M)
            A.uniform_()
            B.uniform_()
        else:
            A, B = torch.rand(N, device=dev), torch.rand(N, M, device=dev)
        out.append((A, B))
    return out


def run(fn, data, reps, copy_out):
    flush = torch.empty(2 * 50 * 1024 * 1024 // 4, dtype=torch.int32, device=dev)
    outbuf = torch.empty(N, M, device=dev)
    ts = []
    with torch.no_grad():
        for _ in range(3):
            fn(*data[0])
        flush.fill_(1)
        torch.cuda.synchronize()
        for i in range(reps):
            A, B = data[i % len(data)]
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            r = fn(A, B)
            b.record()
            torch.cuda.synchronize()
            if copy_out:
                outbuf.copy_(r)
                torch.cuda.synchronize()
            ts.append(a.elapsed_time(b) * 1000)
    return statistics.median(ts), statistics.fmean(ts)


def main():
    m = Model().to(dev)
    fns = {"eager": m, "compile(dynamic=False)": torch.compile(Model().to(dev), dynamic=False),
           "compile(default)": torch.compile(Model().to(dev))}
    same, fresh, fresh_views = sets(1, False), sets(32, False), sets(32, True)
    print("| model | same buffers (KernelBench) | fresh buffers | fresh uint8 views, output copied (kevo) |")
    print("|---|---|---|---|")
    for name, fn in fns.items():
        row = [run(fn, same, 100, False), run(fn, fresh, 96, False), run(fn, fresh_views, 96, True)]
        print("| %s | %s |" % (name, " | ".join("%.1f us (mean %.1f)" % x for x in row)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
