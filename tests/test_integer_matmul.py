"""Dynamically quantized matmuls as products of bytes summed in int32
(:mod:`tvm_partition.frontend.integer_matmul`), and the VNNI template that sums them
(:mod:`tvm_partition.build.vnni`).

Oracle: onnxruntime running the model ``quantize_dynamic`` wrote (its ``MatMulInteger`` sums the
integers exactly, as the rewrite does), and numpy's int64 product for the kernel alone. The
template's tests need a CPU with AVX-512 VNNI and skip without one; the rewrite's run anywhere (TVM's
default schedule sums the same integers)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import tvm
from onnx import TensorProto, helper, numpy_helper

from test_onnx import ort_run, run_split
from tvm_partition import frontend
from tvm_partition.build import templates, vnni
from tvm_partition.cli.compile import for_devices, reference_outputs
from tvm_partition.devices import AMX_FLAGS, cpu_flags, host_target, parse_devices
from tvm_partition.frontend.integer_matmul import integer_matmuls

pytestmark = [pytest.mark.filterwarnings("ignore:Renaming name:UserWarning")]

VNNI = vnni.sums_bytes(host_target())
needs_vnni = pytest.mark.skipif(not VNNI, reason="this CPU has no AVX-512 VNNI")
ROWS, K, N = 8, 256, 128


def _dense(path, rows: int = ROWS, k: int = K, n: int = N, layers: int = 2) -> None:
    """``layers`` matmuls by seeded weights, each with a bias and a ReLU (a feed-forward stack),
    float; :func:`_quantized` quantizes it as a user would."""
    rng = np.random.default_rng(0)
    nodes, inits, x, width = [], [], "x", k
    for i in range(layers):
        out = n if i == layers - 1 else k
        inits += [numpy_helper.from_array((rng.standard_normal((width, out)) * width ** -0.5).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array((rng.standard_normal(out) * 0.1).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]), helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
                  helper.make_node("Relu", [f"a{i}"], [f"y{i}"])]
        x, width = f"y{i}", out
    graph = helper.make_graph(nodes, "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows, k])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, rows, n])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    from onnxruntime.quantization import quantize_dynamic

    folder = tmp_path_factory.mktemp("integer_matmul")
    _dense(folder / "float.onnx")
    quantize_dynamic(str(folder / "float.onnx"), str(folder / "dyn.onnx"))
    return folder / "dyn.onnx"


def _x(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, ROWS, K)).astype(np.float32)


def _matmuls(model) -> list:
    found = []
    matmul = tvm.ir.Op.get("relax.matmul")
    tvm.relax.analysis.post_order_visit(
        model.mod["main"], lambda e: found.append(e) if isinstance(e, tvm.relax.Call) and e.op.same_as(matmul) else None)
    return found


def test_a_dynamically_quantized_matmul_becomes_a_product_of_bytes_that_matches_onnxruntime(quantized):
    """Both matmuls rewritten, their weights stored as int8 (the float copies dropped), and the
    unpartitioned build of the rewritten model gives onnxruntime's outputs: its integer sums are
    exact, as onnxruntime's are."""
    model = frontend.load(str(quantized), seed=0)
    model.inputs = {"x": _x()}
    rewritten = integer_matmuls(model)
    products = _matmuls(rewritten)
    assert len(products) == 2 and all((str(p.args[0].ty.dtype), str(p.args[1].ty.dtype), str(p.ty.dtype)) == ("uint8", "int8", "int32")
                                      for p in products)
    float_weights = sum(p.size for p in model.params if p.ndim == 2)
    assert sum(p.size for p in rewritten.params if p.dtype == np.int8) == float_weights
    assert not [p for p in rewritten.params if p.ndim == 2 and p.dtype != np.int8]
    ours, ref = reference_outputs(rewritten), ort_run(onnx.load(str(quantized)), [_x()])
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("rows, tiled", [(28, 32), (26, 32), (20, 20), (32, 32)],
                         ids=["padded", "padded-on", "too-many", "whole"])
