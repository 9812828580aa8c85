"""Benchmarks: every strategy end to end against onnxruntime and TVM's own flow (:mod:`.suite`,
the ``bench`` command), kernels against the machine's peak (:mod:`.kernels`, ``bench-kernels``),
per-op timings (:mod:`.ops`), and the runtime-only half a benchmark bundle copies to a GPU
machine (:mod:`.runtime`, :mod:`.results`, :mod:`.ort`; ``suite.BUNDLE_MODULES``). This file is
copied into such bundles: it must import nothing."""
