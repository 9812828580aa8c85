"""What an integer matmul on VNNI gives a dynamically quantized transformer: a uint8 x int8
matmul summed in int32 by AVX-512 VNNI's ``vpdpbusd`` (four byte products a 32-bit lane), against
the float matmul our build runs in its place where a device has no VNNI (``frontend/onnx_quant.py``
writes ``MatMulInteger`` as a float product of the integers), on the same shapes, side by side.

    TVM_NUM_THREADS=2 python benchmarks/vnni_matmul.py [--shapes 128x768x3072,128x3072x768,128x768x768] [--rounds 5]

It sized the integer path a build now takes (:mod:`tvm_partition.build.vnni`, whose template is
this kernel's schedule and whose dot product it tensorizes). The integer kernel is a TE matmul of
the weights packed as ``[N/16][K/4][16][4]`` (the layout ``vpdpbusd`` reads: 16 columns of 4 bytes
of the reduction a register), a tile of 4 rows by 4 vectors of 16 columns (16 accumulators),
the tiles in parallel, the 16 x 4 dot product tensorized. The float side is a one-``MatMul`` ONNX model of
the same shape, weights constant, compiled by ``compile_model`` as a user's build is (the matmul
template, packed weights) and timed end to end by the runner (its VM adds some microseconds). Each
round times each side ``--repeat`` times; the medians over rounds are printed, with both outputs
checked (the integer one exactly against numpy's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's package, not another installed copy


def packed_matmul(m: int, k: int, n: int):
    """The PrimFunc of ``c[m, n] (int32) = a[m, k] (uint8) @ w[k, n] (int8)``, ``w`` packed
    ``[N/16][K/4][16][4]`` (its block ``c``)."""
    from tvm import te

    a = te.placeholder((m, k), "uint8", name="a")
    b = te.placeholder((n // 16, k // 4, 16, 4), "int8", name="b")
    r = te.reduce_axis((0, k), name="r")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r].astype("int32") * b[j // 16, r // 4, j % 16, r % 4].astype("int32"),
                                               axis=r), name="c")
    return te.create_prim_func([a, b, c])


def integer_kernel(m: int, k: int, n: int, target):
    """The compiled uint8 x int8 -> int32 matmul of packed weights (module docstring)."""
    import tvm

    from tvm_partition.build.vnni import intrinsic

    sch = tvm.s_tir.Schedule(packed_matmul(m, k, n))
    block = sch.get_sblock("c")
    i, j, red = sch.get_loops(block)
    rows, i_in = sch.split(i, [None, 4])
    cols, vectors, lanes = sch.split(j, [None, 4, 16])
    red_out, red_in = sch.split(red, [None, 4])
    sch.reorder(cols, rows, red_out, i_in, vectors, lanes, red_in)
    sch.parallel(sch.fuse(cols, rows))  # before tensorize: parallel wants a complete block below
    sch.decompose_reduction(block, red_out)
    sch.tensorize(lanes, intrinsic())
    sch.unroll(i_in)
    sch.unroll(vectors)
    return tvm.compile(sch.mod, target=target)


def float_runner(m: int, k: int, n: int, weights: np.ndarray, folder: str):
    """A one-``MatMul`` ONNX model of constant ``weights`` built as ``compile`` builds it on this
    machine's CPU, loaded by the runner."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "matmul",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, n])],
                              [numpy_helper.from_array(weights, "w")])
    path = os.path.join(folder, f"matmul_{m}x{k}x{n}.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    compiled = compile_model(frontend.load(path), parse_devices("cpu,cpu"), "cpu",
                             tuning_db=os.path.join(folder, "no-database"))
    return Runner(compiled.save(os.path.join(folder, f"art_{m}x{k}x{n}")))


def _timed(run, repeat: int) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        run()
    return (time.perf_counter() - t0) / repeat * 1e6


def measure(m: int, k: int, n: int, rounds: int, repeat: int, folder: str) -> dict:
    import tvm

    from tvm_partition.devices import host_target

    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    kernel = integer_kernel(m, k, n, host_target())
    dev = tvm.cpu()
    packed = b.reshape(k // 4, 4, n // 16, 16).transpose(2, 0, 3, 1).copy()
    args = [tvm.runtime.tensor(v, dev) for v in (a, packed, np.zeros((m, n), np.int32))]
    kernel(*args)
    exact = a.astype(np.int64) @ b.astype(np.int64)
    assert np.array_equal(args[2].numpy(), exact), "the integer kernel's product is wrong"
    runner = float_runner(m, k, n, b.astype(np.float32), folder)
    x = {runner.input_info[0]["name"]: a.astype(np.float32)[None]}
    np.testing.assert_allclose(runner.run(x)[0][0], exact, rtol=1e-5, atol=1e-3 * np.abs(exact).max())
    ints, floats = [], []
    for _ in range(rounds):  # alternated: the VM's phases touch both alike
        ints.append(_timed(lambda: kernel(*args), repeat))
        floats.append(statistics.median(runner.time(x, repeat, warmup=3)))
    return {"shape": f"{m}x{k}x{n}", "int8_vnni_us": statistics.median(ints), "float_build_us": statistics.median(floats),
            "spread_int8": max(ints) / min(ints), "spread_float": max(floats) / min(floats)}


def parse_shapes(text: str, rows: int, reduction: int, columns: int) -> list[tuple[int, int, int]]:
    """``--shapes``' comma-separated ``MxKxN``, each a multiple of ``rows``, ``reduction`` and
    ``columns``; SystemExit with one line otherwise."""
    shapes = []
    for shape in text.split(","):
        try:
            m, k, n = (int(v) for v in shape.split("x"))
        except ValueError:
            raise SystemExit(f"error: --shapes {shape!r}: write MxKxN, e.g. 128x768x3072") from None
        if m % rows or k % reduction or n % columns:
            raise SystemExit(f"error: --shapes {shape!r}: M must be a multiple of {rows}, K of {reduction}, N of {columns}")
        shapes.append((m, k, n))
    return shapes


def shapes_parser(doc: str, shapes: str, shapes_help: str) -> argparse.ArgumentParser:
    """The matmul benchmarks' arguments: ``--shapes`` (default ``shapes``), ``--rounds``, ``--repeat``."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--shapes", default=shapes, help=shapes_help)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    ap.add_argument("--repeat", type=int, default=20, help="runs of each side a round (default 20)")
    return ap


def main(argv=None) -> int:
    args = shapes_parser(__doc__, "128x768x3072,128x3072x768,128x768x768",
                         "comma-separated MxKxN, K a multiple of 4, N of 64, M of 4 (default: DistilBERT's "
                         "feed-forward and projections at sequence 128)").parse_args(argv)
    shapes = parse_shapes(args.shapes, 4, 4, 64)
    print("| shape (MxKxN) | int8, VNNI (us) | float, our build (us) | float / int8 | spread over rounds |")
    print("| --- | ---: | ---: | ---: | --- |")
    with tempfile.TemporaryDirectory(prefix="vnni-") as folder:
        for m, k, n in shapes:
            r = measure(m, k, n, args.rounds, args.repeat, folder)
            print(f"| {r['shape']} | {r['int8_vnni_us']:.0f} | {r['float_build_us']:.0f} | "
                  f"{r['float_build_us'] / r['int8_vnni_us']:.2f}x | {r['spread_int8']:.2f}, {r['spread_float']:.2f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
