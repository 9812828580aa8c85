"""Rows in parallel, their reductions in vector lanes: softmax, layer norm, reductions over the
innermost axes, and statistics of rows used in the same kernel (instance and group norms).

Softmax over the last axis (``topi.nn.fast_softmax``, :mod:`tvm_partition.ir.fastmath`): each row
in parallel, its maximum and sum accumulated in vector lanes and combined, its exponentials and
division vectorised (:func:`_schedule_softmax`: BERT-tiny's attention softmax 493 -> 75 us).
Layer norm over the last axis (TOPI's ``layer_norm``) the same way, from :data:`.common.MIN_MOVED_ELEMENTS`
outputs (:func:`_schedule_layer_norm`). Why: the one record of it (BERT-tiny's, tuned at batch 16)
runs five parallel loops a call, one per block, each waking the thread pool: replayed at 4, 8 and
32 sequences it ran 1.3-1.5x this template's time alone, and at its own shape, quicker alone
(46 us against 61), it ran 1.2-1.3x the template's time in the model (107-124 us a call against
82-101, ``run --kernels``; 2 Zen 3 threads, 2026-11-29), so the template outranks it there too.
Both take an element-wise epilogue (inlined) or a padding of their rows (the matmul after them
pads its rows, :func:`tvm_partition.frontend.inference.pad_matmuls`; a parallel loop nest of its
own), and a softmax whose rows hold no whole vector keeps scalar reductions: ViT-B/16's softmax
and layer norms, each fused with such a padding, ran TVM's default schedule, 12.6 and 5.2 ms of
the model's 217; with these 7.2 and under 0.9 (``run --kernels``, 2 Zen 4 threads, 2026-11-30).

Reductions over the innermost axes of one tensor (TOPI's ``sum``, ``max``, ``min``, ``prod`` and
``mean``, its division and any element-wise block after it inlined under each row): ONNX's
``GlobalAveragePool`` and ``ReduceMean`` over H and W, which PyTorch's exporters write for
``adaptive_avg_pool2d(x, 1)``, a squeeze-and-excitation's pooling. The reduced axes fused into one row,
summed as one or two vectors of partial results (``rfactor``), the rows in parallel from
:data:`.common.MIN_MOVED_ELEMENTS` elements (:func:`_schedule_reduce`). Why: TVM's default schedule adds
each element to one scalar; an EfficientNet-like block's two global pools took 138 and 70 us of its
755 (``run --kernels``), 6-13 us on this schedule, the model paired 0.79x (2 Zen 3 threads, 2026-11-30).

Statistics of rows and their use in one kernel (:func:`_stats_plan`): reductions over the same rows,
blocks over their statistics and blocks over the whole rows (``x - mean``, its square, a
normalisation): TVM's ONNX frontend writes ``InstanceNormalization`` (a GroupNorm exported on a
reshape to ``[n, groups, -1]``) as ``mean`` and ``variance``, and an old exporter's layer norm or a
decoder's RMS norm as a chain of ``ReduceMean``, ``Sub``, ``Pow``; fused with a residual add before
it, even TOPI's layer norm is no longer the layer norm template's. Each row under one iteration of a
parallel loop, its reductions in vector lanes, the whole-row blocks inlined into what reads them
(:func:`_schedule_stats`). Why: TVM's default schedule sums each row into one float32 scalar. On
Hugging Face's BiT (group norms over rows of 784-25,088) those kernels took 27% of the model's 100
ms, 0.03-0.17x of that on this schedule, the model 0.66x paired; and its outputs came out 9x further
from float64's than onnxruntime's (a group norm of 32 rows of 25,088 alone: 6.0e-4 against 6.8e-5;
on lanes 1.8e-5), so ``compile --check`` failed it against onnxruntime (6.8e-4, tolerance 5.0e-4;
1.9e-4 now). wav2vec 2.0's group norm 3.5 ms -> 0.4 (the model 0.91x), PoolFormer 0.85x (2 threads,
intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-06; BENCHMARKS.md, "Twenty more Hugging Face
architectures").
"""

from __future__ import annotations

import dataclasses
import math

import tvm

from ...ir.fastmath import ROW_LANES, TAILED_SOFTMAX_BLOCKS
from . import common


#: The blocks of ``topi.nn.fast_softmax`` over the last axis (:mod:`tvm_partition.ir.fastmath`), in order.
SOFTMAX_BLOCKS = ("T_softmax_maxelem", "T_softmax_delta", "T_fast_exp", "T_softmax_expsum", "T_softmax_norm")