def test_an_activation_is_padded_on_to_whole_tiles_and_sliced_back(tmp_path, rows, tiled):
    """With a tile of 32 rows (AMX's), 28 rows compute 32 (4 more: within a quarter) and are sliced
    back, as 26 are, which the float form padded to 28; 20 would need 12 more and stay; the
    outputs are onnxruntime's either way."""
    from onnxruntime.quantization import quantize_dynamic

    _dense(tmp_path / "float.onnx", rows=rows)
    quantize_dynamic(str(tmp_path / "float.onnx"), str(tmp_path / "dyn.onnx"))
    model = frontend.load(str(tmp_path / "dyn.onnx"))
    x = np.random.default_rng(1).standard_normal((1, rows, K)).astype(np.float32)
    model.inputs = {"x": x}
    rewritten = integer_matmuls(model, (32, 32, 64))
    assert [p.args[0].ty.shape[-2] for p in _matmuls(rewritten)] == [tiled, tiled]
    ours, ref = reference_outputs(rewritten), ort_run(onnx.load(str(tmp_path / "dyn.onnx")), [x])
    assert ours[0].shape == (1, rows, N)
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("change", [lambda w: w + 128, lambda w: w - 128, lambda w: w * 0.5],
                         ids=["above-int8", "below-int8", "not-integers"])
def test_a_weight_that_is_no_int8_matrix_keeps_its_float_product(quantized, change):
    """A weight holding values beyond int8's range, or not integers, keeps the float product (the
    other matmul is still rewritten); a float model has nothing to rewrite."""
    model = frontend.load(str(quantized))
    first = next(i for i, p in enumerate(model.params) if p.ndim == 2)
    model.params[first] = change(model.params[first])
    assert sorted(str(p.ty.dtype) for p in _matmuls(integer_matmuls(model))) == ["float32", "int32"]


def test_a_product_of_bytes_is_priced_as_a_third_of_its_multiply_adds_a_sixth_in_tiles(quantized):
    """The OpGraph counts a byte matmul's work as the float one's divided by
    :data:`~tvm_partition.ir.graph.BYTE_PRODUCTS` (the VNNI template's measured speed-up), by
    :data:`~tvm_partition.ir.graph.TILED_BYTE_PRODUCTS` where the module says its devices sum them
    in tiles that hold its extents whole (AMX's), so the cost model, which knows float kernels,
    prices it near its time."""
    from tvm_partition.ir.graph import BYTE_PRODUCTS, TILED_BYTE_PRODUCTS, OpGraph, byte_tiles

    model = frontend.load(str(quantized))
    square = 2.0 * ROWS * K * K  # the first matmul's multiply-adds (its epilogue adds a few %)
    forms = [model, integer_matmuls(model), integer_matmuls(model, (ROWS, 32, 64)), integer_matmuls(model, (ROWS, 96, 64))]
    work = [max(op.flops for op in OpGraph(m.mod).ops.values()) for m in forms]
    assert work[:2] == [pytest.approx(square, rel=0.05), pytest.approx(square / BYTE_PRODUCTS, rel=0.05)]
    epilogue = work[1] - square / BYTE_PRODUCTS  # the same in every integer form
    assert work[2:] == [pytest.approx(square / TILED_BYTE_PRODUCTS + epilogue), pytest.approx(work[1])]
    assert [byte_tiles(m.mod) for m in forms] == [None, None, (ROWS, 32, 64), (ROWS, 96, 64)]


def test_a_float_model_is_left_as_it_is(tmp_path):
    _dense(tmp_path / "float.onnx")
    model = frontend.load(str(tmp_path / "float.onnx"))
    assert integer_matmuls(model) is model


def test_only_cpus_that_sum_bytes_get_the_integer_form(quantized):
    """A GPU in the plan, or a CPU without VNNI (Zen 3), keeps the float form: a split op's parts run
    one computation, and the integer matmul has no quick schedule there."""
    model = frontend.load(str(quantized))
    assert for_devices(model, parse_devices("cpu,gpu")) is model
    assert for_devices(model, parse_devices("cpu,cpu", cpu_mcpu="znver3")) is model
    assert for_devices(model, parse_devices("cpu,cpu", cpu_mcpu="icelake-server")) is not model


