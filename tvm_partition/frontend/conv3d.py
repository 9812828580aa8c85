"""Three-dimensional convolutions (video models' ``Conv3d``) as two-dimensional ones over frames.

No CPU schedule of this project knows ``conv3d``: the templates (:mod:`tvm_partition.build.templates`),
the transferred records and the split rules are written for ``conv2d``, and TVM's default schedule
of torchvision's R3D-18 (8 frames of 112 x 112) ran the model in 21.8 s where onnxruntime took
225 ms (97x; ``bench --strategies cpu,onnxruntime``, 2 Zen 4 threads, 2026-12-01).

:func:`conv3d_as_conv2d` writes ``conv3d(x, w)`` (``NCDHW`` / ``OIDHW``, ``kd`` taps in depth)
as the ``conv2d`` that computes the same sums, the way im2col folds a window into channels but
along depth only:

- ``x`` padded in depth, and its ``kd`` frame windows (strided slices at ``t * dilation``,
  ``stride`` apart, ``D_out`` frames each) stacked as ``[N, C, kd, D_out, H, W]``, then laid out
  ``[N * D_out, C * kd, H, W]``: one batch of output frames, each with its taps as channels
  (``c * kd + t``: a group's channels stay together, so grouped convolutions keep their groups);
- ``w`` ``[O, C / g, kd, kh, kw]`` reshaped to ``[O, C / g * kd, kh, kw]`` (a view of the weights:
  the build moves it to load time);
- the ``conv2d`` keeps the height and width strides, padding and dilation, and its output
  ``[N * D_out, O, H_out, W_out]`` goes back to ``[N, O, D_out, H_out, W_out]``.

The stacked input is ``kd`` times the input (a copy, in one injective kernel with the permutation
back of the layer before); the convolution itself runs the direct-convolution template.
"""

from __future__ import annotations

import tvm
from tvm import relax

from ..ir.relax_utils import calls_op, rewrite_functions
from ..ir.split_rules import static_shape

_CONV3D = tvm.ir.Op.get("relax.nn.conv3d")


def _frames(builder, x, shape, depth: int, taps: int, stride: int, dilation: int, pads: tuple[int, int]):
    """``x`` of ``shape`` ``[N, C, D, H, W]`` as ``[N * D_out, C * taps, H, W]``: each output frame's
    input frames as channels (module docstring); ``depth`` is ``D_out``."""
    n, c, _, h, w = shape
    if any(pads):
        x = builder.emit(relax.op.nn.pad(x, [0, 0, 0, 0, pads[0], pads[1], 0, 0, 0, 0]))
    last = stride * (depth - 1) + 1
    windows = [builder.emit(relax.op.strided_slice(x, [2], [t * dilation], [t * dilation + last], [stride]))
               for t in range(taps)]
    stacked = builder.emit(relax.op.stack(windows, axis=2))  # [N, C, taps, D_out, H, W]
    moved = builder.emit(relax.op.permute_dims(stacked, [0, 3, 1, 2, 4, 5]))
    return builder.emit(relax.op.reshape(moved, [n * depth, c * taps, h, w]))


@relax.expr_functor.mutator
class _Conv3dAs2d(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        if not calls_op(call, _CONV3D):
            return call
        a = call.attrs
        xs, ws, out = static_shape(call.args[0]), static_shape(call.args[1]), static_shape(call)
        if (a.data_layout != "NCDHW" or a.kernel_layout != "OIDHW" or a.out_layout not in ("", "NCDHW")
                or xs is None or ws is None or out is None):
            return call
        stride, dilation = (int(v) for v in (a.strides[0], a.dilation[0]))
        pads = (int(a.padding[0]), int(a.padding[3]))
        n, o, depth, ho, wo = out
        taps = ws[2]
        x = _frames(self.builder_, call.args[0], xs, depth, taps, stride, dilation, pads)
        w = self.builder_.emit(relax.op.reshape(call.args[1], [ws[0], ws[1] * taps, ws[3], ws[4]]))
        conv = self.builder_.emit(relax.op.nn.conv2d(
            x, w, strides=[int(a.strides[1]), int(a.strides[2])],
            padding=[int(a.padding[1]), int(a.padding[2]), int(a.padding[4]), int(a.padding[5])],
            dilation=[int(a.dilation[1]), int(a.dilation[2])], groups=int(a.groups),
            data_layout="NCHW", kernel_layout="OIHW", out_dtype=a.out_dtype))
        frames = self.builder_.emit(relax.op.reshape(conv, [n, depth, o, ho, wo]))
        return relax.op.permute_dims(frames, [0, 2, 1, 3, 4])


@tvm.transform.module_pass(opt_level=0, name="Conv3dAsConv2d")
def conv3d_as_conv2d(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every ``NCDHW`` / ``OIDHW`` ``conv3d`` of static shapes as a ``conv2d`` over its output frames,
    each frame's input frames stacked as channels (module docstring)."""
    return rewrite_functions(mod, lambda mod, _func: _Conv3dAs2d(mod))
