"""Kernel tuning: MetaSchedule databases in ``tuning_logs/<hardware-fingerprint>/``, used by builds.

EOP deploys every operator with the best schedule TVM's tuner found (Sec. 2.1); TVM 0.27's default
llvm pipeline leaves CPU kernels as unscheduled loops, so a plan compared against naive-loop
kernels would be meaningless. The kernels tuned here are exactly the fused PrimFuncs a build
launches (:func:`tvm_partition.build.lower`), per device and per part shape.

A database is MetaSchedule's own JSON pair (``database_workload.json`` and
``database_tuning_record.json``, one JSON record per line, appended as trials are measured): a
killed tuning run loses only the trials in flight, and a rerun skips every kernel that already
has a record (so a kernel killed mid-search keeps its partial search).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
import time

import tvm

from .devices import DeviceSpec, fingerprint_id

#: The shipped tuning logs (the repository's ``tuning_logs/``); override with --tuning-logs.
DEFAULT_LOGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tuning_logs")


class TuningError(RuntimeError):
    """Tuning cannot run (no such device here, unreadable database); the message says why."""


@dataclasses.dataclass
class Kernel:
    name: str  # PrimFunc name in the lowered module (first one seen)
    device: DeviceSpec
    mod: tvm.IRModule  # the normalised workload: {"main": PrimFunc}
    flops: float

    @property
    def computes(self) -> bool:
        """Does arithmetic. Kernels that only move data (slices, reshapes: TVM estimates 0 FLOPs)
        keep TVM's default schedule and are never tuned."""
        return self.flops > 0


def database_dir(logs: str | None = None, fingerprint: str | None = None) -> str:
    """``logs`` itself if it already holds a database, else ``logs/<fingerprint>``."""
    logs = logs or DEFAULT_LOGS
    if os.path.exists(os.path.join(logs, "database_workload.json")):
        return logs
    return os.path.join(logs, fingerprint or fingerprint_id())


#: Databases opened for reading, by (folder, size and mtime of its files): parsing a database of a
#: few thousand records takes seconds, and a benchmark compiles many builds against the same one.
_OPENED: dict = {}


def _stamp(path: str) -> tuple:
    files = [os.path.join(path, f) for f in ("database_workload.json", "database_tuning_record.json")]
    return tuple((os.stat(f).st_size, os.stat(f).st_mtime_ns) if os.path.exists(f) else None for f in files)


def open_database(path: str, create: bool = False):
    """MetaSchedule JSONDatabase at ``path`` (None if absent and not ``create``). Read-only opens
    of unchanged files share one parsed database; ``create`` (tuning) always opens a fresh one."""
    import tvm.s_tir.meta_schedule as ms

    if not create and not os.path.exists(os.path.join(path, "database_workload.json")):
        return None
    key = (os.path.abspath(path), _stamp(path))
    if not create and key in _OPENED:
        return _OPENED[key]
    os.makedirs(path, exist_ok=True)
    try:
        db = ms.database.JSONDatabase(work_dir=path, allow_missing=True)
    except Exception as e:  # noqa: BLE001 - MetaSchedule reports corrupt files with TVM errors
        raise TuningError(f"{path}: unreadable tuning database ({str(e).splitlines()[-1]})") from None
    if not create:
        _OPENED.clear()  # keep one: a stale parse of the same folder is never wanted again
        _OPENED[key] = db
    return db


def tuning_target(device: DeviceSpec):
    """The target MetaSchedule tunes and queries with: the device's, plus the core count it needs."""
    target = dict(device.target)
    if device.kind == "cpu":
        target.setdefault("num-cores", os.cpu_count() or 1)
        return tvm.target.Target(target)
    return device.tvm_target()


def kernel_module(func: tvm.tirx.PrimFunc) -> tvm.IRModule:
    """The workload MetaSchedule sees: the PrimFunc alone, named main, without build-time attributes."""
    for attr in ("target", "global_symbol", "tirx.is_scheduled"):
        if func.attrs and attr in func.attrs:
            func = func.without_attr(attr)
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def kernels_of(mod: tvm.IRModule, kernel_devices: dict[str, str], devices: list[DeviceSpec]) -> list[Kernel]:
    """Distinct kernels (per device) of a lowered module, heaviest first."""
    import tvm_ffi

    by_name = {d.name: d for d in devices}
    seen, out = set(), []
    for gv, func in mod.functions_items():
        if not isinstance(func, tvm.tirx.PrimFunc) or gv.name_hint not in kernel_devices:
            continue
        dev = by_name[kernel_devices[gv.name_hint]]
        kmod = kernel_module(func)
        key = (tvm_ffi.structural_hash(kmod), dev.name)
        if key in seen:
            continue
        seen.add(key)
        out.append(Kernel(gv.name_hint, dev, kmod, _flops(kmod)))
    return sorted(out, key=lambda k: -k.flops)