@needs_vnni
@pytest.mark.parametrize("strategy", ["cpu", "equal"])
def test_the_vnni_template_sums_the_products_and_matches_onnxruntime(quantized, tmp_path, strategy):
    """Built as a user's build is (templates, weights packed at load time), whole and split in two
    over ``cpu,cpu``: every integer matmul kernel takes the VNNI template, and the outputs are
    onnxruntime's."""
    model = frontend.load(str(quantized))
    compiled, outs = run_split(model, tmp_path, [_x()], strategy=strategy, schedules=True)
    labels = list(compiled.kernel_schedules.values())
    assert labels.count(templates.INTEGER_MATMUL_LABEL) == (2 if strategy == "cpu" else 4), labels
    np.testing.assert_allclose(outs[0], ort_run(onnx.load(str(quantized)), [_x()])[0], rtol=1e-5, atol=1e-5)


@needs_vnni
def test_the_vnni_kernel_sums_exactly():
    """The template's kernel on a matmul alone against numpy's int64 product, the extremes of both
    types included, its weights packed by the block the build lifts to load time."""
    from tvm import te

    a = te.placeholder((1, 8, 32), "uint8", name="a")
    b = te.placeholder((32, 64), "int8", name="b")
    r = te.reduce_axis((0, 32), name="k")
    c = te.compute((1, 8, 64), lambda z, i, j: te.sum(a[z, i, r].astype("int32") * b[r, j].astype("int32"), axis=r),
                   name="matmul")
    kmod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    done = templates.templated(kmod, host_target())
    assert done is not None and done[1] == templates.INTEGER_MATMUL_LABEL
    kernel = tvm.compile(tvm.IRModule({"main": done[0]}), target=host_target())
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (1, 8, 32), dtype=np.uint8)
    w = rng.integers(-128, 128, (32, 64), dtype=np.int8)
    x[0, 0], w[:, 0] = 255, -128
    args = [tvm.runtime.tensor(v) for v in (x, w, np.zeros((1, 8, 64), np.int32))]
    kernel(*args)
    np.testing.assert_array_equal(args[2].numpy(), x.astype(np.int64) @ w.astype(np.int64))


@pytest.mark.parametrize("rows,k,n,fits", [(8, 32, 64, True), (6, 32, 64, False), (8, 30, 64, False), (8, 32, 48, False)],
                         ids=["tiles", "rows", "reduction", "columns"])
def test_the_vnni_template_takes_whole_tiles_only(rows, k, n, fits):
    """Rows in tiles of 4, the reduction in steps of 4 bytes, the columns in 4 vectors of 16."""
    from tvm import te

    a = te.placeholder((rows, k), "uint8", name="a")
    b = te.placeholder((k, n), "int8", name="b")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((rows, n), lambda i, j: te.sum(a[i, r].astype("int32") * b[r, j].astype("int32"), axis=r), name="matmul")
    kmod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    assert vnni.fits(templates.common._root_blocks(kmod)[0]) == fits


needs_amx = pytest.mark.skipif(not set(AMX_FLAGS) <= cpu_flags(), reason="this CPU has no AMX int8 tiles")
#: A target with AMX: the CPUs that have it are Sapphire Rapids and later (this VM's LLVM names
#: its CPU rocketlake, whose target has none).
AMX_CPU = "sapphirerapids"


@needs_amx
def test_the_amx_kernel_sums_exactly():
    """The AMX template's kernel (two tiles of 32 x 32 over a reduction of 3 steps of 64) on a
    matmul with a ReLU epilogue, against numpy's int64 product, the extremes of both types
    included; a target without AMX takes the VNNI template for the same kernel."""
    from tvm import te

    from tvm_partition.build import amx

    rows, red, cols = 64, 192, 64
    a = te.placeholder((1, rows, red), "uint8", name="a")
    b = te.placeholder((red, cols), "int8", name="b")
    r = te.reduce_axis((0, red), name="k")
    c = te.compute((1, rows, cols), lambda z, i, j: te.sum(a[z, i, r].astype("int32") * b[r, j].astype("int32"), axis=r),
                   name="matmul")
    d = te.compute((1, rows, cols), lambda z, i, j: te.max(c[z, i, j], 0), name="relu")
    kmod = tvm.IRModule({"main": te.create_prim_func([a, b, d])})
    target = host_target(AMX_CPU)
    assert amx.multiplies_tiles(target) and not amx.multiplies_tiles(host_target("icelake-server"))
    done = templates.templated(kmod, target)
    assert done is not None and done[1] == templates.INTEGER_TILES_LABEL
    assert templates.templated(kmod, host_target("icelake-server"))[1] == templates.INTEGER_MATMUL_LABEL
    kernel = tvm.compile(tvm.IRModule({"main": done[0]}), target=target)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (1, rows, red), dtype=np.uint8)
    w = rng.integers(-128, 128, (red, cols), dtype=np.int8)
    x[0, 0], w[:, 0] = 255, -128
    args = [tvm.runtime.tensor(v) for v in (x, w, np.zeros((1, rows, cols), np.int32))]
    kernel(*args)
    np.testing.assert_array_equal(args[2].numpy(), np.maximum(x.astype(np.int64) @ w.astype(np.int64), 0))


