"""The profiler: sample every op of some models on some devices, time them, append to the log.

Everything that is timed goes through a *bundle* (:func:`write_bundle`): the sample kernels of a
device built into one library, a ``bundle.json`` that says which kernels each sample launches and
what record it becomes, and the runtime-only timing script (:mod:`.timing`). Profiling this
machine writes a bundle per round to a temporary folder and runs it here; ``--export-bundle``
writes one bundle for a machine the build host cannot reach, and ``--import`` merges what that
machine measured (:func:`import_results`). Both paths time the same kernels the same way.

Rounds spread a time budget over every op (the issue: "samples are spread so the budget still
covers every key op"): round 0 times every op of every model at its full size, heaviest first;
later rounds add the halves, quarters... of each axis (:func:`samples.size_grid` order). Every
sample is timed in two passes and keeps its quicker time (:data:`PASSES`); one still slower than
a larger size of its series is timed again (:data:`OUT_OF_ORDER`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict

from ..cost_models import timing
from ..cost_models.logs import ProfileLog, sample_key
from .samples import (
    ALLOC_CHAIN,
    ARG_CHAIN,
    CHAINS,
    COMM_BYTES,
    LAUNCH_CHAIN,
    VIEW_CHAIN,
    Sample,
    build_library,
    chain_arguments,
    comm_module,
    launch_module,
    sample_module,
    samples_of,
)

BUNDLE_FORMAT = 1
#: The modules of tvm_partition the timing script imports, copied into a bundle (stdlib only).
BUNDLE_MODULES = ("__init__.py", "devices.py", "errors.py")
#: Samples built and timed per chunk of a round: the budget is checked between chunks, and a
#: chunk's build (a fraction of a second per kernel on a small CPU) is the slow part.
CHUNK = 48


@dataclasses.dataclass
class Pending:
    """A sample to time: the record it becomes (without timing) and how to build it."""

    record: dict
    device: object  # DeviceSpec
    make: object  # () -> sample module (its Relax main), or None for a copy
    level: int  # its round


def sample_stamp(stamp: str, device_kind: str) -> str:
    """What a sample on a device of ``device_kind`` ran: the databases' digest ``stamp``, and on a
    GPU the version of ``schedule_gpu``'s choice among dlight's rules (:data:`tvm_partition.build.gpu_schedules.GPU_RULE_CHOICE`),
    so a change of that choice times the GPU's samples again and not the CPU's."""
    from ..build.gpu_schedules import GPU_RULE_CHOICE

    return f"{stamp}+gpu{GPU_RULE_CHOICE}" if device_kind == "gpu" else stamp


def op_record(s: Sample, op, stamp: str) -> dict:
    """The log record of sample ``s`` of ``op`` (before timing), its kernels scheduled by the
    databases of digest ``stamp``."""
    return {"type": "op", "sig": s.sig, "kind": s.kind, "fused": op.fused_name, "dim": s.dim,
            "dim_name": s.dim_name, "size": s.size, "full": s.full, "shape": list(s.shape),
            "full_shape": list(op.output_shapes[-1]), "op_flops": op.flops, "op_bytes": op.bytes,
            "n_inputs": len(op.input_shapes), "device": s.device, "transfer": True,
            "schedules": sample_stamp(stamp, s.device)}


def _logged(log: ProfileLog | None, rec: dict) -> bool:
    """``rec``'s sample is in ``log``, an op's timed with the same databases (``schedules``): one
    timed before a tuning run changed them may have run another schedule; a launch chain's run
    by the same kind of VM program (``vm``: builds compile ``main`` since 2026-11-26)."""
    old = log.get(sample_key(rec)) if log is not None else None
    return old is not None and all(old.get(k) == rec[k] for k in ("schedules", "vm") if k in rec)


def _level(index: int) -> int:
    """Round of the ``index``-th size of a series: 0 -> 0, 1-2 -> 1, 3-6 -> 2, 7-14 -> 3..."""
    return (index + 1).bit_length() - 1


def off_grid(log: ProfileLog, graphs: list, devices: list, stamp: str) -> set:
    """Sample keys of op records left by an older size grid: of a series (signature, device, axis)
    ``graphs`` still sample, at a size they no longer sample, timed with the schedules builds give
    (``transfer``) but under other ones than ``stamp``'s. Sizes are rounded to the op's granule
    since builds cut parts there only; the raw cuts timed before under older schedules stayed in
    the log and in every fit: ResNet-18's transferred classifier matmul at N=562 ran 61.6 us
    between 9.9 at 560 and 14.2 at 624 (rules 7161bd80de1e, Zen 5)."""
    kinds = sorted({d.kind for d in devices})
    grid = {sample_key({"type": "op", "sig": s.sig, "device": s.device, "dim": s.dim, "size": s.size, "transfer": True})
            for graph in graphs for s in samples_of(graph, kinds)}
    series = {key[1:4] for key in grid}
    stale = (sample_key(r) for r in log.ops()
             if r.get("transfer") and r.get("schedules") != sample_stamp(stamp, r["device"]))
    return {key for key in stale if key[1:4] in series and key not in grid}


def pending_samples(graphs: list, devices: list, log: ProfileLog | None = None, stamp: str = "") -> list[Pending]:
    """Every op and communication sample of ``graphs`` on ``devices`` the log does not have yet
    (ops: not timed with the databases of digest ``stamp``, :attr:`tuning.Schedules.stamp`), and
    the chains of the VM's own costs again wherever an op sample is pending."""
    out, seen = [], set()
    kinds = {}
    for d in devices:
        kinds.setdefault(d.kind, d)
    for graph in graphs:
        pos: dict = {}
        for s in samples_of(graph, list(kinds)):
            series = (s.sig, s.device, s.dim)
            pos[series] = pos.get(series, -1) + 1
            op = graph.ops[s.op_id]
            rec = op_record(s, op, stamp)
            key = sample_key(rec)
            if key in seen or _logged(log, rec):
                continue
            seen.add(key)
            out.append(Pending(rec, kinds[s.device],
                               (lambda g=graph, o=op, s=s: sample_module(g, o, s.dim, s.size)), _level(pos[series])))
    # VM launch overhead: on a CPU the VM thread runs the kernels; a GPU's launches are asynchronous
    # but each costs that thread its call (the chain of one-element kernels runs at that rate)
    # and a run of a VM of one kernel, called from Python as a runner calls ``main``: what a run
    # costs beyond its launches (the call, its arguments' checks, the return); and a chain of
    # views, which launch nothing but are two calls each (0.18 us a view on a Zen 4); and a run of
    # that kernel with more arguments, which each cost the call (0.105 us an argument on a Zen 4);
    # and the same kernels with their outputs alive at once or taking turns: what a storage
    # allocated in a run costs (0.175 us on a Zen 4). Timed again with any op sample: the VM's costs
    # move with the machine's phase as its kernels' do. The Intel VM's chains of 2026-12-01 read a run
    # 0.633 us, a launch 0.104 and an argument 0.099, timed again on 2026-12-04 0.71, 0.122 and
    # 0.114 (by hand), 0.726, 0.123 and 0.128 (a profile); beside that day's op samples the RNNs'
    # one-op rows of ``bench --quick --split-ops 2`` read -4% to -15% priced at the old ones, 0% to
    # -10% at the profile's
    again = any(p.record["type"] == "op" for p in out)
    for kind in sorted(kinds):
        for comm, k in (("launch", LAUNCH_CHAIN), ("run", 1), ("view", VIEW_CHAIN), ("arg", ARG_CHAIN),
                        ("alloc", ALLOC_CHAIN), ("alloc0", ALLOC_CHAIN)):
            rec = {"type": "comm", "comm": comm, "src": kind, "dst": kind, "bytes": 0, "kernels": k, "vm": "compiled"}
            if sample_key(rec) not in seen and (again or not _logged(log, rec)):
                seen.add(sample_key(rec))
                out.append(Pending(rec, kinds[kind], None, 0))
    # Every size of the communication ladder in round 0: a copy's cost is its size (latency and
    # bandwidth are fitted on all of them), and the sizes cost milliseconds to time. Rounds by
    # index had put the copies above 64 B past round 1: the GPU kit's bundle (rounds 0-1) took
    # the H100 machine only 4-64 B copies, and its cost model knew no bandwidth (2026-11-26).
    for nbytes in COMM_BYTES:
        for kind, dev in kinds.items():
            for comm in ("slice", "concat"):
                rec = {"type": "comm", "comm": comm, "src": kind, "dst": kind, "bytes": nbytes}
                if sample_key(rec) not in seen and not _logged(log, rec):
                    seen.add(sample_key(rec))
                    out.append(Pending(rec, dev, (lambda c=comm, n=nbytes: comm_module(c, n)), 0))
        for a in devices:
            for b in devices:
                if a is b:
                    continue
                rec = {"type": "comm", "comm": "copy", "src": a.kind, "dst": b.kind, "bytes": nbytes,
                       "src_index": a.index, "dst_index": b.index}
                if sample_key(rec) not in seen and not _logged(log, rec):
                    seen.add(sample_key(rec))
                    out.append(Pending(rec, None, None, 0))
    return out