def _softmax_lanes(kmod: tvm.IRModule, target, fallback: bool = False) -> int | None:
    """The vector lanes the softmax template gives ``kmod``'s reductions: an llvm kernel of
    :data:`SOFTMAX_BLOCKS` (TVM's fusion leaves a softmax alone: an attention mask added before it
    is a kernel of its own), then element-wise blocks at most (:func:`_epilogue_of`: a padding of
    its rows for the matmul after it), its rows a whole number of vectors (the register's, 8 or 4
    lanes), or else 1 (reductions left scalar) where it has :data:`.common.MIN_MOVED_ELEMENTS` elements:
    ViT-B/16's 12 x 197 rows of 197 ran 457 us so, TVM's default schedule 661 (alone, 2 Zen 4
    threads, 2026-11-30; such rows, longer than a vector, are now legalized as
    :func:`~tvm_partition.ir.fastmath.tailed_softmax`, :func:`_schedule_tailed_softmax`);
    ``fallback``: 1 at any size (:func:`tvm_partition.build.templates.fallback`); else None."""
    if target.kind.name != "llvm":
        return None
    blocks = common._root_blocks(kmod)
    core = len(SOFTMAX_BLOCKS)
    if tuple(b.name_hint for b in blocks[:core]) != SOFTMAX_BLOCKS or _epilogue_of(blocks, core) is None:
        return None
    norm = blocks[core - 1].iter_vars
    if not all(isinstance(v.dom.extent, tvm.tirx.IntImm) for v in norm):
        return None
    lanes = _row_lanes(int(norm[-1].dom.extent), target)
    if lanes is None and (fallback or math.prod(int(v.dom.extent) for v in norm) >= common.MIN_MOVED_ELEMENTS):
        return 1
    return lanes

#: :func:`tvm_partition.ir.fastmath.tailed_softmax`'s blocks but its reductions' (which come first).
_TAILED_REST = ("T_softmax_delta", "T_fast_exp", "T_softmax_norm")


def _division_and_epilogue(sch, epilogue: tuple[str, ...], lanes: int) -> None:
    """A softmax template's last steps, its rows' loops placed: ``epilogue`` in parallel
    (:func:`_epilogue_in_parallel`), then the exponentials and the division vectorised along the
    row (last: a partition renames the blocks). A division that took an epilogue in (DistilBERT's
    ``where(isnan(p), 0, p)``) stays one vector of the row: in vectors of 16 its rows of 512 ran
    2.52 ms against 2.13 (each alone; the exponentials' vectors alone 1.72)."""
    _epilogue_in_parallel(sch, epilogue, lanes)
    for name in ("T_fast_exp",) + (() if epilogue else ("T_softmax_norm",)):
        _vectorised_row(sch, sch.get_loops(sch.get_sblock(name))[-1])
    if epilogue:
        sch.vectorize(sch.get_loops(sch.get_sblock("T_softmax_norm"))[-1])


def _tailed_softmax_epilogue(kmod: tvm.IRModule, target) -> tuple[str, ...] | None:
    """The epilogue (:func:`_epilogue_of`; empty: none) of an llvm kernel of
    :func:`~tvm_partition.ir.fastmath.tailed_softmax`'s blocks, None for any other kernel."""
    if target.kind.name != "llvm":
        return None
    blocks = common._root_blocks(kmod)
    core = len(TAILED_SOFTMAX_BLOCKS) + len(_TAILED_REST)
    if sorted(b.name_hint for b in blocks[:core]) != sorted(TAILED_SOFTMAX_BLOCKS + _TAILED_REST):
        return None
    return _epilogue_of(blocks, core)


