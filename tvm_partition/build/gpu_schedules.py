"""GPU kernels' schedules: dlight's default rules (TVM 0.27 ``s_tir.dlight.gpu``), chosen per kernel.

EOP runs every operator with the best schedule TVM gives it (Sec. 2.1); for a GPU kernel that is
dlight's rules, which :func:`schedule_gpu` tries in dlight's order (:data:`GPU_RULES`) but for one
exception the H100 machine measured (:func:`_few_long`). The CUDA code is cross-compiled here and
compiled by NVRTC where it runs (:mod:`tvm_partition.build.nvrtc`); a kernel no rule schedules is an
error, since unscheduled CUDA code would compile silently into host code. Reductions over one
element are written as maps first (:mod:`tvm_partition.build.unit_reductions`).
"""

from __future__ import annotations

import math

import tvm

from ..devices import DeviceSpec
from ..ir.relax_utils import copy_module
from . import unit_reductions
from .tuning import TuningError


#: dlight's GPU rules, in dlight's order: the first that schedules a kernel gives its schedule,
#: except where :func:`_few_long` prefers ``GeneralReduction`` to ``Matmul``.
GPU_RULES = ("Matmul", "GEMV", "Reduction", "GeneralReduction", "Fallback")
#: Version of that choice, part of what a GPU profile sample ran (:func:`tvm_partition.profiling.
#: profiler.sample_stamp`): 1 takes ``GeneralReduction`` for long reductions in few blocks.
GPU_RULE_CHOICE = 1
#: ``Matmul`` spreading a kernel over fewer thread blocks than this leaves most multiprocessors of
#: any GPU targeted idle: the smallest, Jetson Orin, has 16 (an RTX 2060 30, an H100 132).
FEW_BLOCKS = 16
#: ``GeneralReduction`` gives each output a block of 256 threads that share its reduction: under
#: that many elements most of them idle (ResNet-18's stem, 147: 53.6 us against Matmul's 16.2).
LONG_REDUCTION = 256


def schedule_gpu(mod: tvm.IRModule, kernel_devices: dict[str, str], devices: list[DeviceSpec],
                 rules: tuple[str, ...] = GPU_RULES) -> tvm.IRModule:
    """dlight's default GPU schedules for every kernel placed on a GPU.

    ``rules`` (of :data:`GPU_RULES`) are tried in order; a rule that raises on a kernel (0.27's GEMV
    asserts on some reduction shapes) is skipped for that kernel instead of failing the build. A
    kernel no rule schedules is an error: unscheduled CUDA code would compile silently into host
    code. The GPU proof kit times kernels under one rule each (``rules=(name,)``).

    One exception to dlight's order, measured on the H100 machine (2026-11-27, the GPU proof's
    ``variants``): ``Matmul`` tiles output pixels x channels into blocks that each walk the whole
    reduction, so ResNet-18's 3x3 convolutions at 64 px ran in 4-8 blocks on 132 multiprocessors,
    49-356 us each where ``GeneralReduction`` (a block per output, its threads sharing the
    reduction) took 16-25. A kernel ``Matmul`` would give fewer than :data:`FEW_BLOCKS` blocks and
    each output a reduction of :data:`LONG_REDUCTION` elements or more takes ``GeneralReduction``
    (:func:`_few_long`): on the 19 kernels measured the rule it leaves is the quickest or within 8%
    of it but for the stem, which keeps ``Matmul`` (16.2 us, ``Fallback`` 11.6): 291 us in all,
    2,375 in dlight's order. BERT-tiny's matmuls (128-512 blocks) keep ``Matmul``, 20-70x quicker
    there.
    """
    gpu_names = {d.name for d in devices if d.kind == "gpu"}
    out = copy_module(mod)
    for gv, func in mod.functions_items():
        if kernel_devices.get(gv.name_hint) not in gpu_names or (func.attrs and func.attrs.get("tirx.is_scheduled")):
            continue
        out[gv] = gpu_rule(gv, func, rules)[1]
    return out


