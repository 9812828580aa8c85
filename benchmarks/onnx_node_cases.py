"""ONNX's own operator test cases, each compiled as a user's build compiles it, against ONNX's expected outputs.

    python benchmarks/onnx_node_cases.py [--out build/onnx_node_cases] [--only SUBSTRING] [--jobs 2]
                                         [--strategies cpu,equal] [--timeout-s 120] [--constant-inputs N]

The ``onnx`` package holds a test case for every operator of the standard
(``onnx.backend.test.case.node.collect_testcases``: 1,884 in onnx 1.23): a one-node model (or a
few nodes), inputs, and the outputs ONNX's reference implementation computes. Each case is loaded
with ``frontend.load`` (our ONNX rewrites included), built for ``cpu,cpu`` under each strategy with
the schedules a user's build gets (templates, transferred records), run with the runtime-only
``Runner`` and compared with the expected outputs at the case's own tolerances. Where it fails,
TVM's own flow (its importer, ``relax.build``, the VM; none of our passes) runs the same case, so
a row says whose failure it is: ``ours`` where TVM's own build passes.

Each case runs in a process of its own (forked, one TVM thread each, ``--jobs`` at a time) with a
time limit, so a crash or a hang costs its row only. Writes ``results.jsonl`` (one row a case and
strategy: status, first line of the error, ops) and ``summary.md`` (counts, and every failure that
TVM's flow passes). Why: "correct on *their* models" asked of the operators themselves, with an
oracle nobody here wrote.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import queue
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's package, not another installed copy

#: Statuses a row can take: passed; outputs wrong (``wrong``); refused in one line (a
#: ``TvmPartitionError``: an operator neither TVM's importer nor our rewrites convert); any other
#: exception (``error``); killed by a signal (``crash``); past the time limit (``timeout``);
#: ``skipped``: a case whose inputs or outputs are not tensors (sequences, optionals, strings).
STATUSES = ("passed", "wrong", "refused", "error", "crash", "timeout", "skipped")


def cases(only: str | None) -> list:
    """ONNX's node test cases (name order), those whose name holds ``only`` if given."""
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = collect_testcases()
    return sorted((c for c in found if not only or only in c.name), key=lambda c: c.name)


def tensors_only(case) -> bool:
    """Whether every input and output of ``case`` is a numeric or boolean tensor (no sequence,
    optional or string: ``Model`` inputs are tensors)."""
    import numpy as np

    graph = case.model.graph
    if any(not v.type.HasField("tensor_type") for v in list(graph.input) + list(graph.output)):
        return False
    inputs, outputs = case.data_sets[0]
    return all(isinstance(a, np.ndarray) and a.dtype.kind in "biufc" for a in list(inputs) + list(outputs))


def bind_small_inputs(case, most: int):
    """``(model, inputs)`` of ``case`` with every input after the first of at most ``most``
    elements made an initializer of its value: ONNX's cases feed an ``axis``, a ``dft_length``,
    pads, a shape, ``Resize``'s scales or ``TopK``'s ``k`` as graph inputs, which exported models
    hold as constants (and TVM's importer and this tool take as constants only). The first input
    stays an input: the data."""
    import onnx
    from onnx import numpy_helper

    inputs, _ = case.data_sets[0]
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    kept, values = [], []
    for k, (gi, value) in enumerate(zip(list(model.graph.input), inputs)):
        if k > 0 and value.size <= most:
            model.graph.initializer.append(numpy_helper.from_array(value, gi.name))
        else:
            kept.append(gi)
            values.append(value)
    del model.graph.input[:]
    model.graph.input.extend(kept)
    return model, values


def saved(case, constant_inputs: int, folder: str) -> tuple[str, list]:
    """``case``'s model bound as :func:`bind_small_inputs` binds it, saved in ``folder``:
    ``(its path, the inputs left to feed)``."""
    import onnx

    model, inputs = bind_small_inputs(case, constant_inputs)
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    return path, inputs


def compare(got: list, expected: list, rtol: float, atol: float) -> str | None:
    """None where ``got`` equals ``expected`` (shapes, dtypes and values within the tolerances,
    NaNs where NaNs are), else what differs first."""
    import numpy as np

    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        g, e = np.asarray(g), np.asarray(e)
        if g.shape != e.shape:
            return f"output {i}: shape {list(g.shape)}, expected {list(e.shape)}"
        if g.dtype != e.dtype:
            return f"output {i}: dtype {g.dtype}, expected {e.dtype}"
        if e.dtype.kind in "fc":
            ok = np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = g == e
        if not np.all(ok):
            bad = int(np.size(ok) - np.count_nonzero(ok))
            diff = np.max(np.abs(g.astype(np.float64) - e.astype(np.float64))) if e.dtype.kind != "b" else 1
            return f"output {i}: {bad} of {e.size} elements differ, largest by {diff:.3g}"
    return None


