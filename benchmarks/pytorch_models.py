"""Small models of the kinds users write in PyTorch, exported to ONNX the two ways PyTorch offers.

    python benchmarks/pytorch_models.py [--out build/pytorch_models] [--exporters torchscript,dynamo]

Writes ``{name}_{exporter}.onnx`` for eleven architectures a user brings and none of this
project's zoo has: a dilated causal TCN (``F.pad``), a pre-norm causal transformer language model
(``nn.TransformerEncoder`` with a mask), a Conformer block (GLU, a depthwise ``Conv1d``, batch
norm, SiLU, ``nn.MultiheadAttention``), ESPCN super-resolution (``F.pixel_shuffle``), an MLP-Mixer,
a YOLO-like detection head (LeakyReLU, nearest upsampling, a concat, a permute), causal
``F.scaled_dot_product_attention``, a bag-of-words classifier on ``nn.EmbeddingBag`` and an
EfficientNet-like block (squeeze-and-excitation), a SegNet-like encoder-decoder (its decoder
unpools at its encoder's pooling indices: ``MaxPool`` with ``Indices``; PyTorch 2.13's TorchScript
exporter refuses its ``MaxUnpool2d``) and T2T-ViT's soft split folded back (``F.fold``: ``Col2Im``;
the TorchScript exporter refuses it). Seeded weights, batch as given below.
``torchscript``: ``torch.onnx.export(..., dynamo=False, opset_version=17)``; ``dynamo``: PyTorch's
default exporter since 2.9 (needs ``onnxscript``); a model an exporter refuses is reported and
skipped. Needs ``torch`` (not a dependency of this project); then ``tvm-partition bench --models
build/pytorch_models/tcn_torchscript.onnx,... --strategies cpu,onnxruntime`` measures each beside
onnxruntime and checks its outputs against it (BENCHMARKS.md, "Models written in PyTorch").

    python benchmarks/pytorch_models.py --torchvision mobilenet_v3_small,swin_t,... [--out build/torchvision]

writes torchvision's models of those names instead (``torchvision.models``, ``weights=None``:
torchvision's own initialisation, seeded; 1 x 3 x 224 x 224; ``segmentation.NAME`` and
``video.NAME`` for those families), the models users deploy most (BENCHMARKS.md, "torchvision's
models"). Needs ``torchvision``.

    python benchmarks/pytorch_models.py --transformers distilbert,bert,gpt2,vit [--out build/transformers]

writes Hugging Face ``transformers`` models of those kinds instead (each kind's default
configuration, DistilBERT-base, BERT-base, GPT-2 (124M, no cache) and ViT-B/16; random weights,
seeded; the model's ``last_hidden_state``), with their inputs named and left free as Hugging Face's
own exporters leave them: ``input_ids`` and ``attention_mask`` (BERT: ``token_type_ids`` too; GPT-2
``input_ids`` alone) of
``[batch_size, sequence_length]``, ViT's ``pixel_values`` of ``[batch_size, 3, height, width]``.
``tvm-partition`` binds those with ``--seq-len`` and ``--image-size`` (BENCHMARKS.md, "Hugging Face
exports"). Needs ``transformers``. Also the pieces of generation (BENCHMARKS.md, "Decoder steps
and encoder-decoders"):

- ``gpt2-past``: one decoder step of GPT-2 with its cache, as Hugging Face's exporters name it:
  ``input_ids`` of ``[batch_size, sequence_length]``, ``attention_mask`` of ``[batch_size,
  total_sequence_length]``, ``past_key_values.{i}.key``/``.value`` of ``[batch_size, 12,
  past_sequence_length, 64]``; outputs the hidden state and the ``present.{i}.key``/``.value``
  the next step takes (``--seq-len 1 --dim past_sequence_length=P,total_sequence_length=P+1``);
- ``t5-encoder``, ``t5-decoder`` (T5-small's halves, no cache; the decoder takes the encoder's
  states: ``decoder_sequence_length`` and ``encoder_sequence_length``, ``--dim`` each) and
  ``whisper-encoder`` (Whisper's default configuration, 80 x 3000 log-mel frames, static).
"""