def gpu_rule(gv, func, rules: tuple[str, ...] = GPU_RULES) -> tuple[str, object]:
    """``(rule, scheduled)``: the rule of ``rules`` :func:`schedule_gpu` schedules kernel ``func``
    (named ``gv``) with, and the scheduled PrimFunc. Reductions over one element are written as
    maps first, and a schedule whose reduction init reads a buffer where the kernel's inits read
    none is refused: dlight's ``Fallback`` miscompiles them so
    (:mod:`tvm_partition.build.unit_reductions`)."""
    func = unit_reductions.as_maps(func)
    name, scheduled = _first_rule(gv, func, rules)
    bad = unit_reductions.init_reads_buffers(scheduled)
    if bad and not unit_reductions.init_reads_buffers(func):
        raise TuningError(f"dlight's {name} inlined an epilogue into the reduction init of kernel "
                          f"{gv.name_hint} (blocks {', '.join(bad)}): it would compute wrong values")
    return name, scheduled


#: The label of a GPU kernel TOPI wrote with its threads bound (its CUDA strategies' ir_builder
#: kernels: ``scatter_elements_gpu``), which no dlight rule schedules and none needs to.
BOUND_RULE = "bound by TOPI"


def _first_rule(gv, func, rules: tuple[str, ...]) -> tuple[str, object]:
    for name in rules:
        scheduled = _dlight(gv, func, name)
        if scheduled is not None:
            break
    else:
        if binds_threads(func.body):
            return BOUND_RULE, func.with_attr("tirx.is_scheduled", True)
        raise TuningError(f"no dlight GPU schedule applies to kernel {gv.name_hint}")
    if name == "Matmul" and "GeneralReduction" in rules and _few_long(func, scheduled):
        general = _dlight(gv, func, "GeneralReduction")
        if general is not None:
            return "GeneralReduction", general
    return name, scheduled


def binds_threads(stmt) -> bool:
    """Whether ``stmt`` (a PrimFunc's body) launches GPU threads itself (a ``thread_extent``
    attribute): TOPI's CUDA scatter is one block around ``launch_thread`` loops, which dlight's
    rules refuse ("no dlight GPU schedule applies to kernel scatter_elements_cuda", a ``gpu``
    build of PyTorch's ``index_fill``). TVM 0.27's Python API has no TIR visitor: its children
    are read by field."""
    if isinstance(stmt, tvm.tirx.AttrStmt) and stmt.attr_key == "thread_extent":
        return True
    children = [getattr(stmt, field, None) for field in ("block", "body", "then_case", "else_case")]
    children += list(getattr(stmt, "seq", None) or [])
    return any(binds_threads(c) for c in children if isinstance(c, (tvm.tirx.Stmt, tvm.s_tir.SBlock)))


def _dlight(gv, func, rule: str):
    """``func`` scheduled by dlight's GPU rule ``rule``, or None where it does not apply."""
    import tvm.s_tir.dlight as dl

    try:
        scheduled = dl.ApplyDefaultSchedule(getattr(dl.gpu, rule)())(tvm.IRModule({gv: func}))[gv]
    except Exception:  # noqa: BLE001 - a dlight rule's internal assertion: try the next rule
        return None
    return scheduled if scheduled.attrs and scheduled.attrs.get("tirx.is_scheduled") else None


def _few_long(func, by_matmul) -> bool:
    """Whether ``by_matmul`` (``func`` under dlight's ``Matmul``) runs in fewer than
    :data:`FEW_BLOCKS` thread blocks while ``func`` reduces :data:`LONG_REDUCTION` elements or more
    into each output (False where either cannot be read: dlight's order stands)."""
    try:
        return grid_blocks(by_matmul) < FEW_BLOCKS and reduction_extent(func) >= LONG_REDUCTION
    except Exception:  # noqa: BLE001 - a kernel without a root block or with symbolic extents
        return False


def _sblocks(func):
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": func}))
    return sch, unit_reductions.sblocks(sch)


def reduction_extent(func) -> int:
    """The most elements any block of ``func`` reduces into one output (1: no reduction)."""
    sch, blocks = _sblocks(func)
    return max([math.prod(int(iv.dom.extent) for iv in sch.get(b).iter_vars
                          if iv.iter_type == tvm.tirx.IterVar.CommReduce)
                for b in blocks], default=1)


def grid_blocks(func) -> int:
    """Thread blocks a scheduled GPU kernel launches: the product of its ``blockIdx`` loops' extents
    (the largest over its blocks)."""
    sch, blocks = _sblocks(func)
    return max([math.prod(int(sch.get(lp).extent) for lp in sch.get_loops(b)
                          if sch.get(lp).thread_binding is not None
                          and sch.get(lp).thread_binding.thread_tag.startswith("blockIdx"))
                for b in blocks], default=1)
