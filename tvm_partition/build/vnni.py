"""The uint8 x int8 matmul template: four byte products summed into each int32 lane by AVX-512
VNNI's ``vpdpbusd``, for the integer products of :mod:`tvm_partition.frontend.integer_matmul`.

The kernel is TOPI's ``matmul`` block of a uint8 ``x[..., m, k]`` by an int8 weight ``w[k, n]``
summed in int32, then its element-wise epilogue (the zero point's correction, the cast to float,
the scales, a bias, an activation). The schedule is that of ``benchmarks/vnni_matmul.py``, which
measured it 3.0-3.6x quicker than our float build on DistilBERT's matmul shapes (rocketlake-2c,
2026-12-05):

- the weights packed ``[n/16, k/4, 16, 4]`` (a ``vpdpbusd`` operand: 16 columns of 4 consecutive
  bytes of the reduction) by a block the build lifts to load time
  (``meta_schedule.layout_rewrite_preproc``, as MetaSchedule's ``RewriteLayout`` marks its own;
  ``relax.transform.SplitLayoutRewritePreproc`` splits it off);
- a register tile of :data:`ROWS` rows x :data:`VECTORS` vectors of 16 columns (16 int32
  accumulators) over the whole reduction, each step one ``vpdpbusd`` of 4 bytes of a row broadcast
  against a packed vector of the weights (the tensorized 16 x 4 dot product);
- blocks of columns outer, then the rows, one parallel loop (the block's packed weights stay in
  cache while the rows pass them); the epilogue computed per tile.

TVM 0.27's own ``VNNI_DOT_16x4_INTRIN`` fails LLVM's verifier on the LLVM it bundles (22:
``llvm.x86.avx512.vpdpbusd.512`` takes ``<64 x i8>`` operands, the intrinsic passes
``<16 x i32>``), so :func:`intrinsic` registers the same description with byte vectors; importing
``tvm.s_tir.tensor_intrin`` for the description costs 24 s (it registers every target's), so it is
written out here.
"""

from __future__ import annotations

import dataclasses
import functools

import tvm

#: Rows of a register tile, and vectors of 16 int32 columns: 16 accumulators of the 32 zmm registers
#: (the benchmark's tile; 4 x 4 is the tile oneDNN's VNNI GEMM kernels use too).
ROWS, VECTORS, LANES, BYTES = 4, 4, 16, 4
#: The registered name of :func:`intrinsic`'s dot product.
INTRINSIC = "tvm_partition_vnni_16x4"
_MATMUL = "matmul"


def sums_bytes(target) -> bool:
    """Whether ``target`` is a CPU with AVX-512 VNNI (``vpdpbusd``)."""
    return target.kind.name == "llvm" and bool(tvm.target.codegen.target_has_features("avx512vnni", target))


@dataclasses.dataclass(frozen=True)
class Plan:
    """An integer matmul kernel the template applies to: its epilogue blocks, the kernel parameter
    holding the weights, and whether it runs in parallel."""

    epilogue: tuple[str, ...]
    weight: int
    parallel: bool


def fits(mm) -> bool:
    """Whether ``mm`` (TOPI's ``matmul`` block of a kernel) sums uint8 x int8 products in int32 by a
    rank-2 weight, its extents static, its rows a multiple of :data:`ROWS`, its reduction of
    :data:`BYTES` and its columns of :data:`VECTORS` x :data:`LANES`."""
    x, w = (r.source for r in mm.reads)
    if (str(x.dtype), str(w.dtype), str(mm.writes[0].source.dtype)) != ("uint8", "int8", "int32") or len(w.shape) != 2:
        return False
    extents = [v.dom.extent for v in mm.iter_vars]
    if not all(isinstance(e, tvm.tirx.IntImm) for e in extents):
        return False
    rows, cols, red = (int(e) for e in extents[-3:])
    return not (rows % ROWS or red % BYTES or cols % (VECTORS * LANES))