def _flops(kmod) -> float:
    try:
        return float(tvm.s_tir.analysis.estimate_tir_flops(kmod))
    except Exception:  # noqa: BLE001 - estimation is advisory (ordering only)
        return 0.0


def _same_target(a, b) -> bool:
    """Same device kind and the same CPU (mcpu) or GPU (arch): a schedule tuned for one never lands on another."""
    if a is None or b is None or a.kind.name != b.kind.name:
        return False
    key = "arch" if a.kind.name == "cuda" else "mcpu"
    return str(a.attrs.get(key, "")) == str(b.attrs.get(key, ""))


def best_record(db, mod: tvm.IRModule, target):
    """The fastest record of workload ``mod`` tuned for ``target`` (MetaSchedule's own query
    ignores the target, so a CPU schedule could be applied to a GPU kernel of the same shape)."""
    if db is None or not db.has_workload(mod):
        return None
    workload = db.commit_workload(mod)  # the existing entry: has_workload said so
    for record in db.get_top_k(workload, 64):
        if _same_target(record.target, target):
            return record
    return None


def is_default(record) -> bool:
    """A record of TVM's default schedule, measured by :func:`measure_defaults`: its trace only
    looks up the root block (MetaSchedule's databases never return a record with an empty trace)."""
    return [inst.kind.name for inst in record.trace.insts] == ["GetSBlock"]


def _default_trace(kmod: tvm.IRModule):
    sch = tvm.s_tir.Schedule(kmod)
    sch.get_sblock("root", func_name="main")  # a no-op: the kernel keeps TVM's default schedule
    return sch.trace


def _has_default(db, kernel: Kernel) -> bool:
    if db is None or not db.has_workload(kernel.mod):
        return False
    target = tuning_target(kernel.device)
    return any(is_default(r) and _same_target(r.target, target)
               for r in db.get_top_k(db.commit_workload(kernel.mod), 1 << 16))


def measure_defaults(db, kernels: list[Kernel]) -> int:
    """Time TVM's default schedule of each CPU kernel with MetaSchedule's own builder and runner and
    record it (:func:`is_default`) beside the tuned candidates, so the fastest record of a kernel is
    its best *known* schedule: a tuned schedule is applied only where it beats the default (for
    tiny element-wise kernels, the threading a tuned schedule adds can cost more than it saves).
    GPU kernels have no default schedule (dlight schedules them at build time). Returns how many
    kernels were measured."""
    import shutil

    import tvm.s_tir.meta_schedule as ms

    todo = [k for k in kernels if k.device.kind == "cpu" and not _has_default(db, k)]
    if not todo:
        return 0
    built = _builder().build([ms.builder.BuilderInput(k.mod, tuning_target(k.device)) for k in todo])
    ok = [(k, b) for k, b in zip(todo, built) if b.error_msg is None]
    futures = _runner().run([ms.runner.RunnerInput(b.artifact_path, "cpu",
                                                ms.arg_info.ArgInfo.from_prim_func(k.mod["main"])) for k, b in ok])
    measured = 0
    for (k, b), future in zip(ok, futures):
        result = future.result()
        shutil.rmtree(os.path.dirname(b.artifact_path), ignore_errors=True)
        if result.error_msg is not None or not result.run_secs:
            continue
        db.commit_tuning_record(ms.database.TuningRecord(
            _default_trace(k.mod), db.commit_workload(k.mod), [float(x) for x in result.run_secs],
            tuning_target(k.device), ms.arg_info.ArgInfo.from_prim_func(k.mod["main"])))
        measured += 1
    return measured


def is_tuned(db, kernel: Kernel) -> bool:
    return best_record(db, kernel.mod, tuning_target(kernel.device)) is not None


def scheduled(kmod: tvm.IRModule, record) -> tvm.tirx.PrimFunc:
    """The kernel ``kmod`` (see :func:`kernel_module`) with the schedule of a tuning ``record``.

    The trace is applied to the record's own workload, as MetaSchedule's ``query_schedule`` does:
    it is structurally equal to ``kmod`` (that is how the record was found) but its block names are
    the ones the trace refers to, while ``kmod``'s depend on the variable names of the module it
    came from (a profiling sample names its operands differently from a model build)."""
    del kmod  # found by structure; scheduled from the record's own copy
    sch = tvm.s_tir.Schedule(record.workload.mod)
    record.trace.apply_to_schedule(sch, remove_postproc=False)
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def apply_database(mod: tvm.IRModule, kernel_devices: dict[str, str], devices: list[DeviceSpec], db):
    """Replace every kernel the database has a record for by its tuned schedule.

    Returns ``(module, tuned kernel names)``. Tuned PrimFuncs carry ``tirx.is_scheduled``, so
    dlight leaves them alone; the rest fall back to dlight (GPU) or the default llvm pipeline (CPU),
    as do kernels whose fastest record is TVM's default schedule (:func:`measure_defaults`).
    """
    if db is None:
        return mod, []
    by_name = {d.name: d for d in devices}
    out = tvm.IRModule(dict(mod.functions), attrs=mod.attrs, global_infos=mod.global_infos)
    tuned = []
    for gv, func in mod.functions_items():
        if not isinstance(func, tvm.tirx.PrimFunc) or gv.name_hint not in kernel_devices:
            continue
        dev = by_name[kernel_devices[gv.name_hint]]
        kmod = kernel_module(func)
        record = best_record(db, kmod, tuning_target(dev))
        if record is None or is_default(record):
            continue
        new = scheduled(kmod, record).with_attr("global_symbol", func.attrs.get("global_symbol", gv.name_hint))
        out[gv] = new.with_attr("target", func.attrs["target"])
        tuned.append(gv.name_hint)
    return out, sorted(tuned)


