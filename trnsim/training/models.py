"""Transformer model catalog and model math: parameters, FLOPs per token, activation memory.

Architecture facts come from ``data/models.json`` (each with its source). Everything else
is computed here from those facts with published formulas:

* Parameter count: sum of the weight matrices, biases, norms and embeddings.
* FLOPs: 2 FLOPs per multiply-add of every matmul; a training step is forward (1x) plus
  backward (2x) = 3x the forward FLOPs, i.e. about 6 x params per token (scaling-book
  ``transformers.md``; Kaplan et al. 2020). Attention adds 4*s*(heads*head_dim) forward
  FLOPs per token per layer for QK^T and AV (the full, non-causal count used by
  Narayanan et al. 2021, Korthikanti et al. 2022 and PaLM's 12*L*H*Q*T). Full recompute
  adds one more forward pass of the transformer layers (not the logits), which gives
  Narayanan's 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)).
* Activation memory per layer (16-bit activations, Korthikanti et al. 2022, also in the
  NxD ``activation_memory_reduction.rst``): s*b*h*(34 + 5*a*s/h) bytes for a GPT layer,
  split into attention (11 s*b*h + 5 a*s^2*b), MLP (19 s*b*h) and two layer norms
  (4 s*b*h); generalised here to grouped-query attention, SwiGLU and dropout-free models.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from trnsim.training._data import load, value
from trnsim.training.systems import PlanError

Recompute = Literal["none", "selective", "full"]
RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "full")
BYTES_16BIT = 2  # bytes per bf16/fp16 activation element


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer (architecture facts; counts are computed properties).

    Sizes are in elements; ``published_params`` is the count stated by the source (None if
    the source gives none). ``mlp`` is "gelu" (two matrices d->d_ff->d) or "swiglu" (three).
    """

    name: str
    display_name: str
    family: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    vocab_size: int
    max_seq_len: int
    mlp: str = "gelu"
    norm: str = "layernorm"
    bias: bool = True
    tied_embeddings: bool = True
    position: str = "learned"
    dropout: bool = True
    parallel_layers: bool = False
    attention_dim: int | None = None
    published_params: float | None = None
    source: str = ""
    note: str = ""
    aliases: tuple[str, ...] = ()

    # ---- parameter counts -------------------------------------------------------------
    @property
    def q_dim(self) -> int:
        """Width of the query projection: n_heads * head_dim, or ``attention_dim`` where the
        source's table is inconsistent (see the record's note)."""
        return self.attention_dim or self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of each of the key and value projections, n_kv_heads * head_dim."""
        return self.q_dim * self.n_kv_heads // self.n_heads

    @property
    def n_mlp_matrices(self) -> int:
        return 3 if self.mlp == "swiglu" else 2

    @property
    def attention_weight_params(self) -> int:
        """Q, K, V and output projection weights of one layer."""
        d = self.d_model
        return d * (self.q_dim + 2 * self.kv_dim) + self.q_dim * d

    @property
    def mlp_weight_params(self) -> int:
        return self.n_mlp_matrices * self.d_model * self.d_ff

    @property
    def matmul_params_per_layer(self) -> int:
        """Weights that take part in matmuls, per layer (no biases or norms)."""
        return self.attention_weight_params + self.mlp_weight_params

    @property
    def params_per_layer(self) -> int:
        """All parameters of one transformer layer (weights, biases, norm scales/shifts)."""
        d = self.d_model
        p = self.matmul_params_per_layer
        if self.bias:
            p += self.q_dim + 2 * self.kv_dim + d  # attention biases
            p += (self.n_mlp_matrices - 1) * self.d_ff + d  # MLP biases
        norm_params = d * (2 if (self.norm == "layernorm" and self.bias) else 1)
        n_norms = 1 if self.parallel_layers else 2
        return p + n_norms * norm_params

    @property
    def embedding_params(self) -> int:
        """Token embedding (+ learned positions, + untied output head, + final norm)."""
        d = self.d_model
        p = self.vocab_size * d
        if self.position == "learned":
            p += self.max_seq_len * d
        if not self.tied_embeddings:
            p += self.vocab_size * d
        p += d * (2 if (self.norm == "layernorm" and self.bias) else 1)
        return p

    @property
    def params(self) -> int:
        """Total parameter count computed from the architecture."""
        return self.n_layers * self.params_per_layer + self.embedding_params

    @property
    def params_without_embeddings(self) -> int:
        return self.n_layers * self.params_per_layer

    # ---- FLOPs ------------------------------------------------------------------------
    def forward_flops_per_token(self, seq_len: int, *, attention: bool = True, logits: bool = True) -> float:
        """Forward-pass FLOPs per token (2 per multiply-add) for context length ``seq_len``."""
        f = 2.0 * self.n_layers * self.matmul_params_per_layer
        if attention:
            f += self.n_layers * 4.0 * seq_len * self.q_dim
        if logits:
            f += 2.0 * self.vocab_size * self.d_model
        return f

    def flops_per_token(self, seq_len: int, *, attention: bool = True, recompute: Recompute = "none") -> float:
        """Training FLOPs per token: forward + backward (3x forward) + recomputation.

        ``recompute="none"`` gives the *model* FLOPs used for MFU (Korthikanti et al.:
        72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)) for a GPT). ``"full"`` adds a forward pass of
        the layers (Narayanan et al.'s 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h))); ``"selective"``
        adds only the attention-score part (QK^T, softmax, AV).
        """
        _check_recompute(recompute)
        f = 3.0 * self.forward_flops_per_token(seq_len, attention=attention)
        if recompute == "full":
            f += self.forward_flops_per_token(seq_len, attention=attention, logits=False)
        elif recompute == "selective" and attention:
            f += self.n_layers * 4.0 * seq_len * self.q_dim
        return f

    def six_n_flops_per_token(self) -> float:
        """The 6*N rule of thumb (scaling-book ``transformers.md``)."""
        return 6.0 * self.params

    # ---- activation memory ------------------------------------------------------------
    def activation_bytes_per_layer(
        self,
        seq_len: int,
        micro_batch: int = 1,
        *,
        tp: int = 1,
        sequence_parallel: bool = False,
        recompute: Recompute = "none",
        flash_attention: bool = False,
    ) -> float:
        """Bytes of activations one layer keeps for the backward pass (16-bit activations).

        Korthikanti et al. 2022 (NxD ``activation_memory_reduction.rst``): for a GPT layer
        with dropout this is s*b*h*(34 + 5*a*s/h) unsharded, (s*b*h/t)*(34 + 5*a*s/h) with
        TP+SP, s*b*h*(10 + 24/t + 5*a*s/(h*t)) with TP only, 34*s*b*h/t with selective
        recompute (+SP), and 2*s*b*h (/t with SP) with full recompute.
        """
        _check_recompute(recompute)
        s, b, h = seq_len, micro_batch, self.d_model
        sbh = float(s * b * h)
        t = float(tp)
        bpe = BYTES_16BIT
        if recompute == "full":
            return bpe * sbh / (t if sequence_parallel else 1.0)
        drop = 1.0 if self.dropout else 0.0
        # parts that TP shards (inside the attention and MLP blocks)
        attn_sharded = bpe * s * b * (self.q_dim + 2 * self.kv_dim) + bpe * s * b * self.q_dim  # Q,K,V + out-proj input
        mlp_hidden = (3 if self.mlp == "swiglu" else 2) * bpe * s * b * self.d_ff  # fc1 out + act out (+ gate)
        sharded = attn_sharded + mlp_hidden
        # parts replicated across TP ranks unless sequence parallelism shards them
        n_norms = 1 if self.parallel_layers else 2
        n_block_inputs = 1 if self.parallel_layers else 2  # parallel layers: attention and MLP share one input
        replicated = (bpe * n_norms + bpe * n_block_inputs + 2 * drop) * sbh  # norm inputs, block inputs, dropout masks
        # attention scores: softmax output (2 B) + dropout mask (1 B) + dropout output (2 B)
        scores = (bpe + drop * (1 + bpe)) * self.n_heads * float(s) * s * b
        if recompute == "selective" or flash_attention:
            scores = 0.0
        repl_div = t if sequence_parallel else 1.0
        return sharded / t + replicated / repl_div + scores / t

    def logits_bytes(self, seq_len: int, micro_batch: int = 1, *, tp: int = 1) -> float:
        """fp32 logits kept for the cross-entropy backward: 4*s*b*V/t bytes."""
        return 4.0 * seq_len * micro_batch * self.vocab_size / tp

    def summary(self) -> str:
        pub = f", published {_count(self.published_params)}" if self.published_params else ""
        return (f"{self.display_name}: {_count(self.params)} params{pub}; {self.n_layers} layers, "
                f"d_model {self.d_model}, {self.n_heads} heads ({self.n_kv_heads} KV), d_ff {self.d_ff}, "
                f"vocab {self.vocab_size}")


def _count(n: float) -> str:
    """3 significant digits with a B/M/K suffix (70.6B, 124M, 28.5K)."""
    for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:.0f}"


def _check_recompute(recompute: str) -> None:
    if recompute not in RECOMPUTE_MODES:
        raise ValueError(f"recompute={recompute!r} is not a mode; use one of {RECOMPUTE_MODES}")


def _catalog() -> dict[str, ModelSpec]:
    doc = load("models.json")
    out: dict[str, ModelSpec] = {}
    for name, r in doc["models"].items():
        pub = r.get("published_params")
        out[name] = ModelSpec(
            name=name, display_name=r["display_name"], family=r["family"],
            n_layers=int(r["n_layers"]), d_model=int(r["d_model"]), n_heads=int(r["n_heads"]),
            n_kv_heads=int(r["n_kv_heads"]), head_dim=int(r["head_dim"]), d_ff=int(r["d_ff"]),
            vocab_size=int(r["vocab_size"]), max_seq_len=int(r["max_seq_len"]), mlp=r["mlp"], norm=r["norm"],
            bias=bool(r["bias"]), tied_embeddings=bool(r["tied_embeddings"]), position=r["position"],
            dropout=bool(r["dropout"]), parallel_layers=bool(r["parallel_layers"]),
            attention_dim=r.get("attention_dim"),
            published_params=None if pub is None else float(value(pub)), source=r["source"], note=r.get("note", ""),
            aliases=tuple(a.lower() for a in r.get("aliases", ())),
        )
    return out


_MODELS: dict[str, ModelSpec] | None = None


def models() -> dict[str, ModelSpec]:
    """All catalog models by name (a fresh dict; the records are frozen)."""
    global _MODELS
    if _MODELS is None:
        _MODELS = _catalog()
    return dict(_MODELS)


def model(name: str | ModelSpec) -> ModelSpec:
    """The catalog model ``name`` (case-insensitive), e.g. ``model("llama3.1-70b")``."""
    if isinstance(name, ModelSpec):
        return name
    if not isinstance(name, str):
        from trnsim.catalog.validation import type_error

        raise type_error(PlanError)(f"model={name!r}: must be a model name (a string such as 'llama3.1-8b') "
                                    f"or a ModelSpec, not {type(name).__name__}")
    cat = models()
    key = str(name).strip().lower()
    if key in cat:
        return cat[key]
    for spec in cat.values():
        if key in spec.aliases:
            return spec
    close = [k for k in cat if key.replace("_", "-") in k or k in key]
    hint = f" Did you mean {', '.join(close[:4])}?" if close else ""
    raise UnknownModelError(f"unknown model {name!r}.{hint} Known models: {', '.join(sorted(cat))}")


class UnknownModelError(PlanError, KeyError):
    """A model name that is not in ``data/models.json``: a PlanError, and a KeyError for older callers."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def model_sources() -> dict[str, dict]:
    """The citations behind the model catalog, by source key."""
    return dict(load("models.json")["sources"])
