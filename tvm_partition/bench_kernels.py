"""Kernel benchmark: tuned vs default schedules on this machine's CPU, against its measured peak.

    python -m tvm_partition.bench_kernels [MODEL ...] [--tuning-logs DIR] [--out DIR] [--no-models]

For every compute kernel a model's CPU build launches (the fused PrimFuncs; data-movement kernels
keep TVM's default schedule and are not listed), it times the kernel alone with TVM's time
evaluator twice — built by TVM's default llvm pipeline, and with the schedule of the tuning
database — and reports GFLOP/s against the machine's peak. The peak is measured with a probe:
numpy's float32 matmul (OpenBLAS sgemm, 2048x2048, all cores, best of 5), the fastest GEMM this
machine can run without TVM. A kernel whose fastest record is TVM's default schedule (tuning
found nothing faster) is marked "default kept": builds leave it as it is. Unless
``--no-models``, it also times each whole model built for the CPU with and without the database
(median of end-to-end runs). Writes ``kernels.json`` and
``kernels.md`` to ``--out`` (default ``benchmarks/results/<fingerprint>/``) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from .devices import fingerprint_id, hardware_fingerprint, parse_devices, use_cpu_threads

DEFAULT_MODELS = ("lstm", "gru", "bert-tiny", "resnet18")


def peak_gflops(n: int = 2048, repeat: int = 5) -> float:
    """Measured peak: the best of ``repeat`` float32 ``n x n`` numpy matmuls (OpenBLAS sgemm)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    a @ b  # warm-up: thread pool start, page faults
    best = min(_timed(lambda: a @ b) for _ in range(repeat))
    return 2 * n**3 / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _kernel_args(func, dev):
    from .cost_models.timing import random_tensor

    rng = np.random.default_rng(0)
    # TVM 0.27: a PrimFunc's params are its buffers
    return [random_tensor([int(x) for x in buf.shape], str(buf.dtype), dev, rng) for buf in func.params]


def time_kernel(func, target, min_repeat_ms: int = 50, repeat: int = 5) -> float:
    """Median time of one PrimFunc (``kernel_module`` form) in microseconds, TVM's time evaluator."""
    import tvm

    lib = tvm.compile(tvm.IRModule({"main": func}), target=target).jit()
    dev = tvm.cpu()
    ev = lib.time_evaluator("main", dev, number=1, repeat=repeat, min_repeat_ms=min_repeat_ms)
    return float(np.median(ev(*_kernel_args(func, dev)).results)) * 1e6


def bench_kernels(model, db, device) -> list[dict]:
    """Default vs tuned time of every compute kernel of ``model`` on ``device`` (a CPU DeviceSpec)."""
    from .tune import extract_kernels
    from .tuning import best_record, is_default, scheduled, tuning_target

    target = device.tvm_target()
    rows = []
    for k in extract_kernels(model, [device]):
        if not k.computes:
            continue
        record = best_record(db, k.mod, tuning_target(device))
        default_us = time_kernel(k.mod["main"], target)
        tuned_us = time_kernel(scheduled(k.mod, record), target) if record is not None else None
        rows.append({"model": model.name, "kernel": k.name, "mflop": round(k.flops / 1e6, 3),
                     "default_us": round(default_us, 2), "tuned_us": None if tuned_us is None else round(tuned_us, 2),
                     # the database's fastest record is the default schedule: builds keep it
                     "default_kept": record is not None and is_default(record)})
    return rows


def bench_model(model, devices, db_path: str | None, repeat: int = 20) -> float:
    """Median end-to-end latency (us) of ``model`` built for the CPU, with ``db_path`` or without tuning."""
    from .bench_runtime import measure
    from .compile import compile_model

    compiled = compile_model(model, devices, "cpu", tuning_db=db_path)
    with tempfile.TemporaryDirectory(prefix="tvmp-bench-") as out:
        compiled.save(out)
        return measure(out, repeat)["measured_median_us"]


def render(result: dict) -> str:
    peak = result["peak_gflops"]
    lines = [f"Machine `{result['fingerprint']}` ({result['cpu']}), {result['threads']} threads; measured peak "
             f"{peak:.1f} GFLOP/s (numpy float32 2048x2048 matmul, best of 5).", "",
             "| model | kernel | MFLOP | default us | tuned us | speedup | tuned GFLOP/s | % of peak |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in result["kernels"]:
        t = r["tuned_us"]
        gf = r["mflop"] * 1e3 / t if t else None  # MFLOP per microsecond = 1000 GFLOP/s
        kept = " (default kept)" if r.get("default_kept") else ""
        lines.append(f"| {r['model']} | `{r['kernel'][:60]}`{kept} | {r['mflop']:.2f} | {r['default_us']:.1f} | "
                     + (f"{t:.1f} | {r['default_us'] / t:.1f}x | {gf:.1f} | {100 * gf / peak:.0f}% |" if t else
                        "untuned | | | |"))
    if result["models"]:
        lines += ["", "| model (whole, CPU build) | default us | tuned us | tuned / default |",
                  "| --- | ---: | ---: | ---: |"]
        for r in result["models"]:
            lines.append(f"| {r['model']} | {r['default_us']:.0f} | {r['tuned_us']:.0f} | "
                         f"{r['tuned_us'] / r['default_us']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from . import zoo

    ap = argparse.ArgumentParser(prog="python -m tvm_partition.bench_kernels", description=__doc__.split("\n\n")[0],
                                 epilog=f"zoo models: {', '.join(zoo.NAMES)}")
    ap.add_argument("models", nargs="*", default=list(DEFAULT_MODELS),
                    help=f"zoo names or .onnx paths (default: {' '.join(DEFAULT_MODELS)})")
    ap.add_argument("--tuning-logs", help="tuning logs folder (default: the shipped tuning_logs/)")
    ap.add_argument("--out", help="results folder (default: benchmarks/results/<fingerprint>/)")
    ap.add_argument("--no-models", action="store_true", help="time kernels only, not whole models")
    ap.add_argument("--repeat", type=int, default=20, help="end-to-end runs per whole model (default 20)")
    args = ap.parse_args(argv)
    use_cpu_threads()  # before the first kernel starts TVM's thread pool

    from . import frontend
    from .graph import GraphError
    from .tuning import TuningError, database_dir, open_database

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = args.out or os.path.join(repo, "benchmarks", "results", fingerprint_id())
    devices = parse_devices("cpu")
    try:
        db_path = database_dir(args.tuning_logs)
        db = open_database(db_path)
        if db is None:
            raise TuningError(f"no tuning database at {db_path}: run python -m tvm_partition.tune first")
        fp = hardware_fingerprint()
        result = {"fingerprint": fingerprint_id(fp), "cpu": fp.get("cpu"), "threads": os.cpu_count(),
                  "peak_gflops": round(peak_gflops(), 1), "tuning_db": db_path, "kernels": [], "models": []}
        from tqdm import tqdm

        for name in tqdm(args.models, unit="model", dynamic_ncols=True):
            model = frontend.load(name)
            result["kernels"] += bench_kernels(model, db, devices[0])
            if not args.no_models:
                result["models"].append({"model": model.name,
                                         "default_us": round(bench_model(model, devices, None, args.repeat), 1),
                                         "tuned_us": round(bench_model(model, devices, db_path, args.repeat), 1)})
    except (frontend.ModelError, GraphError, TuningError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "kernels.json"), "w") as f:
        json.dump(result, f, indent=1)
    table = render(result)
    with open(os.path.join(out, "kernels.md"), "w") as f:
        f.write(table)
    print(table)
    print(f"wrote {out}/kernels.json and kernels.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
