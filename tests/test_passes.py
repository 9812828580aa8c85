"""ApplyPlan's rewrite rules: user pipelines, weights at load time, minimal copies, emission order."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.relax.frontend import nn
from tvm.script import relax as R

from helpers import equal_check, mlp_model, run_plan, run_relax
from tvm_partition import frontend
from tvm_partition.build.executable import lower
from tvm_partition.devices import parse_devices
from tvm_partition.ir.graph import OpGraph
from tvm_partition.passes import ApplyPlan, PartitionPass, PropagateVDevice
from tvm_partition.plan import OnDevice, Plan, Split
from tvm_partition.runtime.artifact import KERNELS_MAIN


def bindings(func):
    return [b for blk in func.body.blocks for b in blk.bindings]


def op_names(func):
    return [b.value.op.name for b in bindings(func) if isinstance(b.value, relax.Call) and isinstance(b.value.op, tvm.ir.Op)]


def split_all(graph, devices, dim=0, ratios=(0.5, 0.5)):
    names = tuple(d.name for d in devices[::-1])
    return Plan(devices, {i: Split(dim, ratios, names) for i, op in graph.ops.items() if dim in op.split_dims})


def _run_user_pipeline(model, first, devices):
    """``first`` (a partitioning pass) in a user's own pipeline of TVM passes, built and run as the
    user would: the output of *their* pipeline, not a build of the plan."""
    from tvm_partition.build.executable import attach_targets, vm_pipeline

    seq = tvm.transform.Sequential(
        [first, relax.transform.RealizeVDevice(), relax.transform.LiftTransformParams(),
         relax.transform.LegalizeOps(), PropagateVDevice(), relax.transform.AnnotateTIROpPattern(),
         relax.transform.FuseOps(), relax.transform.FuseTIR()]
    )
    mod = seq(model.mod)
    assert "main_transform_params" in [gv.name_hint for gv in mod.get_global_vars()]
    mod, kernel_devices = attach_targets(mod, devices)
    ex = tvm.compile(mod, relax_pipeline=vm_pipeline(off_host=True))
    vm = relax.VirtualMachine(ex, [d.tvm_device() for d in devices])
    weights = vm["main_transform_params"]([tvm.runtime.tensor(p) for p in model.params])
    out = vm["main"](*[tvm.runtime.tensor(v) for v in model.inputs.values()], *weights).numpy()
    return out, kernel_devices


@pytest.mark.parametrize("which", ["ApplyPlan", "PartitionPass"])
def test_pass_in_a_user_sequential_pipeline(which):
    """A user adds ApplyPlan (a plan they made) or PartitionPass (plans and applies) to their own
    pipeline and builds with TVM's tools: the result runs on both devices and matches the model."""
    model = mlp_model(batch=6)
    devices = parse_devices("cpu,cpu")
    if which == "ApplyPlan":
        first = ApplyPlan(split_all(OpGraph(model.mod), devices, ratios=(0.4, 0.6)))
    else:
        first = PartitionPass(devices, strategy="equal")
    out, kernel_devices = _run_user_pipeline(model, first, devices)
    if which == "PartitionPass":
        assert any(isinstance(d, Split) for d in first.plan.ops.values())
    assert set(kernel_devices.values()) == {"cpu", "cpu1"}  # the split really uses both devices
    ref = run_relax(model.mod, list(model.inputs.values()), model.params)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_weights_are_sliced_and_copied_at_load_time():
    """Slicing a weight for the N split and copying it to the other device happen in
    main_transform_params; main moves only activations."""
    model = mlp_model(batch=4)
    devices = parse_devices("cpu,cpu")
    graph = OpGraph(model.mod)
    dense = [i for i, op in graph.ops.items() if op.kind == "matmul"]
    plan = Plan(devices, {i: Split(1, (0.5, 0.5), ("cpu1", "cpu")) for i in dense})
    lowered, _ = lower(model.mod, plan)
    weights = set(lowered["main"].params[1:])
    for b in bindings(lowered["main"]):
        if isinstance(b.value, relax.Call) and b.value.op.same_as(tvm.ir.Op.get("relax.to_vdevice")):
            assert b.value.args[0] not in weights, "a weight is copied per inference"
    transform_ops = op_names(lowered["main_transform_params"])
    assert transform_ops.count("relax.to_vdevice") >= 2  # the cpu1 halves of both weights
    assert len(lowered["main"].params) > len(model.params)  # main receives the per-device halves


