"""Single PyTorch ops and small blocks exported to ONNX, each compiled and checked against onnxruntime.

    python benchmarks/pytorch_ops.py [--out build/pytorch_ops] [--big]
    python benchmarks/pytorch_ops.py --check equal,auto [--devices cpu,cpu] [--big] [--only TEXT]

Writes ``{name}.onnx`` for 71 modules (TorchScript exporter, opset 17): element-wise activations
and their ONNX forms (Mish, HardSwish, Celu, PReLU, ...), normalisations (``F.normalize``,
group, instance and layer norms), pads of every mode, resizes, scatters and gathers, sorts,
top-k and scans, einsums, masked attention, recurrent layers, a U-Net, a channel shuffle and
Hugging Face's position ids from an attention mask; several with free dimensions
(``dynamic_axes``), bound at compile time by the flags given with them. ``--big`` exports the
same modules at larger shapes (2 x 8 x 64 x 64 images, 4 x 96 x 32 sequences). With ``--check``
each file is compiled for ``--devices`` under each strategy by ``tvm-partition compile --check``
in a process of its own (the partitioned build against the unpartitioned model and against
onnxruntime) and one line a build says how it ended. Needs ``torch`` (not a dependency of this
project). A sweep of these (2026-12-05, BENCHMARKS.md "PyTorch's ops one by one") found eight
failures, each fixed with a test of its own in ``tests/``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys


def modules(big: bool) -> dict:
    """``{name: (module, example inputs, dynamic_axes or None, compile flags)}``, seeded."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    torch.manual_seed(0)

    class Fn(nn.Module):
        def __init__(self, f, **mods):
            super().__init__()
            for k, v in mods.items():
                setattr(self, k, v)
            self.f = f

        def forward(self, *x):
            return self.f(self, *x)

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 32, 3, stride=2, padding=1)
            self.u, self.o, self.bn = nn.ConvTranspose2d(32, 16, 2, 2), nn.Conv2d(32, 2, 1), nn.BatchNorm2d(16)

        def forward(self, x):
            a = F.relu(self.bn(self.d1(x)))
            return torch.softmax(self.o(torch.cat([self.u(F.relu(self.d2(a))), a], 1)), 1)

    class Shuffle(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(16, 16, 1, groups=4)

        def forward(self, x):
            n, c, h, w = x.shape
            return self.c(x).view(n, 4, c // 4, h, w).transpose(1, 2).reshape(n, c, h, w)

    class CausalAttention(nn.Module):
        def __init__(self, d=32):
            super().__init__()
            self.q, self.o, self.n = nn.Linear(d, 3 * d), nn.Linear(d, d), nn.LayerNorm(d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.q(self.n(x)).reshape(b, t, 3, 4, d // 4).permute(2, 0, 3, 1, 4)
            mask = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
            a = ((q @ k.transpose(-1, -2)) / (d // 4) ** 0.5).masked_fill(mask, float("-inf")).softmax(-1)
            return x + self.o((a @ v).transpose(1, 2).reshape(b, t, d))

    class PositionIds(nn.Module):  # Hugging Face's position ids from the attention mask
        def __init__(self):
            super().__init__()
            self.e, self.p = nn.Embedding(64, 16), nn.Embedding(64, 16)

        def forward(self, ids, mask):
            pos = ((mask.cumsum(1) * mask) - 1).clamp(min=0)
            return ((self.e(ids) + self.p(pos)) * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)

    class ResizeLike(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(8, 8, 3, stride=2, padding=1)

        def forward(self, x):
            return x + F.interpolate(self.c(x), size=x.shape[-2:], mode="bilinear", align_corners=False)

    class LSTMHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.r, self.h = nn.LSTM(16, 32, batch_first=True), nn.Linear(32, 4)

        def forward(self, x):
            y, (h, _) = self.r(x)
            return self.h(y[:, -1]) + h[0].sum(-1, keepdim=True)

    img = torch.randn(2, 8, 64, 64) if big else torch.randn(1, 8, 16, 16)
    seq = torch.randn(4, 12, 32).repeat(1, 8, 1) if big else torch.randn(2, 12, 32)
    half = seq.shape[1] // 2
    one = {  # name: (function of (self, x), the input, submodules)
        "topk": (lambda s, x: torch.topk(x.flatten(1), 5).values, img, {}),
        "topk_indices": (lambda s, x: torch.topk(x.flatten(1), 5).indices.float(), img, {}),
        "cumsum": (lambda s, x: torch.cumsum(x, 1), seq, {}),
        "gather_elements": (lambda s, x: torch.gather(x, 2, torch.argsort(x, 2)[:, :, :4]), seq, {}),
        "argmax": (lambda s, x: torch.argmax(x, 1).float(), img, {}),
        "where": (lambda s, x: torch.where(x > 0, x, x * 0.1), img, {}),
        "masked_fill": (lambda s, x: x.masked_fill(x < -1, 0.0), seq, {}),
        "group_norm": (lambda s, x: s.g(x), img, {"g": nn.GroupNorm(4, 8)}),
        "instance_norm": (lambda s, x: s.g(x), img, {"g": nn.InstanceNorm2d(8, affine=True)}),
        "conv_transpose": (lambda s, x: s.c(x), img, {"c": nn.ConvTranspose2d(8, 4, 4, 2, 1)}),
        "bilinear": (lambda s, x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False), img, {}),
        "bicubic": (lambda s, x: F.interpolate(x, size=(24, 24), mode="bicubic", align_corners=True), img, {}),
        "nearest": (lambda s, x: F.interpolate(x, scale_factor=(2, 3), mode="nearest"), img, {}),
        # scales that are not out / in (16 x 0.6 = 9.6 pixels): TVM's importer took out / in
        "bilinear_down": (lambda s, x: F.interpolate(x, scale_factor=0.6, mode="bilinear"), img, {}),
        "bicubic_down": (lambda s, x: F.interpolate(x, scale_factor=0.7, mode="bicubic"), img, {}),
        "bilinear_corners_up": (lambda s, x: F.interpolate(x, scale_factor=1.7, mode="bilinear", align_corners=True),
                                img, {}),
        "pixel_unshuffle": (lambda s, x: F.pixel_unshuffle(x, 2), img, {}),
        "reflect_pad": (lambda s, x: F.pad(x, (1, 2, 1, 2), mode="reflect"), img, {}),
        "replicate_pad": (lambda s, x: F.pad(x, (1, 1, 1, 1), mode="replicate"), img, {}),
        "gru": (lambda s, x: s.r(x)[0], seq, {"r": nn.GRU(32, 24, batch_first=True, bidirectional=True)}),
        "lstm": (lambda s, x: s.r(x)[0], seq, {"r": nn.LSTM(32, 24, 2, batch_first=True)}),
        "activations": (lambda s, x: F.mish(x) + F.hardswish(x) + F.softplus(x) + F.elu(x) + F.selu(x), img, {}),
        "more_activations": (lambda s, x: F.hardtanh(x) + F.logsigmoid(x) + F.softsign(x) + F.celu(x) + F.silu(x), img, {}),
        "hardsigmoid_relu6": (lambda s, x: F.hardsigmoid(x) * F.relu6(x), img, {}),
        "prelu": (lambda s, x: s.p(x), img, {"p": nn.PReLU(8)}),
        "normalize": (lambda s, x: F.normalize(x, dim=1), img, {}),
        "log_softmax": (lambda s, x: F.log_softmax(x, -1), seq, {}),
        "roll_flip": (lambda s, x: torch.roll(x, 3, 2).flip(1), img, {}),
        "sort": (lambda s, x: torch.sort(x, -1, descending=True).values, seq, {}),
        "max_pool_ceil": (lambda s, x: F.max_pool2d(x, 3, 2, ceil_mode=True), img, {}),
        "avg_pool_pad": (lambda s, x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), img, {}),
        "einsum_bmm": (lambda s, x: torch.einsum("bik,bjk->bij", x, x), seq, {}),
        "tril": (lambda s, x: torch.tril(x @ x.transpose(1, 2)), seq, {}),
        "index_select": (lambda s, x: x[:, torch.tensor([0, 3, 5])], seq, {}),
        "index_fill": (lambda s, x: x.index_fill(1, torch.tensor([1, 2]), 0.5), seq, {}),
        "clamp_maximum": (lambda s, x: torch.clamp(x, -0.5, 0.7) + torch.maximum(x, x.mean()), img, {}),
        "std_var": (lambda s, x: x.std(-1) + x.var(-1), seq, {}),
        "var_mean": (lambda s, x: torch.cat(torch.var_mean(x, (2, 3), keepdim=True), 1), img, {}),
        "cosine_similarity": (lambda s, x: F.cosine_similarity(x[:, :half], x[:, half:], -1), seq, {}),
        "cast_int": (lambda s, x: (x * 10).long().float() / 10, seq, {}),
        "remainder_floor": (lambda s, x: torch.remainder(x, 0.3) + torch.floor(x), seq, {}),
        "grid_sample": (lambda s, x: F.grid_sample(x, torch.tanh(x[:, :2].permute(0, 2, 3, 1)), align_corners=False),
                        img, {}),
        "dilated_grouped_conv": (lambda s, x: s.c(x), img, {"c": nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2)}),
        "depthwise_5x5": (lambda s, x: s.c(x), img, {"c": nn.Conv2d(8, 8, 5, padding=2, groups=8)}),
        "conv3d": (lambda s, x: s.c(x.unsqueeze(2).repeat(1, 1, 4, 1, 1)), img, {"c": nn.Conv3d(8, 4, 3, padding=1)}),
        "multihead_attention_mask": (lambda s, x: s.a(x, x, x, key_padding_mask=(x[:, :, 0] > 1.5))[0], seq,
                                     {"a": nn.MultiheadAttention(32, 4, batch_first=True)}),
        "layer_norm_gelu_tanh": (lambda s, x: F.gelu(s.n(x), approximate="tanh"), seq, {"n": nn.LayerNorm(32)}),
        "layer_norm_2d_gelu": (lambda s, x: F.gelu(F.layer_norm(x, x.shape[-2:])), img, {}),
        "reductions": (lambda s, x: x.amax((2, 3)) - x.amin((2, 3)) + x.prod(3).sum(2), img, {}),
        "expand": (lambda s, x: x[:, :, :1].expand(-1, -1, 32) * x, seq, {}),
        "chunk_glu": (lambda s, x: torch.cat([a.sigmoid() * b for a, b in [x.chunk(2, -1)]], -1), seq, {}),
        "linear_3d": (lambda s, x: s.l(x).relu(), seq, {"l": nn.Linear(32, 48)}),
        "matmul_4d": (lambda s, x: (x.view(*x.shape[:2], 4, 8).transpose(1, 2)
                                    @ x.view(*x.shape[:2], 4, 8).permute(0, 2, 3, 1)), seq, {}),
        "argmax_gather": (lambda s, x: torch.gather(x, 1, x.argmax(1, keepdim=True)), seq, {}),
        "segmentation_argmax": (lambda s, x: s.c(x).softmax(1).argmax(1).float(), img, {"c": nn.Conv2d(8, 5, 3, padding=1)}),
        # a MaxPool's Indices (the 1x1 pool and the subtraction PyTorch writes beside it) read back
        "max_pool_indices": (lambda s, x: (lambda p, i: p + torch.gather(x.flatten(2), 2, i.flatten(2)).view_as(p))(
            *F.max_pool2d(x, 3, 2, 1, return_indices=True)), img, {}),
        "float_mask_attention": (lambda s, x: torch.softmax(x @ x.transpose(1, 2)
                                                            + (1 - (x[:, :, :1] > 0).float().transpose(1, 2)) * -1e4, -1) @ x,
                                 seq, {}),
    }
    out = {name: (Fn(f, **mods), (x,), None, []) for name, (f, x, mods) in one.items()}
    out["embedding_positions"] = (Fn(lambda s, x: s.e(x) + s.e(torch.arange(x.shape[1]).unsqueeze(0)), e=nn.Embedding(50, 16)),
                                  (torch.randint(0, 50, (2, 10)),), None, [])
    out["embedding_padding_idx"] = (Fn(lambda s, i: s.e(i).mean(1), e=nn.Embedding(30, 8, padding_idx=0)),
                                    (torch.randint(0, 30, (4, 9)),), None, [])
    # Tensor.repeat exports a Tile of constant repeats (BENCHMARKS.md, the Tile rows): many copies,
    # a few copies of a map, many of rows
    for name, shape, times in [("repeat_many", (2, 3, 4, 5), (7, 6, 4, 2)), ("repeat_map", (1, 64, 32, 32), (1, 1, 2, 2)),
                               ("repeat_rows", (8, 256), (1, 16))]:
        out[name] = (Fn(lambda s, x, t=times: x.repeat(*t)), (torch.randn(*shape),), None, [])
    out["einsum_bilinear"] = (Fn(lambda s, a: torch.einsum("bi,ij,bj->b", a, s.w, a), w=nn.Parameter(torch.randn(16, 16))),
                              (torch.randn(5, 16),), None, [])
    out["conv1d_batch_norm_transpose"] = (
        Fn(lambda s, x: s.t(F.gelu(s.b(s.c(x)))), c=nn.Conv1d(8, 16, 3, padding=1), b=nn.BatchNorm1d(16),
           t=nn.ConvTranspose1d(16, 8, 4, 2, 1)), (torch.randn(2, 8, 50),), {"x": {0: "N", 2: "L"}},
        ["--batch", "2", "--dim", "L=50"])
    out["reflect_conv_instance_norm"] = (
        Fn(lambda s, x: F.relu(s.i(s.c(x))) + x, c=nn.Conv2d(8, 8, 3, padding=1, padding_mode="reflect"),
           i=nn.InstanceNorm2d(8)), (torch.randn(1, 8, 32, 32),), None, [])
    out["unet"] = (UNet(), (torch.randn(2, 3, 32, 32),), {"x": {0: "N", 2: "H", 3: "W"}},
                   ["--batch", "2", "--image-size", "32"])
    out["channel_shuffle"] = (Shuffle(), (torch.randn(2, 16, 20, 20),), {"x": {0: "N"}}, ["--batch", "2"])
    out["causal_attention"] = (CausalAttention(), (torch.randn(2, 24, 32),), {"x": {0: "N", 1: "T"}},
                               ["--batch", "2", "--seq-len", "24"])
    out["position_ids"] = (PositionIds(), (torch.randint(0, 64, (3, 12)), (torch.rand(3, 12) > 0.3).long()),
                           {"x": {0: "N", 1: "T"}, "x1": {0: "N", 1: "T"}}, ["--batch", "3", "--seq-len", "12"])
    out["resize_like"] = (ResizeLike(), (torch.randn(1, 8, 30, 30),), {"x": {2: "H", 3: "W"}}, ["--image-size", "30"])
    out["lstm_head"] = (LSTMHead(), (torch.randn(2, 20, 16),), {"x": {0: "N", 1: "T"}}, ["--batch", "2", "--seq-len", "20"])
    return out


def export(out_dir: str, big: bool, only: str | None = None) -> dict[str, list[str]]:
    """Write every module's ``.onnx`` (those whose name holds ``only`` if given) into ``out_dir``;
    ``{path: compile flags}`` of those written."""
    import torch

    os.makedirs(out_dir, exist_ok=True)
    written = {}
    for name, (module, examples, free, flags) in modules(big).items():
        if only and only not in name:
            continue
        path = os.path.join(out_dir, f"{name}.onnx")
        names = ["x"] + [f"x{i}" for i in range(1, len(examples))]
        try:
            torch.onnx.export(module.eval(), examples, path, dynamo=False, opset_version=17, input_names=names,
                              dynamic_axes=free)
        except Exception as e:  # an exporter's refusal is a result: report it, go on
            print(f"{path}: export failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
            continue
        written[path] = flags
    return written


def check(path: str, flags: list[str], devices: str, strategy: str) -> str:
    """One line: how ``tvm-partition compile --check`` of ``path`` ended."""
    cmd = [sys.executable, "-m", "tvm_partition", "compile", path, "--devices", devices, "--strategy", strategy,
           "--check", *flags]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = (done.stdout + done.stderr).strip().splitlines()
    err = [ln for ln in lines if ln.startswith("max_abs_err")]
    said = " ".join(err) if done.returncode == 0 else (lines[-1] if lines else "no output")
    return f"{os.path.basename(path)} {strategy}: exit {done.returncode}, {said}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join("build", "pytorch_ops"), help="folder (default build/pytorch_ops)")
    ap.add_argument("--big", action="store_true", help="the larger shapes")
    ap.add_argument("--check", metavar="STRATEGIES", help="compile each with --check under these strategies")
    ap.add_argument("--devices", default="cpu,cpu", help="devices of --check (default cpu,cpu)")
    ap.add_argument("--only", metavar="TEXT", help="only the modules whose name holds TEXT")
    args = ap.parse_args(argv)
    written = export(args.out, args.big, args.only)
    print(f"wrote {len(written)} models to {args.out}/")
    failed = 0
    for strategy in (args.check.split(",") if args.check else []):
        for path, flags in written.items():
            line = check(path, flags, args.devices, strategy)
            failed += " exit 0," not in line
            print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