def _schedule_tailed_softmax(kmod: tvm.IRModule, epilogue: tuple[str, ...]) -> tvm.tirx.PrimFunc | None:
    """Every row in parallel, all of its work under its iteration (as :func:`_schedule_softmax`):
    the maximum's and the sum's :data:`~tvm_partition.ir.fastmath.ROW_LANES` partial results
    accumulated a vector at a time over the row's whole vectors, the exponentials and the division
    vectorised (:func:`_vectorised_row`), the tails and the combinations scalar."""
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": kmod["main"]}))
    try:
        sch.compute_inline(sch.get_sblock("T_softmax_delta"))
        row = sch.fuse(*sch.get_loops(sch.get_sblock("T_softmax_norm"))[:-1])
        sch.parallel(row)
        expsum, maxelem = TAILED_SOFTMAX_BLOCKS[4:][::-1], TAILED_SOFTMAX_BLOCKS[:4][::-1]
        for name in expsum + ("T_fast_exp",) + maxelem:  # consumers first, under the row
            sch.compute_at(sch.get_sblock(name), row)
        for name in ("T_softmax_maxelem_lanes", "T_softmax_expsum_lanes"):
            loops = sch.get_loops(sch.get_sblock(name))
            if len(loops) == 3:  # row, lane, vector (one vector a row: its loop of one is gone)
                sch.reorder(loops[2], loops[1])
            sch.vectorize(loops[1])
        _division_and_epilogue(sch, epilogue, ROW_LANES)
    except tvm.s_tir.schedule.ScheduleError:
        return None
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def _epilogue_of(blocks: tuple, core: int) -> tuple[str, ...] | None:
    """The names of ``blocks`` after the first ``core`` where every one is spatial (element-wise or
    moving data, as a padding is), else None."""
    rest = blocks[core:]
    if any(set(common._iter_kinds(b)) - {"S"} for b in rest):
        return None
    return tuple(b.name_hint for b in rest)


def _one_to_one(sch, block) -> bool:
    """Whether ``block`` can be inlined backwards into what it reads: each block it reads has no
    other consumer (:func:`_epilogue_in_parallel`) and writes as many elements as ``block`` does.
    Why the count: an epilogue that broadcasts the output (MobileViT-v2's linear attention, its
    softmax over ``[1, 1, 4, 256]`` times values of ``[1, 128, 4, 256]``, a dynamo export) is no
    map of its elements, and TVM 0.27's ``reverse_compute_inline`` fails on it with an internal
    error ("Cannot dispatch a null expression"), not the ``ScheduleError`` it raises elsewhere."""
    def size(b) -> int | None:
        shape = sch.get(b).writes[0].source.shape
        return math.prod(int(x) for x in shape) if all(isinstance(x, tvm.tirx.IntImm) for x in shape) else None

    producers = sch.get_producers(block)
    return all(len(sch.get_consumers(p)) == 1 and size(p) is not None and size(p) == size(block) for p in producers)


def _epilogue_in_parallel(sch, names: tuple[str, ...], lanes: int) -> None:
    """Blocks ``names`` (after a row template's output) each inlined into the block after it,
    the last into the block before it where it maps its elements one to one (:func:`_one_to_one`), else a loop nest of
    its own: all but its innermost loop one parallel loop, the innermost vectorised where a whole
    number of ``lanes`` (a padding of the rows, whose extents are not the output's).

    Forward first (as :func:`.common._opened` does): an epilogue that reads the output twice
    (``where(isnan(p), 0, p)`` after Hugging Face DistilBERT's softmax) inlined backwards block by
    block left ``isnan`` in the output's block and ``where`` reading a buffer no longer defined:
    TVM's ``reverse_compute_inline`` does not refuse a block whose producer has another consumer
    (TVM 0.27; the kernel then failed to build)."""
    for name in names[:-1]:
        try:
            sch.compute_inline(sch.get_sblock(name))
        except tvm.s_tir.schedule.ScheduleError:
            pass
    for name in names:
        try:
            block = sch.get_sblock(name)
        except tvm.s_tir.schedule.ScheduleError:  # inlined above
            continue
        if _one_to_one(sch, block):
            try:
                sch.reverse_compute_inline(block)
                continue
            except tvm.s_tir.schedule.ScheduleError:
                pass
        loops = sch.get_loops(block)
        if len(loops) > 1:
            sch.parallel(sch.fuse(*loops[:-1]))
        common._in_vectors(sch, loops[-1], lanes)


def _row_lanes(row: int, target) -> int | None:
    """The widest vector (the register's, 8 or 4 lanes) of which a row of ``row`` elements holds a
    whole number, None where none does."""
    widest, _ = common.vector_lanes(target)
    return next((n for n in (widest, 8, 4) if n <= widest and row % n == 0), None)


def _partial_sums(sch, names, lanes: int) -> dict:
    """``{name: rfactor block}``: each reduction block of ``names`` (over its innermost loop) as
    ``lanes`` partial results, combined after."""
    partial = {}
    for name in names:
        _, k_i = sch.split(sch.get_loops(sch.get_sblock(name))[-1], [None, lanes])
        partial[name] = sch.rfactor(k_i, len(sch.get_loops(sch.get_sblock(name))) - 2)
    return partial