def test_copies_only_where_devices_differ():
    model = mlp_model(batch=4)
    devices = parse_devices("cpu,cpu")
    graph = OpGraph(model.mod)
    on_host = ApplyPlan(Plan(devices, {i: OnDevice("cpu") for i in graph.ops}))(model.mod)
    assert "relax.to_vdevice" not in op_names(on_host["main"])
    # everything on the second device: per inference, one copy in (x) and one copy out; the
    # weights are copied once, in main_transform_params
    lowered, _ = lower(model.mod, Plan(devices, {i: OnDevice("cpu1") for i in graph.ops}))
    assert op_names(lowered["main"]).count("relax.to_vdevice") == 2
    assert op_names(lowered["main_transform_params"]).count("relax.to_vdevice") == 4


def test_copies_between_two_cpus_are_bound_to_their_source_and_copies_to_a_gpu_kept():
    """Everything on the second device: the lowered module copies in and out either way (the
    plan's data flow); the linked program of cpu,cpu copies nothing (one memory: its second CPU's
    kernels read the first's buffers, both cpu(0)) and matches the model, cpu,gpu's still copies."""
    from tvm_partition.build.executable import build

    model = mlp_model(batch=4)
    graph = OpGraph(model.mod)
    for text, copies in (("cpu,cpu", False), ("cpu,gpu", True)):
        devices = parse_devices(text)
        plan = Plan(devices, {i: OnDevice(devices[1].name) for i in graph.ops})
        program = build(model.mod, plan).executable.as_text()
        assert ("vm.builtin.to_device" in program) == copies, text
    out = run_plan(model, Plan(parse_devices("cpu,cpu"), {i: OnDevice("cpu1") for i in graph.ops}))
    np.testing.assert_allclose(out, run_relax(model.mod, list(model.inputs.values()), model.params), rtol=1e-5,
                               atol=1e-6)


def test_gpu_part_is_emitted_first():
    """CUDA launches are asynchronous: the GPU part must be launched before the CPU part runs."""
    model = mlp_model(batch=4)
    devices = parse_devices("cpu,gpu")
    graph = OpGraph(model.mod)
    first = graph.topo_order()[0]
    plan = Plan(devices, {first: Split(0, (0.5, 0.5), ("cpu", "gpu"))})  # cpu listed first on purpose
    mod = ApplyPlan(plan)(model.mod)
    matmuls = [b for b in bindings(mod["main"]) if isinstance(b.value, relax.Call) and b.value.op.name == "relax.matmul"]
    assert [m.var.ty.vdevice.target.kind.name for m in matmuls[:2]] == ["cuda", "llvm"]


@pytest.mark.parametrize("ratios, views, slices", [((1 / 3, 2 / 3), 2, 0), ((0.5, 0.5), 1, 1)])
def test_rows_of_a_tensor_are_taken_as_views_where_aligned(ratios, views, slices):
    """The second dense reads a [6, 8] float32 (32 B a row), computed whole: the rows of a part
    are one block of memory, a view where it starts at a multiple of 64 B (rows 0 and 2), a
    strided_slice elsewhere (row 3). The model's input is sliced (split the first dense: one
    slice a part, no view). All run and match the model."""
    model = mlp_model(batch=6, d_hidden=8)
    devices = parse_devices("cpu,cpu")
    graph = OpGraph(model.mod)
    first, second = [i for i, op in graph.ops.items() if op.kind == "matmul"]
    split = {first: Split(0, (0.5, 0.5), ("cpu1", "cpu"))}
    assert op_names(ApplyPlan(Plan(devices, split))(model.mod)["main"]).count("relax.strided_slice") == 2
    plan = Plan(devices, {second: Split(0, ratios, ("cpu1", "cpu"))})
    names = op_names(ApplyPlan(plan)(model.mod)["main"])
    assert (names.count("relax.memory.view"), names.count("relax.strided_slice")) == (views, slices)
    assert names.count("relax.memory.ensure_zero_offset") == views
    ref = run_relax(model.mod, list(model.inputs.values()), model.params)
    np.testing.assert_allclose(run_plan(model, plan), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch, dim, in_place", [(8, 0, True), (8, 1, False), (6, 0, False)],
                         ids=["rows-aligned", "columns", "rows-unaligned"])
