"""Software stacks: what ran a measured case, and the kernel library it runs on.

The same chip runs several-fold apart by toolchain (an MLPerf Tiny DS-CNN on one Cortex-M4
board: 2.0 to 8.2 cycles per MAC), so ``achievable`` takes the stack as an input. A stack
names its **kernel library** (:attr:`Stack.kernels`): the unit the measured cases pin a
term for (:mod:`labkit.physics.stacks`). Stacks that share kernels share the term: TFLM
with CMSIS-NN, microTVM with CMSIS-NN and ONNC with CMSIS-NN run the same inner loops;
ST's X-CUBE-AI, Plumerai's engine and Bosch's HALE are whole-graph compilers that emit
their own fused kernels (one family of kernels, pinned by four publishers).
Data only: what each stack is and where that is said.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

from labkit.core.lookup import lookup


@dataclass(frozen=True)
class Stack:
    """One inference stack: its label, the kernel library it runs, the processor it runs
    on (``cpu``, ``gpu`` or ``npu``: a neural or matrix accelerator) and where that is
    said. ``kv_per_query_head``: its decode attention runs one thread block per query head,
    so a grouped-query model's KV cache is fetched once per query head (the source says
    so)."""

    id: str
    label: str
    kernels: str
    processor: str
    source: str
    kv_per_query_head: bool = False


_S = Stack
STACKS: Mapping[str, Stack] = MappingProxyType({s.id: s for s in (
    # datacenter LLM serving engines
    _S("vllm", "vLLM", "vllm", "gpu", "https://github.com/vllm-project/vllm: PagedAttention and "
       "its own CUDA/Triton kernels, CUDA graphs for decode"),
    _S("vllm-2023", "vLLM (2023)", "vllm", "gpu", "https://github.com/vllm-project/vllm "
       "csrc/attention/attention_kernels.cu (2023): the PagedAttention decode kernel's grid "
       "is one thread block per query head and sequence (kv_head_idx = head_idx / "
       "num_queries_per_kv), so a GQA model's KV is fetched once per query head",
       kv_per_query_head=True),
    _S("tensorrt-llm", "TensorRT-LLM", "tensorrt-llm", "gpu", "https://github.com/NVIDIA/"
       "TensorRT-LLM: compiled TensorRT engines with fused attention (NIM's LLM profiles "
       "run it)"),
    _S("tensorrt-llm-pre-xqa", "TensorRT-LLM before 0.8 (no XQA)", "tensorrt-llm", "gpu",
       "https://github.com/NVIDIA/TensorRT-LLM cpp/tensorrt_llm/kernels/"
       "decoderMaskedMultiheadAttention: the masked multi-head attention launch's grid is "
       "num_heads x batch_size, one thread block per query head; docs/source/blogs/"
       "XQA-kernel.md: the XQA kernel (in the v0.8 releases) packs a GQA group's query "
       "heads and 'reduces data loading', Llama-70B on 1 H200, 128/2048: 1,227 -> 2,941 "
       "tok/s/GPU (2.4x)", kv_per_query_head=True),
    _S("sglang", "SGLang", "sglang", "gpu", "https://github.com/sgl-project/sglang: RadixAttention "
       "runtime, FlashInfer kernels"),
    _S("llama.cpp-cuda", "llama.cpp (CUDA)", "llama.cpp", "gpu", "https://github.com/ggml-org/"
       "llama.cpp: ggml's own quantised GEMV kernels, one process, no CUDA-graph batching"),
    _S("llama.cpp-metal", "llama.cpp (Metal)", "llama.cpp", "gpu", "https://github.com/ggml-org/"
       "llama.cpp: ggml's Metal kernels on Apple GPUs"),
    _S("ollama-metal", "Ollama (Metal)", "llama.cpp", "gpu", "https://github.com/ollama/ollama: "
       "serves models through llama.cpp's ggml kernels (Metal on Apple GPUs)"),
    _S("mlx", "MLX", "mlx", "gpu", "https://github.com/ml-explore/mlx: Apple's array framework, "
       "its own Metal kernels"),
    # phones and laptops
    _S("executorch-xnnpack", "ExecuTorch (XNNPACK)", "executorch", "cpu",
       "https://pytorch.org/executorch: XNNPACK CPU kernels (KleidiAI on Arm)"),
    _S("mnn-cpu", "MNN-LLM (CPU)", "mnn", "cpu", "https://github.com/alibaba/MNN: MNN's own Arm "
       "CPU kernels"),
    _S("mlc-llm", "MLC LLM", "mlc-llm", "gpu", "https://github.com/mlc-ai/mlc-llm: TVM-compiled "
       "GPU kernels"),
    _S("coreml-gpu", "Core ML (GPU)", "coreml", "gpu", "https://developer.apple.com/"
       "documentation/coreml: Apple's runtime on the GPU"),
    _S("qai-hub-npu", "Qualcomm AI Hub (NPU)", "qnn", "npu", "https://aihub.qualcomm.com: QNN on "
       "the Hexagon NPU"),
    # embedded GPUs
    _S("tensorrt", "TensorRT", "tensorrt", "gpu", "https://developer.nvidia.com/tensorrt: compiled "
       "engines with fused layers (trtexec, MLPerf)"),
    _S("tensorrt-edge-llm", "TensorRT Edge-LLM", "tensorrt-edge-llm", "gpu",
       "https://github.com/NVIDIA/TensorRT-Edge-LLM: the C++ LLM runtime for Jetson and "
       "DRIVE"),
    _S("pytorch-cuda", "PyTorch (eager, CUDA)", "pytorch", "gpu", "https://pytorch.org: one "
       "kernel launch per operator, no graph compilation"),
    # microcontrollers
    _S("x-cube-ai", "ST X-CUBE-AI", "graph-compiler", "cpu", "https://www.st.com/en/embedded-software/"
       "x-cube-ai.html: ST's network compiler and kernel library for STM32"),
    _S("plumerai", "Plumerai inference engine", "graph-compiler", "cpu",
       "https://plumerai.com/benchmark: a whole-graph compiler with its own kernels"),
    _S("bosch-hale", "Bosch HALE", "graph-compiler", "cpu", "MLPerf Tiny v1.1-v1.2 Bosch "
       "submissions: Hardware-Aware Lowering Engine, a whole-graph compiler with its own "
       "kernels"),
    _S("tflm-cmsis-nn", "TFLM + CMSIS-NN", "cmsis-nn", "cpu", "https://github.com/ARM-software/"
       "CMSIS-NN: Arm's optimised int8 kernels (SMLAD, Helium), called by TFLM"),
    _S("microtvm-cmsis-nn", "microTVM + CMSIS-NN", "cmsis-nn", "cpu", "TVM's microTVM offloading "
       "to CMSIS-NN (MLPerf Tiny v1.1 Krai)"),
    _S("onnc-cmsis-nn", "ONNC + CMSIS-NN", "cmsis-nn", "cpu", "Skymizer's ONNC compiler calling "
       "CMSIS_5 CMSIS-NN kernels (MLPerf Tiny v1.1)"),
    _S("tflm-silabs-mvp", "TFLM + Silicon Labs MVP", "mvp-accelerator", "npu",
       "Silicon Labs Gecko SDK: TFLM kernels offloaded to the MVP matrix-vector "
       "accelerator"),
    _S("tflm-reference", "TFLM (reference kernels)", "reference", "cpu",
       "https://github.com/tensorflow/tflite-micro: portable C++ reference kernels, no "
       "SIMD"),
    _S("microtvm-native", "microTVM (native schedules)", "reference", "cpu",
       "TVM's own generated C schedules, no CMSIS-NN (MLPerf Tiny v1.1 Krai)"),
)})


def get_stack(stack: str | Stack) -> Stack:
    """Look up a stack by id (or pass a :class:`Stack` through)."""
    return lookup("stack", STACKS, stack)


@dataclass(frozen=True)
class ShippedTerm:
    """One shipped multiplier on a class line (``key``: a kernel library or a core), s/s,
    and the ``cases`` of ``families`` source families that pinned it."""

    device_class: str
    axis: str
    key: str
    scale: float
    cases: int
    families: int


_TERMS = "stack_terms.toml"
AXES = ("kernels", "core")


def load_terms(text: str | None = None) -> tuple[ShippedTerm, ...]:
    """Parse ``text`` (TOML ``[[term]]`` tables; default: the package data), checked: a
    ``ValueError`` names the term and field."""
    if text is None:
        text = resources.files("labkit.registries").joinpath("data", _TERMS).read_text("utf-8")
    out = []
    for raw in tomllib.loads(text).get("term", []):
        name = f"{raw.get('device_class', '?')}/{raw.get('key', '?')}"
        try:
            t = ShippedTerm(str(raw["device_class"]), str(raw["axis"]), str(raw["key"]),
                            float(raw["scale"]), int(raw["cases"]), int(raw["families"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"term {name!r}: field {e} is missing or malformed") from None
        if t.axis not in AXES or not t.scale > 0 or t.cases < 1 or t.families < 1:
            raise ValueError(f"term {name!r}: needs axis in {AXES}, scale > 0, cases and "
                             f"families >= 1; got {t}")
        out.append(t)
    return tuple(out)


TERMS: tuple[ShippedTerm, ...] = load_terms()
"""The shipped kernel-library and core terms (``benchmarks/bench_calibration.py
--write-bands`` writes them; ``tests/test_stacks.py`` checks they are current)."""