#: A row of more elements than this is vectorised a register's vector at a time, not as one vector
#: of the whole row: LLVM legalises a vector of 1500 lanes, with fast_exp's 30 operations on it,
#: into passes over the row through the stack.
WHOLE_ROW_VECTOR = 256
#: The lanes of those vectors (a zmm register's floats; narrower registers take two or four).
ROW_VECTOR = 16


def _vectorised_row(sch, loop) -> None:
    """``loop`` (a row's elements) vectorised: whole up to :data:`WHOLE_ROW_VECTOR` elements, else
    in vectors of :data:`ROW_VECTOR` lanes, the elements past the last whole one a vector of
    their own."""
    n = int(sch.get(loop).extent)
    if n <= WHOLE_ROW_VECTOR:
        sch.vectorize(loop)
        return
    tail = n % ROW_VECTOR
    if tail:
        loop, rest = sch.loop_partition(loop, [n - tail, None])
        sch.vectorize(rest)
    common._in_vectors(sch, loop, ROW_VECTOR)


def _rows_in_parallel(sch, out: str, under: list, partial: dict, vectorised: bool = True):
    """Block ``out``'s rows (every loop but its innermost, fused) in parallel and its rows
    vectorised (whole; the caller's where not ``vectorised``); the blocks ``under`` (consumers
    first; None skipped) computed under each row; the ``partial`` sums' lanes vectorised innermost.
    Returns the row loop."""
    norm = sch.get_sblock(out)
    row = sch.fuse(*sch.get_loops(norm)[:-1])
    sch.parallel(row)
    if vectorised:
        sch.vectorize(sch.get_loops(norm)[-1])
    _rows_in_parallel_under(sch, row, under, partial)
    return row


def _rows_in_parallel_under(sch, row, under: list, partial: dict) -> None:
    """The blocks ``under`` (consumers first; None skipped) computed under the loop ``row``, the
    ``partial`` sums' lanes vectorised innermost."""
    for block in under:
        if block is not None:
            sch.compute_at(block, row)
    for rf in partial.values():  # under the row: lanes, then the vectors: lanes innermost
        k_i, k_o = sch.get_loops(rf)[-2:]
        sch.reorder(k_o, k_i)
        sch.vectorize(k_i)


