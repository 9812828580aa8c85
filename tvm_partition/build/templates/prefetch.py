"""Software prefetch of a chunked matmul's next chunk of packed weights, spread over the tiles of
rows that read the current one (:func:`.matmul._schedule_matmul`, :func:`.matmul._prefetching`), and
of a direct convolution's next block of output channels' weights, spread over the steps of the
reductions of the tiles that read the current block (:func:`.convolution._prefetching`).

Why: in a model a transformer's weights come from memory, not from the caches a kernel timed alone
finds them in (ViT-B/16's 85 M parameters, 340 MB, against a 260 MB L3 shared with the VM's
neighbours). A columns-outer matmul reads a block of columns' packed weights (a chunk of its
reduction, :data:`.matmul.MATMUL_CHUNK`) from memory in its first tile of rows, at the rate the
FMAs consume them, and then from the L2 cache in every other tile: the first tile stalls on memory
while the others ask nothing of it. Issued across all those tiles, one ``prefetcht1`` a few
lines at a time, the next chunk's weights arrive in the L2 cache while the current one computes.
Each alone, template with against without, weights flushed from the caches before every run
(TVM's ``cache_flush_cpu_non_first_arg``; 5 and 7 alternating rounds, 2 threads,
intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-07; DeiT-B's chunked matmuls, 200 rows): its
768 -> 768 projections 0.89-0.94x, its 768 -> 3072 + GELU 0.89x; with warm weights 0.99-1.04x. In
the model, builds paired in one process: DeiT-B 0.89x and 0.91x, DistilBERT 0.82x, YOLOS 0.94x (BENCHMARKS.md, "Weights from
memory: a chunked matmul prefetches its next chunk"). An unchunked matmul gets none
(:func:`.matmul._prefetching`). A convolution's block of output channels is read by every tile of
its rows, the first from memory, as a matmul's chunk; its tile's accumulators are an array on the
stack (:data:`.common.TILE_SCOPE`), which LLVM keeps in registers with a prefetch inside the
reduction loop (with warm weights ResNet-50's and Inception-v1's ran 0.82-1.04x), so there the prefetches are spread a
line or a few at every few steps of the reduction: a burst of 147 lines at each tile of ResNet-50's
512 -> 2048 1x1 at 7 x 7 ran 1.00x with its weights flushed, spread 0.83x
(:data:`.convolution.PREFETCH_BYTES`).

TVM 0.27 facts it relies on: TIR has no prefetch statement a schedule can place, but
``T.call_llvm_intrin("void", "llvm.prefetch.p0", address, rw, locality, cache)`` compiles to one
(LLVM's declaration gives it ``memory(argmem: readwrite)``: a call inside the loop that holds a
tile's accumulators keeps LLVM from promoting them to registers where they are memory from
``TVMBackendAllocWorkspace``, as the matmul's are, so its prefetches sit outside its reduction loop;
a stack array, as the convolution's tile, stays in registers beside them); and ``tvm.tirx`` has no statement mutator in Python, so
:func:`before_body` rebuilds the few nodes on the path to the loop it changes."""

from __future__ import annotations

import math

import tvm
from tvm import s_tir, tirx

from ...ir.relax_utils import unravel

#: Bytes a prefetch brings: one cache line.
LINE_BYTES = 64
#: ``llvm.prefetch``'s locality: 2 is the L2 cache (``prefetcht1`` on x86). The next chunk is read
#: only after every tile of the current one has passed: in the L1 cache it would be evicted by the
#: rows of ``x`` the tiles stream through it first.
LOCALITY = 2