@pytest.mark.parametrize("shape, tiles", [((32, 64, 32), True), ((64, 128, 64), True), ((16, 64, 32), False),
                                          ((32, 96, 32), False), ((32, 64, 48), False)])
def test_the_amx_template_takes_whole_tiles_only(shape, tiles):
    """Rows and columns of 32, a reduction of 64 bytes: an AMX tile's; else the VNNI template."""
    from tvm import te

    from tvm_partition.build import amx

    rows, red, cols = shape
    a = te.placeholder((rows, red), "uint8", name="a")
    b = te.placeholder((red, cols), "int8", name="b")
    r = te.reduce_axis((0, red), name="k")
    c = te.compute((rows, cols), lambda i, j: te.sum(a[i, r].astype("int32") * b[r, j].astype("int32"), axis=r), name="matmul")
    func = te.create_prim_func([a, b, c])
    block = templates.common._root_blocks(tvm.IRModule({"main": func}))[0]
    assert amx.fits(block) is tiles


def test_this_machines_cpu_is_compiled_with_the_extensions_linux_lists(monkeypatch):
    """A VM's CPU may carry an older LLVM name than it is (this one: ``rocketlake``, no AMX, where
    Linux lists ``amx_int8 amx_tile``): a target naming this machine's CPU compiles with AMX's
    features where Linux lists them, and the AMX template is chosen for it; another CPU's name, or
    an ``mattr`` that says something of AMX, is left as given. And a VM may hide what its name
    implies: a Sapphire Rapids guest without AMX compiles without it, on the VNNI template."""
    from tvm_partition import devices
    from tvm_partition.build import amx

    def flags(mcpu, plus=(), minus=()):
        return frozenset(devices.X86_FLAGS[f] for f in devices._implied(mcpu)) - set(minus) | set(plus)

    monkeypatch.setattr(devices, "host_cpu_name", lambda: "rocketlake")
    monkeypatch.setattr(devices, "cpu_flags", lambda: flags("rocketlake", plus=devices.AMX_FLAGS))
    amx._tiles.cache_clear()
    here = {"kind": "llvm", "mcpu": "rocketlake"}
    assert devices.codegen_target(here)["mattr"] == [devices.NO_GATHER, *devices.AMX_FEATURES]
    assert amx.multiplies_tiles(tvm.target.Target({**here, "num-cores": 2}))  # MetaSchedule's target
    assert devices.codegen_target({**here, "mcpu": "icelake-server"})["mattr"] == [devices.NO_GATHER]
    assert devices.codegen_target({**here, "mattr": ["-amx-tile"]})["mattr"] == ["-amx-tile", devices.NO_GATHER]
    monkeypatch.setattr(devices, "cpu_flags", lambda: flags("rocketlake"))
    amx._tiles.cache_clear()
    assert devices.codegen_target(here)["mattr"] == [devices.NO_GATHER]
    assert not amx.multiplies_tiles(tvm.target.Target({**here, "num-cores": 2}))
    hidden = ("amx_tile", "amx_int8", "amx_bf16", "avx512_fp16")
    monkeypatch.setattr(devices, "host_cpu_name", lambda: "sapphirerapids")
    monkeypatch.setattr(devices, "cpu_flags", lambda: flags("sapphirerapids", minus=hidden))
    amx._tiles.cache_clear()
    guest = {"kind": "llvm", "mcpu": "sapphirerapids"}
    assert sorted(devices.codegen_target(guest)["mattr"][1:]) == ["-amx-bf16", "-amx-int8", "-amx-tile", "-avx512fp16"]
    assert not amx.multiplies_tiles(tvm.target.Target(guest))
    assert vnni.sums_bytes(tvm.target.Target(devices.codegen_target(guest)))
    assert not set(hidden) & set(devices.cpu_flags_needed(guest))
    amx._tiles.cache_clear()


