"""The overlap order, read from the compiled VM program (issue 19, item 2).

TVM 0.27's VM runs ``main`` on one host thread and every cross-device copy synchronises, so a
split op's GPU and CPU parts overlap only if the program launches the GPU part, runs the CPU part,
and copies nothing in between. :mod:`tvm_partition.build.vm_order` reads ``as_text()`` of
cross-compiled ``cpu,gpu`` builds and aligns it with the simulator's schedule; the oracles: a
one-op split whose program is written out by hand, and the two emission bugs this check found,
reintroduced, which it must report.
"""

from __future__ import annotations

import pytest
import tvm

from helpers import SMALL, comparable, cpu_gpu_build, mlp_model
from tvm_partition import frontend
from tvm_partition.build import executable
from tvm_partition.build.executable import build
from tvm_partition.build.vm_order import (OrderMismatch, Step, align, label_program, overlap_problems, program_order,
                                          program_steps, split_parts, simulated_steps)
from tvm_partition.cli.compile import compile_model
from tvm_partition.devices import parse_devices
from tvm_partition.ir.graph import OpGraph
from tvm_partition.plan import Plan, Split
from tvm_partition.planners.simulate import simulate

CPU_GPU = parse_devices("cpu,gpu")

#: Every zoo model's ``equal`` and ``eop`` plans (tiny settings): builds shared with
#: test_cuda_kernels / test_zoo_partition, the eop builds of the convolution nets (12-15 s) heavy,
#: and MobileNetV2's equal build (40 s; ResNet-18's covers the convolution nets; 2026-11-29).
ZOO = [("lstm", "equal"), ("gru", "equal"), ("gru", "eop"), ("bert", "equal"), ("bert", "eop"),
       ("bert-tiny", "equal"), ("resnet18", "equal")]
HEAVY = [("bert-tiny", "eop"), ("resnet18", "eop"), ("mobilenetv2", "eop"), ("mobilenetv2", "equal")]
#: Plans whose program departed from the simulated order before FenceCopies (docs/ARCHITECTURE.md,
#: "TVM 0.27 facts", FuseOps), each launching a GPU part before a copy its CPU part waits for:
#: LSTM's eop plan (the last step's gate matmuls, regrouped) and Inception-v3's equal plan (op 105,
#: a 1x1 convolution of the joined 1280 channels, moved ahead of the copy of its input to the CPU).
DEPARTED = [("lstm", "eop"), pytest.param("inception_v3", "equal", marks=pytest.mark.heavy)]

#: ``FuseOps`` with nothing fenced, as builds ran before FenceCopies
UNFENCED = tvm.transform.module_pass(lambda m, _: m, opt_level=0)


def _program(compiled):
    return program_order(compiled.build, compiled.graph, simulate(compiled.graph, compiled.plan, comparable()))


def test_the_program_of_one_split_op_as_written_by_hand():
    """MLP: dense+tanh split 2/2 rows over gpu, cpu; the rest on the cpu."""
    model = mlp_model(batch=4)
    g = OpGraph(model.mod)
    dense = next(iter(g.ops))
    plan = Plan(CPU_GPU, {dense: Split(0, (0.5, 0.5), ("gpu", "cpu"))})
    res = build(model.mod, plan, g)
    steps = program_steps(res.executable, res.kernel_devices, CPU_GPU)
    # rows 0-1 of x sliced on the host and copied to the GPU; rows 2-3 sliced; GPU part launched,
    # CPU part run; the reshape follows both parts (a view each); the GPU rows copied back and
    # joined; the second dense and softmax on the CPU
    assert [(s.kind, s.where) for s in steps] == [
        ("kernel", "cpu"), ("copy", "cpu->gpu"), ("kernel", "cpu"), ("kernel", "gpu"), ("kernel", "cpu"),
        ("view", "gpu"), ("view", "cpu"), ("copy", "gpu->cpu"), ("kernel", "cpu"), ("kernel", "cpu"), ("kernel", "cpu")]
    assert "join" in steps[8].label  # a kernel of its own (KeepJoinsApart)
    labelled = program_order(res, g, simulate(g, plan, comparable()))
    assert [(s.task, s.label) for s in labelled if s.task == "part"] == [("part", dense), ("part", dense)]
    assert [s.task for s in labelled] == ["slice", "copy", "slice", "part", "part", "copy", "concat", "op", "op"]
    assert split_parts(labelled, CPU_GPU) == {dense: [3, 4]} and overlap_problems(labelled, CPU_GPU) == []


def test_the_checks_report_a_serialising_order():
    g, c, copy = Step("kernel", "gpu", "k", "part"), Step("kernel", "cpu", "k", "part"), Step("copy", "gpu->cpu", "v", "copy")
    assert overlap_problems([g, c], CPU_GPU) == []
    assert "runs between its parts" in overlap_problems([g, copy, c], CPU_GPU)[0]
    assert "CPU part runs before its GPU part" in overlap_problems([c, g], CPU_GPU)[0]
    run = [Step("kernel", "gpu", "fused_a_cuda"), Step("kernel", "cpu", "fused_a_llvm")]
    slice_ = Step("kernel", "cpu", "v", "slice")
    assert align([g, slice_, c], run) == {0: 0, 2: 1}  # the slice fused into the CPU part
    assert align([g, c], run[::-1]) == {0: 1, 1: 0}  # devices do not wait for each other
    with pytest.raises(OrderMismatch, match="before the first copy, the simulator runs 0 kernels on cpu"):
        align([g, copy, c], [run[0], run[1], Step("copy", "gpu->cpu", "%1")])  # the CPU part crossed a copy
    with pytest.raises(OrderMismatch, match="copies gpu->cpu .* where the program copies cpu->gpu"):
        align([copy], [Step("copy", "cpu->gpu", "%1")])


