"""Hugging Face architectures this project had never compiled, seeded random weights, each compiled
with ``--check`` and timed against onnxruntime on the same file.

    TVM_NUM_THREADS=2 python benchmarks/hf_models.py [--models llama,convnext,...] [--out build/hf_models]
        [--rounds 3] [--repeat 20]

Each model is exported at a fixed shape (one image of 224 x 224, MobileViT's, MobileViT-v2's and
SegFormer's 256; 64 tokens; a second of 16 kHz audio) by PyTorch's TorchScript exporter at opset 17,
the :data:`DYNAMO` decoders by its dynamo exporter at its default opset,
its last hidden state the output. Batch norms are calibrated first (:func:`calibrate_batch_norms`):
at Hugging Face's initialisation scale the activations of MobileNet-V1/V2, EfficientNet and MobileViT
vanish to 1e-21 to 0 through their depth, where the CPU's denormal arithmetic, not the kernels, sets
the time (EfficientNet-B0 3.2 s a run, 2026-12-07) and ``--check`` compares zeros. ``compile --devices cpu,cpu --strategy cpu --check`` builds it (its exit
status, seconds, differences and ``note:``/``error:`` lines recorded: :func:`compile_row`); then, where it
passed, ``--rounds`` rounds, each one process of ours (``run --repeat``) and one of onnxruntime's (2
threads, graph optimizations on, ``--repeat`` runs after 5), in turn. One line of JSON a model: the
compile's row, the medians over rounds and each side's spread.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # this checkout's package, not another installed copy

#: name: (transformers' model class, its config's keyword arguments, the example input's kind[, the
#: config class where it is not the model's name with ``Config`` for ``Model``])
DECODER = dict(hidden_size=512, intermediate_size=1376, num_hidden_layers=4, num_attention_heads=8,
               num_key_value_heads=2, vocab_size=4000, use_cache=False)
SMALL = dict(num_hidden_layers=4, vocab_size=4000)
MODELS = {"llama": ("LlamaModel", DECODER, "tokens"), "qwen2": ("Qwen2Model", DECODER, "tokens"),
          "roberta": ("RobertaModel", {"num_hidden_layers": 4}, "tokens"), "albert": ("AlbertModel", {}, "tokens"),
          "wav2vec2": ("Wav2Vec2Model", {"num_hidden_layers": 4}, "audio"),
          **{n: (c, {}, "image") for n, c in [("convnext", "ConvNextModel"), ("swin", "SwinModel"),
                                              ("mobilevit", "MobileViTModel"), ("mobilenetv2", "MobileNetV2Model"),
                                              ("efficientnet", "EfficientNetModel"), ("segformer", "SegformerModel"),
                                              ("deit", "DeiTModel"), ("clip-vision", "CLIPVisionModel"),
                                              ("levit", "LevitModel"), ("regnet", "RegNetModel")]},
          # the second twenty (BENCHMARKS.md, "Twenty more Hugging Face architectures")
          "gpt2": ("GPT2Model", dict(n_layer=4, vocab_size=4000), "tokens"),
          "distilbert": ("DistilBertModel", {}, "tokens"),
          "t5-encoder": ("T5EncoderModel", dict(num_layers=4, vocab_size=4000), "tokens", "T5Config"),
          "dinov2": ("Dinov2Model", {"num_hidden_layers": 4}, "image"),
          "beit": ("BeitModel", dict(num_hidden_layers=4, use_relative_position_bias=True), "image"),
          "deberta-v2": ("DebertaV2Model", SMALL, "tokens"), "mobilebert": ("MobileBertModel", SMALL, "tokens"),
          "mistral": ("MistralModel", DECODER, "tokens"), "phi": ("PhiModel", DECODER, "tokens"),
          "opt": ("OPTModel", dict(hidden_size=512, ffn_dim=1376, num_hidden_layers=4, num_attention_heads=8,
                                   vocab_size=4000, word_embed_proj_dim=512), "tokens"),
          "bloom": ("BloomModel", dict(hidden_size=512, n_layer=4, n_head=8, vocab_size=4000), "tokens"),
          "gpt-neox": ("GPTNeoXModel", {k: v for k, v in DECODER.items() if k != "num_key_value_heads"}, "tokens"),
          "convbert": ("ConvBertModel", SMALL, "tokens"),
          **{n: (c, {}, "image") for n, c in [("resnet", "ResNetModel"), ("poolformer", "PoolFormerModel"),
                                              ("swinv2", "Swinv2Model"), ("convnextv2", "ConvNextV2Model"),
                                              ("mobilevitv2", "MobileViTV2Model"), ("cvt", "CvtModel"),
                                              ("bit", "BitModel")]},
          # the third batch (BENCHMARKS.md, "Twenty-eight more Hugging Face architectures")
          "gemma": ("GemmaModel", dict(DECODER, head_dim=64), "tokens"),
          "qwen3": ("Qwen3Model", dict(DECODER, head_dim=64), "tokens"),
          "falcon": ("FalconModel", dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8, vocab_size=4000,
                                         use_cache=False), "tokens"),
          "gpt-bigcode": ("GPTBigCodeModel", dict(n_embd=512, n_layer=4, n_head=8, vocab_size=4000, use_cache=False),
                          "tokens"),
          "starcoder2": ("Starcoder2Model", DECODER, "tokens"),
          "mamba": ("MambaModel", dict(hidden_size=256, num_hidden_layers=4, vocab_size=4000, use_cache=False), "tokens"),
          "electra": ("ElectraModel", SMALL, "tokens"), "squeezebert": ("SqueezeBertModel", SMALL, "tokens"),
          "funnel": ("FunnelBaseModel", dict(block_sizes=[1, 1, 1], vocab_size=4000), "tokens", "FunnelConfig"),
          "roformer": ("RoFormerModel", SMALL, "tokens"),
          "modernbert": ("ModernBertModel", dict(num_hidden_layers=4, vocab_size=4000, pad_token_id=0, eos_token_id=1,
                                                 bos_token_id=2, cls_token_id=2, sep_token_id=1), "tokens"),
          "esm": ("EsmModel", dict(num_hidden_layers=4, vocab_size=4000, pad_token_id=1,
                                   position_embedding_type="rotary"), "tokens"),
          "canine": ("CanineModel", {"num_hidden_layers": 4}, "tokens"),
          "nystromformer": ("NystromformerModel", dict(SMALL, segment_means_seq_len=64, num_landmarks=64), "tokens"),
          "xlnet": ("XLNetModel", dict(n_layer=4, vocab_size=4000), "tokens"),
          "hubert": ("HubertModel", {"num_hidden_layers": 4}, "audio"),
          "wavlm": ("WavLMModel", {"num_hidden_layers": 4}, "audio"),
          **{n: (c, {"num_hidden_layers": 4}, "image") for n, c in [
              ("data2vec-vision", "Data2VecVisionModel"), ("yolos", "YolosModel"), ("dpt", "DPTModel"),
              ("siglip-vision", "SiglipVisionModel")]},
          **{n: (c, {}, "image") for n, c in [("focalnet", "FocalNetModel"), ("mobilenetv1", "MobileNetV1Model"),
                                              ("glpn", "GLPNModel"), ("pvt-v2", "PvtV2Model"), ("hiera", "HieraModel"),
                                              ("swiftformer", "SwiftFormerModel"), ("textnet", "TextNetModel")]}}
#: Exported by PyTorch's dynamo exporter: the TorchScript one has no ``aten::diff`` (the decoders'
#: masks) and at opset 17 no ``aten::col2im`` (MobileViT-v2's fold); for Mamba and CANINE it writes
#: files onnxruntime refuses (a ``Tile`` of two-dimensional repeats, a ``MatMul`` of mismatched heads)
DYNAMO = frozenset({"llama", "qwen2", "mistral", "phi", "gpt-neox", "mobilevitv2", "gemma", "qwen3", "falcon",
                    "gpt-bigcode", "starcoder2", "mamba", "canine"})
ORT_TIMER = """
import sys, time, statistics, numpy as np, onnxruntime as ort
o = ort.SessionOptions(); o.intra_op_num_threads = 2; o.inter_op_num_threads = 1; o.log_severity_level = 3
s = ort.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"])
i, rng = s.get_inputs()[0], np.random.default_rng(0)
x = {i.name: rng.integers(0, 1000, i.shape).astype(np.int64) if "int64" in i.type
     else rng.standard_normal(i.shape).astype(np.float32)}
