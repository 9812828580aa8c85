"""What AMX's tiles give a dynamically quantized transformer's matmuls: the uint8 x int8 matmul
template on AMX tiles (:mod:`tvm_partition.build.amx`), the same kernel on the VNNI template
(:mod:`tvm_partition.build.vnni`, the kernel compiled for ``icelake-server``, which has VNNI and no
AMX) and onnxruntime's ``MatMulInteger`` (which takes AMX where the CPU has it), on the same
shapes, side by side on this machine's CPU.

    TVM_NUM_THREADS=2 python benchmarks/amx_matmul.py [--shapes 128x768x3072,...] [--rounds 5]

Each TVM kernel is a matmul of a uint8 activation by int8 weights packed as the templates pack
them at load time, on the template's schedule less its epilogue (``amx_kernel`` here; the VNNI one
``benchmarks/vnni_matmul.py``'s), called directly (no VM); onnxruntime's is a one-``MatMulInteger``
session of the same weights, its thread count TVM's. The integer products are checked exactly against numpy's.
Each round times each TVM kernel ``--repeat`` times, alternating; onnxruntime's session is timed
after them, as many rounds (its threads spin on after a run and slow kernels beside them); the
medians over rounds are printed. Needs a CPU
with AMX (Sapphire Rapids or later; Linux lists ``amx_int8``).
"""

from __future__ import annotations

import os
import statistics
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's package, not another installed copy

from vnni_matmul import _timed, integer_kernel, packed_matmul, parse_shapes, shapes_parser  # noqa: E402 - this folder's


def amx_kernel(m: int, k: int, n: int, target):
    """The compiled uint8 x int8 -> int32 matmul of packed weights on the AMX template's tile: 32 x
    32 tiles in parallel, columns outer, each summed over the whole reduction by its tensorized
    intrinsic (:func:`tvm_partition.build.amx.intrinsic`), the kernel asking Linux for the tiles
    first; the template's schedule less its epilogue and the packing the build lifts to load time."""
    import tvm

    from tvm_partition.build import amx

    sch = tvm.s_tir.Schedule(packed_matmul(m, k, n))
    block = sch.get_sblock("c")
    i, j, red = sch.get_loops(block)
    rows, i_in = sch.split(i, [None, amx.ROWS])
    cols, j_in = sch.split(j, [None, amx.COLUMNS])
    sch.reorder(cols, rows, i_in, j_in, red)
    sch.parallel(sch.fuse(cols, rows))
    sch.decompose_reduction(block, i_in)
    sch.tensorize(i_in, amx.intrinsic(k))
    func = amx._asking_for_tiles(sch.mod["main"])
    return tvm.compile(tvm.IRModule({"main": func}), target=target)


def ort_session(w: np.ndarray, threads: int):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    k, n = w.shape
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["a", "w"], ["y"])], "matmul_integer",
                              [helper.make_tensor_value_info("a", TensorProto.UINT8, ["m", k])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, ["m", n])],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def measure(m: int, k: int, n: int, rounds: int, repeat: int, threads: int) -> dict:
    import tvm

    from tvm_partition.devices import host_target

    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    w = rng.integers(-128, 128, (k, n), dtype=np.int8)
    exact = a.astype(np.int64) @ w.astype(np.int64)
    packed = w.reshape(k // 4, 4, n // 16, 16).transpose(2, 0, 3, 1).copy()
    sides = {}
    for name, kernel in (("amx", amx_kernel(m, k, n, host_target())), ("vnni", integer_kernel(m, k, n, host_target()))):
        args = [tvm.runtime.tensor(v) for v in (a, packed, np.zeros((m, n), np.int32))]
        kernel(*args)
        assert np.array_equal(args[2].numpy(), exact), f"the {name} kernel's product is wrong"
        sides[name] = (lambda kernel=kernel, args=args: kernel(*args))
    times = {name: [] for name in sides}
    for _ in range(rounds):  # alternated: the VM's phases touch both alike
        for name, run in sides.items():
            run()
            times[name].append(_timed(run, repeat))
    times["onnxruntime"] = _ort_times(a, w, exact, threads, rounds, repeat)
    return {name: (statistics.median(t), max(t) / min(t)) for name, t in times.items()}


def _ort_times(a: np.ndarray, w: np.ndarray, exact: np.ndarray, threads: int, rounds: int, repeat: int) -> list[float]:
    """onnxruntime's times, after the TVM kernels', its session gone when this returns: its threads
    spin on after each run, and beside TVM's they slowed our kernels 2-10x (2026-12-06)."""
    sess = ort_session(w, threads)
    assert np.array_equal(sess.run(None, {"a": a})[0], exact), "onnxruntime's product is wrong"
    return [_timed(lambda: sess.run(None, {"a": a}), repeat) for _ in range(rounds)]


def main(argv=None) -> int:
    args = shapes_parser(__doc__, "128x768x3072,128x3072x768,128x768x768,224x768x3072,224x3072x768,224x768x768",
                         "comma-separated MxKxN, M and N multiples of 32 and 64, K of 64 (default: BERT's "
                         "feed-forward and projections at sequence 128, ViT-base's at 197 tokens padded to "
                         "224)").parse_args(argv)
    from tvm_partition.devices import AMX_FLAGS, cpu_flags

    if not set(AMX_FLAGS) <= cpu_flags():
        raise SystemExit("error: this CPU has no AMX int8 tiles (Linux lists no amx_int8, amx_tile)")
    shapes = parse_shapes(args.shapes, 32, 64, 64)
    threads = int(os.environ.get("TVM_NUM_THREADS") or os.cpu_count() or 1)
    print("| shape (MxKxN) | AMX template (us) | VNNI template (us) | onnxruntime (us) | AMX GMAC/s | VNNI / AMX | "
          "onnxruntime / AMX | spread over rounds |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for m, k, n in shapes:
        r = measure(m, k, n, args.rounds, args.repeat, threads)
        (amx, s1), (vnni, s2), (ort, s3) = r["amx"], r["vnni"], r["onnxruntime"]
        print(f"| {m}x{k}x{n} | {amx:.0f} | {vnni:.0f} | {ort:.0f} | {m * k * n / amx / 1e3:.0f} | {vnni / amx:.2f}x | "
              f"{ort / amx:.2f}x | {s1:.2f}, {s2:.2f}, {s3:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
