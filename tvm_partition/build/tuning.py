"""Kernel tuning: MetaSchedule's search over the kernels of a build, and the schedules builds read
off its databases in ``tuning_logs/<hardware-fingerprint>/`` (:mod:`.databases`).

EOP deploys every operator with the best schedule TVM's tuner found (Sec. 2.1); TVM 0.27's default
llvm pipeline leaves CPU kernels as unscheduled loops, so a plan compared against naive-loop
kernels would be meaningless. The kernels tuned here are exactly the fused PrimFuncs a build
launches (:func:`tvm_partition.build.executable.lower`), per device and per part shape. A killed
tuning run loses only the trials in flight, and a rerun gives each kernel the trials it lacks
(:func:`trials_measured`), its search seeded by the records it has.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import math
import os
import tempfile
import time

import tvm

from ..devices import DEFAULT_LOGS, DeviceSpec, usable_cpus
from ..ir.relax_utils import ByStructure, copy_module
from . import databases, templates
from .databases import RACES_FILE, TuningError, database_digest, open_best, open_database
from .transfer import same_device


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


def tuning_target(device: DeviceSpec):
    """The target MetaSchedule tunes and queries with: the device's, plus the core count it needs."""
    target = dict(device.target)
    if device.kind == "cpu":  # the machine's cores, not the quota: records are looked up by target
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
        out.append(Kernel(gv.name_hint, dev, kmod, kernel_flops(kmod)))
    return sorted(out, key=lambda k: -k.flops)


def kernel_flops(kmod) -> float:
    try:
        return float(tvm.s_tir.analysis.estimate_tir_flops(kmod))
    except Exception:  # noqa: BLE001 - estimation is advisory (ordering only)
        return 0.0


def best_record(db, mod: tvm.IRModule, target):
    """The fastest record of workload ``mod`` tuned for ``target`` (MetaSchedule's own query
    ignores the target, so a CPU schedule could be applied to a GPU kernel of the same shape)."""
    if db is None or not db.has_workload(mod):
        return None
    workload = db.commit_workload(mod)  # the existing entry: has_workload said so
    for record in db.get_top_k(workload, 64):
        if same_device(record.target, target):
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
    return any(is_default(r) and same_device(r.target, target)
               for r in db.get_top_k(db.commit_workload(kernel.mod), 1 << 16))


