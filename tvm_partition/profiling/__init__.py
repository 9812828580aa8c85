"""Measuring ops on this machine's devices for the cost models: the sample shapes a plan can ask
about, compiled with the schedules builds use (:mod:`.samples`), and the profiler that times them
in a separate runtime-only process and writes the log (:mod:`.profiler`). It builds kernels, so
it sits in the build layer, above the cost models that read its logs."""