def test_a_view_stands_for_no_computing_part_and_a_concat_written_in_place_for_none():
    """Inception-v3's equal plan on cpu,gpu (heavy tier): a convolution ``a`` split, then the
    model's concat ``b`` of it, split alike; the concat's CPU part is written in place
    (passes.in_place_joins), so the program has a view there, made before or after ``a``'s CPU part
    writes into it, and no kernel. The view once stood for ``a``'s CPU part and ``a``'s kernel for
    ``b``'s: "b: a CPU part runs before its GPU part" (2026-11-30)."""
    sim = [Step("kernel", "gpu", "a", "part", "conv2d"), Step("kernel", "cpu", "a", "part", "conv2d"),
           Step("kernel", "gpu", "b", "part", "concat"), Step("kernel", "cpu", "b", "part", "concat")]
    conv_g, conv_c = Step("kernel", "gpu", "fused_conv2d_cuda"), Step("kernel", "cpu", "fused_conv2d_llvm")
    concat_g, view = Step("kernel", "gpu", "concatenate1_cuda"), Step("view", "cpu", "runtime.TVMTensorCreateView")
    before = label_program(sim, [conv_g, view, conv_c, concat_g])
    assert [(s.label, s.where) for s in before] == [("a", "gpu"), ("a", "cpu"), ("b", "gpu")]
    assert before[1].label == "a" and before[1].kind == "kernel"  # the convolution's part, not the view
    assert overlap_problems(before, CPU_GPU) == [] and split_parts(before, CPU_GPU).keys() == {"a"}
    after = label_program(sim, [conv_g, conv_c, concat_g, view])  # the view after: b's CPU part, doing nothing
    assert overlap_problems(after, CPU_GPU) == [] and split_parts(after, CPU_GPU).keys() == {"a", "b"}
    with pytest.raises(OrderMismatch):  # a computing part may not vanish
        align(sim, [conv_g, view, concat_g])


@pytest.mark.parametrize("model,plan", ZOO + DEPARTED + [pytest.param(*p, marks=pytest.mark.heavy) for p in HEAVY])
def test_split_ops_overlap_in_the_compiled_program(model, plan):
    compiled = cpu_gpu_build(model, plan)
    simulated = simulated_steps(compiled.graph, simulate(compiled.graph, compiled.plan, comparable()))
    assert overlap_problems(simulated, CPU_GPU) == []  # the order the pass emits and the simulator prices
    labelled = _program(compiled)  # raises OrderMismatch where the program runs otherwise
    assert overlap_problems(labelled, CPU_GPU) == []
    splits = split_parts(simulated, CPU_GPU)
    found = split_parts(labelled, CPU_GPU)
    assert splits and found.keys() <= splits.keys()
    # every split op found, but a concat of the model whose part on one device runs no kernel: its
    # inputs' parts there were written into it in place (passes.in_place_joins)
    assert all(compiled.graph.ops[op].kind == "concat" for op in splits.keys() - found.keys())


def test_fuseops_unfenced_reorders_split_parts(monkeypatch):
    """The oracle of FenceCopies: without it, the check reports LSTM's eop plan (the bug it fixed)."""
    monkeypatch.setattr(executable, "FenceCopies", lambda: UNFENCED)
    with pytest.raises(OrderMismatch):
        _program(cpu_gpu_build.__wrapped__("lstm", "eop"))


def test_a_join_fused_into_a_part_is_reported(monkeypatch):
    """Without KeepJoinsApart, FuseOps fused the GRU's last CPU part with the concat after the
    copy back: the CPU part ran after the copy, which waits for the GPU part."""
    monkeypatch.setattr(executable, "keep_joins_apart", UNFENCED)
    monkeypatch.setattr(executable, "FenceCopies", lambda: UNFENCED)  # the copy before the join fences it too
    compiled = compile_model(frontend.load("gru", **SMALL["gru"]), CPU_GPU, "equal")
    assert any("concatenate" in s.label and "join" not in s.label
               for s in program_steps(compiled.build.executable, compiled.build.kernel_devices, CPU_GPU))
    with pytest.raises(OrderMismatch, match="on cpu"):
        _program(compiled)


@pytest.mark.slow
def test_a_slice_hoisting_a_gpu_part_before_a_copy_is_reported(monkeypatch):
    """Fetching the parts' inputs in part order (the GPU part's own slice first), FuseOps fused
    that slice into BERT's attention GPU part and launched it before the copy the CPU part needs."""
    from tvm_partition.passes.apply_plan import _Emitter
    from tvm_partition.planners.simulate import Run

    monkeypatch.setattr(_Emitter, "prefetch", lambda self, x, dev, region: self.get(x, dev, region))
    monkeypatch.setattr(Run, "prefetch", lambda self, x, dev, region: self.get(x, dev, region))
    monkeypatch.setattr(executable, "FenceCopies", lambda: UNFENCED)  # which now keeps the slice after the copy too
    compiled = compile_model(frontend.load("bert", **SMALL["bert"]), CPU_GPU, "equal")
    with pytest.raises(OrderMismatch, match="on gpu"):
        _program(compiled)
