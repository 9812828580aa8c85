"""Image classifiers (zoo names ``mobilenetv2``, ``resnet18``, ``resnet50``, ``inception_v3``).

The architectures are torchvision's (ResNet v1.5 with the stride on the bottleneck's 3x3 conv;
Inception v3 without the auxiliary classifier, dropout or input transform), for inference:

* Input ``data``: ``[batch, 3, image_size, image_size]`` float32, NCHW.
* Output: logits ``[batch, 1000]``: global average pool (``mean`` over H, W) + linear layer.
* Defaults: batch 1, image_size 224 (299 for inception_v3); ``batch`` and ``image_size`` can be
  overridden.  Minimum image_size: 32 for mobilenetv2/resnet18/resnet50 (five stride-2
  stages), 75 for inception_v3 (the smallest size whose feature map survives all its unpadded
  stride-2 convolutions and pools; torchvision has the same limit).

**Batch norm is folded away.**  Inference batch norm is a per-channel affine map that
deployment folds into the preceding convolution's weights and bias, so every
conv + BN (+ activation) block is a single ``nn.conv2d`` with a bias (``conv2d`` + ``reshape``
of the bias to ``[1, C, 1, 1]`` + ``add``) followed by the activation.  Weights are convolution
kernels as they look after that folding; there are no BN parameters.

Convolutions are NCHW / OIHW; depthwise convolutions (MobileNetV2) use ``groups = channels``.
Relax ops in ``main``:

* mobilenetv2: ``nn.conv2d``, ``reshape``, ``add``, ``clip`` (ReLU6 is emitted as
  ``clip(x, 0, 6)``), ``mean``, ``matmul``
* resnet18 / resnet50: ``nn.conv2d``, ``reshape``, ``add``, ``nn.relu``, ``nn.max_pool2d``,
  ``mean``, ``matmul``
* inception_v3: ``nn.conv2d``, ``reshape``, ``add``, ``nn.relu``, ``nn.max_pool2d``,
  ``nn.avg_pool2d`` (3x3, stride 1, pad 1, count_include_pad like PyTorch), ``concat``
  (axis 1), ``mean``, ``matmul``

Weights: conv kernels N(0, gain^2/fan_in), fan_in = in_channels/groups * kh * kw, gain sqrt(2)
before a ReLU/ReLU6 (He init) and 1 for linear convs (MobileNetV2 projections); the last conv
of every residual branch uses gain 0.5 so the residual sums do not blow up without BN.  Biases
N(0, 0.02^2), classifier N(0, 1/fan_in).  Activations stay O(1) through the whole network.
"""

from __future__ import annotations

import math

import numpy as np
from tvm import relax
from tvm.relax.frontend import nn

from . import Dense, ZooModel, bias, export_model, weight

NUM_CLASSES = 1000
RELU_GAIN = math.sqrt(2.0)
RESIDUAL_GAIN = 0.5

MIN_IMAGE_SIZE = {"mobilenetv2": 32, "resnet18": 32, "resnet50": 32, "inception_v3": 75}
DEFAULT_IMAGE_SIZE = {"mobilenetv2": 224, "resnet18": 224, "resnet50": 224, "inception_v3": 299}
DEFAULT_BATCH = 1


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)