def test_parts_that_are_aligned_blocks_of_the_joined_tensor_are_written_in_place(batch, dim, in_place):
    """The second dense ([batch, 4] float32, 16 B a row) split on cpu,cpu, the softmax reading it
    whole: where each part is one block of the output starting at a multiple of 64 B (rows 0 and 4
    of 8), the parts write there and the program has no concatenate (WriteJoinsInPlace); split by
    columns, or at row 3 (48 B), the concat stays. The simulator launches the join exactly where
    the program does. All match the model."""
    from tvm_partition.build.executable import build
    from tvm_partition.cost_models.base import AnalyticCostModel, DeviceRoofline
    from tvm_partition.planners.simulate import simulate

    model = mlp_model(batch=batch)
    devices = parse_devices("cpu,cpu")
    graph = OpGraph(model.mod)
    dense = [i for i, op in graph.ops.items() if op.kind == "matmul"][1]
    plan = Plan(devices, {dense: Split(dim, (0.5, 0.5), ("cpu1", "cpu"))})
    assert ("concatenate" in build(model.mod, plan).executable.as_text()) != in_place
    cpus = AnalyticCostModel({d.name: DeviceRoofline(100.0, 20.0) for d in devices})
    [join] = [t for t in simulate(graph, plan, cpus).tasks if t.kind == "concat"]
    assert join.launched != in_place and (join.end_us == join.start_us) == in_place
    ref = run_relax(model.mod, list(model.inputs.values()), model.params)
    np.testing.assert_allclose(run_plan(model, plan), ref, rtol=1e-5, atol=1e-6)


class _Halves(nn.Module):
    """``y`` ([rows, 8]: a dense's output, or with ``of_input`` the model's input itself), its top
    and bottom half rows each through a dense of their own, summed."""

    def __init__(self, rows: int, of_input: bool):
        self.rows, self.of_input = rows, of_input
        self.fc, self.top, self.bottom = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        from tvm_partition.frontend.zoo import slice_axis

        y = x if self.of_input else self.fc(x)
        half = self.rows // 2
        return self.top(slice_axis(y, 0, 0, half)) + self.bottom(slice_axis(y, 0, half, self.rows))


@pytest.mark.parametrize("rows, of_input, views, slices", [(8, False, 2, 0), (6, False, 1, 1), (8, True, 0, 2)],
                         ids=["aligned", "second-half-unaligned", "of-the-input"])
def test_a_models_slices_of_aligned_blocks_are_views(rows, of_input, views, slices):
    """The model's own slices (no plan splits anything): TVM's fusion leaves a slice read by a
    matmul a kernel of its own, which SlicesAsViews takes as a view where the rows are one block
    of memory at a multiple of 64 B (rows 0 and 4 of 8, 32 B a row; not row 3 of 6) of a tensor
    computed in ``main``, not of ``main``'s own input (over RPC a ``DLTensor*``, no view). The
    program calls exactly that many slice kernels and views, the simulator launches no kernel for
    those views (``OpGraph.viewed_slices``), and the program matches the model."""
    from tvm_partition.build.executable import build
    from tvm_partition.cost_models.base import AnalyticCostModel, DeviceRoofline
    from tvm_partition.planners.baselines import plan_cpu
    from tvm_partition.planners.simulate import simulate

    mod, _ = _Halves(rows, of_input).export_tvm(spec={"forward": {"x": nn.spec.Tensor([rows, 8], "float32")}})
    model = frontend.load(mod, seed=1)
    devices = parse_devices("cpu,cpu")
    graph = OpGraph(model.mod)
    plan = plan_cpu(graph, devices)
    calls = [line for line in build(model.mod, plan).executable.as_text().splitlines() if line.strip().startswith("call")]
    assert (sum("ensure_zero_offset" in c for c in calls), sum("strided_slice" in c for c in calls)) == (views, slices)
    cpus = AnalyticCostModel({d.name: DeviceRoofline(100.0, 20.0) for d in devices})
    tasks = [t for t in simulate(graph, plan, cpus).tasks if graph.ops[t.label].kind == "strided_slice"]
    assert ([t.launched for t in tasks].count(False), [t.launched for t in tasks].count(True)) == (views, slices)

    class Views(AnalyticCostModel):  # each view costs the VM 1 us (a profile's view chain)
        def view_time(self, device):
            return 1.0

    charged = simulate(graph, plan, Views(cpus.devices)).latency_us - simulate(graph, plan, cpus).latency_us
    assert charged == pytest.approx(views)
    ref = run_relax(model.mod, list(model.inputs.values()), model.params)
    np.testing.assert_allclose(run_plan(model, plan), ref, rtol=1e-5, atol=1e-6)