def write_bundle(folder: str, pending: list[Pending], schedules=None, progress=None) -> dict:
    """Build ``pending`` into ``folder``: one kernel library per device, ``bundle.json`` and the
    timing script ``time_samples.py``. Samples whose op cannot be built at their size are left
    out (and counted in the returned spec's ``skipped``)."""
    from ..ir.split_rules import IllegalSplit

    os.makedirs(folder, exist_ok=True)
    # the CPU kernels' -mcpu names the timing machine where its runtime-only TVM cannot (no LLVM)
    mcpu = next((p.device.target.get("mcpu") for p in pending if p.device is not None and p.device.kind == "cpu"), None)
    spec = {"format": BUNDLE_FORMAT, "libraries": [], "copies": [], "launches": [], "records": {}, "skipped": 0,
            "mcpu": mcpu}
    by_device: dict = {}
    for i, p in enumerate(pending):
        sid = f"s{i}"
        if p.record.get("comm") in CHAINS:
            from tvm import relax

            comm = p.record["comm"]
            file = f"{comm}-{p.device.kind}.so"
            # compiled like a build's main (build.executable.link), so the chain costs what a build's launches do
            relax.build(launch_module(p.record["kernels"], p.device, comm), target=p.device.tvm_target(),
                        exec_mode=p.record["vm"]).export_library(os.path.join(folder, file))
            spec["launches"].append({"id": sid, "file": file, "device": p.device.kind, "kernels": p.record["kernels"],
                                     "comm": comm, "args": chain_arguments(comm, p.record["kernels"])})
            spec["records"][sid] = p.record
            continue
        if p.make is None:
            spec["copies"].append({"id": sid, "src": p.record["src"], "dst": p.record["dst"],
                                   "src_index": p.record.pop("src_index", 0), "dst_index": p.record.pop("dst_index", 0),
                                   "bytes": p.record["bytes"]})
            spec["records"][sid] = p.record
            continue
        try:
            sample = p.make()
        except IllegalSplit:
            spec["skipped"] += 1
            continue
        by_device.setdefault(p.device.name, (p.device, {}))[1][sid] = sample
        spec["records"][sid] = p.record
    for name, (device, samples) in by_device.items():
        if progress:
            progress(f"building {len(samples)} {device.kind} sample kernels")
        lib = build_library(samples, device, schedules)
        file = f"{device.kind}.so"
        lib.module.export_library(os.path.join(folder, file))
        spec["libraries"].append({"file": file, "device": device.kind, "kernels": lib.kernels, "samples": lib.samples})
        for sid, names in lib.samples.items():
            rec = spec["records"][sid]
            if rec["type"] == "op":  # the strongest schedule among the sample's kernels
                kinds = {lib.kernels[n]["schedule"] for n in names}
                rec["schedule"] = next((k for k in ("tuned", "template", "transferred") if k in kinds), "default")
                rec["tuned"] = rec["schedule"] == "tuned"
    write_spec(folder, spec)
    return spec