def lines(packed: tvm.tirx.Buffer, start: tvm.tirx.PrimExpr, elements: int, slot: tvm.tirx.PrimExpr,
          slots: int) -> tvm.tirx.Stmt:
    """The prefetch loop that slot ``slot`` of ``slots`` runs: its share of the cache lines of
    ``elements`` elements of ``packed`` from flat element ``start`` (each slot ``ceil(lines /
    slots)`` consecutive lines, the last clamped to the buffer's end: a prefetch beyond it would not
    fault, but it would ask memory for nothing)."""
    per_line = LINE_BYTES * 8 // packed.dtype.bits
    count = per_slot(elements, per_line, slots)
    size = math.prod(int(s) for s in packed.shape)
    p = tirx.Var("p", "int64")
    address = tirx.address_of(tirx.BufferLoad(packed, unravel(line(start, slot, p, count, per_line, size), packed.shape)))
    call = tirx.call_llvm_intrin("void", "llvm.prefetch.p0", address, tirx.IntImm("int32", 0),
                                 tirx.IntImm("int32", LOCALITY), tirx.IntImm("int32", 1))
    return tirx.For(p, tirx.IntImm("int64", 0), tirx.IntImm("int64", count), tirx.ForKind.SERIAL, tirx.Evaluate(call))


def per_slot(elements: int, per_line: int, slots: int) -> int:
    """Lines each of ``slots`` slots prefetches so that they cover ``elements`` elements of
    ``per_line`` a line."""
    return math.ceil(math.ceil(elements / per_line) / slots)


def line(start, slot, p, count: int, per_line: int, size: int):
    """The flat element at which line ``p`` of slot ``slot`` (``count`` lines a slot) starts, from
    ``start``, clamped to the last of ``size`` elements."""
    return tirx.min(start + (slot * count + p) * per_line, tirx.IntImm("int64", size - 1))


def packed_weight(func: tvm.tirx.PrimFunc, weight: int, fits) -> tvm.tirx.Buffer | None:
    """The buffer that MetaSchedule's ``RewriteLayout`` packed ``func``'s weight parameter ``weight``
    into (:func:`.common._packed`: allocated in the root block, as many elements as the parameter)
    where ``fits`` accepts its shape (a list of ints); else None."""
    elements = math.prod(int(s) for s in func.params[weight].shape)  # TVM 0.27: params are buffers
    for buf in func.body.block.alloc_buffers:
        shape = [int(s) for s in buf.shape]
        if math.prod(shape) == elements and fits(shape):
            return buf
    return None


def before_body(func: tvm.tirx.PrimFunc, loop: tvm.tirx.Var, stmt: tvm.tirx.Stmt) -> tvm.tirx.PrimFunc:
    """``func`` with ``stmt`` run first in every iteration of the loop over ``loop``; unchanged where
    no loop runs over it."""
    new = _inserted(func.body, loop, stmt)
    return func if new is None else func.with_body(new)


def _inserted(node, loop, stmt):
    """``node`` rebuilt with ``stmt`` at the start of ``loop``'s body, or None where ``loop`` is not in it."""
    if isinstance(node, tirx.For):
        if node.loop_var.same_as(loop):
            body = tirx.SeqStmt([stmt, node.body])
        else:
            body = _inserted(node.body, loop, stmt)
            if body is None:
                return None
        return tirx.For(node.loop_var, node.min, node.extent, node.kind, body, node.thread_binding, node.annotations,
                        node.step)
    if isinstance(node, tirx.SeqStmt):
        for i, child in enumerate(node.seq):
            new = _inserted(child, loop, stmt)
            if new is not None:
                return tirx.SeqStmt([*node.seq[:i], new, *node.seq[i + 1:]])
        return None
    if isinstance(node, s_tir.SBlockRealize):
        block = _inserted(node.block, loop, stmt)
        return None if block is None else s_tir.SBlockRealize(node.iter_values, node.predicate, block)
    if isinstance(node, s_tir.SBlock):
        body = _inserted(node.body, loop, stmt)
        return None if body is None else s_tir.SBlock(
            node.iter_vars, node.reads, node.writes, node.name_hint, body, node.init, node.alloc_buffers,
            node.match_buffers, node.annotations)
    return None