class _Branches(nn.Module):
    """Two denses of ``x`` ([rows, 8]) joined by rows (``concat`` on axis 0), through a third;
    ``reread``: a fourth reads the first branch too, added to the first rows."""

    def __init__(self, rows: int, reread: bool):
        self.rows, self.reread = rows, reread
        self.a, self.b, self.c, self.d = (nn.Linear(8, 8) for _ in range(4))

    def forward(self, x):
        from tvm_partition.frontend.zoo import slice_axis

        a, b = self.a(x), self.b(x)
        y = self.c(nn.op.concat([a, b], dim=0))
        return slice_axis(y, 0, 0, self.rows) + self.d(a) if self.reread else y


@pytest.mark.parametrize("rows, reread, in_place", [(8, False, True), (5, False, False), (8, True, False)],
                         ids=["aligned", "second-unaligned", "read-again"])
@pytest.mark.parametrize("device", ["cpu", "cpu1"])
def test_a_models_concat_of_aligned_kernel_outputs_launches_no_kernel(rows, reread, in_place, device):
    """The model's own concat (no plan splits anything) of two denses' outputs, each one block of
    the result at a multiple of 64 B (rows 0 and 8, 32 B a row; not row 5: 160 B) and read by the
    concat alone, is written in place by WriteJoinsInPlace: no concatenate in the program, and the
    simulator launches none but prices a view per input (``OpGraph.joined_in_place``), on either
    CPU; EOP and the placement problem price it at nothing (``OpGraph.views_on_cpu``). Where
    another dense reads the first branch too, the concat stays a kernel. All match the model."""
    from tvm_partition.build.executable import build
    from tvm_partition.cost_models.base import AnalyticCostModel, DeviceRoofline
    from tvm_partition.planners.eop import EOP
    from tvm_partition.planners.placement import problem_for
    from tvm_partition.planners.simulate import simulate

    mod, _ = _Branches(rows, reread).export_tvm(spec={"forward": {"x": nn.spec.Tensor([rows, 8], "float32")}})
    model = frontend.load(mod, seed=1)
    devices = parse_devices("cpu,cpu")
    graph = OpGraph(model.mod)
    plan = Plan(devices, {op_id: OnDevice(device) for op_id in graph.ops})
    assert ("concatenate" in build(model.mod, plan).executable.as_text()) != in_place
    assert len(graph.joined_in_place) == int(in_place)

    class Views(AnalyticCostModel):  # each view costs the VM 1 us (a profile's view chain)
        def view_time(self, device):
            return 1.0

    cpus = AnalyticCostModel({d.name: DeviceRoofline(100.0, 20.0) for d in devices})
    [join] = [t for t in simulate(graph, plan, cpus).tasks if t.kind == "op" and graph.ops[t.label].kind == "concat"]
    assert join.launched != in_place and (join.end_us == join.start_us) == in_place
    # EOP's whole-op times agree: a concat written in place takes no time, so no key op
    assert (join.label in EOP(graph, devices, cpus, threshold=1.0).key_ops()) != in_place
    # and so do the placement planners' node times
    assert (problem_for(graph, devices, cpus).graph.nodes[join.label]["time_us"] == {"cpu": 0.0, "cpu1": 0.0}) == in_place
    charged = simulate(graph, plan, Views(cpus.devices)).latency_us - simulate(graph, plan, cpus).latency_us
    assert charged == pytest.approx(2.0 if in_place else 0.0)
    ref = run_relax(model.mod, list(model.inputs.values()), model.params)
    np.testing.assert_allclose(run_plan(model, plan), ref, rtol=1e-5, atol=1e-6)


def test_the_graph_names_every_concat_inception_v3s_build_writes_in_place():
    """A published graph: Inception-v3 (75 px) joins its branches with 11 concat ops; its CPU build
    writes the 9 plain ones in place and launches the 2 that fusion made one kernel of three nested
    concats each (``fused_concatenate5_concatenate5_concatenate6``). The program's concat kernels
    are exactly the concat ops ``OpGraph.joined_in_place`` leaves out."""
    from helpers import SMALL
    from tvm_partition.build.executable import build
    from tvm_partition.planners.baselines import plan_cpu

    model = frontend.load("inception_v3", **SMALL["inception_v3"])
    graph = OpGraph(model.mod)
    text = build(model.mod, plan_cpu(graph, parse_devices("cpu,cpu"))).executable.as_text()
    called = sorted(line.split()[1].replace("_llvm", "") for line in text.splitlines()
                    if line.strip().startswith("call") and "concatenate" in line)
    launched = sorted(op.fused_name for op_id, op in graph.ops.items()
                      if op.kind == "concat" and op_id not in graph.joined_in_place)
    assert len(graph.joined_in_place) == 9 and called == launched, (called, launched)