def write_spec(folder: str, spec: dict) -> None:
    """``bundle.json`` and the runtime-only timing script (``time_samples.py``) of a bundle whose
    libraries are in ``folder``."""
    with open(os.path.join(folder, "bundle.json"), "w", encoding="utf-8") as f:
        json.dump(spec, f)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shutil.copy(os.path.join(package, "cost_models", "timing.py"), os.path.join(folder, "time_samples.py"))
    # the timing script names the machine it ran on with the same fingerprint as the profiler:
    # tvm_partition's devices module (and the errors it imports) as a package of their own
    os.makedirs(os.path.join(folder, "tvm_partition"), exist_ok=True)
    for name in BUNDLE_MODULES:
        shutil.copy(os.path.join(package, name), os.path.join(folder, "tvm_partition", name))


def export_bundle(folder: str, graphs: list, devices: list, schedules=None, max_level: int | None = None,
                  progress=None, timed: tuple = (), models: tuple = ()) -> dict:
    """Build every sample of ``graphs`` on ``devices`` into a bundle for another machine
    (:func:`write_bundle`), in the order a budgeted profile times them: each op whole first,
    heaviest first, then the halves, quarters... (:func:`_level`), so a timing run cut short keeps
    the samples that matter most. ``max_level``: leave out the finer sizes. ``timed``: profile
    logs of the machines the bundle may run on; a sample every one of them holds (timed with these
    schedules) goes last, so runs cut short add samples instead of timing the same first ones again
    (the GPU kit's bundle: 381 and 464 of 869 in two runs, the same ones first). ``models``
    (:class:`tvm_partition.frontend.model.Model`) are built for the CPU of ``devices`` to be run
    there in the VM against their kernels alone (:func:`add_contexts`), as ``profile`` runs them here."""
    stamp = schedules.stamp if schedules is not None else ""
    pending = pending_samples(graphs, devices, stamp=stamp)
    # the predicate pending_samples skips a log's samples by (_logged), not the samples enumerated again
    pending.sort(key=lambda p: (bool(timed) and all(_logged(log, p.record) for log in timed), p.level))
    spec = write_bundle(folder, [p for p in pending if max_level is None or p.level <= max_level], schedules, progress)
    cpu = next((d for d in devices if d.kind == "cpu"), None)
    if models and cpu is not None:
        gpu = next((d for d in devices if d.kind == "gpu"), None)
        add_contexts(folder, spec, list(models), cpu, schedules, progress, gpu)
    return spec


