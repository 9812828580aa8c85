"""tvm_partition: split one deep-learning inference over the CPU and the GPU of an edge server with TVM."""

from setuptools import find_packages, setup

setup(
    name="tvm_partition",
    version="0.1.0",
    description="Apache TVM plugin: per-operator CPU/GPU split plans, multi-device Relax VM builds, edge deployment",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    # the shipped tuning databases and profiles (tuning_logs/, beside the package in this tree)
    # go into the installed package as tvm_partition/tuning_logs: a wheel or a plain `pip install .`
    # left them out, and its builds then planned on roofline estimates and transferred no record
    # (tvm_partition.devices.DEFAULT_LOGS finds either place)
    packages=find_packages(include=["tvm_partition", "tvm_partition.*"]) + ["tvm_partition.tuning_logs"],
    package_dir={"tvm_partition.tuning_logs": "tuning_logs"},
    package_data={"tvm_partition.tuning_logs": ["README.md", "*/*"]},
    entry_points={"console_scripts": ["tvm-partition=tvm_partition.cli:main"]},
    install_requires=[
        "apache-tvm==0.27.0.post1",
        # apache-tvm-ffi 0.1.15.x segfaults serialising IRModules with TVM 0.27.0.post1
        # (tvm.ir.save_json, and so MetaSchedule's databases); 0.1.14.post1 works
        "apache-tvm-ffi==0.1.14.post1",
        "numpy",
        "networkx",
        # the CPU-only build of XGBoost (same package API): the default one pulls a 351 MB NCCL
        # wheel that the cost model, trained and queried on the CPU, never uses
        "xgboost-cpu",
        "ortools",
        # the ONNX model source (tvm_partition.frontend) needs onnx to read .onnx files
        "onnx",
        # MetaSchedule tuning (tvm_partition.cli.tune) measures candidates in process pools: TVM's
        # "popen-pool" extra; tqdm draws the progress bar of long tuning runs
        "psutil",
        "cloudpickle",
        "tqdm",
        # the cost-model accuracy report (profile --evaluate) draws measured vs predicted (EOP Fig. 4/7)
        "matplotlib",
    ],
    extras_require={
        # tornado: TVM's RPC tracker (python -m tvm.exec.rpc_tracker), which the RPC tests start
        # cuda-bindings + the CUDA 13 NVRTC and headers: tests/test_cuda_kernels.py compiles every
        # CUDA kernel with NVRTC as TVM's loader does on a GPU machine (no GPU needed; sm_75 is
        # the oldest architecture the CUDA 13 NVRTC compiles for)
        # ray: tests/test_ray.py starts a local Ray cluster (one node per edge server)
        # pytest-xdist: the suite runs in two workers, a module whole in one (pytest.ini, tests/conftest.py)
        "test": ["pytest", "pytest-xdist", "hypothesis", "onnx", "onnxruntime", "tornado", "cuda-bindings>=13",
                 "nvidia-cuda-nvrtc>=13", "nvidia-cuda-runtime>=13", "nvidia-cuda-cccl>=13", "ray>=2.9"],
        # several edge servers (stages --ray, pipeline --ray): Ray runs the actors and moves the tensors
        "ray": ["ray>=2.9"],
        # running an artifact over TVM RPC through a tracker (run --tracker): the tracker needs tornado
        "rpc": ["tornado"],
        "torch": ["torch"],
    },
)