def test_only_a_plain_slice_kernel_has_offsets():
    """``slice_offsets`` reads where LegalizeOps' slice starts on each axis, and refuses a strided
    slice and any other kernel."""
    from tvm_partition.passes.slice_views import slice_offsets

    x = relax.Var("x", R.Tensor((1, 8, 4, 4), "float32"))

    def kernel(expr):
        bb = relax.BlockBuilder()
        with bb.function("main", [x]):
            bb.emit_func_output(bb.emit(expr))
        mod = relax.transform.LegalizeOps()(bb.get())
        [prim] = [f for f in mod.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
        return prim

    assert slice_offsets(kernel(relax.op.strided_slice(x, [1], [2], [6]))) == [0, 2, 0, 0]
    assert slice_offsets(kernel(relax.op.strided_slice(x, [1, 3], [0, 1], [8, 3]))) == [0, 0, 0, 1]
    assert slice_offsets(kernel(relax.op.strided_slice(x, [1], [0], [8], [2]))) is None
    assert slice_offsets(kernel(relax.op.exp(x))) is None
    assert slice_offsets(kernel(relax.op.add(x, x))) is None


@pytest.mark.parametrize("batch", [8, 6], ids=["in-place", "concat"])
def test_the_simulator_charges_the_vm_for_each_view_the_program_takes(batch):
    """A view launches no kernel but costs the VM its calls (the cost model's ``view_time``, which
    a profile times on a chain of views). The split dense of the in-place test above, with a view
    priced at 1 us, runs 1 us longer per view the compiled program takes (its
    ``ensure_zero_offset`` calls): the parts' rows of the input (16 floats a row: every row is
    aligned) and, with 8 rows, the parts written into their join (with 6 the concat is a kernel)."""
    from tvm_partition.build.executable import build
    from tvm_partition.cost_models.base import AnalyticCostModel, DeviceRoofline
    from tvm_partition.planners.simulate import simulate

    class Views(AnalyticCostModel):
        def view_time(self, device):
            return 1.0

    model = mlp_model(batch=batch)
    devices = parse_devices("cpu,cpu")
    graph = OpGraph(model.mod)
    dense = [i for i, op in graph.ops.items() if op.kind == "matmul"][1]
    plan = Plan(devices, {dense: Split(0, (0.5, 0.5), ("cpu1", "cpu"))})
    calls = [line for line in build(model.mod, plan).executable.as_text().splitlines() if line.strip().startswith("call")]
    views = sum("ensure_zero_offset" in c for c in calls)
    assert views == (4 if batch == 8 else 2)
    rooflines = {d.name: DeviceRoofline(100.0, 20.0) for d in devices}
    free, charged = (simulate(graph, plan, cm(rooflines)).latency_us for cm in (AnalyticCostModel, Views))
    assert charged - free == pytest.approx(views)


class _Residual(nn.Module):
    """``fc1`` read twice: by ``fc2`` and by a softmax, in the order ``softmax_first`` says."""

    def __init__(self, softmax_first: bool):
        self.fc1, self.fc2, self.softmax_first = nn.Linear(8, 16), nn.Linear(16, 16), softmax_first

    def forward(self, x):
        y = self.fc1(x)
        if self.softmax_first:
            s = nn.op.softmax(y, axis=-1)
            return self.fc2(y) + s
        z = self.fc2(y)
        return nn.op.softmax(y, axis=-1) + z


@pytest.mark.parametrize("softmax_first", [True, False], ids=["join-then-part-read", "part-read-then-join"])
def test_a_part_read_beside_its_join_keeps_the_concat_in_build_and_simulation(softmax_first):
    """Both matmuls batch-split alike on cpu,cpu, the softmax whole: the second matmul reads the
    first's parts where they are and the softmax their join, so those parts have two readers and
    WriteJoinsInPlace keeps their concat (the output's join, read once, goes in place). The
    simulator launches exactly the concats the program calls, whichever reader comes first."""
    from tvm_partition.build.executable import build
    from tvm_partition.cost_models.base import AnalyticCostModel, DeviceRoofline
    from tvm_partition.planners.simulate import simulate

    mod, _ = _Residual(softmax_first).export_tvm(spec={"forward": {"x": nn.spec.Tensor([8, 8], "float32")}})
    model = frontend.load(mod, seed=1)
    devices = parse_devices("cpu,cpu")
    graph = OpGraph(model.mod)
    plan = Plan(devices, {i: Split(0, (0.5, 0.5), ("cpu1", "cpu")) for i, op in graph.ops.items() if op.kind == "matmul"})
    program = [line for line in build(model.mod, plan).executable.as_text().splitlines() if line.strip().startswith("call")]
    calls = [line for line in program if "concatenate" in line]
    cpus = AnalyticCostModel({d.name: DeviceRoofline(100.0, 20.0) for d in devices})
    joins = [t for t in simulate(graph, plan, cpus).tasks if t.kind == "concat"]
    assert len(calls) == 1 and [t.launched for t in joins].count(True) == 1

    class Views(AnalyticCostModel):  # each view costs the VM 1 us: the join launched late takes back its parts' views
        def view_time(self, device):
            return 1.0

    charged = simulate(graph, plan, Views(cpus.devices)).latency_us - simulate(graph, plan, cpus).latency_us
    assert charged == pytest.approx(sum("ensure_zero_offset" in line for line in program))
    ref = run_relax(model.mod, list(model.inputs.values()), model.params)
    np.testing.assert_allclose(run_plan(model, plan), ref, rtol=1e-5, atol=1e-6)


def test_same_split_consumers_stay_split():
    """dense -> reshape -> dense -> softmax, all batch-split the same way: one concat, at the end."""
    model = mlp_model(batch=8)
    devices = parse_devices("cpu,cpu")
    plan = split_all(OpGraph(model.mod), devices)
    mod = ApplyPlan(plan)(model.mod)
    names = op_names(mod["main"])
    assert names.count("relax.concat") == 1
    assert names[-2:] == ["relax.concat", "relax.to_vdevice"] or names[-1] == "relax.concat"


def test_mismatched_splits_rejoin_then_split():
    """A batch-split producer feeding an N-split consumer needs the whole tensor: a concat."""
    model = mlp_model(batch=8)
    devices = parse_devices("cpu,cpu")
    graph = OpGraph(model.mod)
    ids = graph.topo_order()
    plan = Plan(devices, {ids[0]: Split(0, (0.5, 0.5), ("cpu1", "cpu")), ids[2]: Split(1, (0.5, 0.5), ("cpu1", "cpu")),
                          ids[3]: OnDevice("cpu")})
    out = run_plan(model, plan)
    ref = run_relax(model.mod, list(model.inputs.values()), model.params)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    assert op_names(ApplyPlan(plan)(model.mod)["main"]).count("relax.concat") == 2


def split_model():
    """x -> R.split -> exp(item 0), tanh(item 1) -> (concat, exp): a tuple made and returned."""
    x = relax.Var("x", relax.TensorType((4, 6), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x], attrs={"num_input": 1}):
        with bb.dataflow():
            parts = bb.emit(relax.op.split(x, 2, axis=1))
            a = bb.emit(relax.op.exp(relax.TupleGetItem(parts, 0)))
            b = bb.emit(relax.op.tanh(relax.TupleGetItem(parts, 1)))
            out = bb.emit_output(relax.Tuple([relax.op.concat([a, b], axis=0), a]))
        bb.emit_func_output(out)
    return frontend.load(bb.get())


def test_tuple_producing_ops_and_tuple_outputs():
    """R.split returns a tuple (not splittable itself: placed whole); its consumers still split,
    and a model returning a tuple returns both outputs."""
    model = split_model()
    for strategy in ("equal", "gpu"):
        compiled, err, tol = equal_check(model, "cpu,cpu", strategy)
        assert err <= tol
        splits = [d for d in compiled.plan.ops.values() if isinstance(d, Split)]
        assert len(splits) == (2 if strategy == "equal" else 0)


def test_split_builds_plan_memory_per_device():
    """A split build's intermediate tensors share planned storage, each device's its own: the
    equal LSTM on cpu,cpu allocates a few storages per run, not one per tensor (TVM's planner
    pools by scope and dtype only: unscoped, it handed one device's buffer to the other's tensor
    and the run failed "expected to match device_id")."""
    from helpers import SMALL

    model = frontend.load("lstm", **SMALL["lstm"])
    compiled, err, tol = equal_check(model)
    assert err <= tol
    vm = relax.VirtualMachine(compiled.build.executable, [d.tvm_device() for d in compiled.plan.devices])
    weights = vm["main_transform_params"]([tvm.runtime.tensor(p) for p in model.params])
    args = [tvm.runtime.tensor(v) for v in model.inputs.values()]
    vm["main"](*args, *weights)  # the first run fills the allocator's pool
    calls = {}

    def count(_func, name, before_run, _ret, *_args):
        if before_run:
            calls[name] = calls.get(name, 0) + 1

    vm.set_instrument(count)
    vm[KERNELS_MAIN](*args, *weights)  # main's bytecode twin: compiled main calls past the instrument
    kernels = sum(n for name, n in calls.items() if not name.startswith("vm.builtin"))
    assert calls.get("vm.builtin.alloc_storage", 0) * 4 < kernels, calls


def test_main_takes_each_load_time_tensor_once(tmp_path):
    """An RNN packs its input weight at load time once per time step (a call site each), and
    share_packed_weights makes those packings one tensor: ``main`` takes it once, not once a
    step, and the build matches the model."""
    from tvm_partition.cli.compile import check, compile_model

    model = frontend.load("gru", seq_len=2)  # batch 16: the matmul template packs its weight
    compiled = compile_model(model, parse_devices("cpu,cpu"), "cpu", tuning_db=str(tmp_path / "no-database"))
    err, tol = check(compiled)
    assert err <= tol
    vm = relax.VirtualMachine(compiled.build.executable, [d.tvm_device() for d in compiled.plan.devices])
    weights = vm["main_transform_params"]([tvm.runtime.tensor(p) for p in model.params])
    packed = [w for w in weights if len(w.shape) == 4]  # the template's packed layout
    assert len(packed) == 4  # each layer's two weights, packed once for both steps
    assert len({np.from_dlpack(w).__array_interface__["data"][0] for w in weights}) == len(weights)


@tvm.script.ir_module
class _LoadedTwice:
    @R.function
    def main_transform_params(p: R.Tuple(R.Tensor((2,), "float32"), R.Tensor((2,), "float32"))):
        a = p[0]
        b = p[1]
        return (a, b, a)

    @R.function
    def main(x: R.Tensor((2,), "float32"), w: R.Tensor((2,), "float32"), u: R.Tensor((2,), "float32"),
             v: R.Tensor((2,), "float32")):
        R.func_attr({"num_input": 1})
        return R.add(R.add(R.add(x, w), u), v)


def test_a_tensor_the_load_time_function_returns_twice_is_one_parameter_of_main():
    from tvm_partition.passes import merge_repeated_params

    out = merge_repeated_params(_LoadedTwice)
    assert [p.name for p in out["main"].params] == ["x", "w", "u"]
    assert len(out["main_transform_params"].body.body.fields) == 2
    x, a, b = (np.arange(2, dtype="float32") + k for k in range(3))
    ex = relax.build(out, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    loaded = vm["main_transform_params"]((tvm.runtime.tensor(a), tvm.runtime.tensor(b)))
    np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(x), *loaded).numpy(), x + a + b + a)
    # without num_input (where main's inputs end) the pass leaves the module as it is
    plain = tvm.IRModule({"main": _LoadedTwice["main"].without_attr("num_input"),
                          "main_transform_params": _LoadedTwice["main_transform_params"]})
    assert merge_repeated_params(plain).same_as(plain)


