"""The uint8 x int8 matmul template on AMX tiles: Intel's Advanced Matrix Extensions sum a 16 x 64
byte tile by a 64 x 16 one into 16 x 16 int32 (``tdpbusd``), for CPUs that have them (Sapphire
Rapids and later Xeons), where :mod:`.vnni`'s template sums 4 bytes a lane.

Why: onnxruntime's ``MatMulInteger`` runs on AMX where the CPU has it, and this VM's does (its
flags ``amx_int8 amx_tile``, though LLVM names it ``rocketlake``): 988-1,260 GMAC/s on 2 threads
on the transformers' shapes where our VNNI template summed 340-470, the gap between our
dynamically quantized ViT and GPT-2 and onnxruntime's. This template sums them 2.0-3.4x quicker
than the VNNI one (640-1,410 GMAC/s; ``benchmarks/amx_matmul.py``, rocketlake-2c, 2026-12-06).

The kernel is the one :mod:`.vnni` schedules (TOPI's ``matmul`` of a uint8 activation by an int8
weight, then its element-wise epilogue), with the weights packed the same ``[n/16, k/4, 16, 4]``:
16 consecutive ``k/4`` rows of one column block are an AMX B tile (16 rows of 64 bytes). A tile of
32 rows x 32 columns (four int32 C tiles, two A and two B tiles: all eight tile registers) sums the
whole reduction in registers (:func:`intrinsic`, tensorized: a description per reduction length),
its tiles in parallel, the epilogue per tile (a prototype of 16 rows x 64 columns, one A tile and
four B tiles a step, summed 623 GMAC/s on 224 x 768 x 3072 where this one sums 858).

Two facts of the hardware the kernel carries itself: each thread configures its tiles
(``ldtilecfg``, every tile 16 rows of 64 bytes) and releases them; and Linux runs tile instructions
only in a process that asked for them (``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``; a
process that did not dies of SIGILL), which TVM 0.27's wheel does not build (its
``runtime.amx_init`` needs ``USE_AMX``): every kernel asks first, one system call a run of it.
"""

from __future__ import annotations

import functools

import tvm

from . import vnni

#: A tile of the template: rows and columns (two AMX tiles each way), and the bytes of the
#: reduction one ``tdpbusd`` sums (an A tile's row).
ROWS, COLUMNS, STEP = 32, 32, 64
#: Linux's ``arch_prctl`` system call number on x86-64, its request, and the tile data feature.
_ARCH_PRCTL, _REQ_XCOMP_PERM, _XTILEDATA = 158, 0x1023, 18


def multiplies_tiles(target) -> bool:
    """Whether ``target`` is a CPU with AMX's int8 tiles as builds compile for it
    (:func:`tvm_partition.devices.codegen_target`: ``-mcpu=sapphirerapids`` and later, ``mattr``
    ``+amx-tile,+amx-int8``, or this machine's CPU where it has them; templates are chosen for the
    target MetaSchedule keeps, which says nothing of the last)."""
    return target.kind.name == "llvm" and _tiles(str(target))


@functools.lru_cache(maxsize=None)
def _tiles(target: str) -> bool:
    from ..devices import codegen_target

    compiled = tvm.target.Target(codegen_target(dict(tvm.target.Target(target).export())))
    has = tvm.target.codegen.target_has_features
    return bool(has("amx-int8", compiled)) and bool(has("amx-tile", compiled))


def fits(mm) -> bool:
    """Whether ``mm`` (TOPI's ``matmul`` block, already :func:`.vnni.fits`) is whole tiles: rows of
    :data:`ROWS`, columns of :data:`COLUMNS`, a reduction of :data:`STEP`."""
    rows, cols, red = (int(v.dom.extent) for v in mm.iter_vars[-3:])
    return not (rows % ROWS or cols % COLUMNS or red % STEP)


def schedule(kmod: tvm.IRModule, p) -> tvm.tirx.PrimFunc:
    """``n_o lead m_o | m_i n_i k`` (the last three the tensorized tile), the first three one
    parallel loop; ``p``: the kernel's :class:`.vnni.Plan`."""
    sch, mm = vnni.packed(kmod, p)
    *lead, m, n, k = sch.get_loops(mm)
    reduction = int(sch.get(k).extent)
    m_o, m_i = sch.split(m, [None, ROWS])
    n_o, n_i = sch.split(n, [None, COLUMNS])
    sch.reorder(n_o, *lead, m_o, m_i, n_i, k)
    vnni.epilogue_per_tile(sch, mm, p, [n_o, *lead, m_o])
    sch.decompose_reduction(mm, m_i)
    sch.tensorize(m_i, intrinsic(reduction))
    return _asking_for_tiles(sch.mod["main"]).with_attr("tirx.is_scheduled", True)


