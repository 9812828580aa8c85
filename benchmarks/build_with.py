"""A model built by ``compile`` with constants of :mod:`tvm_partition.build.templates` set otherwise,
to be paired against the build as it is in whole-model rounds.

    python benchmarks/build_with.py MODEL.onnx OUT NAME=VALUE [NAME=VALUE ...]
    python benchmarks/paired.py AS_IT_IS OUT --pairs 7 --repeat 20 --in-process

``compile MODEL --devices cpu,cpu --strategy cpu --out OUT`` runs in this process with each
``NAME`` (a constant a template module defines; ``inf`` for ``float('inf')``) set to ``VALUE``
(:func:`conv_kernels.patched`). Why: a template's rules were read off kernels timed alone
(``template_ab.py``, ``matmul_shapes.py``), and in a model a kernel's weights come from the L3
cache or memory: the matmul template's reduction chunks, ruled out below 16 tiles of rows by
kernels alone, ran GPT-2, DistilBERT and DeBERTa-v2 0.69-0.92x as builds (BENCHMARKS.md, "Matmul
chunks in models").
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="the .onnx file")
    ap.add_argument("out", help="the artifact folder to write")
    ap.add_argument("settings", nargs="+", metavar="NAME=VALUE", help="a templates constant and its value")
    args = ap.parse_args(argv)
    from conv_kernels import patched
    from template_ab import undo

    try:
        values = undo(args.settings)
        context = patched(**values)
    except (AttributeError, SyntaxError, ValueError) as e:
        print(f"error: {' '.join(args.settings)}: {e}", file=sys.stderr)
        return 2
    from tvm_partition.cli import main as cli

    with context:
        return cli(["compile", args.model, "--devices", "cpu,cpu", "--strategy", "cpu", "--out", args.out])


if __name__ == "__main__":
    sys.exit(main())