def test_an_op_reading_another_devices_tuple_item_is_emitted_after_its_copy(tmp_path):
    """exp on cpu1 reads item 0 of a split made on cpu: through the tuple access (glue, no kernel)
    it is fed across devices, so it is one emission unit after its copy, and the build runs and
    matches the unpartitioned model."""
    from tvm_partition.ir.emission import fed_across

    model = split_model()
    graph = OpGraph(model.mod)
    [exp] = [i for i, op in graph.ops.items() if op.kind == "exp"]
    devices = parse_devices("cpu,cpu")
    away = Plan(devices, {i: OnDevice("cpu1" if i == exp else "cpu") for i, op in graph.ops.items() if not op.is_view})
    home = Plan(devices, {i: OnDevice("cpu") for i, op in graph.ops.items() if not op.is_view})
    assert fed_across(graph, away, exp) and not fed_across(graph, home, exp)
    away.save(tmp_path / "plan.json")
    _, err, tol = equal_check(model, "cpu,cpu", plan_file=str(tmp_path / "plan.json"))
    assert err <= tol


def test_main_is_compiled_and_its_bytecode_twin_calls_the_same_kernels():
    """A build's ``main`` runs as native code: the VM's instrument sees none of its calls, and
    ``as_text()`` holds no instruction of it. Its twin (KERNELS_MAIN) is bytecode: the instrument
    sees every kernel, and it returns what ``main`` returns. ``main_transform_params`` (run once at
    load; compiled, DenseNet-121's cost LLVM 131 s) is bytecode too: the instrument sees its calls."""
    model = mlp_model()
    compiled, err, tol = equal_check(model)
    assert err <= tol
    text = compiled.build.executable.as_text()
    assert f"@{KERNELS_MAIN}:" in text and "@main:" not in text and "@main_transform_params:" in text
    vm = relax.VirtualMachine(compiled.build.executable, [d.tvm_device() for d in compiled.plan.devices])
    seen = []
    vm.set_instrument(lambda _f, name, before, *_: seen.append(str(name)) if before else None)
    weights = vm["main_transform_params"]([tvm.runtime.tensor(p) for p in model.params])
    assert seen  # the weights' slices and copies of the equal plan
    args = [tvm.runtime.tensor(v) for v in model.inputs.values()]
    seen.clear()
    out = vm["main"](*args, *weights).numpy()
    assert seen == []
    twin = vm[KERNELS_MAIN](*args, *weights).numpy()
    kernels = [n for n in seen if not n.startswith("vm.builtin")]
    assert len(kernels) >= 4 and len(set(kernels)) >= 2  # an equal plan: two parts of each op at least
    np.testing.assert_array_equal(out, twin)