for _ in range(5): s.run(None, x)
ts = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); s.run(None, x); ts.append(time.perf_counter() - t)
print(f"median_us={statistics.median(ts) * 1e6}")
"""


def calibrate_batch_norms(net, x) -> None:
    """Each batch norm of ``net`` set, in one pass over ``x`` in layer order, to standardise what
    reaches it: its statistics are its input's, its scale ``sqrt((var + eps) / var)`` so that its
    epsilon (1e-3 in EfficientNet, against variances of 1e-7 after the stem) no longer shrinks
    them (data-dependent initialisation, as LSUV's). Activations then stay near 1
    (outputs 0.4-20 on average) through any depth."""
    import torch

    def standardise(bn, args):
        t = args[0].transpose(0, 1).flatten(1).double()
        mean, var = t.mean(1), t.var(1)
        bn.running_mean.copy_(mean)
        bn.running_var.copy_(var)
        if bn.affine:
            bn.weight.data.copy_(((var + bn.eps) / var.clamp_min(1e-30)).sqrt())

    hooks = [m.register_forward_pre_hook(standardise) for m in net.modules()
             if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.track_running_stats]
    if not hooks:
        return
    with torch.no_grad():
        net(x)
    for h in hooks:
        h.remove()


def export(name: str, path: str) -> None:
    import torch
    import transformers as hf

    cls, config, kind, *config_class = MODELS[name]
    torch.manual_seed(0)
    net = getattr(hf, cls)(getattr(hf, config_class[0] if config_class else cls.replace("Model", "Config"))(**config)).eval()

    class Hidden(torch.nn.Module):  # a model returns a ModelOutput; ONNX wants tensors
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x, return_dict=True).last_hidden_state

    size = 256 if name in ("mobilevit", "mobilevitv2", "segformer") else 224
    example = {"tokens": lambda n: torch.randint(0, 1000, (n, 64)), "audio": lambda n: torch.randn(n, 16000),
               "image": lambda n: torch.randn(n, 3, size, size)}[kind]
    calibrate_batch_norms(net, example(4))
    x = example(1)
    with torch.no_grad():
        if name in DYNAMO:
            torch.onnx.export(Hidden(), (x,), path, dynamo=True, input_names=["input"])
        else:
            torch.onnx.export(Hidden(), (x,), path, dynamo=False, opset_version=17, input_names=["input"])


def _run(cmd: list[str], timeout: float = 3600) -> tuple[int, str]:
    """``cmd``'s exit status and its output (stdout, then stderr)."""
    env = dict(os.environ, TVM_NUM_THREADS=os.environ.get("TVM_NUM_THREADS", "2"))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    return done.returncode, done.stdout + done.stderr


def compile_row(name: str, log: str, rc: int, seconds: float) -> dict:
    """A model's row of ``compile --check``: its exit status, seconds, differences and the lines it
    began with ``note:`` or ``error:`` (BiT's "the reference is the one off" was on stderr only)."""
    return {"model": name, "compile_rc": rc, "compile_check_s": round(seconds, 1),
            **{k: float(v) for k, v in re.findall(r"(max_abs_err\w*|noise_onnxruntime)=([\d.e+-]+)", log)},
            "notes": [line for line in log.splitlines() if line.startswith(("note:", "error:"))]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated of {','.join(MODELS)}")
    ap.add_argument("--out", default="build/hf_models")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models.split(","):
        if name not in MODELS:
            raise SystemExit(f"error: --models {name!r}: choose from {', '.join(MODELS)}")
        path, art = os.path.join(args.out, f"{name}.onnx"), os.path.join(args.out, f"art_{name}")
        if not os.path.exists(path):
            try:
                with contextlib.redirect_stdout(sys.stderr):  # PyTorch prints the traced graph of a failure
                    export(name, path)
            except Exception as e:  # an exporter's failure is the model's row, not the end of the run
                print(json.dumps({"model": name, "export_error": f"{type(e).__name__}: {str(e)[:300]}"}), flush=True)
                continue
        start = time.time()
        rc, log = _run([sys.executable, "-m", "tvm_partition", "compile", path, "--devices", "cpu,cpu",
                        "--strategy", "cpu", "--check", "--out", art])
        row = compile_row(name, log, rc, time.time() - start)
        if rc:  # no artifact to time (or one that failed its check)
            print(json.dumps(row), flush=True)
            continue
        ours, ort = [], []
        for _ in range(args.rounds):
            ours.append(float(re.search(r"median_us=([\d.]+)", _run(
                [sys.executable, "-m", "tvm_partition", "run", art, "--repeat", str(args.repeat)])[1])[1]))
            ort.append(float(re.search(r"median_us=([\d.]+)", _run(
                [sys.executable, "-c", ORT_TIMER, path, str(args.repeat)])[1])[1]))
        row.update(ours_us=statistics.median(ours), ort_us=statistics.median(ort),
                   spread={"ours_us": [min(ours), max(ours)], "ort_us": [min(ort), max(ort)]})
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