class Conv(nn.Module):
    """Conv2d (BN folded in, so with bias) followed by an optional ``relu`` / ``relu6``."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel: int | tuple[int, int],
        stride: int = 1,
        padding: int | tuple[int, int] = 0,
        groups: int = 1,
        act: str | None = "relu",
        gain: float | None = None,
    ):
        kh, kw = _pair(kernel)
        if gain is None:
            gain = RELU_GAIN if act else 1.0
        fan_in = in_channels // groups * kh * kw
        self.weight = weight([out_channels, in_channels // groups, kh, kw], fan_in, gain)
        self.bias = bias(out_channels)
        self.stride, self.padding, self.groups, self.act = stride, _pair(padding), groups, act

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        x = nn.op.conv2d(x, self.weight, self.bias, self.stride, self.padding, 1, self.groups)
        if self.act == "relu":
            return nn.op.relu(x)
        if self.act == "relu6":
            return nn.op.relu6(x)
        return x


def max_pool(x: nn.Tensor, size: int, stride: int, padding: int = 0) -> nn.Tensor:
    expr = relax.op.nn.max_pool2d(x._expr, pool_size=size, strides=stride, padding=padding)
    return nn.op.wrap_nested(expr, name="max_pool2d")


def avg_pool(x: nn.Tensor, size: int, stride: int, padding: int = 0) -> nn.Tensor:
    expr = relax.op.nn.avg_pool2d(
        x._expr, pool_size=size, strides=stride, padding=padding, count_include_pad=True
    )
    return nn.op.wrap_nested(expr, name="avg_pool2d")


class Classifier(nn.Module):
    """Global average pool (``mean`` over H and W) + linear layer to the class logits."""

    def __init__(self, channels: int, num_classes: int = NUM_CLASSES):
        self.fc = Dense(channels, num_classes)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        pooled = nn.op.wrap_nested(relax.op.mean(x._expr, axis=[2, 3]), name="global_avg_pool")
        return self.fc(pooled)


# --------------------------------------------------------------------------------------------
# MobileNetV2
# --------------------------------------------------------------------------------------------


class _InvertedResidual(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, stride: int, expand: int):
        hidden = in_channels * expand
        self.use_residual = stride == 1 and in_channels == out_channels
        self.expand = Conv(in_channels, hidden, 1, act="relu6") if expand != 1 else None
        self.depthwise = Conv(hidden, hidden, 3, stride, 1, groups=hidden, act="relu6")
        self.project = Conv(
            hidden, out_channels, 1, act=None, gain=RESIDUAL_GAIN if self.use_residual else 1.0
        )

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        y = self.expand(x) if self.expand is not None else x
        y = self.project(self.depthwise(y))
        return nn.op.add(x, y) if self.use_residual else y


class MobileNetV2(nn.Module):
    # expansion t, output channels c, repeats n, first stride s (torchvision / the paper)
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]  # fmt: skip

    def __init__(self):
        self.stem = Conv(3, 32, 3, 2, 1, act="relu6")
        blocks, channels = [], 32
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                blocks.append(_InvertedResidual(channels, c, s if i == 0 else 1, t))
                channels = c
        self.blocks = nn.ModuleList(blocks)
        self.head = Conv(channels, 1280, 1, act="relu6")
        self.classifier = Classifier(1280)

    def forward(self, data: nn.Tensor) -> nn.Tensor:
        x = self.stem(data)
        for block in self.blocks:
            x = block(x)
        return self.classifier(self.head(x))


# --------------------------------------------------------------------------------------------
# ResNet
# --------------------------------------------------------------------------------------------


class _BasicBlock(nn.Module):
    """``relu(branch(x) + shortcut(x))``; the shortcut is a strided 1x1 conv when shapes change."""

    expansion = 1

    def __init__(self, in_channels: int, channels: int, stride: int):
        out = channels * self.expansion
        self.branch = nn.ModuleList(self._branch(in_channels, channels, stride))
        self.downsample = (
            Conv(in_channels, out, 1, stride, act=None)
            if stride != 1 or in_channels != out
            else None
        )

    @staticmethod
    def _branch(in_channels: int, channels: int, stride: int) -> list[Conv]:
        return [
            Conv(in_channels, channels, 3, stride, 1),
            Conv(channels, channels, 3, 1, 1, act=None, gain=RESIDUAL_GAIN),
        ]

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        identity = self.downsample(x) if self.downsample is not None else x
        return nn.op.relu(nn.op.add(_chain(self.branch, x), identity))


class _Bottleneck(_BasicBlock):
    expansion = 4

    @staticmethod
    def _branch(in_channels: int, channels: int, stride: int) -> list[Conv]:
        # v1.5: the stride sits on the 3x3 conv.
        return [
            Conv(in_channels, channels, 1),
            Conv(channels, channels, 3, stride, 1),
            Conv(channels, channels * 4, 1, act=None, gain=RESIDUAL_GAIN),
        ]


class ResNet(nn.Module):
    def __init__(self, block: type[_BasicBlock], repeats: list[int]):
        self.stem = Conv(3, 64, 7, 2, 3)
        blocks, in_channels = [], 64
        for stage, (channels, n) in enumerate(zip([64, 128, 256, 512], repeats)):
            for i in range(n):
                stride = 2 if stage > 0 and i == 0 else 1
                blocks.append(block(in_channels, channels, stride))
                in_channels = channels * block.expansion
        self.blocks = nn.ModuleList(blocks)
        self.classifier = Classifier(in_channels)

    def forward(self, data: nn.Tensor) -> nn.Tensor:
        x = max_pool(self.stem(data), 3, 2, 1)
        for block in self.blocks:
            x = block(x)
        return self.classifier(x)


# --------------------------------------------------------------------------------------------
# Inception v3
# --------------------------------------------------------------------------------------------


def _concat(branches: list[nn.Tensor]) -> nn.Tensor:
    return nn.op.concat(branches, dim=1)


class _InceptionA(nn.Module):
    def __init__(self, cin: int, pool_features: int):
        self.b1 = Conv(cin, 64, 1)
        self.b5_1, self.b5_2 = Conv(cin, 48, 1), Conv(48, 64, 5, padding=2)
        self.b3_1, self.b3_2 = Conv(cin, 64, 1), Conv(64, 96, 3, padding=1)
        self.b3_3 = Conv(96, 96, 3, padding=1)
        self.pool = Conv(cin, pool_features, 1)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return _concat(
            [
                self.b1(x),
                self.b5_2(self.b5_1(x)),
                self.b3_3(self.b3_2(self.b3_1(x))),
                self.pool(avg_pool(x, 3, 1, 1)),
            ]
        )


class _InceptionB(nn.Module):
    def __init__(self, cin: int):
        self.b3 = Conv(cin, 384, 3, stride=2)
        self.bd_1, self.bd_2 = Conv(cin, 64, 1), Conv(64, 96, 3, padding=1)
        self.bd_3 = Conv(96, 96, 3, stride=2)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return _concat([self.b3(x), self.bd_3(self.bd_2(self.bd_1(x))), max_pool(x, 3, 2)])


class _InceptionC(nn.Module):
    def __init__(self, cin: int, c7: int):
        self.b1 = Conv(cin, 192, 1)
        self.b7 = nn.ModuleList(
            [Conv(cin, c7, 1), Conv(c7, c7, (1, 7), padding=(0, 3)),
             Conv(c7, 192, (7, 1), padding=(3, 0))]
        )  # fmt: skip
        self.bd = nn.ModuleList(
            [Conv(cin, c7, 1), Conv(c7, c7, (7, 1), padding=(3, 0)),
             Conv(c7, c7, (1, 7), padding=(0, 3)), Conv(c7, c7, (7, 1), padding=(3, 0)),
             Conv(c7, 192, (1, 7), padding=(0, 3))]
        )  # fmt: skip
        self.pool = Conv(cin, 192, 1)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return _concat(
            [self.b1(x), _chain(self.b7, x), _chain(self.bd, x), self.pool(avg_pool(x, 3, 1, 1))]
        )


class _InceptionD(nn.Module):
    def __init__(self, cin: int):
        self.b3 = nn.ModuleList([Conv(cin, 192, 1), Conv(192, 320, 3, stride=2)])
        self.b7 = nn.ModuleList(
            [Conv(cin, 192, 1), Conv(192, 192, (1, 7), padding=(0, 3)),
             Conv(192, 192, (7, 1), padding=(3, 0)), Conv(192, 192, 3, stride=2)]
        )  # fmt: skip

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return _concat([_chain(self.b3, x), _chain(self.b7, x), max_pool(x, 3, 2)])


class _InceptionE(nn.Module):
    def __init__(self, cin: int):
        self.b1 = Conv(cin, 320, 1)
        self.b3 = Conv(cin, 384, 1)
        self.b3_a = Conv(384, 384, (1, 3), padding=(0, 1))
        self.b3_b = Conv(384, 384, (3, 1), padding=(1, 0))
        self.bd_1, self.bd_2 = Conv(cin, 448, 1), Conv(448, 384, 3, padding=1)
        self.bd_a = Conv(384, 384, (1, 3), padding=(0, 1))
        self.bd_b = Conv(384, 384, (3, 1), padding=(1, 0))
        self.pool = Conv(cin, 192, 1)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        b3 = self.b3(x)
        bd = self.bd_2(self.bd_1(x))
        return _concat(
            [
                self.b1(x),
                _concat([self.b3_a(b3), self.b3_b(b3)]),
                _concat([self.bd_a(bd), self.bd_b(bd)]),
                self.pool(avg_pool(x, 3, 1, 1)),
            ]
        )


def _chain(convs: nn.ModuleList, x: nn.Tensor) -> nn.Tensor:
    for conv in convs:
        x = conv(x)
    return x


class InceptionV3(nn.Module):
    def __init__(self):
        self.stem = nn.ModuleList(
            [Conv(3, 32, 3, stride=2), Conv(32, 32, 3), Conv(32, 64, 3, padding=1)]
        )
        self.stem2 = nn.ModuleList([Conv(64, 80, 1), Conv(80, 192, 3)])
        self.mixed = nn.ModuleList(
            [_InceptionA(192, 32), _InceptionA(256, 64), _InceptionA(288, 64),
             _InceptionB(288),
             _InceptionC(768, 128), _InceptionC(768, 160), _InceptionC(768, 160),
             _InceptionC(768, 192),
             _InceptionD(768),
             _InceptionE(1280), _InceptionE(2048)]
        )  # fmt: skip
        self.classifier = Classifier(2048)

    def forward(self, data: nn.Tensor) -> nn.Tensor:
        x = max_pool(_chain(self.stem, data), 3, 2)
        x = max_pool(_chain(self.stem2, x), 3, 2)
        for block in self.mixed:
            x = block(x)
        return self.classifier(x)


# --------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------


def _build(name: str, model_fn, seed: int, batch: int | None = None,
           image_size: int | None = None) -> ZooModel:  # fmt: skip
    config = {
        "batch": DEFAULT_BATCH if batch is None else batch,
        "image_size": DEFAULT_IMAGE_SIZE[name] if image_size is None else image_size,
        "channels": 3,
        "num_classes": NUM_CLASSES,
    }
    if config["image_size"] < MIN_IMAGE_SIZE[name]:
        raise ValueError(
            f"image_size for {name} must be at least {MIN_IMAGE_SIZE[name]}, "
            f"got {config['image_size']}"
        )
    shape = (config["batch"], 3, config["image_size"], config["image_size"])
    return export_model(
        name,
        model_fn(),
        {"data": (shape, "float32")},
        lambda rng: {"data": rng.standard_normal(shape, dtype=np.float32)},
        config,
        seed,
    )


def build_mobilenetv2(name: str = "mobilenetv2", *, seed: int = 0, **overrides) -> ZooModel:
    """MobileNetV2 (width 1.0): data ``[batch, 3, s, s]`` -> logits ``[batch, 1000]``."""
    return _build(name, MobileNetV2, seed, **overrides)


def build_resnet18(name: str = "resnet18", *, seed: int = 0, **overrides) -> ZooModel:
    """ResNet-18: data ``[batch, 3, s, s]`` -> logits ``[batch, 1000]``."""
    return _build(name, lambda: ResNet(_BasicBlock, [2, 2, 2, 2]), seed, **overrides)


def build_resnet50(name: str = "resnet50", *, seed: int = 0, **overrides) -> ZooModel:
    """ResNet-50 (v1.5): data ``[batch, 3, s, s]`` -> logits ``[batch, 1000]``."""
    return _build(name, lambda: ResNet(_Bottleneck, [3, 4, 6, 3]), seed, **overrides)


def build_inception_v3(name: str = "inception_v3", *, seed: int = 0, **overrides) -> ZooModel:
    """Inception v3: data ``[batch, 3, s, s]`` (s >= 75) -> logits ``[batch, 1000]``."""
    return _build(name, InceptionV3, seed, **overrides)
