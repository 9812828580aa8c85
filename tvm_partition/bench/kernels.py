"""Kernel benchmark: tuned, transferred, template and default schedules on this machine's CPU,
against its measured peak.

For every compute kernel a model's CPU build launches (the fused PrimFuncs; data-movement kernels
keep TVM's default schedule and are not listed), it times the kernel alone with TVM's time
evaluator built by TVM's default llvm pipeline, with the schedule of the tuning database (or, where
it has no record of the kernel, the schedule transferred from another record), and with the
template where one applies (:mod:`tvm_partition.build.templates`: direct convolutions, on packed
weights, and element-wise kernels), and reports the GFLOP/s of the schedule builds run against
the machine's peak. The peak is measured with a probe: the faster of numpy's float32 matmul
(OpenBLAS sgemm) and onnxruntime's (MLAS), 2048x2048, all cores, best of 5 (:func:`peak`): the
fastest GEMM this machine can run without TVM. A kernel whose fastest record is TVM's default
schedule (tuning found nothing faster) is marked "default kept": builds leave it as it is. Unless
``--no-models``, it also times each whole model built for the CPU with and without the database
(median of end-to-end runs). Writes ``kernels.json`` and
``kernels.md`` to ``--out`` (default ``benchmarks/results/<fingerprint>/``) and prints the table.

``--transfer`` measures schedule transfer (:mod:`tvm_partition.build.transfer`) instead: for each model's
heaviest distinct compute ops, the kernel at its full size and at parts of it along the axis
``equal`` splits (``--fractions``: the cut rounded to the schedule's granule as builds cut it,
:mod:`tvm_partition.build.align`, and the raw cut where that differs), each timed with TVM's default
schedule and with the schedule a build gives it (tuned at the full size where the database has a
record, transferred elsewhere), against the ideal: the whole op's time x the part's fraction. The
full-size kernel is also transferred with its own records left out: what a model that was never
tuned gets. Writes ``transfer.json`` and ``transfer.md``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time

import numpy as np

from .. import flags
from ..devices import fingerprint_id, hardware_fingerprint, parse_devices, use_cpu_threads

DEFAULT_MODELS = ("lstm", "gru", "bert-tiny", "resnet18")


#: The GEMMs :func:`peak` probes. numpy's (OpenBLAS sgemm) alone undershot on a Zen 5:
#: 250 GFLOP/s where onnxruntime's MatMul (MLAS) ran 433 at 2048x2048 on the same 2 threads, and
#: the convolution template's 3x3s 480 (amd-epyc-znver5-2c, 2026-11-26): "% of peak" read over 100%.
PEAK_PROBES = ("numpy", "onnxruntime")


def peak(n: int = 2048, repeat: int = 5, threads: int | None = None) -> tuple[float, str]:
    """Measured peak ``(GFLOP/s, probe)``: the best of ``repeat`` float32 ``n x n`` matmuls of each
    of :data:`PEAK_PROBES` (onnxruntime's with ``threads``, default all usable CPUs; left out where
    it is not installed), the fastest GEMM this machine runs without TVM."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    probes = {"numpy": lambda: a @ b}
    ort_run = _ort_matmul(n, threads)
    if ort_run is not None:
        probes["onnxruntime"] = lambda: ort_run(a, b)
    best = {}
    for name, fn in probes.items():
        fn()  # warm-up: thread pool start, page faults
        best[name] = 2 * n**3 / min(_timed(fn) for _ in range(repeat)) / 1e9
    name = max(best, key=best.get)
    return best[name], name


