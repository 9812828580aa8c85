"""Provenance of the variant builds in this folder (a scratch script, not a benchmark): ``build_with.py``
with ``templates.convolution._channels_last`` widened to every 1x1 of at least CL_C input channels
into at least CL_O output channels, at any size and stride. At ad53704:

    CL_C=256 CL_O=256 python variant.py MODEL.onnx OUT MATMUL_CHUNK_TILES=4   # "e256" (kernels/)
    CL_C=512 CL_O=256 python variant.py MODEL.onnx OUT MATMUL_CHUNK_TILES=4   # "e512": the rule kept

(``MATMUL_CHUNK_TILES=4`` is the value the build has: a no-op setting.) The e512 builds of PoolFormer
and ResNet-50 are byte for byte the ``model.so`` that ``compile`` writes after the change (md5).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path[:0] = [os.path.join(REPO, "benchmarks"), REPO]
import build_with  # noqa: E402
from conv_kernels import patched  # noqa: E402
from tvm_partition.build.templates import convolution as conv  # noqa: E402

C, O = int(os.environ["CL_C"]), int(os.environ["CL_O"])
before = conv._channels_last


def widened(nest, lanes, target):
    _, outputs, _, width, channels, ry, rx = nest.extents
    if (ry, rx) == (1, 1) and channels % lanes == 0 and channels >= C and outputs >= O:
        return True
    return before(nest, lanes, target)


with patched(_channels_last=widened):
    sys.exit(build_with.main(sys.argv[1:]))
