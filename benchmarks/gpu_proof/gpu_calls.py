"""The GPU machine's VM call by call: what a GPU launch costs inside a model (issue 19, item 4).

Run there, on the machine a kit step has just run on (it reads the step's unpacked kit, as
``cpu_threads.py`` does)::

    python3 benchmarks/gpu_proof/gpu_calls.py --out $OUT [--budget-s 30]

Why: the sixth GPU run (an H200 host, 2026-11-28) ran the LSTM's and the GRU's ``gpu`` rows (sequence
10: 86 and 68 GPU launches) in 537 and 466 us, and their ``equal`` rows in 747 and 704; the cost
model of 2026-11-30 predicts them again (the same profile) at 431 and 388 (-20%, -17%) and 500 and
438 (-33%, -38%), while it prices their ``cpu`` rows within 1%. 537 us over 86 launches is 6.2 us a
launch, where the profile's chain of one-element GPU kernels launched at 3.8: as on a CPU (0.11 us
a launch in the chain, 0.16-0.77 in the models), a launch in a model costs more than in the chain,
and a split plan's GPU launches and CPU parts share the VM's one thread. Which one it is (the
host's time per launch, or the GPU's time per kernel) is what this measures: ``run --kernels`` on
each of those rows (every call timed to completion, the GPU synchronised after it, beside a plain
run's median) and the plain run alone.

Writes ``gpu-calls.jsonl`` (one line a process) and ``gpu-calls.txt`` (the tables) under ``--out``
as it goes; stops by ``--budget-s``. Needs Python and numpy; the runtime-only TVM and the
artifacts are the kit's. ``--devices cpu_cpu`` picks the rows of a ``cpu,cpu`` kit instead (the
dry run's, ``tests/test_gpu_proof.py``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_threads import artifacts, kit_half, timed  # noqa: E402  (the unpacked kit, a run in its runtime)

#: the rows asked about, in this order: the RNNs' (launch-bound on a GPU) whole-GPU and split plans
MODELS, STRATEGIES = ("lstm", "gru"), ("gpu", "equal")


def rows(names: list[str], devices: str = "cpu_gpu") -> list[str]:
    """The quick export's folders of :data:`MODELS` under :data:`STRATEGIES` on ``devices`` (the
    folder's label: ``cpu_gpu``), in that order; an op row's folder (``lstm_fused...``) is none."""
    want = re.compile(rf"^({'|'.join(MODELS)})-.*-{re.escape(devices)}-({'|'.join(STRATEGIES)})$")
    found = [n for n in names if want.match(n)]
    return sorted(found, key=lambda n: (MODELS.index(want.match(n).group(1)),
                                        STRATEGIES.index(want.match(n).group(2)), n))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--devices", default="cpu_gpu", help="the rows' device label (default cpu_gpu)")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--budget-s", type=float, default=30)
    args = ap.parse_args(argv)
    deadline = time.monotonic() + args.budget_s
    work, _ = artifacts()
    if work is None:
        print("gpu_calls: no unpacked kit with a quick export here (run.py 1 first, same machine)")
        return 1
    folder = os.path.join(work, "export", "quick", "artifacts")
    arts = [os.path.join(folder, n) for n in rows(sorted(os.listdir(folder)), args.devices)]
    if not arts:
        print(f"gpu_calls: no {args.devices} rows of {', '.join(MODELS)} in the kit: nothing to time")
        return 0
    there = kit_half(work)
    threads = os.cpu_count() or 1
    os.makedirs(args.out, exist_ok=True)
    lines = open(os.path.join(args.out, "gpu-calls.jsonl"), "a", encoding="utf-8")
    tables = open(os.path.join(args.out, "gpu-calls.txt"), "a", encoding="utf-8")
    # each row call by call first (what the next session models), then each plain again
    jobs = [(a, True) for a in arts] + [(a, False) for a in arts]
    for art, kernels in jobs:
        left = deadline - time.monotonic()
        if left < 3:
            print("gpu_calls: budget spent")
            break
        timed(there, work, art, threads, ["--kernels", "--repeat", "20"] if kernels else ["--repeat", str(args.repeat)],
              left, lines, tables if kernels else None, kernels=kernels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