def run_ours(path: str, inputs: list, strategy: str, folder: str) -> list:
    """The case's outputs from our build: ``frontend.load``, ``compile_model`` for ``cpu,cpu``
    with this machine's schedules, the artifact run by the runtime-only ``Runner``."""
    from tvm_partition import frontend
    from tvm_partition.build.databases import local_database
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    model = frontend.load(path)
    compiled = compile_model(model, parse_devices("cpu,cpu"), strategy, None, local_database(None))
    runner = Runner(compiled.save(os.path.join(folder, strategy)))
    names = [i["name"] for i in runner.input_info]
    if len(names) != len(inputs):
        raise RuntimeError(f"the build takes {len(names)} inputs, the case gives {len(inputs)}")
    return runner.run(dict(zip(names, inputs)))


def run_tvm(path: str, inputs: list) -> list:
    """The case's outputs from TVM's own flow: its importer, ``relax.build`` for the host, the VM."""
    import numpy as np
    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    mod = from_onnx(onnx.load(path), keep_params_in_input=False)
    ex = relax.build(mod, tvm.target.Target("llvm"))
    vm = relax.VirtualMachine(ex, tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(np.ascontiguousarray(a)) for a in inputs])
    outs = list(out) if isinstance(out, (tvm.ir.Array, list, tuple)) else [out]
    return [o.numpy() for o in outs]


def one(case, strategies: list[str], folder: str, results, constant_inputs: int = 0) -> None:
    """Runs in a child process: ``case`` under each strategy, then TVM's flow where one failed;
    puts ``{strategy: (status, message)}`` and ``("tvm", ...)`` on ``results``."""
    from tvm_partition.errors import TvmPartitionError

    path, inputs = saved(case, constant_inputs, folder)
    expected, passed = case.data_sets[0][1], True
    for strategy in strategies:
        try:
            diff = compare(run_ours(path, inputs, strategy, folder), list(expected), case.rtol, case.atol)
            found = ("wrong", diff) if diff else ("passed", "")
        except TvmPartitionError as e:
            found = ("refused", str(e).splitlines()[0][:300])
        except Exception as e:  # noqa: BLE001: any other exception is the row's finding
            found = ("error", f"{type(e).__name__}: {_last_line(e)}")
        passed = passed and found[0] == "passed"
        results.put((strategy, found))
    if passed:
        return
    try:
        diff = compare(run_tvm(path, inputs), list(expected), case.rtol, case.atol)
        results.put(("tvm", ("wrong", diff) if diff else ("passed", "")))
    except Exception as e:  # noqa: BLE001
        results.put(("tvm", ("error", f"{type(e).__name__}: {_last_line(e)}")))


def _last_line(e: Exception) -> str:
    """The last line of an exception's text (TVM's errors end with the check that failed)."""
    text = str(e).strip()
    return text.splitlines()[-1][:300] if text else ""


def _child(case, strategies, folder, results, constant_inputs) -> None:
    os.environ["TVM_NUM_THREADS"] = "1"
    import warnings

    warnings.simplefilter("ignore")
    sys.stdout = sys.stderr = open(os.devnull, "w")  # the planner's and TVM's chatter: rows only
    one(case, strategies, folder, results, constant_inputs)