def add_contexts(folder: str, spec: dict, models: list, device, schedules=None, progress=None, gpu=None) -> None:
    """Add ``models``' context measurements to the bundle in ``folder`` (``spec``, its
    ``bundle.json``, rewritten): each model's one-CPU build (``context-N.so``, its weights drawn
    there: BERT-tiny's are 17 MB) and its kernels (:func:`tvm_partition.profiling.context.build_context`),
    which the timing script runs (:func:`tvm_partition.cost_models.timing.time_context`). Why: the
    GPU machines' profiles had no in-model factor at all, and the README's LSTM ran 9.03 ms on the
    H200's host, priced 3.93 (2026-11-27). ``gpu``: each model's ``gpu`` plan too, in a build of
    ``device`` and the GPU (``context-gpu-N.so``, :func:`tvm_partition.profiling.context.gpu_context`)."""
    from ..build.executable import BuildError
    from .context import build_context

    spec["mcpu"] = spec.get("mcpu") or device.target.get("mcpu")  # the machine's name there (write_bundle)
    for i, model in enumerate(models):
        builds = [(f"c{i}", f"context-{i}.so", device)] + ([(f"g{i}", f"context-gpu-{i}.so", gpu)] if gpu else [])
        for cid, file, on in builds:
            if progress:
                progress(f"building {model.name} for its context" + (" on the GPU" if on.kind == "gpu" else ""))
            split = f"context-{i}-split.so" if on.kind == "cpu" else None
            try:
                entry, record = build_context(model, on, schedules, os.path.join(folder, file),
                                              split and os.path.join(folder, split), host=device)
                if "split" in entry:
                    entry["split"]["file"] = split  # in the bundle's folder, wherever it is timed
            except BuildError as e:  # its samples are in the bundle; the model keeps the median factor
                if progress:
                    progress(f"warning: {model.name} left out of the contexts: {e}")
                continue
            spec.setdefault("contexts", []).append({"id": cid, "file": file, **entry})
            spec["records"][cid] = record
    write_spec(folder, spec)


def result_record(records: dict, res: dict) -> dict:
    """The log record of one timing result (``{"id", "mean_us", "std_us", "repeats", "fingerprint"}``)."""
    rec = dict(records[res["id"]], mean_us=float(res["mean_us"]), std_us=float(res["std_us"]),
               repeats=int(res["repeats"]))
    for key in ("fingerprint", "threads"):  # threads: the CPU pool it was timed with
        if res.get(key):
            rec[key] = res[key]
    for key in ("kernels", "vm_us", "warm_us", "rounds", "entry_us",  # a model's context (timing.time_context)
                "split_kernels", "split_vm_us", "split_warm_us", "split_rounds", "split_entry_us"):
        if key in res:
            rec[key] = res[key]
    return rec


