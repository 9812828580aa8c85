"""The runtime half: what an edge server with only the TVM runtime (no compiler) runs.

An artifact's files and manifest (:mod:`.artifact`), loading and timing it on local devices
(:mod:`.runner`), on a TVM RPC server (:mod:`.remote`), the ``run`` command (:mod:`.run`) and
the multi-server ``pipeline`` command (:mod:`.pipeline`), and onnxruntime's run of an .onnx model,
the reference ``compile --check`` and ``bench`` compare with (:mod:`.ort`). Nothing here imports ``tvm.relax`` or
any module above this layer (``import tvm`` alone does not load the compiler), so ``deploy``
copies this folder whole, with the base modules beside it (``deploy.RUNTIME_MODULES``);
``tests/test_layers.py`` checks both.
"""
