"""Copies of the onnx package's light models with seeded random weights, for bench and compile.

    python benchmarks/onnx_light.py [--out build/onnx_light] [--models squeezenet,resnet50,...] [--seed N] [--check]

The light models (``onnx/backend/test/data/light``) fill every weight with one constant, so their
output is the same for any split that keeps shapes, right or wrong; the copies hold seeded values
scaled per layer (:mod:`tvm_partition.frontend.zoo.onnx_light`). Writes ``OUT/light_<name>_seed<N>.onnx``
and prints each path, for example to give to ``python -m tvm_partition bench --models PATH``.
``--check`` also runs each copy in onnxruntime on a seeded input and prints its output's range
(exit 1 if one is non-finite or constant).
"""

from __future__ import annotations

import argparse
import os
import sys

# this checkout's package, not another installed copy
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> int:
    from tvm_partition.frontend.zoo import onnx_light

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join("build", "onnx_light"), help="folder (default build/onnx_light)")
    ap.add_argument("--models", help=f"comma-separated (default: all of {','.join(onnx_light.NAMES)} on disk)")
    ap.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    ap.add_argument("--check", action="store_true", help="run each copy in onnxruntime and print its output range")
    args = ap.parse_args(argv)
    names = [n.strip() for n in (args.models or "").split(",") if n.strip()] or onnx_light.available()
    bad = [n for n in names if n not in onnx_light.NAMES]
    if bad:
        print(f"error: unknown light model {bad[0]!r}: choose from {', '.join(onnx_light.NAMES)}", file=sys.stderr)
        return 2
    missing = [n for n in names if not os.path.exists(onnx_light.light_path(n))]
    if missing or not names:
        print(f"error: {onnx_light.light_path((missing or ['*'])[0])}: not in this onnx install", file=sys.stderr)
        return 2
    failed = 0
    for name in names:
        path = onnx_light.reseed(onnx_light.light_path(name),
                                 os.path.join(args.out, f"light_{name}_seed{args.seed}.onnx"), args.seed)
        print(path, flush=True)
        if args.check:
            outs = onnx_light.ort_outputs(path)
            why = onnx_light.problem(outs)
            failed += why is not None
            print(f"  {why or 'ok'}: output {list(outs[0].shape)} in [{outs[0].min():.3g}, {outs[0].max():.3g}], "
                  f"std {outs[0].std():.3g}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
