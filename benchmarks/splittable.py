"""Which fused ops of a model no plan can split, and why: each model's share of FLOPs in ops with no
axis to split, by the op's kind and the reasons its axes were refused (``OpGraph``'s own).

    python benchmarks/splittable.py MODEL [MODEL ...] [--out DIR]

MODEL: an .onnx path, a zoo name, or a name of ``hf_models.MODELS`` (exported into ``--out`` first,
as ``hf_models.py`` exports it). Why: a CPU+GPU plan can only move work between devices along an
axis a split rule reads; an importer's own kernel (a ``call_tir``) or an operator without a rule
fused into a convolution's kernel leaves that convolution whole on one device, and nothing else
says so (BENCHMARKS.md, "Ops no plan could split").
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's package
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def source(name: str, out: str) -> str:
    """``name`` as ``frontend.load`` takes it: a Hugging Face architecture exported into ``out`` first."""
    import hf_models

    if name.endswith(".onnx") or name not in hf_models.MODELS:
        return name
    path = os.path.join(out, f"{name}.onnx")
    if not os.path.exists(path):
        os.makedirs(out, exist_ok=True)
        hf_models.export(name, path)
    return path


def stuck(graph) -> tuple[int, int, collections.Counter]:
    """``(the model's FLOPs, ops, {(kind, reasons): FLOPs})`` of ``graph``'s ops with no axis to
    split (an axis of size 1 is no reason: it has nothing to split)."""
    total = sum(op.flops for op in graph.ops.values() if not op.is_view) or 1
    found = collections.Counter()
    count = 0
    for op in graph.ops.values():
        if op.is_view or op.split_dims or op.flops <= 0:
            continue
        reasons = "; ".join(sorted({r for r in op.refusals.values() if "has size 1" not in r}))
        found[(op.kind, reasons)] += op.flops
        count += 1
    return total, count, found


def main(argv=None) -> int:
    from tvm_partition import frontend
    from tvm_partition.ir.graph import OpGraph

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help=".onnx paths, zoo names or hf_models.py names")
    ap.add_argument("--out", default=os.path.join("build", "hf_models"), help="where Hugging Face exports go")
    args = ap.parse_args(argv)
    print("| model | fused ops | with no axis to split | their share of FLOPs | the largest, by kind (share of FLOPs): why |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name in args.models:
        graph = OpGraph(frontend.load(source(name, args.out), seed=0).mod)
        total, count, found = stuck(graph)
        worst = "; ".join(f"{kind} {flops / total:.1%}: {why}" for (kind, why), flops in found.most_common(2))
        print(f"| {name} | {len(graph.ops)} | {count} | {sum(found.values()) / total:.1%} | {worst} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
