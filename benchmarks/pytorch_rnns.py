"""PyTorch's own recurrent layers exported to ONNX, the way a user's model reaches us.

    python benchmarks/pytorch_rnns.py [--out build/pytorch_rnns] [--seq-lens 10,100]

Writes ``torch_{lstm,gru}_seq{N}.onnx``: two stacked ``nn.LSTM`` / ``nn.GRU`` layers of EOP's
Table 3 sizes (input 80, hidden 64, batch 16, batch first), the last step's output out
(``out[:, -1]``), seeded weights, exported by PyTorch's TorchScript exporter at opset 14 (ONNX
``LSTM`` / ``GRU`` nodes: TVM's importer has none, ``tvm_partition/frontend/onnx_rnn.py`` unrolls
them). Needs ``torch`` (not a dependency of this project: ``pip install torch``); then
``tvm-partition bench --models build/pytorch_rnns/torch_lstm_seq100.onnx,... --strategies
cpu,equal,onnxruntime`` measures them beside onnxruntime (BENCHMARKS.md, "Recurrent models
exported from PyTorch").
"""

from __future__ import annotations

import argparse
import os


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join("build", "pytorch_rnns"), help="folder (default build/pytorch_rnns)")
    ap.add_argument("--seq-lens", default="10,100", help="comma-separated sequence lengths (default 10,100)")
    args = ap.parse_args(argv)
    import torch

    class Stacked(torch.nn.Module):
        def __init__(self, cell: str):
            super().__init__()
            self.rnn = getattr(torch.nn, cell)(80, 64, num_layers=2, batch_first=True)

        def forward(self, x):
            out, _ = self.rnn(x)
            return out[:, -1]

    os.makedirs(args.out, exist_ok=True)
    for cell in ("LSTM", "GRU"):
        for seq in (int(s) for s in args.seq_lens.split(",")):
            torch.manual_seed(0)
            path = os.path.join(args.out, f"torch_{cell.lower()}_seq{seq}.onnx")
            torch.onnx.export(Stacked(cell).eval(), (torch.randn(16, seq, 80),), path, opset_version=14,
                              dynamo=False, input_names=["x"])
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