def test_an_artifact_needs_the_extensions_its_targets_compile_with(monkeypatch):
    """What a manifest records (Linux's names, LLVM's features of the target) and the Runner's
    refusal of a CPU lacking one: AVX2 CPUs (``x86-64-v3``) run no AVX-512, Ice Lake's VNNI needs
    ``avx512_vnni``, this machine's name with Linux's AMX flags needs the tiles, and of what its
    name implies only what Linux lists (a VM may hide some); nothing off x86, nothing to refuse
    where Linux lists no flags."""
    from tvm_partition import devices

    monkeypatch.setattr(devices, "host_cpu_name", lambda: "rocketlake")
    listed = {devices.X86_FLAGS[f] for f in devices._implied("rocketlake")} - {"avx512_vnni"} | set(devices.AMX_FLAGS)
    monkeypatch.setattr(devices, "cpu_flags", lambda: frozenset(listed))
    v3 = devices.cpu_flags_needed(devices.cpu_target("x86-64-v3"))
    assert {"avx2", "fma", "f16c"} <= set(v3) and not any(f.startswith("avx512") for f in v3)
    assert {"avx512f", "avx512_vnni"} <= set(devices.cpu_flags_needed(devices.cpu_target("icelake-server")))
    assert not {"amx_tile", "amx_int8"} & set(devices.cpu_flags_needed(devices.cpu_target("icelake-server")))
    # this machine's CPU (its LLVM name faked): what Linux lists of what the name implies, and AMX
    assert devices.cpu_flags_needed(devices.cpu_target("rocketlake")) == sorted(listed)
    assert devices.cpu_flags_needed({"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a78"}) == []
    devices.check_cpu_flags(["avx2", "amx_tile"])  # had
    with pytest.raises(devices.DeviceError, match=r"lacks \(avx512_fp16, avx512_vnni; compiled for sapphirerapids\)"):
        devices.check_cpu_flags(["avx2", "avx512_vnni", "avx512_fp16"], "sapphirerapids")
    monkeypatch.setattr(devices, "cpu_flags", lambda: frozenset())
    devices.check_cpu_flags(["avx512f"])


def test_profile_samples_the_form_builds_compile(quantized, tmp_path, monkeypatch):
    """``profile MODEL`` times a quantized model's ops in the form a build for its devices compiles
    (:func:`tvm_partition.cli.compile.for_devices`): byte matmuls where every device sums bytes."""
    from tvm_partition.build.vnni import sums_bytes
    from tvm_partition.cli import profile
    from tvm_partition.profiling import profiler

    class Sampled(Exception):
        pass

    def sample(graphs, devices, folder, schedules, *args, models=None):
        raise Sampled(models)

    monkeypatch.setattr(profiler, "profile_with_progress", sample)
    with pytest.raises(Sampled) as sampled:
        profile.main([str(quantized), "--devices", "cpu,cpu", "--tuning-logs", str(tmp_path)])
    [model] = sampled.value.args[0]
    devices = parse_devices("cpu,cpu")
    dtypes = sorted(str(p.ty.dtype) for p in _matmuls(model))
    assert dtypes == (["int32", "int32"] if sums_bytes(devices[0].tvm_target()) else ["float32", "float32"])


def test_profile_explains_the_ops_of_the_form_builds_compile(quantized, monkeypatch, capsys):
    """``profile --explain MODEL`` lists the fits of the ops a build for the devices compiles (a
    quantized model's byte matmuls where every device sums bytes), not those of the float form."""
    from tvm_partition.cli import profile
    from tvm_partition.cost_models.profiled import ProfiledCostModel
    from tvm_partition.ir.graph import OpGraph, op_signature

    asked = []
    monkeypatch.setattr(ProfiledCostModel, "explain", lambda self, sigs=None: asked.append(sigs) or "explained")
    assert profile.main([str(quantized), "--devices", "cpu,cpu", "--explain"]) == 0
    model = for_devices(frontend.load(str(quantized)), parse_devices("cpu,cpu"))
    assert asked == [{op_signature(op) for op in OpGraph(model.mod).ops.values()}]
    assert capsys.readouterr().out == "explained\n"