def _schedule_softmax(kmod: tvm.IRModule, lanes: int) -> tvm.tirx.PrimFunc | None:
    """Every row in parallel, all of its work under its iteration: the maximum and the sum as
    ``lanes`` partial results each (``rfactor``) accumulated in vectors, then combined, and the
    exponentials and the division vectorised. TVM gives the reductions one scalar chain each (a
    compare, then an add, per element, each waiting for the one before): with ``fast_exp`` and the
    rows in parallel but scalar reductions BERT-tiny's softmax took 272 us, with these 75 us,
    TVM's default schedule of the same kernel 381 us (amd-epyc-znver5-2c, 2026-11-26)."""
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": kmod["main"]}))
    try:
        sch.compute_inline(sch.get_sblock("T_softmax_delta"))
        row_len = int(sch.get(sch.get_loops(sch.get_sblock("T_softmax_norm"))[-1]).extent)
        # a row of one vector has nothing to accumulate across vectors: its reductions stay as TVM
        # wrote them (split, the outer loop of extent 1 would vanish from the loop nest), and so do
        # those of a row of no whole vector (lanes 1): a split by lanes that does not divide the row
        # leaves rfactor reading past its end (no error; the results wrong, 2026-11-30)
        partial = _partial_sums(sch, ("T_softmax_maxelem", "T_softmax_expsum") if row_len > lanes > 1 else (), lanes)
        _rows_in_parallel(sch, "T_softmax_norm", [
            sch.get_sblock("T_softmax_expsum"), partial.get("T_softmax_expsum"), sch.get_sblock("T_fast_exp"),
            sch.get_sblock("T_softmax_maxelem"), partial.get("T_softmax_maxelem")], partial, vectorised=False)
        epilogue = _epilogue_of(common._root_blocks(kmod), len(SOFTMAX_BLOCKS))
        _division_and_epilogue(sch, epilogue, lanes)
    except tvm.s_tir.schedule.ScheduleError:
        return None
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def _layer_norm_plan(kmod: tvm.IRModule, target, fallback: bool = False) -> tuple[int, tuple[str, ...], tuple[str, ...]] | None:
    """``(lanes, block names, epilogue)`` of an llvm kernel of TOPI's layer norm over its last axis
    alone (blocks ``<input>_sum``, ``<input>_mean``, ``<input>_var_sum``, ``T_layer_norm``, then
    element-wise blocks at most, :func:`_epilogue_of`: a padding of its rows for the matmul after
    it, as ViT-B/16's) whose rows
    hold more than one whole vector and whose outputs number at least :data:`.common.MIN_MOVED_ELEMENTS`;
    else None. Why the floor: below it the record's serial replay was as quick or quicker (BERT-tiny's
    layer norm, each alone, 2 Zen 3 threads, 2026-11-29: 1 sequence of 128 x 128, 16,384 outputs,
    4.3 us against the template's 5.9; 2 sequences 9.0-9.9 against 9.2-11.2). ``fallback``: at
    any size (:func:`tvm_partition.build.templates.fallback`)."""
    if target.kind.name != "llvm":
        return None
    blocks = common._root_blocks(kmod)
    names, epilogue = tuple(b.name_hint for b in blocks[:4]), _epilogue_of(blocks, 4)
    if (len(names) != 4 or epilogue is None or not names[0].endswith("_sum") or names[1] != names[0][:-4] + "_mean"
            or names[2] != names[0][:-4] + "_var_sum" or names[3] != "T_layer_norm"):
        return None
    if common._iter_kinds(blocks[0]) != "S" * (len(blocks[0].iter_vars) - 1) + "R" or common._iter_kinds(blocks[2]) != common._iter_kinds(blocks[0]):
        return None
    extents = [v.dom.extent for v in blocks[3].iter_vars]
    if not all(isinstance(e, tvm.tirx.IntImm) for e in extents):
        return None
    if math.prod(int(e) for e in extents) < common.MIN_MOVED_ELEMENTS and not fallback:
        return None
    lanes = _row_lanes(int(extents[-1]), target)
    return None if lanes is None or int(extents[-1]) <= lanes else (lanes, names, epilogue)


def _schedule_layer_norm(kmod: tvm.IRModule, lanes: int, names: tuple[str, ...],
                         epilogue: tuple[str, ...] = ()) -> tvm.tirx.PrimFunc | None:
    """Every row in parallel, all of its work under its iteration (:func:`_schedule_softmax`'s
    layout): the sum and the sum of squared deviations as ``lanes`` partial results each
    (``rfactor``) accumulated in vectors, then combined, the mean inlined, the normalisation
    vectorised. Partials of 2 and 4 vectors a row (16, 32 lanes) ran the same or slower, and
    partials kept in ``local`` buffers 2-3x slower (BERT-tiny's layer norm at 1-16 sequences,
    2 Zen 3 threads, 2026-11-29)."""
    total, mean, var, norm_name = names
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": kmod["main"]}))
    try:
        sch.compute_inline(sch.get_sblock(mean))
        partial = _partial_sums(sch, (total, var), lanes)
        _rows_in_parallel(sch, norm_name, [sch.get_sblock(var), partial[var], sch.get_sblock(total), partial[total]],
                          partial)
        _epilogue_in_parallel(sch, epilogue, lanes)
    except tvm.s_tir.schedule.ScheduleError:
        return None
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)

#: :func:`_reduce_plan` gives rows of at least this many elements two vectors of partial results
#: (two independent chains of vector additions), shorter rows one: over 4,096-element rows (a global
#: average pool of a 64 x 64 map) two 8-lane vectors took 6.4 us where one took 9.7 (TVM's default
#: 137), over 64-element rows 3.0 us where one took 2.2 (2 Zen 3 threads, 2026-11-30).
TWO_VECTOR_ROW = 1024


@dataclasses.dataclass(frozen=True)
class _ReducePlan:
    lanes: int  # partial results a row: one or two vectors
    parallel: bool  # the rows in parallel (from MIN_MOVED_ELEMENTS elements read)
    reduction: str  # the reduction block
    reduced: int  # its reduced axes, its innermost
    epilogue: tuple[str, ...]  # the element-wise blocks after it (mean's division), in order