from __future__ import annotations

import argparse
import os


def models():
    """``{name: (module, example input)}``, seeded."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    class TCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = nn.ModuleList([nn.Conv1d(64 if i else 16, 64, 3, dilation=2 ** i) for i in range(6)])
            self.head = nn.Linear(64, 5)

        def forward(self, x):
            for i, conv in enumerate(self.convs):
                y = F.relu(conv(F.pad(x, (2 * 2 ** i, 0))))  # causal: pad the past only
                x = y + x if x.shape[1] == y.shape[1] else y
            return self.head(x[:, :, -1])

    class CausalLM(nn.Module):
        def __init__(self, vocab=2000, d=128, seq=64):
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(1, seq, d) * 0.02)
            layer = nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True, norm_first=True, activation="gelu")
            self.enc, self.out = nn.TransformerEncoder(layer, 2), nn.Linear(d, vocab)
            self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

        def forward(self, ids):
            return self.out(self.enc(self.emb(ids) + self.pos, mask=self.mask))

    class Conformer(nn.Module):
        def __init__(self, d=144):
            super().__init__()
            self.ln1, self.pw1 = nn.LayerNorm(d), nn.Conv1d(d, 2 * d, 1)
            self.dw, self.bn, self.pw2 = nn.Conv1d(d, d, 15, padding=7, groups=d), nn.BatchNorm1d(d), nn.Conv1d(d, d, 1)
            self.ln2, self.att = nn.LayerNorm(d), nn.MultiheadAttention(d, 4, batch_first=True)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))

        def forward(self, x):
            y = F.glu(self.pw1(self.ln1(x).transpose(1, 2)), dim=1)
            x = x + self.pw2(F.silu(self.bn(self.dw(y)))).transpose(1, 2)
            z = self.ln2(x)
            x = x + self.att(z, z, z, need_weights=False)[0]
            return x + 0.5 * self.ff(x)

    class ESPCN(nn.Module):
        def __init__(self, scale=3):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(3, 64, 5, padding=2), nn.Conv2d(64, 32, 3, padding=1)
            self.c3, self.scale = nn.Conv2d(32, 3 * scale ** 2, 3, padding=1), scale

        def forward(self, x):
            y = self.c3(torch.tanh(self.c2(torch.tanh(self.c1(x)))))
            return torch.sigmoid(F.pixel_shuffle(y, self.scale))

    class Mixer(nn.Module):
        def __init__(self, patches=64, d=128):
            super().__init__()
            self.stem, self.n1, self.n2 = nn.Conv2d(3, d, 8, 8), nn.LayerNorm(d), nn.LayerNorm(d)
            self.tok = nn.Sequential(nn.Linear(patches, 2 * patches), nn.GELU(), nn.Linear(2 * patches, patches))
            self.ch = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.fc = nn.Linear(d, 10)

        def forward(self, x):
            x = self.stem(x).flatten(2).transpose(1, 2)
            x = x + self.tok(self.n1(x).transpose(1, 2)).transpose(1, 2)
            x = x + self.ch(self.n2(x))
            return self.fc(x.mean(1))

    class Yolo(nn.Module):
        def __init__(self):
            super().__init__()
            self.b1 = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.LeakyReLU(0.1))
            self.b2 = nn.Sequential(nn.Conv2d(32, 64, 3, 2, 1), nn.BatchNorm2d(64), nn.SiLU(), nn.MaxPool2d(2))
            self.up, self.head = nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(96, 3 * 7, 1)

        def forward(self, x):
            a = self.b1(x)
            y = self.head(torch.cat([self.up(self.b2(a)), F.max_pool2d(a, 2)], 1))
            n, _, h, w = y.shape
            return y.view(n, 3, 7, h, w).permute(0, 1, 3, 4, 2).sigmoid().reshape(n, -1, 7)

    class SDPA(nn.Module):
        def __init__(self, d=128, heads=4):
            super().__init__()
            self.qkv, self.o, self.heads = nn.Linear(d, 3 * d), nn.Linear(d, d), heads

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o(y.transpose(1, 2).reshape(b, t, d))

    class TextClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.fc = nn.EmbeddingBag(10000, 64, mode="mean"), nn.Linear(64, 4)

        def forward(self, ids):
            return self.fc(self.emb(ids))

    class EffNetBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem, self.dw = nn.Conv2d(3, 32, 3, 2, 1), nn.Conv2d(32, 32, 3, 1, 1, groups=32)
            self.se1, self.se2 = nn.Conv2d(32, 8, 1), nn.Conv2d(8, 32, 1)
            self.pw, self.fc = nn.Conv2d(32, 16, 1), nn.Linear(16, 10)

        def forward(self, x):
            y = F.silu(self.dw(F.silu(self.stem(x))))
            y = y * torch.sigmoid(self.se2(F.silu(self.se1(F.adaptive_avg_pool2d(y, 1)))))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.pw(y), 1), 1))

    class SegNet(nn.Module):
        """SegNet's pattern (Badrinarayanan et al., 2017), two stages: each encoder stage's pooling
        indices read by its decoder's ``MaxUnpool2d``."""

        def __init__(self, classes=12):
            super().__init__()
            block = lambda i, o: nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())
            self.e1, self.e2, self.d2, self.d1 = block(3, 32), block(32, 64), block(64, 32), block(32, 32)
            self.pool, self.unpool = nn.MaxPool2d(2, 2, return_indices=True), nn.MaxUnpool2d(2, 2)
            self.out = nn.Conv2d(32, classes, 1)

        def forward(self, x):
            y, i1 = self.pool(self.e1(x))
            y, i2 = self.pool(self.e2(y))
            y = self.d2(self.unpool(y, i2))
            return self.out(self.d1(self.unpool(y, i1)))

    class SoftSplit(nn.Module):
        """T2T-ViT's soft split and its inverse: overlapping 3x3 patches (stride 2) unfolded, each
        mixed by a linear layer, folded back (``F.fold``, where overlaps add: ONNX's ``Col2Im``)."""

        def __init__(self, channels=16):
            super().__init__()
            self.mix = nn.Linear(channels * 9, channels * 9)

        def forward(self, x):
            patches = self.mix(F.unfold(x, 3, padding=1, stride=2).transpose(1, 2)).transpose(1, 2)
            return F.fold(patches, x.shape[-2:], 3, padding=1, stride=2)

    torch.manual_seed(0)
    return {
        "segnet": (SegNet(), torch.randn(1, 3, 128, 128)),
        "soft_split": (SoftSplit(), torch.randn(1, 16, 64, 64)),
        "tcn": (TCN(), torch.randn(1, 16, 1000)),
        "causal_lm": (CausalLM(), torch.randint(0, 2000, (1, 64))),
        "conformer": (Conformer(), torch.randn(1, 100, 144)),
        "espcn": (ESPCN(), torch.randn(1, 3, 64, 64)),
        "mixer": (Mixer(), torch.randn(1, 3, 64, 64)),
        "yolo": (Yolo(), torch.randn(1, 3, 160, 160)),
        "sdpa": (SDPA(), torch.randn(1, 64, 128)),
        "textcls": (TextClassifier(), torch.randint(0, 10000, (16, 20))),
        "effnet": (EffNetBlock(), torch.randn(1, 3, 128, 128)),
    }


