"""The GPU machine's CPU, thread count by thread count: where the kit's CPU builds stop scaling.

Run there, on the machine a kit step has just run on (it reads the step's unpacked kit)::

    python3 benchmarks/gpu_proof/cpu_threads.py --out $OUT [--threads 2,4,8,16] [--budget-s 60]

Why: the GPU machines' 16 cores ran the quick models' ``cpu`` rows no faster than the 2-core build
machines (BERT-tiny 10.6 ms on the H200's host against 5.6 ms on a 2-core Zen 5, the LSTM 0.41
against 0.13; BENCHMARKS.md, "devices cpu,gpu"), and a CPU that slow cannot help a GPU (issues 16
and 19). This times every whole-model ``cpu`` artifact of the kit's ``quick`` export with the
runtime alone (``tvm_partition.runtime.run --repeat``, a fresh process each, ``TVM_NUM_THREADS``
set): first ``run --kernels`` at the fewest and the most threads (which kernels do not scale),
heaviest model first, then at each thread count, round by round so that a slow phase of the
machine spreads over all counts.
Writes ``cpu-threads.jsonl`` (one line a process) and ``cpu-kernels.txt`` (the tables) under
``--out`` as it goes; stops by ``--budget-s``. Needs Python and numpy; the runtime-only TVM and the
artifacts (their weights drawn again) are the kit's, in ``$TMPDIR/tvmp-gpu-kit-*``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

#: the quick export's whole-model rows on the CPU (an op row's folder starts with model_opname)
ROW = re.compile(r"^(lstm|gru|bert-tiny|resnet18)-.*-cpu_(gpu|cpu)-cpu$")
#: heaviest ``cpu`` row first (the fifth GPU run, an H200 host with AVX-512 code: BERT-tiny 4.2 ms,
#: ResNet-18 0.74, the LSTM 0.41, the GRU 0.21), so that a budget that ends early ends on the light ones
ORDER = ("bert-tiny", "resnet18", "lstm", "gru")


def artifacts() -> tuple[str | None, list[str]]:
    """The unpacked kit holding the quick export, and its whole-model ``cpu`` artifacts."""
    tmp = os.environ.get("TMPDIR", "/tmp")
    for work in sorted(glob.glob(os.path.join(tmp, "tvmp-gpu-kit-*")), key=os.path.getmtime, reverse=True):
        folder = os.path.join(work, "export", "quick", "artifacts")
        if os.path.isdir(folder) and os.path.exists(os.path.join(work, ".unpacked")):
            names = [n for n in os.listdir(folder) if ROW.match(n)]
            names.sort(key=lambda n: (ORDER.index(ROW.match(n).group(1)), n))
            return work, [os.path.join(folder, n) for n in names]
    return None, []


def kit_half(work: str):
    """The unpacked kit's ``there`` module (its runtime-only TVM on the path): children start as
    the kit's steps start theirs (``there.python``, ``there.child_env``)."""
    sys.path[:0] = [os.path.join(work, "site"), work]
    import there

    return there


def run(there, work: str, art: str, threads: int, argv: list[str], timeout: float) -> tuple[int | None, str]:
    env = dict(there.child_env(work, None), TVM_NUM_THREADS=str(threads))
    try:
        p = subprocess.run(there.python() + ["-m", "tvm_partition.runtime.run", art, *argv], env=env,
                           capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        return None, str(e)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", default="2,4,8,16")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--budget-s", type=float, default=60)
    args = ap.parse_args(argv)
    deadline = time.monotonic() + args.budget_s
    counts = [int(t) for t in args.threads.split(",")]
    work, arts = artifacts()
    if not arts:
        print("cpu_threads: no unpacked kit with a quick export here (run.py 1 first, same machine)")
        return 1
    there = kit_half(work)
    os.makedirs(args.out, exist_ok=True)
    lines = open(os.path.join(args.out, "cpu-threads.jsonl"), "a", encoding="utf-8")
    tables = open(os.path.join(args.out, "cpu-kernels.txt"), "a", encoding="utf-8")
    # the per-kernel tables first: the fifth GPU run spent its 60 s on 9 timing processes (6 s each,
    # BERT-tiny 14.9 ms on 2 threads, 5.4 on 16) and never reached them, and they say which kernels
    # stop scaling; then the rounds at every count
    jobs = [(None, a, t) for a in arts for t in (counts[0], counts[-1])]
    jobs += [(r, a, t) for r in range(args.rounds) for a in arts for t in (counts if r % 2 == 0 else counts[::-1])]
    for rnd, art, t in jobs:
        left = deadline - time.monotonic()
        if left < 3:
            print("cpu_threads: budget spent")
            break
        kernels = rnd is None
        timed(there, work, art, t, ["--kernels", "--repeat", "10"] if kernels else ["--repeat", str(args.repeat)],
              left, lines, tables if kernels else None, round=rnd)
    return 0


def timed(there, work: str, art: str, threads: int, argv: list[str], timeout: float, lines, tables=None,
          **fields) -> None:
    """:func:`run` ``art`` with ``argv``; its median and p90 (or its error) as one JSON line to
    ``lines`` (with ``fields``) and stdout, its whole output to ``tables`` where given."""
    rc, text = run(there, work, art, threads, argv, timeout)
    m = re.search(r"median_us=([\d.]+) p90_us=([\d.]+)", text)
    rec = {"artifact": os.path.basename(art), "threads": threads, **fields, "rc": rc,
           "median_us": float(m.group(1)) if m else None, "p90_us": float(m.group(2)) if m else None}
    if rc != 0:
        rec["error"] = text.strip().splitlines()[-1:] if text.strip() else ["?"]
    lines.write(json.dumps(rec) + "\n")
    lines.flush()
    print(json.dumps(rec), flush=True)
    if tables is not None:
        tables.write(f"# {os.path.basename(art)} TVM_NUM_THREADS={threads}\n{text}\n")
        tables.flush()


if __name__ == "__main__":
    sys.exit(main())