def _reduce_plan(kmod: tvm.IRModule, target) -> _ReducePlan | None:
    """The :class:`_ReducePlan` of an llvm kernel whose first block reduces the innermost axes of
    the one tensor it reads (TOPI's ``sum``, ``max``, ``min``, ``prod``, and ``mean`` with its
    division after: ONNX's ``GlobalAveragePool`` and ``ReduceMean`` over H and W, a
    squeeze-and-excitation's pooling), its rows a whole number of vectors (or of
    :func:`_divisor_lanes` partial results), any further blocks element-wise; else None."""
    if target.kind.name != "llvm":
        return None
    blocks = common._root_blocks(kmod)
    if not blocks or any("R" in common._iter_kinds(b) for b in blocks[1:]):
        return None
    red = blocks[0]
    kinds = common._iter_kinds(red)
    reduced = len(kinds) - len(kinds.rstrip("R"))
    if reduced == 0 or "R" in kinds[:-reduced] or len(red.reads) != 1:
        return None
    # a row is contiguous where the reduced axes are the read tensor's innermost, in order
    region = red.reads[0].region
    axes = [v.var for v in red.iter_vars[-reduced:]]
    if len(region) < reduced or not all(r.min.same_as(v) and is_one(r.extent) for r, v in zip(region[-reduced:], axes)):
        return None
    extents = [v.dom.extent for v in red.iter_vars]
    if not all(isinstance(e, tvm.tirx.IntImm) for e in extents):
        return None
    # every later block over the reduction's outputs alone: one that broadcasts them back over the
    # reduced axes (x - mean(x)) would recompute a row's reduction for each of its elements
    # (unit axes aside: a mean to a scalar divides in a block of one unit axis)
    spatial = [int(e) for e in extents[:-reduced] if int(e) != 1]
    if any([int(v.dom.extent) for v in b.iter_vars if int(v.dom.extent) != 1] != spatial for b in blocks[1:]):
        return None
    row = math.prod(int(e) for e in extents[-reduced:])
    lanes = _partial_results(row, target)
    if lanes is None:
        return None
    return _ReducePlan(lanes, math.prod(int(e) for e in extents) >= common.MIN_MOVED_ELEMENTS, red.name_hint, reduced,
                       tuple(b.name_hint for b in blocks[1:]))


def _partial_results(row: int, target) -> int | None:
    """The partial results a row of ``row`` elements is summed into: two vectors from
    :data:`TWO_VECTOR_ROW` elements where they divide it, else one whole vector
    (:func:`_row_lanes`) or a divisor (:func:`_divisor_lanes`); None where the row holds no more
    than that (nothing to accumulate across) or only 1 divides it."""
    widest, _ = common.vector_lanes(target)
    lanes = 2 * widest if row >= TWO_VECTOR_ROW and row % (2 * widest) == 0 else \
        _row_lanes(row, target) or _divisor_lanes(row, widest)
    return None if lanes is None or row <= lanes else lanes


def _divisor_lanes(row: int, widest: int) -> int | None:
    """The largest divisor of ``row`` no wider than the widest vector, as the partial results of a
    row that holds no whole vector (None where only 1 divides it: a prime row).

    Why: such rows kept TVM's serial loop, one scalar sum a row. LLVM carries ``<13 x float>`` in a
    16-lane register. Global average pools alone, TVM's loop against partial results of the divisor
    (2 threads, 9 rounds, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01): SqueezeNet's 1000
    channels of 13 x 13 (13 lanes) 67 -> 8.8 us, 2048 of 7 x 7 (7 lanes) 20 -> 8.0, 1280 of 7 x 7
    11.1 -> 8.3, 512 and 576 of 7 x 7 4.4 -> 3.3 and 5.0 -> 3.7; 5 x 5 and 3 x 3 maps of 64-96
    channels 0.2-0.3 us either way. A row that some narrower vector divides keeps it
    (:func:`_row_lanes`): 1024 channels of 14 x 14 on 4 lanes 7.4 us, on 14 9.2; 512 of 10 x 10
    3.2 and 4.1 (on 10)."""
    lanes = common._row(row, widest)
    return lanes if lanes > 1 else None


def is_one(expr) -> bool:
    """Whether ``expr`` is the integer constant 1 (a unit extent)."""
    return isinstance(expr, tvm.tirx.IntImm) and int(expr) == 1