def _ort_matmul(n: int, threads: int | None):
    """``run(a, b)`` of an onnxruntime session of one float32 ``n x n`` MatMul (the session the
    ``onnxruntime`` rows run, :func:`tvm_partition.runtime.ort.session`), None without onnxruntime."""
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None:
        return None
    try:
        from onnx import TensorProto, helper
    except ImportError:
        return None
    from ..devices import usable_cpus
    from .ort import session

    io = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [n, n]) for x in "abc"]
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"])], "peak", io[:2], io[2:])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    sess = session(model.SerializeToString(), threads or usable_cpus())
    return lambda a, b: sess.run(None, {"a": a, "b": b})


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_kernels(model, db, device, schedules=None) -> list[dict]:
    """Default vs tuned time of every compute kernel of ``model`` on ``device`` (a CPU DeviceSpec);
    where the database has no record of a kernel, its transferred schedule (``schedules``, a
    :class:`tvm_partition.build.tuning.Schedules` with templates off); where the direct-convolution
    template applies (:mod:`tvm_partition.build.templates`), the template, timed on packed weights."""
    from ..cli.tune import extract_kernels
    from ..build import templates
    from ..build.tuning import best_record, is_default, scheduled, time_kernel, tuning_target

    target = device.tvm_target()
    rows = []
    for k in extract_kernels(model, [device]):
        if not k.computes:
            continue
        record = best_record(db, k.mod, tuning_target(device))
        default_us = time_kernel(k.mod["main"], target)
        tuned_us = time_kernel(scheduled(k.mod, record, tuning_target(device)), target) if record is not None else None
        moved_us = None
        if record is None and schedules is not None:
            func, label = schedules.schedule(k.mod, tuning_target(device))
            moved_us = time_kernel(func, target) if label.startswith("transferred") else None
        template = templates.schedule(k.mod, tuning_target(device))
        rows.append({"model": model.name, "kernel": k.name, "mflop": round(k.flops / 1e6, 3),
                     "default_us": round(default_us, 2), "tuned_us": None if tuned_us is None else round(tuned_us, 2),
                     "transferred_us": None if moved_us is None else round(moved_us, 2),
                     "template_us": None if template is None else round(time_kernel(template, target), 2),
                     # the database's fastest record is the default schedule: builds keep it
                     "default_kept": record is not None and is_default(record)})
    return rows


def bench_model(model, devices, db_path: str | None, repeat: int = 20) -> float:
    """Median end-to-end latency (us) of ``model`` built for the CPU, with ``db_path`` or without tuning."""
    from .runtime import measure
    from ..cli.compile import compile_model

    compiled = compile_model(model, devices, "cpu", tuning_db=db_path)
    with tempfile.TemporaryDirectory(prefix="tvmp-bench-") as out:
        compiled.save(out)
        return measure(out, repeat)["measured_median_us"]


def transfer_rows(model, schedules, device, fractions=(0.25, 0.5, 0.75), ops: int = 6) -> list[dict]:
    """Default, scheduled and ideal times of the ``ops`` heaviest distinct compute ops of ``model``
    whole and cut to ``fractions`` (see the module docstring)."""
    import tvm_ffi

    from ..build.align import align_splits, kernel_of
    from ..ir.graph import op_signature
    from ..ir.split_rules import IllegalSplit
    from ..ir.graph import OpGraph
    from ..planners.baselines import preferred_dim
    from ..build.tuning import Schedules, time_kernel, tuning_target

    target = tuning_target(device)
    graph = OpGraph(model.mod)
    align_splits(graph, [device], schedules)
    seen, rows = set(), []
    for op in sorted((o for o in graph.ops.values() if o.split_dims and o.flops > 0), key=lambda o: -o.flops):
        if op_signature(op) in seen or len(seen) >= ops:
            continue
        seen.add(op_signature(op))
        dim = preferred_dim(graph, op.id)
        full, granule = op.output_shapes[-1][dim], op.granules.get(dim, 1)
        kmod = kernel_of(graph, op)
        func, label = schedules.schedule(kmod, target)
        whole_us = time_kernel(func or kmod["main"], target)
        # what transfer alone gives the kernel, its own record left out (no template: the matmul's would answer)
        alone = Schedules(None, None, schedules.index.without(int(tvm_ffi.structural_hash(kmod))), templates=False)
        loo, loo_label = alone.schedule(kmod, target)
        base = {"model": model.name, "op": op.id, "kind": op.kind, "dim": graph.dim_name(op, dim), "full": full,
                "granule": granule, "mflop": round(op.flops / 1e6, 2)}
        rows.append({**base, "size": full, "fraction": 1.0, "schedule": label, "default_us": round(time_kernel(
            kmod["main"], target), 2), "scheduled_us": round(whole_us, 2), "ideal_us": round(whole_us, 2),
            "left_out_us": round(time_kernel(loo or kmod["main"], target), 2), "left_out_schedule": loo_label})
        sizes = []
        for f in fractions:
            aligned = max(granule, round(f * full / granule) * granule)
            for size in (aligned, max(1, round(f * full))):
                if 0 < size < full and size not in sizes:
                    sizes.append(size)
        for size in sizes:
            try:
                part = kernel_of(graph, op, dim, size)
            except IllegalSplit:
                continue
            pfunc, plabel = schedules.schedule(part, target)
            rows.append({**base, "size": size, "fraction": round(size / full, 4), "schedule": plabel,
                         "default_us": round(time_kernel(part["main"], target), 2),
                         "scheduled_us": round(time_kernel(pfunc or part["main"], target), 2),
                         "ideal_us": round(whole_us * size / full, 2)})
    return rows