def _asking_for_tiles(func: tvm.tirx.PrimFunc) -> tvm.tirx.PrimFunc:
    """``func`` asking Linux for the tile registers first (module docstring), in a block of its
    own first in the root block (the build's passes want both)."""
    from tvm.s_tir.stmt import SBlock, SBlockRealize

    call = tvm.tirx.Evaluate(tvm.tirx.call_extern(
        "int64", "syscall", *(tvm.tirx.const(v, "int64") for v in (_ARCH_PRCTL, _REQ_XCOMP_PERM, _XTILEDATA))))
    ask = SBlockRealize([], True, SBlock([], [], [], "ask_for_tiles", call))  # a block of its own: the passes that
    realize, root = func.body, func.body.block  # split the root's statements want a block in each
    block = SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, tvm.tirx.SeqStmt([ask, root.body]),
                   root.init, root.alloc_buffers, root.match_buffers, root.annotations)
    return func.with_body(SBlockRealize(realize.iter_values, realize.predicate, block))


@functools.cache
def intrinsic(reduction: int) -> str:
    """The 32 x 32 tile over a reduction of ``reduction`` bytes (a multiple of :data:`STEP`):
    C (int32, in memory) += A (uint8, 32 rows) x B (int8, two column blocks packed as
    ``[2, k/4, 16, 4]``), summed in the eight tile registers; registered once a length, its name."""
    from tvm.s_tir import TensorIntrin
    from tvm.script import tirx as T

    K = reduction  # noqa: N806 - the reduction's length, as the description's shapes read it

    @T.prim_func(s_tir=True)
    def description(a_handle: T.handle, b_handle: T.handle, c_handle: T.handle) -> None:
        a = T.match_buffer(a_handle, (32, K), "uint8", offset_factor=1)
        b = T.match_buffer(b_handle, (2, K // 4, 16, 4), "int8", offset_factor=1)
        c = T.match_buffer(c_handle, (32, 32), "int32", offset_factor=1)
        with T.sblock("root"):
            T.reads(c[0:32, 0:32], a[0:32, 0:K], b[0:2, 0:K // 4, 0:16, 0:4])
            T.writes(c[0:32, 0:32])
            for i, j, k in T.grid(32, 32, K):
                with T.sblock("update"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    c[vi, vj] = c[vi, vj] + T.cast(a[vi, vk], "int32") * T.cast(b[vj // 16, vk // 4, vj % 16, vk % 4], "int32")

    @T.prim_func(s_tir=True)
    def implementation(a_handle: T.handle, b_handle: T.handle, c_handle: T.handle) -> None:
        sa = T.int32()
        sb = T.int32()
        sc = T.int32()
        a = T.match_buffer(a_handle, (32, K), "uint8", offset_factor=1, strides=[sa, 1])
        b = T.match_buffer(b_handle, (2, K // 4, 16, 4), "int8", offset_factor=1, strides=[sb, 64, 4, 1])
        c = T.match_buffer(c_handle, (32, 32), "int32", offset_factor=1, strides=[sc, 1])
        with T.sblock("root"):
            T.reads(c[0:32, 0:32], a[0:32, 0:K], b[0:2, 0:K // 4, 0:16, 0:4])
            T.writes(c[0:32, 0:32])
            config = T.alloc_buffer((64,), "uint8", scope="local")  # palette 1, 8 tiles of 16 x 64 bytes
            for i in range(64):
                config[i] = T.uint8(0)
            config[0] = T.uint8(1)
            for t in range(8):
                config[16 + 2 * t] = T.uint8(64)
                config[48 + t] = T.uint8(16)
            T.evaluate(T.call_llvm_intrin("void", "llvm.x86.ldtilecfg", T.address_of(config[0])))
            # C tiles 0-3 (rows 0 and 16 by columns 0 and 16), A 4-5, B 6-7: tile numbers are immediates
            T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(0), T.address_of(c[0, 0]), T.int64(sc * 4)))
            T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(1), T.address_of(c[0, 16]), T.int64(sc * 4)))
            T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(2), T.address_of(c[16, 0]), T.int64(sc * 4)))
            T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(3), T.address_of(c[16, 16]), T.int64(sc * 4)))
            for ko in range(K // 64):
                T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(4), T.address_of(a[0, ko * 64]), T.int64(sa)))
                T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(5), T.address_of(a[16, ko * 64]), T.int64(sa)))
                T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(6), T.address_of(b[0, ko * 16, 0, 0]), T.int64(64)))
                T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tileloadd64", T.int8(7), T.address_of(b[1, ko * 16, 0, 0]), T.int64(64)))
                T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tdpbusd", T.int8(0), T.int8(4), T.int8(6)))
                T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tdpbusd", T.int8(1), T.int8(4), T.int8(7)))
                T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tdpbusd", T.int8(2), T.int8(5), T.int8(6)))
                T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tdpbusd", T.int8(3), T.int8(5), T.int8(7)))
            T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(0), T.address_of(c[0, 0]), T.int64(sc * 4)))
            T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(1), T.address_of(c[0, 16]), T.int64(sc * 4)))
            T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(2), T.address_of(c[16, 0]), T.int64(sc * 4)))
            T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tilestored64", T.int8(3), T.address_of(c[16, 16]), T.int64(sc * 4)))
            T.evaluate(T.call_llvm_intrin("void", "llvm.x86.tilerelease"))

    name = f"tvm_partition_amx_32x32x{K}"
    TensorIntrin.register(name, description, implementation, override=True)
    return name