def schedule(kmod: tvm.IRModule, p: Plan) -> tvm.tirx.PrimFunc:
    """The schedule of the module docstring: ``n_o lead m_o | k_o | m_i n_b (n_i k_i: the tensorized
    dot product)``, the first three one parallel loop, the weights packed at load time."""
    sch, mm = packed(kmod, p)
    *lead, m, n, k = sch.get_loops(mm)
    m_o, m_i = sch.split(m, [None, ROWS])
    n_o, n_b, n_i = sch.split(n, [None, VECTORS, LANES])
    k_o, k_i = sch.split(k, [None, BYTES])
    sch.reorder(n_o, *lead, m_o, k_o, m_i, n_b, n_i, k_i)
    epilogue_per_tile(sch, mm, p, [n_o, *lead, m_o])
    sch.decompose_reduction(mm, k_o)
    sch.tensorize(n_i, intrinsic())
    sch.unroll(m_i)
    sch.unroll(n_b)
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def packed(kmod: tvm.IRModule, p: Plan):
    """``(schedule, matmul block)`` of the kernel, its epilogue inlined but for its last block, the
    weights packed ``[n/16, k/4, 16, 4]`` by a block the build lifts to load time (the AMX
    template's B tiles read the same layout)."""
    func = kmod["main"].with_attr("layout_free_buffers", [p.weight])
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": func}))
    for name in p.epilogue[:-1]:
        sch.compute_inline(sch.get_sblock(name))
    mm = sch.get_sblock(_MATMUL)
    packing = sch.cache_read(mm, 1, "global")
    sch.transform_layout(mm, ("read", 1), lambda k, n: (n // LANES, k // BYTES, n % LANES, k % BYTES))
    sch.annotate(packing, "meta_schedule.layout_rewrite_preproc", True)
    return sch, mm


def epilogue_per_tile(sch, mm, p: Plan, tile_loops: list) -> None:
    """The product summed into a tile's int32 accumulator (``global``: the intrinsics' scope; a tile
    of the stack) and the epilogue computed per tile, under ``tile_loops`` fused into one loop,
    parallel where ``p`` says, both written a vector of 16 columns at a time."""
    acc = sch.cache_write(mm, 0, "global")
    sch.reverse_compute_at(acc, tile_loops[-1])
    written = [acc]
    if p.epilogue:
        last = sch.get_sblock(p.epilogue[-1])
        sch.reverse_compute_at(last, tile_loops[-1])
        written.append(last)
    tile = sch.fuse(*tile_loops)
    if p.parallel:
        sch.parallel(tile)  # before tensorize: a parallel loop wants whole blocks below it
    for block in written:
        sch.vectorize(sch.split(sch.get_loops(block)[-1], [None, LANES])[1])


@functools.cache
def intrinsic() -> str:
    """The 16 x 4 uint8 x int8 dot product of TVM's ``VNNI_DOT_16x4_INTRIN`` description,
    implemented with the byte vectors LLVM 22's ``vpdpbusd`` takes; registered once, its name."""
    from tvm.s_tir import TensorIntrin
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def description(a_handle: T.handle, b_handle: T.handle, c_handle: T.handle) -> None:
        a = T.match_buffer(a_handle, (4,), "uint8", offset_factor=1)
        b = T.match_buffer(b_handle, (16, 4), "int8", offset_factor=1)
        c = T.match_buffer(c_handle, (16,), "int32", offset_factor=1)
        with T.sblock("root"):
            T.reads(c[0:16], a[0:4], b[0:16, 0:4])
            T.writes(c[0:16])
            for i, k in T.grid(16, 4):
                with T.sblock("update"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    c[vi] = c[vi] + T.cast(a[vk], "int32") * T.cast(b[vi, vk], "int32")

    @T.prim_func(s_tir=True)
    def implementation(a_handle: T.handle, b_handle: T.handle, c_handle: T.handle) -> None:
        a = T.match_buffer(a_handle, (4,), "uint8", offset_factor=1)
        b = T.match_buffer(b_handle, (16, 4), "int8", offset_factor=1)
        c = T.match_buffer(c_handle, (16,), "int32", offset_factor=1)
        with T.sblock("root"):
            T.reads(c[0:16], a[0:4], b[0:16, 0:4])
            T.writes(c[0:16])
            four = T.reinterpret(a.vload([0], "uint8x4"), dtype="int32")
            c[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"), c.vload([0], dtype="int32x16"),
                T.reinterpret(T.broadcast(four, 16), dtype="int8x64"), b.vload([0, 0], dtype="int8x64"),
                dtype="int32x16")

    TensorIntrin.register(INTRINSIC, description, implementation, override=True)
    return INTRINSIC