def torchvision_models(names: list[str]):
    """``{name: (module, example input)}`` of torchvision's models, seeded.

    A plain name is a classification model (1 x 3 x 224 x 224); ``segmentation.NAME`` a
    segmentation model (its ``out`` map only: the auxiliary head is off), ``video.NAME`` a video
    classifier (1 x 3 x 8 x 112 x 112: 8 frames).
    """
    import torch
    from torchvision import models as tv

    class OutMap(torch.nn.Module):  # segmentation models return {"out": map}; ONNX wants tensors
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x)["out"]

    def one(name):
        family, _, short = name.rpartition(".")
        make = getattr(getattr(tv, family) if family else tv, short)
        if family == "segmentation":
            return OutMap(make(weights=None, weights_backbone=None, aux_loss=False)), torch.randn(1, 3, 224, 224)
        if family == "video":
            return make(weights=None), torch.randn(1, 3, 8, 112, 112)
        return make(weights=None), torch.randn(1, 3, 224, 224)

    torch.manual_seed(0)
    return {name: one(name) for name in names}


def transformers_models(names: list[str]):
    """``{name: (module, example inputs, input names, free axes)}`` of Hugging Face encoders, seeded
    (:data:`__doc__` says which)."""
    import torch
    import transformers as hf

    class Hidden(torch.nn.Module):  # a model returns a ModelOutput; ONNX wants tensors
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, *inputs):
            return self.net(*inputs, return_dict=True).last_hidden_state

    pieces = {"gpt2-past": _gpt2_step, "t5-encoder": _t5_encoder, "t5-decoder": _t5_decoder,
              "whisper-encoder": _whisper_encoder}
    text = {"distilbert": (hf.DistilBertModel, hf.DistilBertConfig, ("input_ids", "attention_mask")),
            "bert": (hf.BertModel, hf.BertConfig, ("input_ids", "attention_mask", "token_type_ids")),
            # a decoder: its causal mask built in the graph; no cache (one pass over the prompt)
            "gpt2": (hf.GPT2Model, lambda: hf.GPT2Config(use_cache=False), ("input_ids",))}
    seq = {0: "batch_size", 1: "sequence_length"}

    def one(name):
        if name == "vit":
            net = hf.ViTModel(hf.ViTConfig())
            return (Hidden(net.eval()), (torch.randn(1, 3, 224, 224),), ["pixel_values"],
                    {"pixel_values": {0: "batch_size", 2: "height", 3: "width"}, "output": {0: "batch_size"}})
        if name in pieces:
            return pieces[name](torch, hf)
        if name not in text:
            raise SystemExit(f"error: --transformers {name!r}: choose from {', '.join([*text, 'vit', *pieces])}")
        make, config, inputs = text[name]
        examples = (torch.randint(0, 1000, (1, 32)), torch.ones(1, 32, dtype=torch.long),
                    torch.zeros(1, 32, dtype=torch.long))[:len(inputs)]
        return Hidden(make(config()).eval()), examples, list(inputs), {**{n: seq for n in inputs}, "output": seq}

    torch.manual_seed(0)
    return {name: one(name) for name in names}


