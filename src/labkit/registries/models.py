"""Model registry: transformer LMs (dense, GQA, MoE, MLA) and the edge CNNs the tracks use.

Parameter counts used by the roofline are computed from the layer shapes (decoder blocks
only, the paper's convention); the vendors' published totals are kept beside them, with
sources, and a test checks the two agree once embeddings and the LM head are added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from labkit.core.lookup import lookup

TRANSFORMER = "transformer"
CNN = "cnn"


@dataclass(frozen=True)
class Model:
    """Architecture figures the formulas need. Counts are elements, not bytes.

    For MoE models ``ffn_dim`` is the dense-layer FFN width and ``moe_ffn_dim`` one
    expert's width; the first ``dense_layers`` layers are dense. For MLA models the KV
    cache stores ``kv_lora_rank + qk_rope_dim`` elements per layer per token.
    For CNNs only ``params_total``, ``flops_per_inference`` (FLOP per input),
    ``activation_bytes_int8`` and ``kernel_layers`` (fused layers an inference engine
    launches, each paying the achievable per-layer overhead) apply.
    """

    id: str
    name: str
    architecture: str
    params_total: float
    params_active: float
    sources: Mapping[str, str]
    layers: int = 0
    hidden: int = 0
    q_heads: int = 0
    kv_heads: int = 0
    d_head: int = 0
    ffn_dim: int = 0
    vocab: int = 0
    max_context: int = 0
    experts_total: int = 0
    experts_active: int = 0
    shared_experts: int = 0
    moe_ffn_dim: int = 0
    dense_layers: int = 0
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_dim: int = 0
    qk_nope_dim: int = 0
    v_head_dim: int = 0
    flops_per_inference: float = 0.0
    activation_bytes_int8: float = 0.0
    input_desc: str = ""
    tied_embeddings: bool = False
    kernel_layers: int = 0

    # -- derived shapes ---------------------------------------------------------------
    @property
    def is_transformer(self) -> bool:
        return self.architecture == TRANSFORMER

    @property
    def is_moe(self) -> bool:
        return self.experts_total > 0

    @property
    def uses_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def attention_params_per_layer(self) -> int:
        """Q, K, V, O projection elements in one layer (GQA or MLA)."""
        if self.uses_mla:
            qk_dim = self.qk_nope_dim + self.qk_rope_dim
            return (
                self.hidden * self.q_lora_rank                               # W_q down
                + self.q_lora_rank * self.q_heads * qk_dim                   # W_q up
                + self.hidden * (self.kv_lora_rank + self.qk_rope_dim)       # W_kv down
                + self.kv_lora_rank * self.q_heads * (self.qk_nope_dim + self.v_head_dim)
                + self.q_heads * self.v_head_dim * self.hidden               # W_o
            )
        q_and_o = 2 * self.hidden * self.q_heads * self.d_head
        k_and_v = 2 * self.hidden * self.kv_heads * self.d_head
        return q_and_o + k_and_v

    @property
    def expert_params(self) -> int:
        """Elements of one gated (SwiGLU) expert: gate, up and down."""
        return 3 * self.hidden * self.moe_ffn_dim

    @property
    def dense_ffn_params(self) -> int:
        """Elements of one dense gated FFN: gate, up and down."""
        return 3 * self.hidden * self.ffn_dim

    def _ffn_params(self, experts: int) -> int:
        if not self.is_moe:
            return self.dense_ffn_params * self.layers
        moe_layers = self.layers - self.dense_layers
        router = self.hidden * self.experts_total
        per_moe_layer = (experts + self.shared_experts) * self.expert_params + router
        return self.dense_layers * self.dense_ffn_params + moe_layers * per_moe_layer

    @property
    def block_params_total(self) -> int:
        """All decoder-block weights (attention + FFN/experts), embeddings and LM head excluded."""
        return self.attention_params_per_layer * self.layers + self._ffn_params(self.experts_total)

    @property
    def block_params_active(self) -> int:
        """Decoder-block weights one token touches (routed experts: only the active ones)."""
        experts = self.experts_active if self.is_moe else 0
        return self.attention_params_per_layer * self.layers + self._ffn_params(experts)

    @property
    def lm_head_params(self) -> int:
        """Output projection elements, hidden x vocab (read every decode step)."""
        return self.hidden * self.vocab

    @property
    def moe_sparsity(self) -> float:
        """Total / active decoder-block weights (1 for dense models)."""
        return self.block_params_total / self.block_params_active if self.is_moe else 1.0

    @property
    def kv_elements_per_token(self) -> int:
        """KV-cache elements one token adds across all layers, one sequence.

        GQA: 2 (K and V) x kv_heads x d_head per layer -- *kv* heads, not query heads.
        MLA: the compressed latent (kv_lora_rank) plus the decoupled RoPE key per layer.
        """
        if self.uses_mla:
            return self.layers * (self.kv_lora_rank + self.qk_rope_dim)
        return self.layers * 2 * self.kv_heads * self.d_head


def _m(**kw: Any) -> Model:
    kw["sources"] = MappingProxyType(dict(kw["sources"]))
    return Model(**kw)


_LLAMA3 = "Meta Llama 3 / 3.1 model card and config.json"

MODELS: Mapping[str, Model] = MappingProxyType({m.id: m for m in (
    _m(id="llama-3-8b", name="Llama 3 8B", architecture=TRANSFORMER,
       layers=32, hidden=4096, q_heads=32, kv_heads=8, d_head=128, ffn_dim=14336,
       vocab=128256, max_context=8192, params_total=8.03e9, params_active=8.03e9,
       sources={"shape": f"{_LLAMA3} (Meta-Llama-3-8B)", "params": "model card: 8B (8.03e9)"}),
    _m(id="llama-3.1-70b", name="Llama 3.1 70B", architecture=TRANSFORMER,
       layers=80, hidden=8192, q_heads=64, kv_heads=8, d_head=128, ffn_dim=28672,
       vocab=128256, max_context=131072, params_total=70.6e9, params_active=70.6e9,
       sources={"shape": f"{_LLAMA3} (Llama-3.1-70B)", "params": "model card: 70.6e9"}),
    _m(id="llama-3.1-405b", name="Llama 3.1 405B", architecture=TRANSFORMER,
       layers=126, hidden=16384, q_heads=128, kv_heads=8, d_head=128, ffn_dim=53248,
       vocab=128256, max_context=131072, params_total=405.9e9, params_active=405.9e9,
       sources={"shape": f"{_LLAMA3} (Llama-3.1-405B)", "params": "model card: 405B"}),
    _m(id="llama-3.2-1b", name="Llama 3.2 1B", architecture=TRANSFORMER,
       layers=16, hidden=2048, q_heads=32, kv_heads=8, d_head=64, ffn_dim=8192,
       vocab=128256, max_context=131072, params_total=1.24e9, params_active=1.24e9,
       tied_embeddings=True,
       sources={"shape": "Meta Llama 3.2 1B config.json (tied embeddings)",
                "params": "model card: 1.23B"}),
    _m(id="llama-3.2-3b", name="Llama 3.2 3B", architecture=TRANSFORMER,
       layers=28, hidden=3072, q_heads=24, kv_heads=8, d_head=128, ffn_dim=8192,
       vocab=128256, max_context=131072, params_total=3.21e9, params_active=3.21e9,
       tied_embeddings=True,
       sources={"shape": "Meta Llama 3.2 3B config.json (tied embeddings)",
                "params": "model card: 3.21B"}),
    _m(id="llama-3.1-8b", name="Llama 3.1 8B", architecture=TRANSFORMER,
       layers=32, hidden=4096, q_heads=32, kv_heads=8, d_head=128, ffn_dim=14336,
       vocab=128256, max_context=131072, params_total=8.03e9, params_active=8.03e9,
       sources={"shape": f"{_LLAMA3} (Llama-3.1-8B): same blocks as Llama 3 8B, RoPE "
                         "scaled to a 128K context",
                "params": "model card: 8B (8.03e9)"}),
    _m(id="llama-2-7b", name="Llama 2 7B", architecture=TRANSFORMER,
       layers=32, hidden=4096, q_heads=32, kv_heads=32, d_head=128, ffn_dim=11008,
       vocab=32000, max_context=4096, params_total=6.74e9, params_active=6.74e9,
       sources={"shape": "Llama-2-7b-hf config.json: 32 layers, hidden 4096, 32 heads and 32 "
                         "KV heads (no GQA), intermediate 11008, vocab 32000, 4096 positions "
                         "(llama.cpp's load log prints the same: n_embd 4096, n_layer 32, "
                         "n_head_kv 32, n_ff 11008; ggml-org/llama.cpp#2641)",
                "params": "llama.cpp's load log: 6.74 B (ggml-org/llama.cpp#6017); the "
                          "config's shapes sum to 6.74e9 with embeddings and LM head"}),
    _m(id="llama-2-70b", name="Llama 2 70B", architecture=TRANSFORMER,
       layers=80, hidden=8192, q_heads=64, kv_heads=8, d_head=128, ffn_dim=28672,
       vocab=32000, max_context=4096, params_total=68.98e9, params_active=68.98e9,
       sources={"shape": "Llama-2-70b-hf config.json: 80 layers, hidden 8192, 64 heads, 8 "
                         "KV heads, intermediate 28672, vocab 32000, 4096 positions",
                "params": "Touvron et al. 2023 (Llama 2): '70B'; the config's shapes sum to "
                          "68.98e9 with embeddings and LM head"}),
    _m(id="qwen3-8b", name="Qwen3 8B", architecture=TRANSFORMER,
       layers=36, hidden=4096, q_heads=32, kv_heads=8, d_head=128, ffn_dim=12288,
       vocab=151936, max_context=32768, params_total=8.2e9, params_active=8.2e9,
       sources={"shape": "Qwen3-8B config.json: 36 layers, hidden 4096, 32 heads, 8 KV "
                         "heads, head_dim 128, intermediate 12288, vocab 151936, untied",
                "params": "Qwen3-8B model card: 8.2B total, 6.95B non-embedding",
                "max_context": "Qwen3-8B model card: 32,768 tokens natively (131,072 with "
                               "YaRN)"}),
    _m(id="qwen2-1.5b", name="Qwen2 1.5B", architecture=TRANSFORMER,
       layers=28, hidden=1536, q_heads=12, kv_heads=2, d_head=128, ffn_dim=8960,
       vocab=151936, max_context=32768, params_total=1.54e9, params_active=1.54e9,
       tied_embeddings=True,
       sources={"shape": "Qwen2-1.5B-Instruct config.json (as copied with _name_or_path "
                         "Qwen/Qwen2-1.5B-Instruct, e.g. huggingface.co/unsloth/"
                         "Qwen2-1.5B-Instruct): 28 layers, hidden 1536, 12 heads, 2 KV heads, "
                         "intermediate 8960, vocab 151936, tied embeddings, 32768 positions; "
                         "Qwen2 technical report (arXiv:2407.10671) Table 1",
                "params": "Qwen2 release: 1.54B total (1.31B non-embedding); the shapes sum "
                          "to 1,543,714,304"}),
    _m(id="qwen2-0.5b", name="Qwen2 0.5B", architecture=TRANSFORMER,
       layers=24, hidden=896, q_heads=14, kv_heads=2, d_head=64, ffn_dim=4864,
       vocab=151936, max_context=32768, params_total=0.49e9, params_active=0.49e9,
       tied_embeddings=True,
       sources={"shape": "Qwen2-0.5B-Instruct config.json (as copied with _name_or_path "
                         "Qwen/Qwen2-0.5B-Instruct): 24 layers, hidden 896, 14 heads, 2 KV "
                         "heads, intermediate 4864, vocab 151936, tied embeddings, 32768 "
                         "positions; Qwen2 technical report (arXiv:2407.10671) Table 1",
                "params": "Qwen2 release: 0.49B total (0.35B non-embedding); the shapes sum "
                          "to 494,032,768"}),
    _m(id="tinyllama-1.1b", name="TinyLlama 1.1B", architecture=TRANSFORMER,
       layers=22, hidden=2048, q_heads=32, kv_heads=4, d_head=64, ffn_dim=5632,
       vocab=32000, max_context=2048, params_total=1.1e9, params_active=1.1e9,
       sources={"shape": "TinyLlama-1.1B config.json: 22 layers, hidden 2048, 32 heads, 4 "
                         "KV heads, intermediate 5632, vocab 32000, 2048 positions, untied",
                "params": "Zhang et al. 2024, TinyLlama: 1.1B"}),
    _m(id="qwen3-32b", name="Qwen3 32B", architecture=TRANSFORMER,
       layers=64, hidden=5120, q_heads=64, kv_heads=8, d_head=128, ffn_dim=25600,
       vocab=151936, max_context=32768, params_total=32.8e9, params_active=32.8e9,
       sources={"shape": "Qwen3-32B config.json: head_dim 128 (not hidden/heads = 80)",
                "params": "Qwen3 model card: 32.8B"}),
    _m(id="mixtral-8x7b", name="Mixtral 8x7B", architecture=TRANSFORMER,
       layers=32, hidden=4096, q_heads=32, kv_heads=8, d_head=128, ffn_dim=14336,
       moe_ffn_dim=14336, experts_total=8, experts_active=2, vocab=32000, max_context=32768,
       params_total=46.7e9, params_active=12.9e9,
       sources={"shape": "Mixtral-8x7B config.json; Jiang et al. 2024, Mixtral of Experts",
                "params": "Mixtral paper: 47B total, 13B active per token (46.7B / 12.9B "
                          "on the model card)",
                "max_context": "Mixtral paper: trained with a 32k-token context "
                               "(config.json max_position_embeddings 32768)",
                "experts": "config.json: num_local_experts 8, num_experts_per_tok 2; every "
                           "layer is MoE"}),
    _m(id="deepseek-v3", name="DeepSeek-V3", architecture=TRANSFORMER,
       layers=61, hidden=7168, q_heads=128, kv_heads=128, d_head=128, ffn_dim=18432,
       moe_ffn_dim=2048, experts_total=256, experts_active=8, shared_experts=1,
       dense_layers=3, kv_lora_rank=512, q_lora_rank=1536, qk_rope_dim=64, qk_nope_dim=128,
       v_head_dim=128, vocab=129280, max_context=131072,
       params_total=671e9, params_active=37e9,
       sources={"shape": "DeepSeek-V3 config.json and technical report (MLA, 256 routed + 1 "
                         "shared expert, 8 active, first 3 layers dense)",
                "params": "DeepSeek-V3 technical report: 671B total, 37B activated (the "
                          "14B multi-token-prediction module of the 685B checkpoint is "
                          "not counted)",
                "max_context": "technical report: context extended to 128K (131,072) "
                               "tokens; config.json max_position_embeddings is 163840",
                "experts": "config.json: n_routed_experts 256, num_experts_per_tok 8, "
                           "n_shared_experts 1, first_k_dense_replace 3, "
                           "moe_intermediate_size 2048"}),
    _m(id="mobilenet-v2", name="MobileNetV2 1.0 (224x224)", architecture=CNN,
       params_total=3.4e6, params_active=3.4e6, flops_per_inference=2 * 300e6,
       activation_bytes_int8=1.2e6, input_desc="one 224x224 RGB frame", kernel_layers=54,
       sources={"params": "Sandler et al. 2018, MobileNetV2, Table 3: 3.4M params",
                "kernel_layers": "Sandler et al. 2018, Table 2: 1 + 17 bottlenecks x 3 "
                                 "convolutions + 1 conv + 1 FC = 54 (BN/ReLU fused)",
                "flops_per_inference": "same table: 300M multiply-adds = 600 MFLOP",
                "activation_bytes_int8": "estimate: peak live activations at INT8"}),
    _m(id="yolov8n", name="YOLOv8-n (640x640)", architecture=CNN,
       params_total=3.2e6, params_active=3.2e6, flops_per_inference=8.7e9,
       activation_bytes_int8=6.6e6, input_desc="one 640x640 camera frame", kernel_layers=168,
       sources={"params": "Ultralytics YOLOv8 model table: 3.2M params",
                "kernel_layers": "Ultralytics model summary: 'YOLOv8n summary (fused): 168 "
                                 "layers'",
                "flops_per_inference": "Ultralytics YOLOv8 model table: 8.7 GFLOPs at 640",
                "activation_bytes_int8": "estimate: peak live activations at INT8"}),
    _m(id="yolov8m", name="YOLOv8-m (640x640)", architecture=CNN,
       params_total=25.9e6, params_active=25.9e6, flops_per_inference=78.9e9,
       activation_bytes_int8=19.8e6, input_desc="one 640x640 camera frame", kernel_layers=218,
       sources={"params": "Ultralytics YOLOv8 model table: 25.9M params",
                "kernel_layers": "Ultralytics model summary: 'YOLOv8m summary (fused): 218 "
                                 "layers, 25886080 parameters' (the counting YOLOv8-n's 168 "
                                 "uses; Ultralytics 8.3 counts modules and prints 92)",
                "flops_per_inference": "Ultralytics YOLOv8 model table: 78.9 GFLOPs at 640",
                "activation_bytes_int8": "estimate: YOLOv8-n's 6.6 MB scaled by the width "
                                         "multiple (0.75 / 0.25 = 3; yolov8.yaml), since the "
                                         "peak sits in the early full-resolution layers"}),
    _m(id="ds-cnn-kws", name="DS-CNN keyword spotter (MLPerf Tiny)", architecture=CNN,
       params_total=23_756, params_active=23_756, flops_per_inference=2 * 2.66e6,
       activation_bytes_int8=16e3, input_desc="one 1 s audio window (49x10 MFCC)",
       kernel_layers=11,
       sources={"kernel_layers": "MLPerf Tiny keras_model.py: conv + 4 x (depthwise + "
                                 "pointwise) + average pool + dense = 11",
                "params": "NXP eIQ model zoo, keyword-spotting_DSCNN (the MLCommons Tiny "
                          "model): 'Number of parameters 23 756'. Hello Edge's 38.6 KB for "
                          "DS-CNN small is its memory, not a parameter count",
                "flops_per_inference": "MLPerf Tiny keras_model.py shapes: conv 10x4 (64 "
                                       "filters, stride 2) on 49x10 -> 25x5x64 = 0.32M MACs, "
                                       "4 x (depthwise 3x3 72k + pointwise 64x64 512k) = "
                                       "2.34M, dense 768: 2.66M MACs, stored once as 2 x MACs "
                                       "= 5.3 MFLOP (NXP eIQ lists '5 MOPS')",
                "activation_bytes_int8": "estimate: peak live activations at INT8 "
                                         "(25x5x64 in + out = 16 kB)"}),
    _m(id="resnet-50", name="ResNet-50 (224x224)", architecture=CNN,
       params_total=25.6e6, params_active=25.6e6, flops_per_inference=2 * 3.8e9,
       activation_bytes_int8=1.6e6, input_desc="one 224x224 RGB frame", kernel_layers=54,
       sources={"kernel_layers": "He et al. 2016, Table 1: 53 convolutions (downsample "
                                 "shortcuts included) + 1 FC; BN, ReLU and the residual add "
                                 "fused into them",
                "params": "He et al. 2016, Deep Residual Learning, ResNet-50: 25.6M params "
                          "(torchvision model card)",
                "flops_per_inference": "He et al. 2016, Table 1: 3.8x10^9 multiply-adds "
                                       "(their 'FLOPs') = 7.6 GFLOP; MLPerf's v1.5 variant "
                                       "is about 8% more",
                "activation_bytes_int8": "estimate: largest live pair at INT8 (56x56x256 in "
                                         "+ out = 1.6 MB)"}),
)})


def get_model(model: str | Model) -> Model:
    """Look up a model by id (or pass a :class:`Model` through)."""
    return lookup("model", MODELS, model)


def require_transformer(model: Model, parameter: str = "model") -> Model:
    """Raise a ValueError naming ``parameter`` when ``model`` is not a transformer LM."""
    if not model.is_transformer:
        raise ValueError(
            f"{parameter} must be a transformer LM for this formula; {model.id!r} is a "
            f"{model.architecture} (use the per-inference edge formulas instead)"
        )
    return model