def measure_defaults(db, kernels: list[Kernel], pools: _Pools | None = None) -> int:
    """Time TVM's default schedule of each CPU kernel with MetaSchedule's own builder and runner and
    record it (:func:`is_default`) beside the tuned candidates, so the fastest record of a kernel is
    its best *known* schedule: a tuned schedule is applied only where it beats the default (for
    tiny element-wise kernels, the threading a tuned schedule adds can cost more than it saves).
    GPU kernels have no default schedule (dlight schedules them at build time). Returns how many
    kernels were measured. ``pools``: the builder and runner of the tuning session before, if any."""
    import shutil

    import tvm.s_tir.meta_schedule as ms

    todo = [k for k in kernels if k.device.kind == "cpu" and not _has_default(db, k)]
    if not todo:
        return 0
    pools = pools or _Pools()
    built = pools.builder.build([ms.builder.BuilderInput(k.mod, tuning_target(k.device)) for k in todo])
    ok = [(k, b) for k, b in zip(todo, built) if b.error_msg is None]
    futures = pools.runner.run([ms.runner.RunnerInput(b.artifact_path, "cpu",
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


def trials_measured(db, kernel: Kernel) -> int:
    """How many MetaSchedule trials of ``kernel`` the database holds for its target (TVM's default
    schedule and transferred schedules measured on it are not trials)."""
    from .transfer import provenance

    if db is None or not db.has_workload(kernel.mod):
        return 0
    target = tuning_target(kernel.device)
    return sum(1 for r in db.get_top_k(db.commit_workload(kernel.mod), 1 << 16)
               if same_device(r.target, target) and not is_default(r) and provenance(r.trace) is None)


def is_tuned(db, kernel: Kernel) -> bool:
    """Has a record found by tuning (or TVM's default, measured faster): a transferred schedule
    measured on the kernel (:func:`transfer_search`) does not count, so tuning still searches it."""
    from .transfer import provenance

    record = best_record(db, kernel.mod, tuning_target(kernel.device))
    return record is not None and provenance(record.trace) is None


def scheduled(kmod: tvm.IRModule, record, target=None) -> tvm.tirx.PrimFunc:
    """The kernel ``kmod`` (see :func:`kernel_module`) with the schedule of a tuning ``record``.

    The trace is applied to the record's own workload, as MetaSchedule's ``query_schedule`` does:
    it is structurally equal to ``kmod`` (that is how the record was found) but its block names are
    the ones the trace refers to, while ``kmod``'s depend on the variable names of the module it
    came from (a profiling sample names its operands differently from a model build).

    ``target`` (the one builds query with): a record MetaSchedule found for a kernel under
    :data:`tvm_partition.build.transfer.SERIAL_FLOPS` on a CPU is replayed without its parallel loop,
    as transferred schedules are (its design, the root's ``meta_schedule.parallel`` taken off,
    MetaSchedule's postprocessors again). Why: a parallel call costs the VM more than the kernel
    timed alone back to back: the rocketlake VM's LSTM (sequence 10, batch 16) ran its two kernels on
    such records (16 x 80 x 256 and 16 x 64 x 256, 10 calls a run) with the thread pool, the build
    234.4 us in the VM at two threads against 219.3 at one (its kernels alone 171.8 and 181.7), and
    with those records serial 0.941x (0.938-0.955), the README's LSTM (sequence 100) 0.917x
    (``benchmarks/paired.py --in-process`` against the build before, 2026-12-04)."""
    from .transfer import TransferError, provenance, run_postprocs, serial

    del kmod  # found by structure; scheduled from the record's own copy
    sch = tvm.s_tir.Schedule(record.workload.mod)
    if target is None or provenance(record.trace) is not None or not serial(record.workload.mod, target):
        record.trace.apply_to_schedule(sch, remove_postproc=False)
        return sch.mod["main"].with_attr("tirx.is_scheduled", True)
    record.trace.apply_to_schedule(sch, remove_postproc=True)
    root = sch.get_sblock("root", func_name="main")
    if "meta_schedule.parallel" not in sch.get(root).annotations:
        return scheduled(None, record)  # nothing to take off: the record as tuned
    sch.unannotate(root, "meta_schedule.parallel")
    sch.enter_postproc()
    try:
        run_postprocs(sch, target)
    except TransferError:  # a postprocessor refused the design without its loop: the record as tuned
        return scheduled(None, record)
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def apply_schedules(mod: tvm.IRModule, kernel_devices: dict[str, str], devices: list[DeviceSpec], schedules):
    """Give every kernel the best schedule ``schedules`` (:class:`Schedules`) knows for it.

    Returns ``(module, {kernel name: label})`` for the kernels that got one (``tuned``, or
    ``transferred from ...``). Scheduled PrimFuncs carry ``tirx.is_scheduled``, so dlight leaves
    them alone; the rest fall back to dlight (GPU) or the default llvm pipeline (CPU), as do
    kernels whose fastest record is TVM's default schedule (:func:`measure_defaults`)."""
    if schedules is None:
        return mod, {}
    by_name = {d.name: d for d in devices}
    out = copy_module(mod)
    labels = {}
    for gv, func in mod.functions_items():
        if not isinstance(func, tvm.tirx.PrimFunc) or gv.name_hint not in kernel_devices:
            continue
        new, label = schedules.schedule(kernel_module(func), tuning_target(by_name[kernel_devices[gv.name_hint]]))
        if new is None:
            continue
        new = new.with_attr("global_symbol", func.attrs.get("global_symbol", gv.name_hint))
        out[gv] = new.with_attr("target", func.attrs["target"])
        labels[gv.name_hint] = label
    return out, labels


# ----------------------------------------------------------------------------- transfer
def _mean_secs(record) -> float:
    return sum(float(x) for x in record.run_secs) / len(record.run_secs)


def transfer_sources(best, label: str) -> list:
    """The schedules other kernels may borrow (:mod:`tvm_partition.build.transfer`) from ``best`` (a
    database of one record per workload and target, :func:`open_best`): every record but those of
    TVM's default schedule (a tuned trace that lost to the default on its own kernel is no better
    on another)."""
    from .transfer import source_of

    return [source_of(rec, label, kernel_flops(rec.workload.mod) / _mean_secs(rec) / 1e9)
            for rec in best.get_all_tuning_records() if not is_default(rec) and _mean_secs(rec) > 0]


def shipped_databases() -> list[str]:
    """The database folders shipped in :data:`DEFAULT_LOGS`, one per machine."""
    if not os.path.isdir(DEFAULT_LOGS):
        return []
    return [os.path.join(DEFAULT_LOGS, d) for d in sorted(os.listdir(DEFAULT_LOGS))
            if os.path.exists(os.path.join(DEFAULT_LOGS, d, "database_workload.json"))]


#: Transfer indexes by the (folder, stamp) of the databases they were built from.
_INDEXES: dict = {}


def transfer_index(folders: list[str]):
    """A :class:`tvm_partition.build.transfer.TransferIndex` over the databases in ``folders``."""
    from .transfer import TransferIndex

    key = tuple((os.path.abspath(f), databases.stamp(f)) for f in folders)
    if key not in _INDEXES:
        sources = []
        for folder in folders:
            db = open_best(folder)
            if db is not None:
                sources += transfer_sources(db, os.path.basename(os.path.normpath(folder)))
        _INDEXES.clear()
        _INDEXES[key] = TransferIndex(sources)
    return _INDEXES[key]


@dataclasses.dataclass
class Schedules:
    """Where a build's kernels get their schedules: a direct convolution or an element-wise kernel
    a hand-written CPU schedule (:mod:`tvm_partition.build.templates`: faster than this machine's
    tuned records of the same convolutions, 1.1 ms against 1.5-3.4 ms on ResNet-18's 3x3 ones), else a record of
    this kernel in ``db`` (this machine's database), else a transfer from any record of the same
    computation at other extents (``index``: this database and the shipped ones,
    :mod:`tvm_partition.build.transfer`), else TVM's default schedule. ``path`` is ``db``'s folder
    (None where this machine has none)."""

    path: str | None
    db: object | None
    index: object | None
    #: what the schedules were drawn from: a digest of every database read ("" for none), which
    #: profile samples record so that a sample timed before the databases changed is timed again
    stamp: str = ""
    #: the source each kernel was scheduled from: ``{target kind|signature: [(main extents, Source)]}``
    chosen: dict = dataclasses.field(default_factory=dict)
    #: direct convolutions and element-wise kernels get the hand-written schedules (off where
    #: records alone are asked for)
    templates: bool = True
    #: the matmul template's races against records tuned here (:func:`race_templates`)
    races: dict = dataclasses.field(default_factory=dict)
    #: :meth:`_choose`'s answers by kernel (structural hash and target): a build asks twice for each
    #: kernel, aligning the splits (:mod:`tvm_partition.build.align`) and scheduling (ResNet-18's
    #: ``equal`` build: 123 choices, 34 of them asked before, 2.13 -> 0.91 s with the cache of
    #: :func:`templates.common._root_blocks`; 2026-11-29, cProfile); not copied by ``dataclasses.replace``,
    #: so a copy with other settings chooses afresh
    _answers: ByStructure = dataclasses.field(default_factory=ByStructure, init=False, repr=False, compare=False)

    def schedule(self, kmod: tvm.IRModule, target) -> tuple[tvm.tirx.PrimFunc | None, str]:
        """``(scheduled kernel or None, label)``: label ``tuned``, ``transferred from DB: KERNEL``,
        :func:`tvm_partition.build.templates.label` or ``default`` (then the kernel is None: keep
        TVM's default schedule)."""
        func, label, _ = self._choose(kmod, target)
        return func, label

    def inner_tiles(self, kmod: tvm.IRModule, target) -> dict[int, int]:
        """``{axis: innermost tile}`` of the schedule :meth:`schedule` gives ``kmod``
        (:func:`tvm_partition.build.transfer.innermost_tiles`); empty for the default schedule."""
        from .transfer import innermost_tiles

        _, label, source = self._choose(kmod, target)
        if label.startswith("template"):
            return templates.inner_tiles(kmod, target)
        return {} if source is None else innermost_tiles(kmod, source)

    def _choose(self, kmod, target):
        return self._answers.get(kmod, (str(target),), lambda: self._choose_afresh(kmod, target))

    def _choose_afresh(self, kmod, target):
        from .transfer import blocks_of, main_block, provenance, signature, source_of, transfer

        done = templates.templated(kmod, target) if self.templates else None
        if done is not None and done[1] not in templates.MATMUL_LABELS:
            return (*done, None)
        record = best_record(self.db, kmod, target)
        # the matmul template outranks every record but one tuning measured here for exactly this
        # kernel (MetaSchedule's, or the default it kept), and that one too where it lost a race
        # against the template (race_templates): BERT-tiny's records, tuned at their shapes, ran
        # its K = 128 matmuls 0.86-1.0x of the template, the RNNs' gate matmuls at batch 16 as
        # much as 2.2x; records replayed from other shapes or machines give way
        if done is not None and (record is None or provenance(record.trace) is not None
                                 or template_won(self.races, kmod, target, record)):
            return (*done, None)
        blocks = blocks_of(kmod)
        if not blocks:  # no root block (TOPI's scatters): no schedule could name its loops
            return None, "default", None
        # siblings are looked up per target kind: a CPU trace never lands on a GPU kernel
        extents, sig = blocks[main_block(blocks)].extents, f"{target.kind.name}|{signature(blocks)}"
        if record is not None:
            if is_default(record):
                return None, "default", None
            origin = provenance(record.trace)
            source = source_of(record, os.path.basename(os.path.normpath(self.path or "")), 0.0)
            self.chosen.setdefault(sig, []).append((extents, source))
            return (scheduled(kmod, record, target), "tuned" if origin is None else f"transferred from {origin} (measured)",
                    source)
        moved = self._from_sibling(kmod, target, sig, extents)
        if moved is None and self.index is not None:
            moved = transfer(kmod, target, self.index)
        if moved is None:
            done = templates.fallback(kmod, target) if self.templates else None
            return (None, "default", None) if done is None else (*done, None)
        self.chosen.setdefault(sig, []).append((extents, moved.source))
        return moved.func, f"transferred from {moved.source.label}", moved.source

    def _from_sibling(self, kmod, target, sig: str, extents: tuple):
        """The schedule of a kernel scheduled before that differs from ``kmod`` in one axis only (a
        split's part and its whole op: the build aligns every whole op before it builds the parts,
        :mod:`tvm_partition.build.align`), so a part runs its whole op's schedule. Chosen afresh, a part
        of a ResNet-18 convolution at 32 of 64 channels took another record, nearer in all axes,
        and ran 531 us where its whole op's ran 61 (141 us whole; 2026-11-23)."""
        from .transfer import TransferError, Transferred, replay

        near = sorted((sum(a != b for a, b in zip(e, extents)), n, src)
                      for n, (e, src) in enumerate(self.chosen.get(sig, ())) if len(e) == len(extents))
        for diff, _, src in near:
            if diff > 1:
                break
            try:
                return Transferred(replay(kmod, src.trace, src.blocks, target), src)
            except TransferError:
                continue
        return None


#: The version of :mod:`tvm_partition.build.transfer`'s replay rules, in every :class:`Schedules`
#: stamp: 2 keeps the parallel loop of a part (:func:`tvm_partition.build.transfer.fit_tile`),
#: 3 schedules direct convolutions by :mod:`tvm_partition.build.templates`, 4 element-wise kernels too,
#: 5 grouped and depthwise convolutions too, 6 legalizes sigmoid, tanh and exp on polynomials that
#: vectorise (:mod:`tvm_partition.ir.fastmath`: the kernels changed, not their schedules), 7 GELU too,
#: 8 names blocks TOPI named after an input by the input's role, not its name
#: (:func:`tvm_partition.build.transfer.blocks_of`: profile samples of layer norms found records),
#: 9 legalizes softmax on ``fast_exp`` and schedules it by :mod:`tvm_partition.build.templates`,
#: 10 gives narrow convolution outputs register tiles of several vectors of output channels
#: (:func:`tvm_partition.build.templates.convolution._blocks`), 11 runs replayed CPU kernels of fewer than
#: :data:`tvm_partition.build.transfer.SERIAL_FLOPS` without their parallel loop, 12 raises that
#: threshold from 350k to 700k FLOP (the RNNs' whole matmuls at batch 16 run serial too), 13
#: accumulates a replayed reduction's register tile in a local buffer and keeps the register tile
#: of axes that are not vectorised at extents it does not divide
#: (:func:`tvm_partition.build.transfer.local_accumulator`, :func:`~tvm_partition.build.transfer.register_tile`),
#: 14 grows register tiles of at most :data:`tvm_partition.build.transfer.MAX_REGISTER_ROWS` rows only,
#: 15 inlines the blocks of element-wise kernels too small for a parallel loop
#: (:data:`tvm_partition.build.templates.INLINED_LABEL`), 16 gives convolutions whose output
#: channels are a multiple of half the vector width the direct-convolution template, 17 keeps a
#: replayed kernel's vector loops within its output rows (:func:`tvm_partition.build.transfer._vector_within_rows`),
#: 18 schedules max and average pooling by :mod:`tvm_partition.build.templates` (channels in parallel),
#: 19 runs a direct convolution whose input outweighs its weights rows first in its parallel loop
#: (:func:`tvm_partition.build.templates.convolution._rows_outer`), 20 schedules matmuls with constant weights by
#: :mod:`tvm_partition.build.templates` (packed weights, register tiles of 4 rows), 21 runs element-wise
#: kernels that only move data in parallel from 65,536 elements (:data:`tvm_partition.build.templates.common.MIN_MOVED_ELEMENTS`, was 262,144),
#: 22 schedules matrix-vector products by the matmul template too (one-row tiles:
#: :data:`tvm_partition.build.templates.matmul.GEMV_VECTORS`), 23 vectorises 1x1 stride-1 convolutions
#: along their pixels (:func:`tvm_partition.build.templates.convolution._pointwise_plan`), 24 leaves to the
#: channel-vector template the 1x1s whose input planes are a multiple of 4 KiB or whose tile would
#: hold fewer than 3 vectors (:data:`tvm_partition.build.templates.convolution.ALIASED_PLANE_BYTES`), 25 takes
#: a replay with no parallel loop only where no other candidate has one
#: (:func:`tvm_partition.build.transfer.transfer`), 26 schedules layer norms over the last axis by
#: :mod:`tvm_partition.build.templates` (rows in parallel, from 65,536 outputs), 27 reductions over
#: the innermost axes too (:func:`tvm_partition.build.templates.reductions._reduce_plan`: a global average pool),
#: 28 leaves strided convolutions of several input channels a group to their replayed records
#: (:func:`tvm_partition.build.templates.grouped._group_plan`), 29 gives the matmul template batched matmuls
#: of computed operands with long reductions and sequence-first projections' tokens as rows
#: (:data:`tvm_partition.build.templates.matmul.MIN_BATCHED_REDUCTION`, :func:`tvm_partition.ir.relax_utils.matmul_row_axis`),
#: and the softmax and layer norm templates a padding of their rows and softmax rows of no whole
#: vector (:func:`tvm_partition.build.templates.reductions._epilogue_in_parallel`), 30 vectorises depthwise
#: convolutions along their channels (:func:`tvm_partition.build.templates.grouped._depthwise_plan`), 31
#: computes a convolution template's epilogue in its write-back, a vector of channels at a time
#: (:func:`tvm_partition.build.templates.convolution._write_back_by_channels`), 32 vectorises an epilogue of
#: another shape (a squeeze-and-excitation's scaling) and runs a direct convolution below
#: :data:`tvm_partition.build.transfer.SERIAL_FLOPS` without its parallel loop, 33 inlines a direct
#: convolution's padding stage where it pads nothing (:func:`tvm_partition.build.templates.convolution._copied`),
#: 34 gives grouped convolutions whose groups' output channels fill whole vectors the
#: direct-convolution template (:data:`tvm_partition.build.templates.convolution.MIN_GROUP_LANES`), 35 gives a
#: matmul no record schedules the matmul template, whatever its reduction and rows
#: (:func:`tvm_partition.build.templates.fallback`), 36 layer norms and softmaxes under their
#: templates' floor too, 37 gives direct convolutions on full-width AVX-512 CPUs tiles of 7 pixels
#: x 2 vectors and leaves them the 1x1s whose strip outgrows the L1 cache
#: (:data:`tvm_partition.build.templates.convolution.PAIRED_ROW`, :data:`~tvm_partition.build.templates.convolution.POINTWISE_STRIP_BYTES`),
#: 38 gives direct convolutions whose width no good tile divides a tile whose last one in each row
#: is shorter (:func:`tvm_partition.build.templates.convolution._tail_tile`), 39 gives reductions whose rows
#: hold no whole vector partial results of a divisor of the row (:func:`tvm_partition.build.templates.reductions._divisor_lanes`),
#: 40 gives channels-first 1x1s of long reductions on full-width AVX-512 two vectors of output
#: channels where their width's tile held one (:data:`tvm_partition.build.templates.convolution.LONG_1X1_REDUCTION`),
#: 41 runs a matmul whose weights outweigh its rows columns outer
#: (:func:`tvm_partition.build.templates.matmul._columns_outer`) and gives matmuls on full-width AVX-512
#: tiles of 7 or 13 rows (:data:`tvm_partition.build.templates.matmul.WIDE_MATMUL_ROWS`), 42 cuts an
#: element-wise kernel's concatenation of many inputs into a loop per input
#: (:func:`tvm_partition.build.templates.elementwise._concat_cuts`), 43 gives the 1x1 template the 1x1s whose
#: strip outgrows the L1 cache where the direct template has no 7 x 2 tile for them
#: (:func:`tvm_partition.build.templates.convolution._paired_tile`), 44 keeps the 1x1 template's accumulator
#: tile on the stack, 45 the direct convolution template's (:data:`tvm_partition.build.templates.common.TILE_SCOPE`),
#: 46 cuts the reduction of a convolution whose block of weights outgrows the L2 cache into chunks
#: outside the row's tiles (:data:`tvm_partition.build.templates.convolution.LONG_REDUCTION_BYTES`), 47 has long
#: 1x1 convolutions read a channels-last copy of their input (:data:`tvm_partition.build.templates.convolution.CHANNELS_LAST_INPUT`),
#: 48 inlines a row template's epilogue forward first (:func:`tvm_partition.build.templates.reductions._epilogue_in_parallel`),
#: 49 gives columns-outer matmuls tiles of 8 rows and reductions in chunks (:data:`tvm_partition.build.templates.matmul.MATMUL_CHUNK`),
#: 50 batched matmuls of computed operands and short reductions with large outputs the matmul
#: template (:data:`tvm_partition.build.templates.matmul.MIN_BATCHED_OUTPUT`), 51 vectorises a softmax's
#: long rows a register's vector at a time (:data:`tvm_partition.build.templates.reductions.WHOLE_ROW_VECTOR`),
#: 52 leaves the division whole where an epilogue was inlined into it, 53 gives matmuls on full-width
#: AVX-512 that no 7, 13 or 8 rows divide tiles of 12, 10 or 6 rows (:data:`tvm_partition.build.templates.matmul.DIVISOR_MATMUL_ROWS`),
#: 54 gives the 8-row tile only to reductions of at least
#: :data:`tvm_partition.build.templates.matmul.COLUMNS_OUTER_MIN_REDUCTION` (the RNNs' gate matmuls: 4 rows),
#: 55 gives convolutions on AVX-512 whose output planes alias in the L1 cache one vector of channels
#: a tile where their reduction is short, a residual is read or the row keeps the accumulators
#: (:data:`tvm_partition.build.templates.convolution.ALIASED_SHORT_REDUCTION`), 56 pads each channel's plane
#: once in a stride-1 pooling of 13 or more output columns (:data:`tvm_partition.build.templates.pooling.PLANE_PADDING_MIN_WIDTH`),
#: 57 gives Ice Lake's AVX-512 CPUs the 1x1 template whatever its strip (:data:`tvm_partition.build.templates.convolution.POINTWISE_ANY_STRIP`),
#: 58 their 1x1s of long reductions tiles of 4 channels, channels innermost (:data:`tvm_partition.build.templates.convolution.LONG_POINTWISE_REDUCTION`),
#: 59 compiles x86 kernels without vector gathers (:data:`tvm_partition.devices.NO_GATHER`), 60 gives
#: Ice Lake's 1x1s of long reductions on the direct template a channels-last copy of their input at any
#: size (:data:`tvm_partition.build.templates.convolution.CHANNELS_LAST_ICE_LAKE_INPUT`), 61 runs Ice Lake's
#: stride-1 convolutions of several taps over channel blocks first (:data:`tvm_partition.build.templates.convolution.SUNNY_COVE_BLOCKS_FIRST_TAPS`),
#: 62 computes a pooling's rows of 13 or more output columns as vectors (strided ones up to a vector's
#: lanes) and keeps narrower ones' accumulators on the stack (:data:`tvm_partition.build.templates.pooling.POOL_ROW_MIN_WIDTH`),
#: 63 replays records tuned here for kernels under :data:`tvm_partition.build.transfer.SERIAL_FLOPS` without their
#: parallel loop (:func:`scheduled`), 64 has a stride-1 1x1 of 512 or more input channels into 256
#: or more read its input channels last at any size (:data:`tvm_partition.build.templates.convolution.CHANNELS_LAST_OUTPUT`)
#: and cuts a columns-outer matmul's reduction into chunks from 4 tiles of rows, not 16
#: (:data:`tvm_partition.build.templates.matmul.MATMUL_CHUNK_TILES`, changed before without a number),
#: 65 legalizes the tanh-approximated GELU and SiLU on the polynomials (:mod:`tvm_partition.ir.fastmath`),
#: 66 tiles a matmul 4 rows x 3 vectors on AVX2 where they divide the columns
#: (:data:`tvm_partition.build.templates.matmul.NARROW_MATMUL_BLOCKS`), 67 a 1x1 convolution at least 14 wide 6 pixels x 2
#: vectors on AVX2 (:data:`tvm_partition.build.templates.convolution.AVX2_1X1_ROW`), 68 a one-vector matmul
#: tile 16 or 8 rows on full-width AVX-512 (:data:`tvm_partition.build.templates.matmul.ONE_VECTOR_ROWS`) and
#: 1x1s on 4 KiB input planes the 1x1 template on the Emerald Rapids VM
#: (:data:`tvm_partition.build.templates.convolution.ALIASED_INPUT_IGNORED`), 69 the grouped row template's
#: epilogue inlined into its vectorised write-back and a depthwise kernel's padding copied per task
#: (:func:`tvm_partition.build.templates.grouped._schedule_group`), 70 replays a CPU reduction's inner tile
#: as its largest divisor, not a power of two (:func:`tvm_partition.build.transfer.fit_tile`), 71 tiles a
#: ``softmax @ v`` into 4 vectors of columns 4 rows x all 4 on full-width AVX-512
#: (:data:`tvm_partition.build.templates.matmul.ALL_COLUMN_VECTORS`), 72 into 5 vectors too (MobileViT's 40 columns), 73 prefetches a chunked matmul's next chunk of packed
#: weights while its tiles of rows pass the current one (:mod:`tvm_partition.build.templates.prefetch`), 74
#: the direct convolution's next block of output channels' weights inside its tiles' reductions
#: (:func:`tvm_partition.build.templates.convolution._prefetching`), 75 AVX2's 1x1 tile of 6 pixels x 2
#: vectors on input planes of a multiple of 4 KiB too (:data:`tvm_partition.build.templates.convolution.AVX2_1X1_ROW`),
#: 76 the depthwise template's input copy transposed in registers (:mod:`tvm_partition.build.templates.transposed`),
#: 77 transposes between NCHW and NHWC tiled the same way (:func:`tvm_partition.build.templates.elementwise._transposition`),
#: 78 tokens ``[1, H*W, C]`` moved into maps and back too, an element-wise epilogue on the tile staged,
#: 79 stride-1 depthwise convolutions whose rows are whole vectors on the row template on full-width AVX-512
#: (:data:`tvm_partition.build.templates.grouped.MIN_DEPTHWISE_BLOCKS`).
TRANSFER_RULES = 79


def open_schedules(path: str | None, transfer: bool = True) -> Schedules:
    """The :class:`Schedules` of database folder ``path`` (which may not exist yet: this machine
    was never tuned), transferring from it and every shipped database unless ``transfer`` is off."""
    import hashlib

    db = open_best(path) if path else None
    folders = ([path] if db is not None else []) + [f for f in shipped_databases()
                                                     if not path or os.path.abspath(f) != os.path.abspath(path)]
    read = folders if transfer else folders[:1] if db is not None else []
    # the replay rules are part of what a sample ran: a profile times again what they changed
    rules = f"transfer rules {TRANSFER_RULES}" if transfer else ""
    stamp = hashlib.sha1((rules + "".join(database_digest(f) for f in read)).encode()).hexdigest()[:12] if read else ""
    return Schedules(path if db is not None else None, db, transfer_index(folders) if transfer else None,
                     stamp=stamp, templates=transfer, races=load_races(path) if db is not None and transfer else {})


class BudgetSpent(Exception):
    """Raised inside a tuning session when its time budget is spent (caught by :func:`tune`)."""


def _progress_callback(ks: list[Kernel], progress, deadline: float | None, spent: list):
    """A MetaSchedule measure callback reporting ``progress(kernel, trials measured)`` per round of
    trials and ending the session (:class:`BudgetSpent`, noted in ``spent``) once ``deadline``
    (perf_counter) passed: the records of every measured round are already in the database."""
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback
    from tvm.ir.utils import derived_object

    @derived_object
    class Progress(PyMeasureCallback):
        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            if progress is not None:
                progress(ks[task_id], len(measure_candidates))
            if deadline is not None and time.perf_counter() > deadline:
                spent.append(True)
                raise BudgetSpent()

    return Progress()


def tune(kernels: list[Kernel], db_path: str, *, trials: int = 64, budget_s: float | None = None,
         batch: int = 8, progress=None) -> dict:
    """Tune every kernel to ``trials`` MetaSchedule trials, appending to the database at ``db_path``:
    a kernel with fewer trials on record gets the rest (its search seeded by the records it has), so
    a rerun with the same ``trials`` skips it and a rerun with more continues it.

    Kernels are tuned ``batch`` at a time in one MetaSchedule session (its start-up, design
    spaces and first population cost seconds to tens of seconds), in the order
    given (:func:`rank_by_gain` puts the kernels with most to gain first); records are appended as
    trials are measured. ``budget_s`` ends the session in flight after its next measured round
    once spent, and starts no other. Then the default schedule of every CPU kernel not yet
    measured joins the database (:func:`measure_defaults`).
    ``progress(kernel, n)`` is called as each round of ``n`` trials of a kernel is measured.
    Last, the matmul template races the records of the kernels it applies to (:func:`race_templates`).
    Returns counts: tuned, skipped, left, defaults (default schedules measured), raced.
    """
    import tvm.s_tir.meta_schedule as ms

    db = open_database(db_path, create=True)
    t0 = time.perf_counter()
    stats = {"tuned": 0, "skipped": 0, "left": 0, "defaults": 0}
    todo, need = [], {}
    for k in kernels:
        need[k.name, k.device.name] = trials - trials_measured(db, k)
        if need[k.name, k.device.name] <= 0:
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
    deadline = None if budget_s is None else t0 + budget_s
    pools = _Pools()
    for j, ks in enumerate(batches):
        if deadline is not None and time.perf_counter() >= deadline:
            stats["left"] = sum(len(b) for b in batches[j:])
            break
        # each task's workload must be exactly kernel_module(): {"main": PrimFunc named main};
        # MetaSchedule orders tasks by name, so the zero-padded names keep the order of ks
        mod = tvm.IRModule({f"k{i:03d}": k.mod["main"] for i, k in enumerate(ks)})
        per_task = max(need[k.name, k.device.name] for k in ks)
        # the evolutionary search's population scales with the trials asked for (its default of
        # 512 candidates per round costs minutes per kernel on a small machine)
        strategy = ms.search_strategy.EvolutionarySearch(
            population_size=max(32, min(512, 8 * trials)), init_min_unmeasured=min(50, 4 * trials),
            genetic_num_iters=2 if trials <= 16 else 4,
        )
        callbacks = list(ms.measure_callback.MeasureCallback.create("default"))
        spent: list = []  # the callback's BudgetSpent reaches us wrapped in TVM's error type
        callbacks.append(_progress_callback(ks, progress, deadline, spent))
        load_intrinsics(tuning_target(ks[0].device).kind.name)
        with tempfile.TemporaryDirectory(prefix="tvmp-tune-") as work, _session_logging():
            try:
                ms.tir_integration.tune_tir(
                    mod, tuning_target(ks[0].device), work,
                    max_trials_global=sum(need[k.name, k.device.name] for k in ks),
                    max_trials_per_task=per_task, num_trials_per_iter=min(per_task, 16), database=db,
                    strategy=strategy, num_tuning_cores=usable_cpus(), measure_callbacks=callbacks,
                    builder=pools.builder, runner=pools.runner,
                )
            except Exception:  # noqa: BLE001 - BudgetSpent arrives wrapped in TVM's error type
                if not spent:
                    raise
        done = sum(1 for k in ks if is_tuned(db, k))
        stats["tuned"] += done
        if deadline is not None and time.perf_counter() >= deadline:
            stats["left"] = len(ks) - done + sum(len(b) for b in batches[j + 1:])
            break
    tuned = [k for k in kernels if is_tuned(db, k)]
    stats["defaults"] = measure_defaults(db, tuned, pools)
    stats["raced"] = race_templates(db, db_path, tuned)
    return stats


@contextlib.contextmanager
def _session_logging():
    """MetaSchedule's logger set up for one session. MetaSchedule sizes its console handler from the
    logger's level at each session start, then sets the level to DEBUG: without resetting it, every
    session after the first prints its per-round INFO tables over the progress bar. It also
    configures the logger by the names of the handlers it has: one without a name (pytest attaches
    two between tests) fails the session start, so those are detached for the session."""
    logger = logging.getLogger("tvm.s_tir.meta_schedule")
    logger.setLevel(logging.WARNING)
    unnamed = [h for h in logger.handlers if h.get_name() is None]
    for h in unnamed:
        logger.removeHandler(h)
    try:
        yield
    finally:
        for h in unnamed:
            logger.addHandler(h)


def transfer_search(kernels: list[Kernel], schedules: Schedules, db_path: str, deadline: float | None = None,
                    tries: int = 4, progress=None) -> int:
    """Pick each kernel's transferred schedule by measurement: its first ``tries`` candidates
    (:meth:`TransferIndex.candidates <tvm_partition.build.transfer.TransferIndex.candidates>`) and TVM's
    default schedule are built and timed on the kernel, and the fastest is recorded as the
    kernel's own (a transferred one marked :data:`tvm_partition.build.transfer.PROVENANCE`, so builds say
    where it came from and tuning still searches the kernel, seeded by it). A second or so a
    candidate. Kernels with a record, and those past ``deadline``, are left as they are.
    ``progress(kernel)`` is called before each kernel. Returns how many kernels got a record."""
    import tvm.s_tir.meta_schedule as ms

    from .transfer import TransferError, recipient_trace

    db = open_database(db_path, create=True)
    done = 0
    for k in kernels:
        target = tuning_target(k.device)
        if k.device.kind != "cpu" or best_record(db, k.mod, target) is not None or schedules.index is None:
            continue
        if deadline is not None and time.perf_counter() > deadline:
            break
        if progress is not None:
            progress(k)
        best = (time_kernel(k.mod["main"], target, 10, 3), _default_trace(k.mod))
        for src in schedules.index.candidates(k.mod, target)[:tries]:
            try:
                trace = recipient_trace(k.mod, src, target)
            except TransferError:
                continue
            sch = tvm.s_tir.Schedule(k.mod)
            trace.apply_to_schedule(sch, remove_postproc=False)
            us = time_kernel(sch.mod["main"], target, 10, 3)
            if us < best[0]:
                best = (us, trace)
        db.commit_tuning_record(ms.database.TuningRecord(
            best[1], db.commit_workload(k.mod), [best[0] * 1e-6], target, ms.arg_info.ArgInfo.from_prim_func(k.mod["main"])))
        done += 1
    return done


def time_kernel(func: tvm.tirx.PrimFunc, target, min_repeat_ms: int = 50, repeat: int = 5, cold: bool = False) -> float:
    """Median time of one PrimFunc (``kernel_module`` form) in microseconds, TVM's time evaluator,
    on arguments drawn like the profiler's (:func:`tvm_partition.cost_models.timing.random_tensor`),
    with the thread pool a build's runner gets (:func:`tvm_partition.devices.use_cpu_threads`, unless
    this process sized it already): TVM's own default on x86 is half the CPUs (1 of 2 here), so a
    script or ``tune`` timing kernels before anything else had sized the pool timed them on one
    thread (ResNet-18's max pool 125 us, on two 64). ``cold``: every run starts with its arguments
    but the first (the weights) out of the CPU caches (TVM's ``cache_flush_cpu_non_first_arg``),
    ``repeat`` single runs. Compiled as a build compiles for ``target``
    (:func:`tvm_partition.devices.codegen_target`: on x86 without vector gathers), not as MetaSchedule
    queries it: with gathers, Inception-v2's 320-channel and Inception-v1's 832-channel strided max
    pools had timed 3.4x and 2.4x what they run in a build (each alone, 9 rounds, 2 threads,
    intel-r-xeon-r-processor-2-60ghz-icelake-server-2c, 2026-12-04)."""
    import numpy as np

    from ..cost_models.timing import random_tensor
    from ..devices import codegen_target, use_cpu_threads

    if "TVM_NUM_THREADS" not in os.environ:
        use_cpu_threads()

    mod = templates.without_packing(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}))
    func = mod["main"]  # its weights packed at load, not per call (its parameters in the packed layout)
    target = tvm.target.Target(codegen_target(dict(tvm.target.Target(target).export())))
    lib = tvm.compile(mod, target=target).jit()
    dev = tvm.cpu()
    rng = np.random.default_rng(0)
    args = [random_tensor([int(x) for x in buf.shape], str(buf.dtype), dev, rng) for buf in func.params]
    ev = lib.time_evaluator("main", dev, number=1, repeat=repeat, min_repeat_ms=0 if cold else min_repeat_ms,
                            f_preproc="cache_flush_cpu_non_first_arg" if cold else "")
    return float(np.median(ev(*args).results)) * 1e6


def _race_key(kmod: tvm.IRModule) -> str:
    import tvm_ffi

    return str(int(tvm_ffi.structural_hash(kmod)))


def load_races(path: str | None) -> dict:
    """The races recorded beside database folder ``path`` (none where it has no file)."""
    file = os.path.join(path, RACES_FILE) if path else ""
    if not file or not os.path.exists(file):
        return {}
    with open(file, encoding="utf-8") as fh:
        return json.load(fh)


def _race_of(races: dict, kmod: tvm.IRModule, target, record, rules: int | None = None) -> dict | None:
    """The race of ``kmod``'s template against ``record`` on ``target``, if one was run. A race run
    against another record (tuning went on since) is none; with ``rules``, so is one run under
    other transfer rules (:data:`TRANSFER_RULES`: another template or another replay of the record,
    or one from before races kept their rules)."""
    race = races.get(_race_key(kmod))
    if race is None or race["target"] != str(target) or not math.isclose(race["record_secs"], _mean_secs(record),
                                                                          rel_tol=1e-9):
        return None
    return race if rules is None or race.get("rules") == rules else None


def template_won(races: dict, kmod: tvm.IRModule, target, record) -> bool:
    """The matmul template ran ``kmod`` faster than ``record`` on ``target`` when they raced (no
    race: the record keeps the kernel)."""
    race = _race_of(races, kmod, target, record)
    return race is not None and race["template_us"] < race["record_us"]


def race_templates(db, db_path: str, kernels: list[Kernel], rounds: int = 3) -> int:
    """Time the matmul template (:mod:`tvm_partition.build.templates`) against the best record in
    ``db`` (the database at ``db_path``, as :func:`tune` holds it) of every CPU kernel both apply to,
    ``rounds`` times each in turn (medians), and record the result beside the database
    (:data:`RACES_FILE`, written whole); :meth:`Schedules._choose` gives
    the kernel the faster. Why per kernel: on a Zen 3 (2026-11-28, one script timing both ways)
    BERT-tiny's records beat the template on two of its three matmuls (2604 us against 2820, 754
    against 1018) where the template beat every record of the GRU's and LSTM's gate matmuls
    (batch 16: 25-40 us against 34-52; the shipped races, run later on a busier VM, left one of them
    to its record, 18.1 us against 18.5). Why timed cold (:func:`time_kernel`): in a model other kernels run between a kernel's
    launches and its weights are no longer in the cache. Timed hot, three of the RNN records won
    (by 1-23%), and that build ran 0.88x (GRU) and 0.90x (LSTM) of the records' build where the
    template on all of them ran 0.80x and 0.84x (``benchmarks/paired.py``, 9 rounds; BERT-tiny
    with the template on all its matmuls 1.045x). Kernels raced against the record they have now
    under these transfer rules are not raced again; a race of older rules is run again, builds
    keeping its verdict until then (:func:`template_won`). Why: rules 63 replays small kernels'
    records without their parallel loop (:func:`scheduled`), and the LSTM's 16 x 64 x 256 gate
    matmul on its serial record ran 15.5 us alone in the VM where its race of rules 36 had timed the
    record 9.5 us cold against the template's 12.1 (rocketlake VM, 2026-12-04). Returns how many
    kernels were raced."""
    from .transfer import provenance

    races = load_races(db_path)
    raced = 0
    for k in kernels:
        target = tuning_target(k.device)
        if k.device.kind != "cpu" or templates.label(k.mod, target) not in templates.MATMUL_LABELS:
            continue
        record = best_record(db, k.mod, target)
        if record is None or is_default(record) or provenance(record.trace) is not None:
            continue
        if _race_of(races, k.mod, target, record, TRANSFER_RULES) is not None:
            continue
        tuned, template = scheduled(k.mod, record, target), templates.schedule(k.mod, target)
        times = {"record": [], "template": []}
        for _ in range(rounds):
            times["record"].append(time_kernel(tuned, target, repeat=50, cold=True))
            times["template"].append(time_kernel(template, target, repeat=50, cold=True))
        races[_race_key(k.mod)] = {
            "target": str(target), "kernel": k.name, "record_secs": _mean_secs(record), "rules": TRANSFER_RULES,
            "record_us": round(sorted(times["record"])[rounds // 2], 3),
            "template_us": round(sorted(times["template"])[rounds // 2], 3),
        }
        raced += 1
    if raced:
        file = os.path.join(db_path, RACES_FILE)
        with open(file + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(races, fh, indent=1, sort_keys=True)
        os.replace(file + ".tmp", file)
    return raced


@dataclasses.dataclass(frozen=True)
class Gain:
    """What tuning a kernel may win: its time now (``schedule``: transferred or default) against
    ``expected_us``, its FLOPs at the throughput tuned kernels reach on this target."""

    kernel: Kernel
    schedule: str
    measured_us: float
    expected_us: float

    @property
    def excess_us(self) -> float:
        return self.measured_us - self.expected_us


def rank_by_gain(kernels: list[Kernel], schedules: Schedules | None, deadline: float | None = None,
                 progress=None) -> list[Gain]:
    """The CPU kernels without a record of their own, ordered by how far their time now is above
    what a tuned kernel of their size should take (the median GFLOP/s of the tuned records on the
    target, :class:`tvm_partition.build.transfer.Source`): default-scheduled and transferred-but-slow
    kernels first, and among those the heaviest. Each kernel is built with the schedule a build
    would give it and timed once (a second or two); past ``deadline`` the rest keep their order
    by FLOPs, unmeasured. ``progress(kernel)`` is called before each is timed."""
    import statistics

    out = []
    for k in kernels:
        target = tuning_target(k.device)
        if k.device.kind != "cpu" or (schedules is not None and best_record(schedules.db, k.mod, target)):
            continue
        func, label = schedules.schedule(k.mod, target) if schedules is not None else (None, "default")
        sources = schedules.index.candidates(k.mod, target) if schedules is not None and schedules.index else []
        rate = statistics.median([s.gflops for s in sources]) if sources else 0.0
        expected = k.flops / rate / 1e3 if rate > 0 else 0.0
        if deadline is not None and time.perf_counter() > deadline:
            out.append(Gain(k, label.split()[0], float("nan"), expected))
            continue
        if progress is not None:
            progress(k)
        out.append(Gain(k, label.split()[0], time_kernel(func or k.mod["main"], target, 10, 3), expected))
    measured = sorted((g for g in out if g.measured_us == g.measured_us), key=lambda g: -g.excess_us)
    return measured + [g for g in out if g.measured_us != g.measured_us]


def tune_with_progress(kernels: list[Kernel], db_path: str, trials: int, budget_s: float | None = None,
                       say=print) -> dict:
    """:func:`tune` with progress bars naming the kernel in flight (one tick per measured trial).
    With a budget, first the kernels are ranked (:func:`rank_by_gain`), then each gets the best of
    its transferred schedules by measurement (:func:`transfer_search`: seconds a kernel), then
    MetaSchedule tunes them in that order with what is left (minutes a kernel). Returns
    :func:`tune`'s counts plus ``searched`` (kernels given a measured transferred schedule) and
    ``template`` (kernels left to :mod:`tvm_partition.build.templates`, not tuned: all but matmuls)."""
    from tqdm import tqdm

    t0 = time.perf_counter()
    deadline = None if budget_s is None else t0 + budget_s
    # builds give direct convolutions the hand-written schedule whatever the database holds; a
    # matmul the template schedules runs a record tuned here instead (Schedules._choose)
    templated = [k for k in kernels if templates.label(k.mod, tuning_target(k.device)) not in (None, *templates.MATMUL_LABELS)]
    kernels = [k for k in kernels if k not in templated]
    db = open_database(db_path)
    untuned = [k for k in kernels if not is_tuned(db, k)]
    need = sum(max(0, trials - trials_measured(db, k)) for k in kernels)
    searched = 0
    if deadline is not None and untuned:
        schedules = open_schedules(db_path)
        with tqdm(total=2 * len(untuned), unit="kernel", desc="timing kernels", dynamic_ncols=True, leave=False) as bar:
            def step(what):
                return lambda k: (bar.set_description(f"{what} {k.device.name}:{k.name[:40]}", refresh=False),
                                  bar.update(1))

            gains = rank_by_gain(untuned, schedules, deadline, step("timing"))
            ranked = [g.kernel for g in gains]
            untuned = ranked + [k for k in untuned if k not in ranked]
            for g in gains[:5]:
                say(f"  {g.kernel.name[:60]}: {g.schedule} {g.measured_us:.0f} us, a tuned kernel of its size "
                    f"~{g.expected_us:.0f} us")
            searched = transfer_search(untuned, schedules, db_path, deadline, progress=step("transfers for"))
    with tqdm(total=need, unit="trial", dynamic_ncols=True) as bar:
        def progress(kernel, n):
            bar.set_description(f"{kernel.device.name}:{kernel.name[:40]}", refresh=False)
            bar.update(n)

        left = None if deadline is None else max(0.0, deadline - time.perf_counter())
        stats = tune(untuned + [k for k in kernels if k not in untuned], db_path, trials=trials, budget_s=left,
                     progress=progress)
        if not stats["left"]:  # a kernel whose search space is smaller than the trials ends early
            bar.update(bar.total - bar.n)
    return {**stats, "searched": searched, "template": len(templated)}


def load_intrinsics(kind: str) -> None:
    """Register the tensor intrinsics a MetaSchedule session for target ``kind`` can use, and no
    others. ``import tvm.s_tir.tensor_intrin`` (which MetaSchedule's ``TuneContext`` does first)
    registers those of every backend: 35 s on the build machine, 24 of them CUDA's, which a CPU
    session never uses (its design space tensorizes nothing in fp32; x86's take 2 s). For an
    ``llvm`` session the package is entered without running its ``__init__`` and only its ``x86``
    module is imported; a later session of another kind imports that kind's module into it."""
    import importlib
    import importlib.util
    import sys

    name = "tvm.s_tir.tensor_intrin"
    if name not in sys.modules:
        if kind != "llvm":
            importlib.import_module(name)
            return
        spec = importlib.util.find_spec(name)
        package = importlib.util.module_from_spec(spec)  # the package, its __init__ not run
        sys.modules[name] = package
        tvm.s_tir.tensor_intrin = package
    importlib.import_module(f"{name}.{'x86' if kind == 'llvm' else kind}")


def build_kernel(mod: tvm.IRModule, target, _params=None):
    """MetaSchedule's ``default_build`` without its import of every tensor intrinsic (see
    :func:`load_intrinsics`): a candidate reaches the builder already scheduled, tensorized
    blocks included, so lowering it needs no intrinsic registry. MetaSchedule restarts its builder
    processes for every round of trials, so that import cost 35 s a round on the build machine."""
    from tvm.driver import build as tvm_build

    return tvm_build(templates.without_packing(mod), target=target)


class _Pools:
    """One MetaSchedule builder and runner for every session of a :func:`tune` call and its default
    schedules, made when first asked for: each checks at its start that a worker process starts and
    finds its functions, 1.7-1.8 s each on the build machine, paid four times a call before
    (2026-11-29, cProfile). The builder starts a fresh worker pool for every round (TVM's, for a
    leak in its workers); the runner keeps one pool, as MetaSchedule's sessions use it."""

    @functools.cached_property
    def builder(self):
        return _builder()

    @functools.cached_property
    def runner(self):
        return _runner()


def _builder():
    import tvm.s_tir.meta_schedule as ms

    # a fresh builder worker imports TVM first: seconds on a small machine (with every tensor
    # intrinsic it took tens, over MetaSchedule's 30 s default, and the timeout was raised to 600 s).
    # Without that import a candidate builds in 1-10 s here, and one that takes a minute is a
    # heavily unrolled loop nest that will not be the fastest: at 600 s one ResNet-18 candidate
    # held a builder for over 3 minutes while its round waited (2026-11-23)
    return ms.builder.LocalBuilder(f_build=build_kernel, timeout_sec=60)


def _runner():
    import tvm.s_tir.meta_schedule as ms

    return ms.runner.LocalRunner(timeout_sec=120)