def _gpt2_step(torch, hf):
    """GPT-2 (124M) taking new tokens and a cache of 31 (the example's; all free): the hidden state
    and the cache grown by the tokens."""
    layers, past = hf.GPT2Config().n_layer, 31

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = hf.GPT2Model(hf.GPT2Config()).eval()

        def forward(self, ids, mask, *kv):
            cache = hf.DynamicCache()
            for i in range(layers):
                cache.update(kv[2 * i], kv[2 * i + 1], i)
            out = self.net(input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=True, return_dict=True)
            grown = out.past_key_values.layers
            return (out.last_hidden_state, *[t for layer in grown for t in (layer.keys, layer.values)])

    kv = [f"past_key_values.{i}.{k}" for i in range(layers) for k in ("key", "value")]
    free = {"input_ids": {0: "batch_size", 1: "sequence_length"},
            "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
            **{n: {0: "batch_size", 2: "past_sequence_length"} for n in kv},
            "output": {0: "batch_size", 1: "sequence_length"},
            **{n.replace("past_key_values", "present"): {0: "batch_size", 2: "total_sequence_length"} for n in kv}}
    # a batch and a step of 2: torch.export fixes a dimension its example gives as 1
    examples = (torch.randint(0, 1000, (2, 2)), torch.ones(2, past + 2, dtype=torch.long),
                *[torch.randn(2, 12, past, 64) for _ in kv])
    return Step(), examples, ["input_ids", "attention_mask", *kv], free


def _t5(hf):
    return hf.T5Model(hf.T5Config()).eval()


