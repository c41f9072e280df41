"""A tiny GPT in numpy: forward and hand-written backward, cross-entropy loss and Adam.

Architecture (GPT-2 style, pre-norm): token + learned position embeddings; ``n_layers``
blocks of [LayerNorm -> causal multi-head self-attention -> residual, LayerNorm -> MLP
(GELU, tanh form) -> residual]; final LayerNorm; an untied output projection; mean
cross-entropy over all positions. The backward pass is written out operator by operator
(each ``_bwd`` mirrors a forward step) and checked against finite differences in the tests.

Parameters live in a flat ``dict[str, np.ndarray]`` so data- and tensor-parallel code
(``trnsim.training.parallel``) can shard and all-reduce them by name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from trnsim.training.models import ModelSpec, model as get_model

Params = dict[str, np.ndarray]
_GELU_C = float(np.sqrt(2.0 / np.pi))  # python float: keeps float32 arrays float32


@dataclass(frozen=True)
class TinyConfig:
    """Sizes of the tiny GPT (all counts)."""

    vocab_size: int
    seq_len: int
    d_model: int
    n_heads: int
    n_layers: int
    d_ff: int
    ln_eps: float = 1e-5

    @classmethod
    def from_spec(cls, spec: str | ModelSpec = "tinygpt", **overrides: Any) -> "TinyConfig":
        m = get_model(spec)
        kw = dict(vocab_size=m.vocab_size, seq_len=m.max_seq_len, d_model=m.d_model, n_heads=m.n_heads,
                  n_layers=m.n_layers, d_ff=m.d_ff)
        kw.update(overrides)
        return cls(**kw)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def validate(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")


def init_params(cfg: TinyConfig, seed: int = 0, dtype: Any = np.float64) -> Params:
    """GPT-2 style initialisation: N(0, 0.02) weights, zero biases, unit LayerNorm scales."""
    cfg.validate()
    rng = np.random.default_rng(seed)
    d, f, V = cfg.d_model, cfg.d_ff, cfg.vocab_size
    std = 0.02
    proj_std = std / np.sqrt(2 * cfg.n_layers)
    p: Params = {
        "wte": rng.normal(0, std, (V, d)),
        "wpe": rng.normal(0, std, (cfg.seq_len, d)),
    }
    for i in range(cfg.n_layers):
        p[f"h{i}.ln1.g"] = np.ones(d)
        p[f"h{i}.ln1.b"] = np.zeros(d)
        p[f"h{i}.attn.wqkv"] = rng.normal(0, std, (d, 3 * d))
        p[f"h{i}.attn.bqkv"] = np.zeros(3 * d)
        p[f"h{i}.attn.wo"] = rng.normal(0, proj_std, (d, d))
        p[f"h{i}.attn.bo"] = np.zeros(d)
        p[f"h{i}.ln2.g"] = np.ones(d)
        p[f"h{i}.ln2.b"] = np.zeros(d)
        p[f"h{i}.mlp.w1"] = rng.normal(0, std, (d, f))
        p[f"h{i}.mlp.b1"] = np.zeros(f)
        p[f"h{i}.mlp.w2"] = rng.normal(0, proj_std, (f, d))
        p[f"h{i}.mlp.b2"] = np.zeros(d)
    p["lnf.g"] = np.ones(d)
    p["lnf.b"] = np.zeros(d)
    p["head"] = rng.normal(0, std, (d, V))
    return {k: v.astype(dtype) for k, v in p.items()}


def n_params(params: Params) -> int:
    return int(sum(v.size for v in params.values()))


# ------------------------------------------------------------------ operator pairs
def layernorm_fwd(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> tuple[np.ndarray, tuple]:
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = xc * rstd
    return xhat * g + b, (xhat, rstd, g)


def layernorm_bwd(dy: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xhat, rstd, g = cache
    dg = (dy * xhat).reshape(-1, xhat.shape[-1]).sum(0)
    db = dy.reshape(-1, dy.shape[-1]).sum(0)
    dxhat = dy * g
    n = xhat.shape[-1]
    dx = rstd / n * (n * dxhat - dxhat.sum(-1, keepdims=True) - xhat * (dxhat * xhat).sum(-1, keepdims=True))
    return dx, dg, db


def gelu_fwd(x: np.ndarray) -> tuple[np.ndarray, tuple]:
    u = _GELU_C * (x + 0.044715 * (x * x * x))
    t = np.tanh(u)
    return 0.5 * x * (1.0 + t), (x, t)


def gelu_bwd(dy: np.ndarray, cache: tuple) -> np.ndarray:
    x, t = cache
    du = _GELU_C * (1.0 + 3 * 0.044715 * x * x)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)


def attention_fwd(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, tuple]:
    """Causal attention on (B, heads, T, hd) arrays; returns (B, heads, T, hd)."""
    T, hd = q.shape[-2], q.shape[-1]
    scale = 1.0 / float(np.sqrt(hd))
    s = (q @ np.swapaxes(k, -1, -2)) * scale
    mask = np.triu(np.ones((T, T), dtype=bool), 1)
    s = np.where(mask, -np.inf, s)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return p @ v, (q, k, v, p, scale)


def attention_bwd(dout: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q, k, v, p, scale = cache
    dv = np.swapaxes(p, -1, -2) @ dout
    dp = dout @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))  # softmax backward (masked entries have p = 0)
    ds *= scale
    dq = ds @ k
    dk = np.swapaxes(ds, -1, -2) @ q
    return dq, dk, dv


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    B, T, C = x.shape
    return x.reshape(B, T, n_heads, C // n_heads).transpose(0, 2, 1, 3)


def merge_heads(x: np.ndarray) -> np.ndarray:
    B, H, T, hd = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, H * hd)


def cross_entropy_fwd(logits: np.ndarray, targets: np.ndarray) -> tuple[float, tuple]:
    """Mean cross-entropy over all (batch, position) pairs."""
    z = logits - logits.max(-1, keepdims=True)
    ez = np.exp(z)
    probs = ez / ez.sum(-1, keepdims=True)
    n = targets.size
    logp = z - np.log(ez.sum(-1, keepdims=True))
    loss = -np.take_along_axis(logp, targets[..., None], -1).sum() / n
    return float(loss), (probs, targets, n)


def cross_entropy_bwd(cache: tuple) -> np.ndarray:
    probs, targets, n = cache
    d = probs.copy()
    np.put_along_axis(d, targets[..., None], np.take_along_axis(d, targets[..., None], -1) - 1.0, -1)
    return d / n


# ------------------------------------------------------------------ whole model
def forward(params: Params, cfg: TinyConfig, idx: np.ndarray, targets: np.ndarray) -> tuple[float, dict]:
    """Loss and the cache needed by :func:`backward`. ``idx``, ``targets``: int arrays (B, T)."""
    B, T = idx.shape
    if T > cfg.seq_len:
        raise ValueError(f"sequence length {T} exceeds the model's seq_len {cfg.seq_len}")
    x = params["wte"][idx] + params["wpe"][:T]
    caches = []
    for i in range(cfg.n_layers):
        c: dict[str, Any] = {}
        h, c["ln1"] = layernorm_fwd(x, params[f"h{i}.ln1.g"], params[f"h{i}.ln1.b"], cfg.ln_eps)
        c["h1"] = h
        qkv = h @ params[f"h{i}.attn.wqkv"] + params[f"h{i}.attn.bqkv"]
        q, k, v = np.split(qkv, 3, axis=-1)
        a, c["attn"] = attention_fwd(split_heads(q, cfg.n_heads), split_heads(k, cfg.n_heads), split_heads(v, cfg.n_heads))
        a = merge_heads(a)
        c["a"] = a
        x = x + a @ params[f"h{i}.attn.wo"] + params[f"h{i}.attn.bo"]
        h2, c["ln2"] = layernorm_fwd(x, params[f"h{i}.ln2.g"], params[f"h{i}.ln2.b"], cfg.ln_eps)
        c["h2"] = h2
        u = h2 @ params[f"h{i}.mlp.w1"] + params[f"h{i}.mlp.b1"]
        g, c["gelu"] = gelu_fwd(u)
        c["g"] = g
        x = x + g @ params[f"h{i}.mlp.w2"] + params[f"h{i}.mlp.b2"]
        caches.append(c)
    hf, lnf = layernorm_fwd(x, params["lnf.g"], params["lnf.b"], cfg.ln_eps)
    logits = hf @ params["head"]
    loss, ce = cross_entropy_fwd(logits, targets)
    return loss, {"idx": idx, "layers": caches, "lnf": lnf, "hf": hf, "ce": ce}


def backward(params: Params, cfg: TinyConfig, cache: dict) -> Params:
    """Gradients of the mean loss with respect to every parameter (same keys as params)."""
    grads: Params = {}
    idx = cache["idx"]
    B, T = idx.shape
    dlogits = cross_entropy_bwd(cache["ce"])
    hf = cache["hf"]
    grads["head"] = hf.reshape(-1, hf.shape[-1]).T @ dlogits.reshape(-1, dlogits.shape[-1])
    dx, grads["lnf.g"], grads["lnf.b"] = layernorm_bwd(dlogits @ params["head"].T, cache["lnf"])
    for i in reversed(range(cfg.n_layers)):
        c = cache["layers"][i]
        # MLP residual branch
        g2 = c["g"].reshape(-1, cfg.d_ff)
        dflat = dx.reshape(-1, cfg.d_model)
        grads[f"h{i}.mlp.w2"] = g2.T @ dflat
        grads[f"h{i}.mlp.b2"] = dflat.sum(0)
        du = gelu_bwd(dx @ params[f"h{i}.mlp.w2"].T, c["gelu"])
        duf = du.reshape(-1, cfg.d_ff)
        grads[f"h{i}.mlp.w1"] = c["h2"].reshape(-1, cfg.d_model).T @ duf
        grads[f"h{i}.mlp.b1"] = duf.sum(0)
        dh2 = du @ params[f"h{i}.mlp.w1"].T
        dln, grads[f"h{i}.ln2.g"], grads[f"h{i}.ln2.b"] = layernorm_bwd(dh2, c["ln2"])
        dx = dx + dln
        # attention residual branch
        dflat = dx.reshape(-1, cfg.d_model)
        grads[f"h{i}.attn.wo"] = c["a"].reshape(-1, cfg.d_model).T @ dflat
        grads[f"h{i}.attn.bo"] = dflat.sum(0)
        da = split_heads(dx @ params[f"h{i}.attn.wo"].T, cfg.n_heads)
        dq, dk, dv = attention_bwd(da, c["attn"])
        dqkv = np.concatenate([merge_heads(dq), merge_heads(dk), merge_heads(dv)], axis=-1)
        dqf = dqkv.reshape(-1, 3 * cfg.d_model)
        grads[f"h{i}.attn.wqkv"] = c["h1"].reshape(-1, cfg.d_model).T @ dqf
        grads[f"h{i}.attn.bqkv"] = dqf.sum(0)
        dh1 = dqkv @ params[f"h{i}.attn.wqkv"].T
        dln, grads[f"h{i}.ln1.g"], grads[f"h{i}.ln1.b"] = layernorm_bwd(dh1, c["ln1"])
        dx = dx + dln
    grads["wpe"] = np.zeros_like(params["wpe"])
    grads["wpe"][:T] = dx.sum(0)
    grads["wte"] = np.zeros_like(params["wte"])
    np.add.at(grads["wte"], idx.reshape(-1), dx.reshape(-1, cfg.d_model))
    return grads


def loss_and_grads(params: Params, cfg: TinyConfig, idx: np.ndarray, targets: np.ndarray) -> tuple[float, Params]:
    loss, cache = forward(params, cfg, idx, targets)
    return loss, backward(params, cfg, cache)


# ------------------------------------------------------------------ optimizer
@dataclass
class Adam:
    """Adam (Kingma & Ba 2015) with bias correction; state per parameter name."""

    lr: float = 3e-3
    beta1: float = 0.9
    beta2: float = 0.99
    eps: float = 1e-8
    t: int = 0

    def __post_init__(self) -> None:
        self.m: Params = {}
        self.v: Params = {}

    def step(self, params: Params, grads: Params) -> None:
        """Update ``params`` in place."""
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        c1, c2 = 1.0 - b1**self.t, 1.0 - b2**self.t
        for k, g in grads.items():
            m = self.m.setdefault(k, np.zeros_like(g))
            v = self.v.setdefault(k, np.zeros_like(g))
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            params[k] -= self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)


def numerical_grad(params: Params, cfg: TinyConfig, idx: np.ndarray, targets: np.ndarray, key: str,
                   positions: list[tuple[int, ...]], h: float = 1e-6) -> np.ndarray:
    """Central finite differences of the loss for a few entries of ``params[key]``."""
    out = []
    for pos in positions:
        old = params[key][pos]
        params[key][pos] = old + h
        lp, _ = forward(params, cfg, idx, targets)
        params[key][pos] = old - h
        lm, _ = forward(params, cfg, idx, targets)
        params[key][pos] = old
        out.append((lp - lm) / (2 * h))
    return np.array(out)


def generate(params: Params, cfg: TinyConfig, prompt_ids: np.ndarray, n_new: int, rng: np.random.Generator,
             temperature: float = 0.8) -> np.ndarray:
    """Sample ``n_new`` tokens after ``prompt_ids`` (1-D int array), one at a time."""
    if temperature <= 0:
        raise ValueError(f"temperature={temperature} must be > 0")
    ids = list(int(i) for i in prompt_ids)
    for _ in range(n_new):
        ctx = np.array(ids[-cfg.seq_len:], dtype=np.int64)[None, :]
        x = params["wte"][ctx] + params["wpe"][: ctx.shape[1]]
        for i in range(cfg.n_layers):
            h, _ = layernorm_fwd(x, params[f"h{i}.ln1.g"], params[f"h{i}.ln1.b"], cfg.ln_eps)
            q, k, v = np.split(h @ params[f"h{i}.attn.wqkv"] + params[f"h{i}.attn.bqkv"], 3, axis=-1)
            a, _ = attention_fwd(split_heads(q, cfg.n_heads), split_heads(k, cfg.n_heads), split_heads(v, cfg.n_heads))
            x = x + merge_heads(a) @ params[f"h{i}.attn.wo"] + params[f"h{i}.attn.bo"]
            h2, _ = layernorm_fwd(x, params[f"h{i}.ln2.g"], params[f"h{i}.ln2.b"], cfg.ln_eps)
            g, _ = gelu_fwd(h2 @ params[f"h{i}.mlp.w1"] + params[f"h{i}.mlp.b1"])
            x = x + g @ params[f"h{i}.mlp.w2"] + params[f"h{i}.mlp.b2"]
        hf, _ = layernorm_fwd(x, params["lnf.g"], params["lnf.b"], cfg.ln_eps)
        logits = (hf[0, -1] @ params["head"]).astype(np.float64) / temperature
        p = np.exp(logits - logits.max())
        ids.append(int(rng.choice(len(p), p=p / p.sum())))
    return np.array(ids[len(prompt_ids):], dtype=np.int64)