def _schedule_reduce(kmod: tvm.IRModule, plan: _ReducePlan) -> tvm.tirx.PrimFunc | None:
    """The reduced axes fused into one row, accumulated as ``plan.lanes`` partial results
    (``rfactor``) in vectors and combined; every output row (the last block's loops, fused) one
    iteration of a loop, parallel where ``plan.parallel``, the reduction and the epilogue under it.
    Why: TVM's default schedule adds each element to one scalar, each addition waiting for the one
    before: a [1, 32, 64, 64] mean took 137 us, this schedule 6.4 (serial: 1.9 us at 32 x 32 x 32,
    where the parallel loop took 2.3; 2 Zen 3 threads, 2026-11-30; BENCHMARKS.md, "Models written in
    PyTorch")."""
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": kmod["main"]}))
    try:
        for name in plan.epilogue[:-1]:
            sch.compute_inline(sch.get_sblock(name))
        if plan.epilogue and not sch.get_loops(sch.get_sblock(plan.epilogue[-1])):
            # a scalar's epilogue outside any loop: TVM 0.27's rfactor fails an internal check
            # beside it (BlockReplacer), and the reduction needs a loop to be computed at
            sch.add_unit_loop(sch.get_sblock(plan.epilogue[-1]))
        red = sch.get_sblock(plan.reduction)
        loops = sch.get_loops(red)
        reduced = sch.fuse(*loops[-plan.reduced:]) if plan.reduced > 1 else loops[-1]
        _, lanes = sch.split(reduced, [None, plan.lanes])
        partial = sch.rfactor(lanes, len(sch.get_loops(red)) - 2)
        out = sch.get_sblock(plan.epilogue[-1]) if plan.epilogue else red
        # the output's loops over its elements (a reduction block left alone keeps its lanes' loop)
        rows = sch.get_loops(out)[:len(sch.get_loops(out)) - (not plan.epilogue)]
        if rows:
            row = sch.fuse(*rows) if len(rows) > 1 else rows[0]
            if plan.parallel:
                sch.parallel(row)
            for block in ((red,) if plan.epilogue else ()) + (partial,):
                sch.compute_at(block, row)
            lane, vectors = sch.get_loops(partial)[-2:]  # compute_at orders the loops as the block's axes
            sch.reorder(vectors, lane)
        else:  # all axes reduced to a scalar (DynamicQuantizeLinear's min and max): rfactor's own loops
            lane = sch.get_loops(partial)[-1]
        sch.vectorize(lane)
    except tvm.s_tir.schedule.ScheduleError:
        return None
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


@dataclasses.dataclass(frozen=True)
class _StatsPlan:
    """What :func:`_schedule_stats` needs of a kernel of statistics of rows and their use."""

    lanes: int  # partial results of each reduction a row: one or two vectors
    parallel: bool  # the rows in parallel (from MIN_MOVED_ELEMENTS elements read)
    reduced: int  # the reductions' reduced axes, their innermost
    reductions: tuple[str, ...]  # the reduction blocks, in order
    rowwise: tuple[str, ...]  # the element-wise blocks over whole rows, in order
    out_rowwise: bool  # the last block is over whole rows (a normalisation), else over the statistics


def _extents(block) -> list[int]:
    return [int(v.dom.extent) for v in block.iter_vars]


#: Elements a row holds from which :func:`_stats_plan` takes a kernel before any record (below, only
#: where none applies: :func:`tvm_partition.build.templates.fallback`), its rows in parallel. Each
#: alone against what builds ran before (transferred records, or the layer norm template's fallback),
#: 3 alternating rounds, 2 threads, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-06 (Hugging
#: Face exports): rows of 512-768 (CLIP, DistilBERT, Phi, Swin-V2, ConvNeXt, OPT; 49-64 rows) 0.26-0.81x,
#: OPT's 1.05x; rows of 160-256 (SegFormer, MobileViT) 0.82-1.38x, and of 32 and 64 2.5-2.9x (under
#: 2 us); serial, the rows of 512-768 ran 1.3-1.6x the records' time where the parallel loop ran
#: 0.3-0.8x. Against TVM's default schedule (no record): wav2vec 2.0's group norm (512 rows of 3,199)
#: 3,470 -> 465 us, Llama's RMS norm (64 rows of 512) 30 -> 4.7, BiT's group norms (32 rows of
#: 784-25,088) 0.05-0.1x.
STATS_MIN_ROW = 512