def sweep(selected: list, strategies: list[str], jobs: int, timeout_s: float, out, constant_inputs: int = 0) -> list[dict]:
    """Every case of ``selected`` in a forked process of its own, ``jobs`` at a time; returns the
    rows (also appended to ``out`` as they end)."""
    from tqdm import tqdm

    ctx = multiprocessing.get_context("fork")
    pending, running, rows = list(selected), [], []
    bar = tqdm(total=len(pending), unit="case", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        while pending or running:
            while pending and len(running) < jobs:
                case = pending.pop(0)
                if not tensors_only(case):
                    rows.append(_row(case, {s: ("skipped", "not all tensors") for s in strategies}, 0.0, out))
                    bar.update()
                    continue
                folder = tempfile.mkdtemp(dir=tmp)
                q = ctx.Queue()
                p = ctx.Process(target=_child, args=(case, strategies, folder, q, constant_inputs), daemon=True)
                p.start()
                running.append((case, p, q, time.perf_counter(), {}))
            time.sleep(0.05)
            for item in list(running):
                case, p, q, t0, got = item
                _drain(q, got)
                late = time.perf_counter() - t0 > timeout_s
                if p.is_alive() and not late:
                    continue
                if late and p.is_alive():
                    p.kill()
                p.join()
                _drain(q, got)
                end = "timeout" if late else "crash"
                found = {s: got.get(s, (end, f"exit {p.exitcode}" if not late else f"over {timeout_s:.0f} s"))
                         for s in strategies + ["tvm"]}
                if "tvm" not in got and not late and p.exitcode == 0:
                    found.pop("tvm")  # TVM's flow runs only where one of ours failed
                rows.append(_row(case, found, time.perf_counter() - t0, out))
                running.remove(item)
                bar.update()
    bar.close()
    return rows


def _drain(q, got: dict) -> None:
    while True:
        try:
            key, value = q.get_nowait()
        except (queue.Empty, EOFError, OSError):
            return
        got[key] = value


def _row(case, found: dict, seconds: float, out) -> dict:
    row = {"case": case.name, "ops": sorted({n.op_type for n in case.model.graph.node}),
           "opset": max((o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx")), default=0),
           "seconds": round(seconds, 2), **{k: {"status": s, "message": m} for k, (s, m) in found.items()}}
    out.write(json.dumps(row) + "\n")
    out.flush()
    return row


def summary(rows: list[dict], strategies: list[str]) -> str:
    """Counts by status for each strategy, then every case one of our strategies failed where TVM's
    own flow passed (ours to fix), then the cases both fail, grouped by op."""
    from collections import Counter, defaultdict

    lines = ["| strategy | " + " | ".join(STATUSES) + " |", "| --- |" + " ---: |" * len(STATUSES)]
    for s in strategies:
        c = Counter(r[s]["status"] for r in rows)
        lines.append(f"| {s} | " + " | ".join(str(c.get(k, 0)) for k in STATUSES) + " |")
    ours = [r for r in rows if any(r[s]["status"] not in ("passed", "skipped") for s in strategies)
            and r.get("tvm", {}).get("status") == "passed"]
    lines += ["", f"Failed here, passed by TVM's own flow ({len(ours)}):", ""]
    for r in ours:
        bad = [s for s in strategies if r[s]["status"] != "passed"]
        lines.append(f"- `{r['case']}` ({', '.join(r['ops'])}): " + "; ".join(
            f"{s} {r[s]['status']}: {r[s]['message']}" for s in bad))
    both = defaultdict(list)
    for r in rows:
        if r.get("tvm", {}).get("status") not in (None, "passed") and any(r[s]["status"] not in ("passed", "skipped") for s in strategies):
            both[", ".join(r["ops"])].append(r["case"])
    lines += ["", f"Failed here and by TVM's own flow ({sum(map(len, both.values()))} cases, by ops):", ""]
    lines += [f"- {ops}: {len(names)} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
              for ops, names in sorted(both.items())]
    return "\n".join(lines) + "\n"


def _preload() -> None:
    """Import, once before the processes fork, what each of them would import again (a case's
    process spent most of its 4 s there)."""
    import importlib

    for name in ("tvm.relax.frontend.onnx", "tvm_partition.build.executable", "tvm_partition.cli.compile",
                 "tvm_partition.frontend", "tvm_partition.planners.placement", "tvm_partition.planners.simulate",
                 "tvm_partition.runtime.runner"):
        importlib.import_module(name)
    from tvm_partition.cli.compile import _lazy

    _lazy()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/onnx_node_cases", help="folder for results.jsonl and summary.md")
    ap.add_argument("--only", help="only the cases whose name holds this text (e.g. test_lpnorm)")
    ap.add_argument("--strategies", default="cpu,equal", help="comma-separated strategies, each built for cpu,cpu")
    ap.add_argument("--jobs", type=int, default=2, help="cases at a time, one process and one thread each")
    ap.add_argument("--timeout-s", type=float, default=120.0, help="a case's time limit, all its builds together")
    ap.add_argument("--constant-inputs", type=int, default=0, metavar="N",
                    help="inputs after the first of at most N elements become constants of their value (an axis, "
                         "a length, pads, a shape, scales: exported models hold these as constants); default 0, none")
    args = ap.parse_args(argv)
    if args.jobs < 1 or args.timeout_s <= 0 or args.constant_inputs < 0:
        ap.error("--jobs and --timeout-s must be positive, --constant-inputs at least 0")
    strategies = [s for s in args.strategies.split(",") if s]
    selected = cases(args.only)
    if not selected:
        ap.error(f"no case's name holds {args.only!r}")
    _preload()

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.jsonl"), "w", encoding="utf-8") as out:
        rows = sweep(selected, strategies, args.jobs, args.timeout_s, out, args.constant_inputs)
    text = summary(rows, strategies)
    with open(os.path.join(args.out, "summary.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
