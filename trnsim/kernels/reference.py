"""numpy definitions of what each reference kernel computes (float32 math), for tests and notebooks."""
from __future__ import annotations

import numpy as np


def _f32(*xs):
    return [np.asarray(x, dtype=np.float32) for x in xs]


def matmul(lhsT, rhs) -> np.ndarray:
    a, b = _f32(lhsT, rhs)
    return a.T @ b


def softmax(x) -> np.ndarray:
    (x,) = _f32(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def rmsnorm(x, gamma, eps: float = 1e-6) -> np.ndarray:
    x, g = _f32(x, gamma)
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * g


def layernorm(x, gamma, beta, eps: float = 1e-5) -> np.ndarray:
    x, g, b = _f32(x, gamma, beta)
    mu = x.mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=1, keepdims=True) + eps) * g + b


def attention(q_t, k_t, v) -> np.ndarray:
    q_t, k_t, v = _f32(q_t, k_t, v)
    s = q_t.T @ k_t / np.sqrt(q_t.shape[0])
    return softmax(s) @ v


__all__ = ["matmul", "softmax", "rmsnorm", "layernorm", "attention"]