def _t5_encoder(torch, hf):
    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = _t5(hf).encoder

        def forward(self, ids, mask):
            return self.net(input_ids=ids, attention_mask=mask, return_dict=True).last_hidden_state

    seq = {0: "batch_size", 1: "encoder_sequence_length"}
    return (Encoder(), (torch.randint(0, 1000, (1, 32)), torch.ones(1, 32, dtype=torch.long)),
            ["input_ids", "attention_mask"], {"input_ids": seq, "attention_mask": seq, "output": seq})


def _t5_decoder(torch, hf):
    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = _t5(hf).decoder

        def forward(self, ids, states, mask):
            return self.net(input_ids=ids, encoder_hidden_states=states, encoder_attention_mask=mask, use_cache=False,
                            return_dict=True).last_hidden_state

    dec, enc = {0: "batch_size", 1: "decoder_sequence_length"}, {0: "batch_size", 1: "encoder_sequence_length"}
    return (Decoder(), (torch.randint(0, 1000, (1, 8)), torch.randn(1, 32, 512), torch.ones(1, 32, dtype=torch.long)),
            ["input_ids", "encoder_hidden_states", "encoder_attention_mask"],
            {"input_ids": dec, "encoder_hidden_states": enc, "encoder_attention_mask": enc, "output": dec})


def _whisper_encoder(torch, hf):
    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = hf.WhisperModel(hf.WhisperConfig()).eval().encoder

        def forward(self, features):
            return self.net(features, return_dict=True).last_hidden_state

    batch = {0: "batch_size"}
    return Encoder(), (torch.randn(1, 80, 3000),), ["input_features"], {"input_features": batch, "output": batch}


def _dims_of(module, inputs: list[str], free: dict) -> dict:
    """The free axes ``{input: {axis: name}}`` as the dynamo exporter takes them (it fails to
    convert ``dynamic_axes`` itself): one ``torch.export.Dim`` a name, keyed by the parameters of
    ``module.forward`` (a ``*args`` parameter takes the tuple of the inputs left)."""
    import inspect

    import torch

    dims = {}

    def spec(name):
        return {axis: dims.setdefault(dim, torch.export.Dim(dim)) for axis, dim in free[name].items()}

    out, left = {}, list(inputs)
    for p in inspect.signature(module.forward).parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            out[p.name], left = tuple(spec(n) for n in left), []
        elif left:
            out[p.name] = spec(left.pop(0))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join("build", "pytorch_models"), help="folder (default build/pytorch_models)")
    ap.add_argument("--exporters", default="torchscript,dynamo", help="comma-separated (default torchscript,dynamo)")
    ap.add_argument("--torchvision", metavar="NAMES", help="comma-separated torchvision.models names to export instead")
    ap.add_argument("--transformers", metavar="NAMES", help="comma-separated Hugging Face models (distilbert, bert, "
                                                             "gpt2, vit, gpt2-past, t5-encoder, t5-decoder, "
                                                             "whisper-encoder) to export instead, their inputs free")
    args = ap.parse_args(argv)
    import torch

    os.makedirs(args.out, exist_ok=True)
    if args.transformers:
        chosen = transformers_models(args.transformers.split(","))
    else:
        chosen = {name: (module, (example,), None, None) for name, (module, example) in
                  (torchvision_models(args.torchvision.split(",")) if args.torchvision else models()).items()}
    for name, (module, examples, inputs, free) in chosen.items():
        for exporter in args.exporters.split(","):
            path = os.path.join(args.out, f"{name.rpartition('.')[2]}_{exporter}.onnx")
            outputs = [n for n in free if n not in inputs] if inputs else []  # "output", then any others
            names = {"input_names": inputs, "output_names": outputs} if inputs else {}
            try:
                if exporter == "dynamo":
                    free_shapes = {"dynamic_shapes": _dims_of(module, inputs, free)} if inputs else {}
                    torch.onnx.export(module.eval(), examples, path, dynamo=True, external_data=False, verbose=False,
                                      **names, **free_shapes)
                else:
                    torch.onnx.export(module.eval(), examples, path, dynamo=False, opset_version=17, **names,
                                      **({"dynamic_axes": free} if inputs else {}))
            except Exception as e:  # an exporter's refusal is a result: report it, go on
                print(f"{path}: {exporter} export failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
                continue
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