def import_results(results: str, logs: str, bundle: str | None = None, log: ProfileLog | None = None) -> tuple[int, str]:
    """Merge a bundle's ``results.jsonl`` into ``logs/<fingerprint of the machine that ran it>/``
    (into ``log`` itself when given: the profiler merging what it just measured here).

    Returns ``(records added, folder)``. Lines for unknown samples, or corrupt lines, are reported
    and skipped; a timing already in the log (the same results imported again) is not added twice."""
    from ..devices import fingerprint_id

    if os.path.isdir(results):
        bundle, results = results, os.path.join(results, "results.jsonl")
    bundle = bundle or os.path.dirname(os.path.abspath(results))
    spec_path = os.path.join(bundle, "bundle.json")
    if not os.path.exists(results):
        raise FileNotFoundError(f"{results}: no results file (run python time_samples.py BUNDLE there first)")
    if not os.path.exists(spec_path):
        raise FileNotFoundError(f"{spec_path}: the results must sit in (or next to) the bundle folder they came from")
    with open(spec_path, encoding="utf-8") as f:
        records = json.load(f)["records"]
    added, folder, logs_by_fp = 0, None, {}
    with open(results, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                res = json.loads(line)
                rec = result_record(records, res)
            except (ValueError, KeyError, TypeError):
                print(f"{results}:{n}: not a result of this bundle, skipped", file=sys.stderr)
                continue
            fp = res.get("fingerprint")
            folder = log.folder if log is not None else os.path.join(logs, fingerprint_id(fp) if fp else fingerprint_id())
            target = log or logs_by_fp.setdefault(folder, ProfileLog(folder))
            old = target.get(sample_key(rec))
            if old is not None and all(old.get(k) == rec[k] for k in ("mean_us", "std_us", "repeats")):
                continue  # this very timing is logged: importing the results again doubled the log (870 -> 1,740 lines)
            target.append(rec)
            added += 1
    return added, folder or logs


#: Times each sample is timed, in passes over the whole profile; a sample keeps its quickest.
#: Why: this VM has phases of seconds to a minute in which every kernel runs 1.3-2.5x slower, and
#: the samples of one op are timed within a second of each other, so a phase bent whole series: a
#: ResNet-18 convolution's channel parts at 19:08:12 all read 26-40 us above the same samples an
#: hour before (64-115 us against 27-76), and the held-out error of unchanged convolution templates
#: went from 3-10% to 14-35% between two profiles (amd-epyc-znver5-2c, 2026-11-26). A second pass,
#: a whole pass after the first (the chunks in the same order), rarely meets the same phase.
PASSES = 2

#: A sample slower than this many times a larger size of its series, after the passes, is timed
#: again (:func:`out_of_order`), up to :data:`RETIMES` more times, keeping its quickest. Two
#: passes still leave samples timed slow twice: 674 of the znver3 profile's 7,304 fitted samples
#: read over 1.10x a larger size of their series (a BERT-tiny matmul's M=48 part 457 us between
#: 40 at 175 and 56 at 263; its layer norm at 32 rows 234 us, at 64 rows 214), and held out they
#: are most of the patterns' error: without them the held-out MAPE read 10.5% for 12.9%
#: (2026-11-28). A smaller part can be slower (an awkward extent): timed again, it keeps its time.
OUT_OF_ORDER = 1.10
RETIMES = 2


def profile(graphs: list, devices: list, folder: str, schedules=None, budget_s: float | None = None,
            progress=None, session=None, fingerprint: dict | None = None, passes: int = PASSES) -> dict:
    """Time every sample of ``graphs`` on ``devices`` missing from ``folder``'s log, round by round,
    until done or ``budget_s`` is spent, then again (``passes`` in all, while the budget lasts), each
    sample keeping its quickest time (:data:`PASSES`), then the samples of ``graphs`` out of order
    with their series again (:data:`OUT_OF_ORDER`; not over RPC). Returns counts: measured, left,
    skipped, retimed (samples timed again in the passes), quicker (of those, below :data:`QUICKER`
    x their first time), total, out_of_order (found after the passes), in_order (of those, in
    order after being timed again).

    ``progress(event, what, seconds_left)``: ``event`` is ``total`` (``what``: the number of timings
    to make, samples x passes, said once first), ``build`` (a round's kernels are being compiled),
    ``retime`` (``what`` samples out of order are about to be timed again) or ``sample`` (``what``
    is about to be timed). With an RPC ``session`` the kernels
    are timed on that machine (see :func:`timing.run_bundle`), whose ``fingerprint`` the records
    carry."""
    log = ProfileLog(folder)
    stamp = schedules.stamp if schedules is not None else ""
    todo = [p for p in pending_samples(graphs, devices, log, stamp) if session is None or p.make is not None]
    passes = _passes(session, passes)
    t0 = time.monotonic()
    deadline = None if budget_s is None else t0 + budget_s
    stats = {"measured": 0, "left": 0, "skipped": 0, "retimed": 0, "quicker": 0, "total": len(todo),
             "out_of_order": 0, "in_order": 0}
    if progress:
        progress("total", len(todo) * max(1, passes), None)
    todo.sort(key=lambda p: p.level)  # stable: heaviest op first within a round
    with tempfile.TemporaryDirectory(prefix="tvmp-profile-") as root:
        bundles = []
        for n, start in enumerate(range(0, len(todo), CHUNK)):
            batch = todo[start:start + CHUNK]
            if deadline is not None and time.monotonic() > deadline:
                stats["left"] += len(batch)
                continue
            tmp = os.path.join(root, str(n))
            spec = write_bundle(tmp, batch, schedules, progress=progress and (lambda msg: progress("build", msg, None)))
            stats["skipped"] += spec["skipped"]
            measured = []  # every result reaches the log as soon as it is measured
            _time(tmp, spec, progress, deadline, session, fingerprint,
                  lambda res, spec=spec: measured.append(log.append(result_record(spec["records"], res))))
            stats["measured"] += len(measured)
            stats["left"] += len(spec["records"]) - len(measured)
            bundles.append((tmp, spec))
        quicker = []
        for _ in range(1, passes):
            for tmp, spec in bundles:
                if deadline is not None and time.monotonic() > deadline:
                    break
                stats["retimed"] += _time(tmp, spec, progress, deadline, session, fingerprint,
                                          lambda res, spec=spec: quicker.append(
                                              _keep_quicker(log, result_record(spec["records"], res))))
        stats["quicker"] = sum(quicker)
        if session is None:  # over RPC a library uploaded again kills the server (_passes)
            _retime_out_of_order(graphs, devices, log, stamp, schedules, root, deadline, progress, fingerprint, stats)
    return stats


def out_of_order(log: ProfileLog, keys: set) -> set:
    """The op samples of ``keys`` slower than :data:`OUT_OF_ORDER` x a larger size of their series,
    or than :data:`OUT_OF_ORDER` x the line between the sizes either side of them (:func:`above_chord`),
    among the samples a pattern is fitted on (:func:`.profiled.fit_records`: a tuned size is faster
    than the default-schedule sizes around it by design)."""
    from ..cost_models.profiled import fit_records

    wanted = {key[1:4] for key in keys if key[0] == "op"}  # (sig, device, dim)
    series = defaultdict(list)
    for r in log.ops():
        if (r["sig"], r["device"], int(r["dim"])) in wanted:
            series[(r["sig"], r["device"], int(r["dim"]))].append(r)
    out = set()
    for recs in series.values():
        quickest_above = float("inf")
        for r in sorted(fit_records(recs), key=lambda r: -int(r["size"])):
            if float(r["mean_us"]) > OUT_OF_ORDER * quickest_above and sample_key(r) in keys:
                out.add(sample_key(r))
            quickest_above = min(quickest_above, float(r["mean_us"]))
        out |= {sample_key(r) for r in above_chord(fit_records(recs))} & keys
    return out


def above_chord(records: list[dict]) -> list[dict]:
    """The samples of one series slower than :data:`OUT_OF_ORDER` x the line between the sizes
    either side of them, the next ones or the ones after (two slow readings side by side each
    raise the other's line). Why: a slow reading between two larger sizes is no slower than a
    larger size, and the rule before this one kept it: ResNet-18's last convolution at 256 of 512
    output channels read 63.6 us between 49.1 at 224 and 60.8 at 288 (1.16x their line; znver4,
    2026-11-30, 09:15), its split op was predicted 13% over; timed again at 14:49, 54.9 us. The
    same convolution with a ReLU read 64.0 at 256 beside 69.5 at 288, each under 1.10x the line of
    its next neighbours, 1.16x and 1.13x the line of the ones after. A size that is really slower (a
    schedule's step) keeps its time when timed again."""
    recs = sorted(records, key=lambda r: int(r["size"]))
    points = [(int(r["size"]), float(r["mean_us"])) for r in recs]
    out = []
    for i, r in enumerate(recs):
        for k in (1, 2):
            if i < k or i + k >= len(recs):
                continue
            (sa, ta), (sb, tb), (sc, tc) = points[i - k], points[i], points[i + k]
            if sc > sa and tb > OUT_OF_ORDER * (ta + (tc - ta) * (sb - sa) / (sc - sa)):
                out.append(r)
                break
    return out


def _retime_out_of_order(graphs, devices, log, stamp, schedules, root, deadline, progress, fingerprint, stats) -> None:
    """Time the samples :func:`out_of_order` finds again, up to :data:`RETIMES` times, each keeping
    its quickest; ``stats`` gains ``out_of_order`` (found) and ``in_order`` (of those, in order after).
    Their kernels are built once: a later round times, of the same bundles, those still out of order."""
    every = {sample_key(p.record): p for p in pending_samples(graphs, devices, None, stamp) if p.make is not None}
    found = suspects = out_of_order(log, set(every))
    bundles = []
    for _ in range(RETIMES):
        if not suspects or (deadline is not None and time.monotonic() > deadline):
            break
        if progress:
            progress("retime", len(suspects), None)
        if not bundles:
            batch = [every[k] for k in sorted(suspects)]
            for start in range(0, len(batch), CHUNK):
                tmp = os.path.join(root, f"retime-{start}")
                bundles.append((tmp, write_bundle(tmp, batch[start:start + CHUNK], schedules)))
        for tmp, spec in bundles:
            in_order = {sid for sid, rec in spec["records"].items() if sample_key(rec) not in suspects}
            _time(tmp, spec, progress, deadline, None, fingerprint,
                  lambda res, spec=spec: _keep_quicker(log, result_record(spec["records"], res)), done=in_order)
        suspects = out_of_order(log, suspects)
    stats["out_of_order"], stats["in_order"] = len(found), len(found - suspects)


def _passes(session, passes: int = PASSES) -> int:
    """The passes a profile makes: one over RPC (a library uploaded again over the one TVM's RPC
    server has loaded kills the server)."""
    return 1 if session is not None else passes


def _time(bundle: str, spec: dict, progress, deadline, session, fingerprint, on_result, done=None) -> int:
    """Time a bundle's samples but those of ``done`` (:func:`timing.run_bundle`), reporting each to
    ``progress`` and stopping at ``deadline``; returns how many were timed."""
    count = [0]

    def on_sample(sid):
        if progress:
            r = spec["records"][sid]
            what = (f"{r['kind']} {r.get('dim_name', '')}={r['size']} on {r['device']}" if r["type"] == "op"
                    else f"{r['comm']} {r['bytes']} B {r['src']}->{r['dst']}")
            progress("sample", what, None if deadline is None else max(0.0, deadline - time.monotonic()))
        if deadline is not None and time.monotonic() > deadline:
            raise _BudgetSpent

    def counted(res):
        count[0] += 1
        on_result(res)

    try:
        timing.run_bundle(bundle, None, done, progress=on_sample, session=session, fingerprint=fingerprint,
                          on_result=counted)
    except _BudgetSpent:
        pass
    return count[0]


#: A sample timed again counts as rescued from a slow phase (``stats["quicker"]``) below this
#: fraction of its first time.
QUICKER = 0.9


def _keep_quicker(log: ProfileLog, rec: dict) -> bool:
    """Log ``rec`` where its sample has no record yet or a slower one (the last record wins);
    True where it was quicker than :data:`QUICKER` x the record it replaced."""
    old = log.get(sample_key(rec))
    if old is None or float(rec["mean_us"]) < float(old["mean_us"]):
        log.append(rec)
    return old is not None and float(rec["mean_us"]) < QUICKER * float(old["mean_us"])


class _BudgetSpent(Exception):
    pass


def measure_contexts(models: list, devices: list, folder: str, schedules=None, say=None) -> list[dict]:
    """Run each of ``models`` built for this machine's CPU in the VM against its kernels timed alone
    (:func:`tvm_partition.profiling.context.measure`) and append the ``context`` records to
    ``folder``'s log, but where the log holds a reading of the same kernels at a lower factor
    (:func:`same_kernels`: it is kept). Returns the records appended."""
    from ..build.executable import BuildError
    from .context import measure

    cpu = next((d for d in devices if d.kind == "cpu"), None)
    if cpu is None:
        return []
    from ..cost_models.profiled import ProfiledCostModel

    log = ProfileLog(folder)
    chains = ProfiledCostModel(folder, log=log)  # the VM's launch and entry, as the simulator prices them
    launch, entry = chains.launch_time("cpu"), (chains.run_time("cpu"), chains.arg_time("cpu"))
    out = []
    for model in models:
        try:
            rec = measure(model, cpu, schedules, launch, entry)
        except BuildError as e:  # its samples are logged; the model keeps the median factor
            if say:
                say(f"warning: {model.name} not run in the VM: {e}")
            continue
        old = log.get(sample_key(rec))
        if say:
            say(f"{rec['model']}: {rec['vm_us']:.1f} us in the VM, its {rec['kernels']} kernel calls "
                f"{rec['warm_us']:.1f} us timed alone: in-model factor {rec['mean_us']:.2f}")
        if old is not None and same_kernels(old, rec) and float(old["mean_us"]) <= float(rec["mean_us"]):
            if say:
                say(f"  kept its earlier reading, {float(old['mean_us']):.2f} (the same kernels, timed quicker)")
            continue
        log.append(rec)
        out.append(rec)
    return out


#: Kernels timed alone within this fraction of an earlier context's are the same kernels
#: (:func:`same_kernels`): ResNet-18's at 64 px read 1,540-1,707 us alone over three profiles of
#: one day, where a schedule change moves a model's kernels by more (rules 32: 0.23-0.31x).
SAME_KERNELS = 0.15


def same_kernels(old: dict, new: dict) -> bool:
    """Whether two ``context`` records of a model timed the same build: as many launches, the same
    schedules (:func:`tvm_partition.profiling.context.schedules_digest`; a record from before it
    names none, and counts as other kernels),
    their kernels' sum alone within :data:`SAME_KERNELS`. The schedules, because the sum alone
    missed a change: the matmul template's races took 4 of BERT-tiny's 15 kernels from records
    tuned on this machine, their sum alone 9,296 -> 8,672 us (-7%), and the earlier reading's
    factor, 0.97, was kept where the build now ran 1.05x its kernels; the model was predicted 14%
    short (intel-r-xeon-r-processor-rocketlake-2c, 2026-12-01). A context measured again keeps the earlier
    reading where it timed the same kernels and read a lower factor: a phase of this VM slows a
    model in the VM more than its kernels alone (ResNet-18 at 64 px, 2026-11-30: 2,351 us in the
    VM at 13:46, 2,589 at 15:36, both against ~1,550 alone, factor 1.48 -> 1.68, while `bench`
    measured its build at 2.34 ms at 15:28), so the quickest reading is the machine's own figure,
    as for a sample timed again (:func:`_keep_quicker`)."""
    if int(old.get("kernels", -1)) != int(new.get("kernels", -2)) or not old.get("warm_us") or not new.get("warm_us"):
        return False
    if old.get("schedules") != new.get("schedules"):  # one from before the digest: not known the same
        return False
    return abs(float(new["warm_us"]) / float(old["warm_us"]) - 1) <= SAME_KERNELS


def profile_with_progress(graphs: list, devices: list, folder: str, schedules=None, budget_s: float | None = None,
                          session=None, fingerprint: dict | None = None, where: str = "", models=()) -> dict:
    """:func:`profile` under a progress bar on stderr (the sample being timed, the seconds left),
    then ``models`` (those of ``graphs``) run in the VM here (:func:`measure_contexts`; not with an
    RPC ``session``), then the device regressors and pattern fits saved beside the log, so the next
    cost model loads them instead of training; ``stats`` gains ``seconds``, ``contexts`` (the
    records) and ``models`` (the paths). ``profile`` and ``compile --profile-budget`` share it."""
    from tqdm import tqdm

    from ..cost_models.profiled import ProfiledCostModel

    t0 = time.monotonic()
    passes = _passes(session)  # as profile() times them
    with tqdm(unit="sample", dynamic_ncols=True) as bar:
        def progress(event, what, left):
            if event == "total":
                bar.write(f"{what // passes} samples to time {passes} times each on {','.join(d.name for d in devices)}"
                          f"{where}; log {folder}/profile.jsonl")
                bar.reset(total=what)
                return
            if event == "build":
                bar.set_description(what, refresh=True)
                return
            if event == "retime":
                bar.write(f"{what} samples slower than {OUT_OF_ORDER:.2f}x a larger size of their "
                          "series: timing them again")
                bar.reset(total=what)
                return
            bar.set_description(what[:48], refresh=False)
            if left is not None:
                bar.set_postfix_str(f"{left:.0f} s left", refresh=False)
            bar.update(1)

        stats = profile(graphs, devices, folder, schedules, budget_s, progress, session, fingerprint)
        stats["contexts"] = [] if session is not None else measure_contexts(
            list(models), devices, folder, schedules, say=bar.write)
    log = ProfileLog(folder)
    log.compact(drop=off_grid(log, graphs, devices, schedules.stamp if schedules is not None else ""))
    model = ProfiledCostModel(folder, log=log)  # the log just read, not read again
    stats["models"] = model.save_regressors() + [model.save_fits()]
    stats["seconds"] = time.monotonic() - t0
    return stats
