"""What ``conv_1x1.py`` and ``conv_tiles.py`` share: the distinct convolution kernels of some
models, and two schedules of one kernel timed alone in alternating rounds.

MODEL: a zoo name, ``name:IMAGE_SIZE`` for another image size (``resnet50:128``), or an .onnx path.
"""

from __future__ import annotations

import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def arguments(doc: str, argv=None, switches: dict[str, str] | None = None):
    """``(args, target)``: the command line of a script documented by ``doc`` (MODEL..., --rounds,
    --target-cpu, and the on/off ``switches``: ``{flag: help}``) and the CPU target builds compile
    for (this machine's, or ``--target-cpu``'s ``-mcpu``)."""
    import argparse

    from tvm_partition.build.tuning import tuning_target
    from tvm_partition.devices import parse_devices

    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help="zoo names (name:image_size) or .onnx paths "
                                              "(path.onnx:seq_len=128 for an export's free dimensions)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per kernel (default 3)")
    ap.add_argument("--target-cpu", metavar="MCPU", help="plan and compile for this LLVM -mcpu, timed here")
    for flag, text in (switches or {}).items():
        ap.add_argument(flag, action="store_true", help=text)
    args = ap.parse_args(argv)
    return args, tuning_target(parse_devices("cpu", cpu_mcpu=args.target_cpu)[0])


def model_graph(spec: str, **settings):
    """``(label, OpGraph)`` of a MODEL argument: a zoo name, ``NAME:IMAGE_SIZE``, an ``.onnx`` path,
    or ``PATH.onnx:seq_len=128`` (``KEY=N`` pairs, comma-separated) for an export's free dimensions;
    ``settings``: more of :func:`tvm_partition.frontend.load`'s (a script's ``--batch``)."""
    from tvm_partition import frontend
    from tvm_partition.ir.graph import OpGraph

    path, _, options = spec.partition(":")
    keyed = "=" in options
    shapes = dict((k, int(v)) for k, v in (o.split("=") for o in options.split(",") if o)) if keyed \
        else {"image_size": int(options)} if options else {}
    label = os.path.basename(path).removesuffix(".onnx") + (f":{options}" if options and not keyed else "")
    return label, OpGraph(frontend.load(path, seed=0, **shapes, **settings).mod)


def kernels(graph, pattern: str = "", seen: set | None = None):
    """``(op, kernel IRModule, its transfer.Block tuple)`` of every distinct kernel of ``graph``
    (distinct by :func:`tvm_partition.build.transfer.blocks_of`: the same computation at the same
    extents is one) whose fused name contains ``pattern``; ``seen``: the blocks already yielded,
    kept across calls (several models)."""
    from tvm_partition.build.align import kernel_of
    from tvm_partition.build.transfer import blocks_of

    seen = set() if seen is None else seen
    for op in graph.ops.values():
        if pattern not in op.fused_name or not op.split_dims:
            continue
        kmod = kernel_of(graph, op)
        blocks = blocks_of(kmod)
        if blocks in seen:
            continue
        seen.add(blocks)
        yield op, kmod, blocks


def convolutions(models: list[str], target, grouped: bool = False):
    """``(model label, kernel IRModule, its templates.common._Nest)`` of every distinct convolution kernel
    (extents, input shape and epilogue: a strided kernel and a stride-1 one of the same output are
    two) of ``models`` that the direct-convolution template reads (``grouped``: the grouped and
    depthwise ones, TOPI's ``group_conv2d_nchw``, instead)."""
    from tvm_partition.build import templates
    from tvm_partition.build.align import kernel_of

    seen = set()
    for model in models:
        label, graph = model_graph(model)
        for op in graph.ops.values():
            if op.kind != "conv2d" or not op.split_dims:
                continue
            kmod = kernel_of(graph, op)
            block = templates.convolution._GROUP if grouped else templates.convolution._CONV
            nest = templates.common._nest(kmod, target, (block,))  # noqa: SLF001 - the template's own view
            if nest is None:
                continue
            key = (nest.extents, tuple(int(x) for x in nest.block.reads[0].source.shape), nest.epilogue)
            if key in seen:
                continue
            seen.add(key)
            yield label, kmod, nest


def patched(**values):
    """A context in which each of the templates' constants or functions named in ``values`` has that
    value, set in the module of :mod:`tvm_partition.build.templates` that defines it (where its
    template reads it)."""
    import contextlib
    import importlib
    import pkgutil
    from unittest import mock

    from tvm_partition.build import templates

    modules = [importlib.import_module(f"{templates.__name__}.{m.name}") for m in pkgutil.iter_modules(templates.__path__)]
    stack = contextlib.ExitStack()
    for name, value in values.items():
        module = next((m for m in modules if hasattr(m, name)), None)
        if module is None:
            raise AttributeError(f"no template defines {name}")
        stack.enter_context(mock.patch.object(module, name, value))
    return stack


def alternated(funcs: list, target, rounds: int) -> tuple[list[float], float]:
    """Each of ``funcs`` timed alone ``rounds`` times in alternation: ``(median us of each, median
    over rounds of the last one's time over the first's)``."""
    from tvm_partition.build.tuning import time_kernel

    times = [[] for _ in funcs]
    for _ in range(rounds):
        for i, func in enumerate(funcs):
            times[i].append(time_kernel(func, target))
    return [statistics.median(t) for t in times], statistics.median(b / a for a, b in zip(times[0], times[-1]))


def cold_and_warm(before, after, target, rounds: int) -> dict[bool, tuple]:
    """``before`` and ``after`` timed alone in ``rounds`` alternating rounds (the order swapped every
    other round), with their weights flushed from the caches before each run (TVM's
    ``cache_flush_cpu_non_first_arg``, 15 runs) and warm (5): ``{cold: (median us before, median us
    after, median, least and largest ratio after / before of a round)}`` for cold True and False."""
    from tvm_partition.build.tuning import time_kernel

    res = {}
    for cold in (True, False):
        times = [[], []]
        for r in range(rounds):
            for i in ([0, 1] if r % 2 == 0 else [1, 0]):
                times[i].append(time_kernel([before, after][i], target, repeat=15 if cold else 5, cold=cold))
        ratios = sorted(b / a for a, b in zip(*times))
        res[cold] = (statistics.median(times[0]), statistics.median(times[1]), statistics.median(ratios), ratios[0],
                     ratios[-1])
    return res


def cold_and_warm_line(res: dict[bool, tuple]) -> str:
    """:func:`cold_and_warm`'s result as ``cold B->A R (LO-HI) warm B->A R (LO-HI)``."""
    return " ".join(f"{'cold' if cold else 'warm'} {b:.0f}->{a:.0f} {r:.2f}x ({lo:.2f}-{hi:.2f})"
                    for cold, (b, a, r, lo, hi) in sorted(res.items(), reverse=True))


def gflops(nest, us: float) -> float:
    return 2 * math.prod(nest.extents) / us / 1e3