def test_a_program_longer_than_the_limit_stays_bytecode(monkeypatch):
    """Past ``COMPILED_CALLS`` calls ``main`` is linked as bytecode (LLVM's time on a compiled program
    grows with the square of its length): the instrument sees its kernels, and it matches the
    unpartitioned model and the build whose ``main`` was compiled."""
    from tvm_partition.build import executable

    model = mlp_model()
    compiled, _, _ = equal_check(model)
    monkeypatch.setattr(executable, "COMPILED_CALLS", 0)
    long, err, tol = equal_check(model)
    assert err <= tol
    assert "@main:" in long.build.executable.as_text()
    outs = []
    for build in (long, compiled):
        vm = relax.VirtualMachine(build.build.executable, [d.tvm_device() for d in build.plan.devices])
        weights = vm["main_transform_params"]([tvm.runtime.tensor(p) for p in model.params])
        seen = []
        vm.set_instrument(lambda _f, name, before, *_: seen.append(str(name)) if before else None)
        outs.append(vm["main"](*[tvm.runtime.tensor(v) for v in model.inputs.values()], *weights).numpy())
        assert bool([n for n in seen if not n.startswith("vm.builtin")]) == (build is long)
    np.testing.assert_array_equal(*outs)


@pytest.mark.parametrize("devices", ["cpu,cpu-v3", "cpu,gpu"])
def test_a_kernel_called_on_devices_of_two_targets_is_one_a_target(tmp_path, devices):
    """TVM legalizes a bare conv2d to one PrimFunc for both halves of a split by its channels (same
    shapes; its output carries no vdevice to name them apart), which cannot run on two targets:
    the TCN of build/pytorch_models under ``equal`` on ``cpu,gpu`` stopped with "kernel conv2d is
    called on two devices (gpu, cpu)". The second device's calls get a copy of their own. Two
    CPUs of two targets (this CPU's and x86-64-v3) run it: the outputs the unsplit model's;
    ``cpu,gpu`` is built (its GPU half cross-compiled), its two kernels on their devices."""
    import dataclasses

    from test_split_rules import one_op_model, the_op
    from tvm_partition.cli.compile import check, compile_model
    from tvm_partition.devices import cpu_target

    model = one_op_model([(1, 16, 8, 8)], [(16, 16, 3, 3)], lambda x, w: relax.op.nn.conv2d(x, w, padding=1))
    specs = parse_devices(devices.split("-")[0])
    if devices.endswith("-v3"):
        specs[1] = dataclasses.replace(specs[1], target=cpu_target("x86-64-v3"))
    plan_file = tmp_path / "plan.json"
    Plan(specs, {the_op(OpGraph(model.mod)).id: Split(1, (0.5, 0.5), (specs[1].name, "cpu"))}).save(plan_file)
    compiled = compile_model(model, specs, plan_file=str(plan_file), tuning_db=str(tmp_path / "no-database"))
    placed = compiled.build.kernel_devices
    assert {placed[k] for k in placed if k.startswith("conv2d")} == {"cpu", specs[1].name}
    if specs[1].kind == "cpu":
        err, tol = check(compiled)
        assert err <= tol