def _progress_callback(ks: list[Kernel], progress):
    """A MetaSchedule measure callback reporting ``progress(kernel, trials measured)`` per batch."""
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback
    from tvm.ir.utils import derived_object

    @derived_object
    class Progress(PyMeasureCallback):
        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            progress(ks[task_id], len(measure_candidates))

    return Progress()


def tune(kernels: list[Kernel], db_path: str, *, trials: int = 64, budget_s: float | None = None,
         batch: int = 8, progress=None) -> dict:
    """Tune every kernel without a record, heaviest first, appending to the database at ``db_path``.

    Kernels are tuned ``batch`` at a time in one MetaSchedule session (its start-up, builder and
    runner pools cost tens of seconds, so one session per kernel would dominate); records are
    appended as trials are measured. ``budget_s`` stops starting new batches once spent. Then
    the default schedule of every CPU kernel not yet measured joins the database
    (:func:`measure_defaults`).
    ``progress(kernel, n)`` is called as each round of ``n`` trials of a kernel is measured.
    Returns counts: tuned, skipped, left, defaults (default schedules measured).
    """
    import tvm.s_tir.meta_schedule as ms

    db = open_database(db_path, create=True)
    t0 = time.perf_counter()
    stats = {"tuned": 0, "skipped": 0, "left": 0, "defaults": 0}
    todo = []
    for k in kernels:
        if is_tuned(db, k):
            stats["skipped"] += 1
        else:
            todo.append(k)
    for k in todo:
        if k.device.kind == "gpu" and not k.device.tvm_device().exist:
            raise TuningError(f"kernel {k.name} is for the GPU, which this machine does not have: "
                              "tune GPU kernels on the GPU machine")
    groups: dict = {}
    for k in todo:  # one session per target
        groups.setdefault(k.device.name, []).append(k)
    batches = [ks[i : i + batch] for ks in groups.values() for i in range(0, len(ks), batch)]
    for j, ks in enumerate(batches):
        if budget_s is not None and time.perf_counter() - t0 >= budget_s:
            stats["left"] = sum(len(b) for b in batches[j:])
            break
        # each task's workload must be exactly kernel_module(): {"main": PrimFunc named main};
        # MetaSchedule orders tasks by name, so the zero-padded names keep the order of ks
        mod = tvm.IRModule({f"k{i:03d}": k.mod["main"] for i, k in enumerate(ks)})
        # the evolutionary search's population scales with the trials asked for (its default of
        # 512 candidates per round costs minutes per kernel on a small machine)
        strategy = ms.search_strategy.EvolutionarySearch(
            population_size=max(32, min(512, 8 * trials)), init_min_unmeasured=min(50, 4 * trials),
            genetic_num_iters=2 if trials <= 16 else 4,
        )
        # MetaSchedule sizes its console handler from this logger's level at each session start,
        # then sets the level to DEBUG: without resetting it, every session after the first
        # prints its per-round INFO tables over the progress bar
        logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
        callbacks = list(ms.measure_callback.MeasureCallback.create("default"))
        if progress is not None:
            callbacks.append(_progress_callback(ks, progress))
        with tempfile.TemporaryDirectory(prefix="tvmp-tune-") as work:
            ms.tir_integration.tune_tir(
                mod, tuning_target(ks[0].device), work, max_trials_global=trials * len(ks),
                max_trials_per_task=trials, num_trials_per_iter=min(trials, 16), database=db,
                strategy=strategy, num_tuning_cores=os.cpu_count() or 1, measure_callbacks=callbacks,
                builder=_builder(), runner=_runner(),
            )
        stats["tuned"] += sum(1 for k in ks if is_tuned(db, k))
    stats["defaults"] = measure_defaults(db, [k for k in kernels if is_tuned(db, k)])
    return stats


def _builder():
    import tvm.s_tir.meta_schedule as ms

    # a fresh builder worker imports TVM and its tensor intrinsics first: tens of seconds on a
    # small machine, over MetaSchedule's 30 s default
    return ms.builder.LocalBuilder(timeout_sec=600)


def _runner():
    import tvm.s_tir.meta_schedule as ms

    return ms.runner.LocalRunner(timeout_sec=120)