def render_transfer(result: dict) -> str:
    lines = [f"Machine `{result['fingerprint']}` ({result['cpu']}), {result['threads']} threads; schedules: "
             f"{result['tuning_db']} and the shipped databases.", "",
             "| model | op | axis | size / full | granule | default us | scheduled us | ideal us | scheduled / ideal "
             "| schedule |", "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in result["transfer"]:
        cut = "" if r["fraction"] == 1.0 or r["size"] % r["granule"] == 0 else " (off-granule)"
        ratio = f"{r['scheduled_us'] / r['ideal_us']:.2f}" if r["ideal_us"] > 0 else "-"
        lines.append(f"| {r['model']} | `{r['op'][:40]}` | {r['dim']} | {r['size']}/{r['full']}{cut} | {r['granule']} | "
                     f"{r['default_us']:.1f} | {r['scheduled_us']:.1f} | {r['ideal_us']:.1f} | {ratio} | "
                     f"{r['schedule'][:60]} |")
    whole = [r for r in result["transfer"] if "left_out_us" in r]
    if whole:
        lines += ["", "Whole ops transferred with their own records left out (a model never tuned):", "",
                  "| model | op | tuned us | transferred us | transferred / tuned | default us | from |",
                  "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
        for r in whole:
            ratio = f"{r['left_out_us'] / r['scheduled_us']:.2f}" if r["scheduled_us"] > 0 else "-"
            lines.append(f"| {r['model']} | `{r['op'][:40]}` | {r['scheduled_us']:.1f} | {r['left_out_us']:.1f} | "
                         f"{ratio} | {r['default_us']:.1f} | {r['left_out_schedule'][:60]} |")
    return "\n".join(lines) + "\n"


def render(result: dict) -> str:
    peak = result["peak_gflops"]
    lines = [f"Machine `{result['fingerprint']}` ({result['cpu']}), {result['threads']} threads; measured peak "
             f"{peak:.1f} GFLOP/s ({result.get('peak_probe', 'numpy')} float32 2048x2048 matmul, best of 5, the "
             f"faster of {' and '.join(PEAK_PROBES)}). `tuned`: the kernel's own record; "
             "`transferred`: another record replayed (kernels without one); `template`: the direct-convolution "
             "schedule builds give convolutions, timed on packed weights.", "",
             "| model | kernel | MFLOP | default us | tuned us | transferred us | template us | speedup | GFLOP/s "
             "| % of peak | builds run |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]

    def cell(us):
        return "-" if us is None else f"{us:.1f}"

    for r in result["kernels"]:
        timed = {k: r.get(f"{k}_us") for k in ("template", "tuned", "transferred")}
        runs = next((k for k, us in timed.items() if us), "default")  # the order Schedules picks in
        t = timed.get(runs) or r["default_us"]
        gf = r["mflop"] * 1e3 / t  # MFLOP per microsecond = 1000 GFLOP/s
        kept = " (default kept)" if r.get("default_kept") else ""
        lines.append(f"| {r['model']} | `{r['kernel'][:60]}`{kept} | {r['mflop']:.2f} | {r['default_us']:.1f} | "
                     f"{cell(r['tuned_us'])} | {cell(r.get('transferred_us'))} | {cell(r.get('template_us'))} | "
                     f"{r['default_us'] / t:.1f}x | {gf:.1f} | {100 * gf / peak:.0f}% | {runs} |")
    if result["models"]:
        lines += ["", "| model (whole, CPU build) | default us | built us (the schedules above) | built / default |",
                  "| --- | ---: | ---: | ---: |"]
        for r in result["models"]:
            lines.append(f"| {r['model']} | {r['default_us']:.0f} | {r['tuned_us']:.0f} | "
                         f"{r['tuned_us'] / r['default_us']:.2f} |")
    return "\n".join(lines) + "\n"


def parser():
    ap = flags.parser("bench-kernels", __doc__, epilog=flags.ZOO_EPILOG)
    ap.add_argument("models", nargs="*", default=list(DEFAULT_MODELS),
                    help=f"zoo names or .onnx paths (default: {' '.join(DEFAULT_MODELS)})")
    flags.add_tuning_logs(ap)
    flags.add_out(ap, "results folder (default: benchmarks/results/<fingerprint>/)")
    ap.add_argument("--no-models", action="store_true", help="time kernels only, not whole models")
    flags.add_repeat(ap, "end-to-end runs per whole model (default 20)", default=20)
    ap.add_argument("--transfer", action="store_true", help="measure schedule transfer onto parts and unseen shapes "
                                                            "instead (see the module docstring)")
    ap.add_argument("--fractions", default="0.25,0.3,0.5,0.61,0.75", metavar="F,F", help="--transfer: part sizes as fractions")
    return ap


@flags.command
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    use_cpu_threads()  # before the first kernel starts TVM's thread pool

    from .. import frontend
    from ..build.databases import TuningError, open_best
    from ..build.tuning import open_schedules
    from ..devices import database_dir

    from .results import workspace

    out = args.out or os.path.join(workspace(), "benchmarks", "results", fingerprint_id())
    devices = parse_devices("cpu")
    try:
        for name in args.models:
            frontend.check_source(name)
        db_path = database_dir(args.tuning_logs)
        db = open_best(db_path)  # the best records, all best_record reads; None on a machine never tuned
        fp = hardware_fingerprint()
        from tqdm import tqdm

        if args.transfer:
            fractions = [float(x) for x in args.fractions.split(",") if x.strip()]
            if not fractions or any(not 0 < f < 1 for f in fractions):
                raise TuningError(f"--fractions {args.fractions!r}: numbers strictly between 0 and 1")
            result = {"fingerprint": fingerprint_id(fp), "cpu": fp.get("cpu"), "threads": os.cpu_count(),
                      "tuning_db": db_path, "transfer": []}
            schedules = open_schedules(db_path)
            for name in tqdm(args.models, unit="model", dynamic_ncols=True):
                result["transfer"] += transfer_rows(frontend.load(name), schedules, devices[0], fractions)
            return _write(out, "transfer", result, render_transfer)
        gflops, probe = peak()
        result = {"fingerprint": fingerprint_id(fp), "cpu": fp.get("cpu"), "threads": os.cpu_count(),
                  "peak_gflops": round(gflops, 1), "peak_probe": probe, "tuning_db": db_path, "kernels": [],
                  "models": []}
        moved = dataclasses.replace(open_schedules(db_path), templates=False)  # what transfer alone gives

        for name in tqdm(args.models, unit="model", dynamic_ncols=True):
            model = frontend.load(name)
            result["kernels"] += bench_kernels(model, db, devices[0], moved)
            if not args.no_models:
                result["models"].append({"model": model.name,
                                         "default_us": round(bench_model(model, devices, None, args.repeat), 1),
                                         "tuned_us": round(bench_model(model, devices, db_path, args.repeat), 1)})
    except ValueError as e:  # a --fractions that is not numbers
        print(f"error: {e}", file=sys.stderr)
        return 2
    return _write(out, "kernels", result, render)


def _write(out: str, name: str, result: dict, render) -> int:
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}.json"), "w") as f:  # the measurements first, whatever the table does
        json.dump(result, f, indent=1)
    table = render(result)
    with open(os.path.join(out, f"{name}.md"), "w") as f:
        f.write(table)
    print(table)
    print(f"wrote {out}/{name}.json and {name}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
