"""The unpartitioned reference build ``--check`` compares against: TVM's own CPU pipeline, each
kernel's loops reordered so that it sums its reductions outside its innermost output loop, its
outermost output loop parallel.

Why: TVM 0.27's default CPU pipeline (``relax.backend.cpu_generic``) schedules nothing, so a matmul
sums each output over its whole reduction innermost, striding down the weights' columns, scalar,
on one thread. ``compile --check`` of ALBERT-xxlarge (64 tokens, 155 GMAC) ran past 15 minutes in
that reference, of RoBERTa (4 layers, 64 tokens) 7.4 s, of the zoo's ResNet-18 5.7 s; reordered,
0.24 s and 0.62 s (rocketlake-2c, 2026-12-06).

The reference stays independent of what it checks: no template, transferred record or tuning
database of this package, only TVM's legalization and two of its verified schedule primitives
(``reorder``, ``parallel``), which change which output is computed when, never how one is: each
output sums the same products in the same order (its reduction loops keep their nesting), so the
outputs are the default pipeline's to the bit (``tests/test_reference.py``). A kernel whose loops
are not one per block variable keeps TVM's loops.

LLVM vectorises the reordered innermost loop from optimisation level 2; below it the kernels run
3.5-10x slower, and level 2 compiles slower: the README's LSTM (0.23 GFLOP) compiled in 4.8 s
against 2.6 at level 0, run in 0.01 s against 0.10. Models of at least :data:`LARGE_FLOPS` compile
at level 2.
"""

from __future__ import annotations

import tvm
from tvm import relax
from tvm.relax.backend.cpu_generic import pipeline as cpu_generic

from ..devices import cpu_target
from ..ir.relax_utils import copy_module
from .tuning import kernel_flops

#: Work (FLOPs, every kernel call counted) from which the reference compiles at LLVM level 2: at
#: level 0 the reordered kernels ran 0.3-2 GFLOP/s, so a model of 1 GFLOP runs about as long as
#: level 2 adds to the compile (2-2.5 s: the LSTM, LeViT; rocketlake-2c, 2026-12-06).
LARGE_FLOPS = 1e9
_DATA_PARALLEL, _REDUCTION = 0, 2  # tirx.IterVar's iter_type


def reference_executable(mod: tvm.IRModule):
    """``mod`` (a Relax module, unpartitioned) compiled for this machine's CPU by TVM's default
    CPU pipeline with every kernel :func:`ordered`."""
    host = tvm.target.Target(cpu_target())
    with host:
        legalize = cpu_generic.library_dispatch_passes(host) + cpu_generic.legalize_passes(host)
        mod = tvm.transform.Sequential(legalize)(mod)
    mod = _ordered_module(mod)
    target = tvm.target.Target(dict(cpu_target(), **{"opt-level": 2 if model_flops(mod) >= LARGE_FLOPS else 0}))
    lower = tvm.transform.Sequential(cpu_generic.dataflow_lower_passes(target) + cpu_generic.finalize_passes(target))

    @tvm.transform.module_pass(opt_level=0)
    def lowered(m, _ctx):  # TVM's own Relax lowering, under the target as its pipeline runs it
        with target:
            return lower(m)

    return tvm.compile(mod, target=target, relax_pipeline=lowered)


def ordered(func: tvm.tirx.PrimFunc) -> tvm.tirx.PrimFunc:
    """``func`` with each block under its root whose loops are one per block variable, in order,
    reordered: its output loops but the innermost, its reduction loops, its innermost output loop;
    the outermost output loop parallel where a reduction loop is not outermost."""
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": func}))
    try:
        blocks = sch.get_child_blocks(sch.get_sblock("root"))
    except tvm.s_tir.ScheduleError:  # no root block (TVM's dispatched scans and sorts): TVM's loops
        return func
    for block in blocks:
        loops = sch.get_loops(block)
        variables = sch.get(block).iter_vars
        kinds = [v.iter_type for v in variables]
        if not loops or len(loops) != len(variables) or set(kinds) - {_DATA_PARALLEL, _REDUCTION} \
                or not _one_loop_per_variable(sch, block, loops):
            continue
        spatial = [loop for loop, kind in zip(loops, kinds) if kind == _DATA_PARALLEL]
        reduction = [loop for loop, kind in zip(loops, kinds) if kind == _REDUCTION]
        try:
            if spatial and reduction:
                sch.reorder(*spatial[:-1], *reduction, spatial[-1])
            if len(spatial) > (1 if reduction else 0):
                sch.parallel(spatial[0])
        except tvm.s_tir.ScheduleError:  # a loop shared with a block it would change: TVM's loops
            continue
    return sch.mod["main"]


def _one_loop_per_variable(sch, block, loops) -> bool:
    """Whether the block sits right under its innermost loop, block variable i bound to loop i's
    variable itself (TOPI's computes, legalized)."""
    realize = sch.get(loops[-1]).body
    return isinstance(realize, tvm.s_tir.SBlockRealize) and len(realize.iter_values) == len(loops) and all(
        value.same_as(sch.get(loop).loop_var) for value, loop in zip(realize.iter_values, loops))


def _ordered_module(mod: tvm.IRModule) -> tvm.IRModule:
    mod = copy_module(mod)
    for gv, func in list(mod.functions.items()):
        if isinstance(func, tvm.tirx.PrimFunc):
            mod[gv] = ordered(func)
    return mod


def model_flops(mod: tvm.IRModule) -> float:
    """FLOPs of one run of ``main``: TVM's estimate of each kernel it calls, times its calls."""
    flops = {gv: kernel_flops(tvm.IRModule({"main": f})) for gv, f in mod.functions.items()
             if isinstance(f, tvm.tirx.PrimFunc)}
    total = [0.0]
    call_tir = tvm.ir.Op.get("relax.call_tir")

    def visit(expr):
        if isinstance(expr, relax.Call) and expr.op.same_as(call_tir):
            total[0] += flops.get(expr.args[0], 0.0)

    relax.analysis.post_order_visit(mod["main"].body, visit)
    return total[0]