def _stats_plan(kmod: tvm.IRModule, target, fallback: bool = False) -> _StatsPlan | None:
    """The :class:`_StatsPlan` of an llvm kernel made of reductions over the same innermost axes of
    the same rows, element-wise blocks over those rows' statistics (the mean's division, ``+ eps``,
    ``sqrt``) and element-wise blocks over the whole rows (``x - mean``, its square, a
    normalisation), at least one of those; else None. The kernels TVM's ONNX frontend makes of
    ``InstanceNormalization`` (``mean`` and ``variance`` over each channel; GroupNorm exported on a
    reshape to ``[n, groups, -1]``) and of ``ReduceMean``, ``Sub``, ``Pow``, ``ReduceMean`` chains
    (PoolFormer's ``GroupNorm`` of one group), and the layer norms and RMS norms of exports whose
    rows are at least :data:`STATS_MIN_ROW` long (any, with ``fallback``) that the layer norm
    template leaves (under :data:`.common.MIN_MOVED_ELEMENTS` outputs, or with a residual add fused
    before them)."""
    if target.kind.name != "llvm":
        return None
    blocks = common._root_blocks(kmod)
    reds = [b for b in blocks if "R" in common._iter_kinds(b)]
    if not reds or not all(isinstance(v.dom.extent, tvm.tirx.IntImm) for b in blocks for v in b.iter_vars):
        return None
    kinds = common._iter_kinds(reds[0])
    reduced = len(kinds) - len(kinds.rstrip("R"))
    if "R" in kinds[:-reduced] or any(common._iter_kinds(r) != kinds for r in reds):
        return None
    rows, row = _extents(reds[0])[:-reduced], _extents(reds[0])[-reduced:]
    if not rows or any(_extents(r) != rows + row for r in reds):
        return None  # a reduction of every axis leaves no loop over rows to schedule under
    unit = [e for e in rows if e != 1]
    rowwise = []
    for b in blocks:
        if b in reds:
            continue
        extents = _extents(b)
        if set(common._iter_kinds(b)) != {"S"}:
            return None
        if len(extents) >= reduced and extents[-reduced:] == row and [e for e in extents[:-reduced] if e != 1] == unit:
            rowwise.append(b.name_hint)
        elif [e for e in extents if e != 1] != unit:
            return None  # neither a row's statistic nor a whole row
    if not rowwise:
        return None  # statistics alone: _reduce_plan's
    n = math.prod(row)
    if n < STATS_MIN_ROW and not fallback:
        return None
    lanes = _partial_results(n, target)
    if lanes is None:
        return None
    parallel = math.prod(rows) > 1 and (n >= STATS_MIN_ROW or math.prod(rows) * n >= common.MIN_MOVED_ELEMENTS)
    return _StatsPlan(lanes, parallel, reduced, tuple(r.name_hint for r in reds), tuple(rowwise),
                      blocks[-1].name_hint in rowwise)


def _schedule_stats(kmod: tvm.IRModule, plan: _StatsPlan) -> tvm.tirx.PrimFunc | None:
    """Every row one iteration of a (parallel) loop, all of its work under it, as the layer norm's
    (:func:`_schedule_layer_norm`): the element-wise blocks over whole rows inlined into what reads
    them (``(x - mean)^2`` into the variance's sum, the normalisation into the last block), each
    reduction as ``plan.lanes`` partial results (``rfactor``) accumulated in vectors and combined,
    the statistics computed once a row, a last block over whole rows vectorised."""
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": kmod["main"]}))
    names = [b.name_hint for b in common._root_blocks(kmod)]
    last = names[-1]
    try:
        for name in plan.rowwise:
            if name != last:
                sch.compute_inline(sch.get_sblock(name))
        if plan.reduced > 1:
            for name in plan.reductions:
                sch.fuse(*sch.get_loops(sch.get_sblock(name))[-plan.reduced:])
        partial = _partial_sums(sch, plan.reductions, plan.lanes)
        loops = sch.get_loops(sch.get_sblock(last))
        inner = None
        if plan.out_rowwise:
            inner = sch.fuse(*loops[-plan.reduced:]) if plan.reduced > 1 else loops[-1]
            loops = loops[:-plan.reduced]
        row = sch.fuse(*loops) if len(loops) > 1 else loops[0]
        if plan.parallel:
            sch.parallel(row)
        under = []
        for name in reversed([n for n in names[:-1] if n not in plan.rowwise]):  # consumers first
            under += [sch.get_sblock(name)] + ([partial[name]] if name in partial else [])
        _rows_in_parallel_under(sch, row, under, partial)
        if inner is not None:
            _vectorised_row(sch, inner)
    except tvm.s_tir.schedule.ScheduleError:
        return None
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)
