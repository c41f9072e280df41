"""A small generated corpus for the tiny GPT (deterministic, no download).

Sentences come from a tiny English-like grammar (determiner, adjective, noun, verb,
preposition, ...) drawn with a seeded numpy generator, so the text has structure a model
can learn (spelling, word order, agreement of "a"/"the" with what follows) while staying
reproducible. Characters are the tokens; the alphabet has exactly 32 symbols, matching
``vocab_size`` of the ``tinygpt`` catalog entry.
"""
from __future__ import annotations

import numpy as np

ALPHABET = "\n abcdefghijklmnopqrstuvwxyz.,?!"
assert len(ALPHABET) == 32

_DET = ["the", "a", "every", "one", "that"]
_ADJ = ["small", "red", "quiet", "old", "busy", "bright", "tiny", "fast"]
_NOUN = ["core", "chip", "kernel", "tensor", "ring", "node", "model", "matrix", "token", "batch"]
_VERB = ["moves", "adds", "sends", "loads", "sums", "splits", "trains", "reads", "writes", "waits"]
_PREP = ["on", "to", "from", "with", "over", "near"]
_ADV = ["slowly", "twice", "again", "quickly", "gently"]


def _phrase(rng: np.random.Generator) -> str:
    words = [_DET[rng.integers(len(_DET))]]
    if rng.random() < 0.6:
        words.append(_ADJ[rng.integers(len(_ADJ))])
    words.append(_NOUN[rng.integers(len(_NOUN))])
    return " ".join(words)


def sentence(rng: np.random.Generator) -> str:
    s = f"{_phrase(rng)} {_VERB[rng.integers(len(_VERB))]} {_phrase(rng)}"
    if rng.random() < 0.5:
        s += f" {_PREP[rng.integers(len(_PREP))]} {_phrase(rng)}"
    if rng.random() < 0.3:
        s += f" {_ADV[rng.integers(len(_ADV))]}"
    return s + ("." if rng.random() < 0.85 else "!")


def generate_corpus(n_sentences: int = 2000, seed: int = 0) -> str:
    """``n_sentences`` sentences, one per line, from a seeded generator."""
    rng = np.random.default_rng(seed)
    return "\n".join(sentence(rng) for _ in range(n_sentences)) + "\n"


def encode(text: str) -> np.ndarray:
    """Characters -> token ids (int64). Raises ValueError naming the first unknown character."""
    index = {c: i for i, c in enumerate(ALPHABET)}
    try:
        return np.array([index[c] for c in text], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"character {exc.args[0]!r} is not in the 32-symbol alphabet {ALPHABET!r}") from None


def decode(ids: np.ndarray) -> str:
    return "".join(ALPHABET[int(i)] for i in ids)


def batches(data: np.ndarray, batch: int, seq_len: int, steps: int, seed: int = 0):
    """Yield ``steps`` (inputs, targets) pairs of shape (batch, seq_len) from random offsets."""
    rng = np.random.default_rng(seed)
    hi = len(data) - seq_len - 1
    for _ in range(steps):
        starts = rng.integers(0, hi, batch)
        x = np.stack([data[s:s + seq_len] for s in starts])
        y = np.stack([data[s + 1:s + seq_len + 1] for s in starts])
        yield x, y
