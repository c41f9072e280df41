"""Train the tiny GPT on one or several simulated NeuronCores.

* ``mode="single"``: one core.
* ``mode="dp"``: data parallel over ``cores`` ranks. Each rank holds a full replica, runs
  forward and backward on its slice of the batch, and the gradients are summed with the
  functional ring all-reduce of ``trnsim.cluster`` (chunks really move rank to rank);
  every rank then applies the same Adam step, so the replicas stay identical.
* ``mode="tp"``: Megatron tensor parallel over ``cores`` ranks. Attention heads and MLP
  columns are split: W_qkv and W_1 column-parallel, W_o and W_2 row-parallel; the partial
  outputs of each row-parallel matmul are all-reduced in the forward pass and the input
  gradients of each column-parallel matmul in the backward pass (2 + 2 per layer).
  Norms, embeddings and the output head are replicated.

Both reproduce the single-core losses to floating-point tolerance (the sums are the same,
only their order changes). Each step carries a simulated time: compute = the rank's
FLOPs / the NeuronCore's peak for the simulated dtype (catalog), plus the collective time
reported by trnsim.cluster.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from trnsim.training import comm
from trnsim.training import tinygpt as tg
from trnsim.training.corpus import batches, encode, generate_corpus
from trnsim.training.systems import PlanError, system

MODES = ("single", "dp", "tp")


@dataclass(frozen=True)
class StepRecord:
    """One optimizer step: mean loss and simulated seconds (compute and communication)."""

    step: int
    loss: float
    compute_s: float
    comm_s: float

    @property
    def step_s(self) -> float:
        return self.compute_s + self.comm_s


@dataclass
class TrainingRun:
    mode: str
    cores: int
    instance: str
    config: tg.TinyConfig
    records: list[StepRecord] = field(default_factory=list)
    params: tg.Params = field(default_factory=dict)
    replicas_identical: bool = True

    @property
    def losses(self) -> np.ndarray:
        return np.array([r.loss for r in self.records])

    @property
    def compute_s(self) -> float:
        return float(sum(r.compute_s for r in self.records))

    @property
    def comm_s(self) -> float:
        return float(sum(r.comm_s for r in self.records))

    @property
    def total_s(self) -> float:
        return self.compute_s + self.comm_s

    def summary(self) -> str:
        return (f"{self.mode} on {self.cores} core(s): loss {self.losses[0]:.3f} -> {self.losses[-1]:.3f} in "
                f"{len(self.records)} steps; simulated {1e3 * self.total_s:.2f} ms "
                f"(compute {1e3 * self.compute_s:.2f}, communication {1e3 * self.comm_s:.2f})")


# ------------------------------------------------------------------ FLOP counts
def step_flops(cfg: tg.TinyConfig, tokens: int, tp: int = 1) -> float:
    """Training FLOPs one rank spends on ``tokens`` tokens (3 x forward; layers split over tp)."""
    d, f, T = cfg.d_model, cfg.d_ff, cfg.seq_len
    layer = 2 * (3 * d * d + d * d + 2 * d * f) + 4 * T * d
    head = 2 * d * cfg.vocab_size
    return 3.0 * tokens * (cfg.n_layers * layer / tp + head)


# ------------------------------------------------------------------ tensor-parallel sharding
def _head_cols(cfg: tg.TinyConfig, tp: int, r: int) -> np.ndarray:
    w = cfg.d_model // tp
    return np.arange(r * w, (r + 1) * w)


def shard_params(params: tg.Params, cfg: tg.TinyConfig, tp: int) -> list[tg.Params]:
    """Megatron split of every layer's attention and MLP weights over ``tp`` ranks."""
    if cfg.n_heads % tp:
        raise PlanError(f"attention heads: {cfg.n_heads} heads are not divisible by tp={tp}; use tp dividing {cfg.n_heads}")
    if cfg.d_ff % tp:
        raise PlanError(f"d_ff={cfg.d_ff} is not divisible by tp={tp}")
    shards: list[tg.Params] = []
    d, f = cfg.d_model, cfg.d_ff
    for r in range(tp):
        s: tg.Params = {}
        q = _head_cols(cfg, tp, r)
        qkv = np.concatenate([q, d + q, 2 * d + q])
        fc = np.arange(r * f // tp, (r + 1) * f // tp)
        for k, v in params.items():
            if k.endswith("attn.wqkv"):
                s[k] = v[:, qkv].copy()
            elif k.endswith("attn.bqkv"):
                s[k] = v[qkv].copy()
            elif k.endswith("attn.wo"):
                s[k] = v[q, :].copy()
            elif k.endswith("mlp.w1"):
                s[k] = v[:, fc].copy()
            elif k.endswith("mlp.b1"):
                s[k] = v[fc].copy()
            elif k.endswith("mlp.w2"):
                s[k] = v[fc, :].copy()
            else:
                s[k] = v.copy()  # replicated
        shards.append(s)
    return shards


def unshard_params(shards: list[tg.Params], cfg: tg.TinyConfig) -> tg.Params:
    """Inverse of :func:`shard_params` (replicated tensors taken from rank 0)."""
    out: tg.Params = {}
    for k in shards[0]:
        parts = [s[k] for s in shards]
        if k.endswith("attn.wqkv") or k.endswith("attn.bqkv"):
            axis = -1
            thirds = [np.split(p, 3, axis=axis) for p in parts]
            out[k] = np.concatenate([np.concatenate([t[i] for t in thirds], axis=axis) for i in range(3)], axis=axis)
        elif k.endswith("attn.wo") or k.endswith("mlp.w2"):
            out[k] = np.concatenate(parts, axis=0)
        elif k.endswith("mlp.w1") or k.endswith("mlp.b1"):
            out[k] = np.concatenate(parts, axis=-1)
        else:
            out[k] = parts[0].copy()
    return out


def _allreduce(arrays: list[np.ndarray], instance: str) -> tuple[np.ndarray, float]:
    shape = arrays[0].shape
    outs, t = comm.all_reduce_arrays([a.ravel() for a in arrays], instance)
    return outs[0].reshape(shape), t


def tp_loss_and_grads(shards: list[tg.Params], cfg: tg.TinyConfig, idx: np.ndarray, targets: np.ndarray,
                      instance: str = "trn1.32xlarge") -> tuple[float, list[tg.Params], float]:
    """Tensor-parallel forward + backward. Returns (loss, per-rank gradients, comm seconds).

    Replicated operators (norms, embeddings, head) give identical results on every rank,
    so the simulation computes them once and hands the result to every rank.
    """
    tp = len(shards)
    hr = cfg.n_heads // tp
    B, T = idx.shape
    d = cfg.d_model
    p0 = shards[0]
    comm_s = 0.0
    x = p0["wte"][idx] + p0["wpe"][:T]
    caches = []
    for i in range(cfg.n_layers):
        c: dict = {"r": []}
        h, c["ln1"] = tg.layernorm_fwd(x, p0[f"h{i}.ln1.g"], p0[f"h{i}.ln1.b"], cfg.ln_eps)
        c["h1"] = h
        partial = []
        for r, s in enumerate(shards):
            qkv = h @ s[f"h{i}.attn.wqkv"] + s[f"h{i}.attn.bqkv"]
            q, k, v = np.split(qkv, 3, axis=-1)
            a, ac = tg.attention_fwd(tg.split_heads(q, hr), tg.split_heads(k, hr), tg.split_heads(v, hr))
            a = tg.merge_heads(a)
            c["r"].append({"attn": ac, "a": a})
            partial.append(a @ s[f"h{i}.attn.wo"])
        y, t = _allreduce(partial, instance)  # row-parallel output: all-reduce (forward "g")
        comm_s += t
        x = x + y + p0[f"h{i}.attn.bo"]
        h2, c["ln2"] = tg.layernorm_fwd(x, p0[f"h{i}.ln2.g"], p0[f"h{i}.ln2.b"], cfg.ln_eps)
        c["h2"] = h2
        partial = []
        for r, s in enumerate(shards):
            g, gc = tg.gelu_fwd(h2 @ s[f"h{i}.mlp.w1"] + s[f"h{i}.mlp.b1"])
            c["r"][r].update(gelu=gc, g=g)
            partial.append(g @ s[f"h{i}.mlp.w2"])
        y, t = _allreduce(partial, instance)
        comm_s += t
        x = x + y + p0[f"h{i}.mlp.b2"]
        caches.append(c)
    hf, lnf = tg.layernorm_fwd(x, p0["lnf.g"], p0["lnf.b"], cfg.ln_eps)
    loss, ce = tg.cross_entropy_fwd(hf @ p0["head"], targets)

    rep: tg.Params = {}  # gradients of replicated parameters (identical on every rank)
    grads = [dict() for _ in range(tp)]
    dlogits = tg.cross_entropy_bwd(ce)
    rep["head"] = hf.reshape(-1, d).T @ dlogits.reshape(-1, cfg.vocab_size)
    dx, rep["lnf.g"], rep["lnf.b"] = tg.layernorm_bwd(dlogits @ p0["head"].T, lnf)
    for i in reversed(range(cfg.n_layers)):
        c = caches[i]
        dflat = dx.reshape(-1, d)
        rep[f"h{i}.mlp.b2"] = dflat.sum(0)
        partial = []
        for r, s in enumerate(shards):
            rc = c["r"][r]
            grads[r][f"h{i}.mlp.w2"] = rc["g"].reshape(-1, rc["g"].shape[-1]).T @ dflat
            du = tg.gelu_bwd(dx @ s[f"h{i}.mlp.w2"].T, rc["gelu"])
            duf = du.reshape(-1, du.shape[-1])
            grads[r][f"h{i}.mlp.w1"] = c["h2"].reshape(-1, d).T @ duf
            grads[r][f"h{i}.mlp.b1"] = duf.sum(0)
            partial.append(du @ s[f"h{i}.mlp.w1"].T)
        dh2, t = _allreduce(partial, instance)  # column-parallel input gradient: all-reduce (backward "f")
        comm_s += t
        dln, rep[f"h{i}.ln2.g"], rep[f"h{i}.ln2.b"] = tg.layernorm_bwd(dh2, c["ln2"])
        dx = dx + dln
        dflat = dx.reshape(-1, d)
        rep[f"h{i}.attn.bo"] = dflat.sum(0)
        partial = []
        for r, s in enumerate(shards):
            rc = c["r"][r]
            grads[r][f"h{i}.attn.wo"] = rc["a"].reshape(-1, rc["a"].shape[-1]).T @ dflat
            da = tg.split_heads(dx @ s[f"h{i}.attn.wo"].T, hr)
            dq, dk, dv = tg.attention_bwd(da, rc["attn"])
            dqkv = np.concatenate([tg.merge_heads(dq), tg.merge_heads(dk), tg.merge_heads(dv)], axis=-1)
            dqf = dqkv.reshape(-1, dqkv.shape[-1])
            grads[r][f"h{i}.attn.wqkv"] = c["h1"].reshape(-1, d).T @ dqf
            grads[r][f"h{i}.attn.bqkv"] = dqf.sum(0)
            partial.append(dqkv @ s[f"h{i}.attn.wqkv"].T)
        dh1, t = _allreduce(partial, instance)
        comm_s += t
        dln, rep[f"h{i}.ln1.g"], rep[f"h{i}.ln1.b"] = tg.layernorm_bwd(dh1, c["ln1"])
        dx = dx + dln
    rep["wpe"] = np.zeros_like(p0["wpe"])
    rep["wpe"][:T] = dx.sum(0)
    rep["wte"] = np.zeros_like(p0["wte"])
    np.add.at(rep["wte"], idx.reshape(-1), dx.reshape(-1, d))
    for g in grads:
        for k, v in rep.items():
            g[k] = v
    return loss, grads, comm_s


def check_run(mode: str, cores: Any, batch: Any, cfg: tg.TinyConfig, instance: str) -> tuple[int, int]:
    """The rules a tiny-GPT run (``train``, ``simulated_step_time``, the step panel) must meet, one place for all:
    a known mode, whole numbers of cores (1 for 'single', at most one instance's) and sequences, a DP batch
    divisible by the cores, TP dividing the heads and d_ff. Returns (cores, batch) as ints; PlanError otherwise."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}: use one of {MODES}")
    for name, v in (("cores", cores), ("batch", batch)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer, float)) or not math.isfinite(v) \
                or v != int(v) or v < 1:
            raise PlanError(f"{name}={v!r}: must be a whole number >= 1")
    cores, batch = int(cores), int(batch)
    devices = system(instance).devices_per_node
    if cores > devices:
        raise PlanError(f"cores={cores} exceeds the {devices} NeuronCores of one {instance}")
    if mode == "single" and cores != 1:
        raise PlanError(f"mode 'single' runs on 1 core, got cores={cores}; use mode='dp' or 'tp'")
    if mode == "dp" and batch % cores:
        raise PlanError(f"batch: global batch {batch} is not divisible by {cores} data-parallel cores; "
                        f"use a multiple of {cores}")
    if mode == "tp":
        if cfg.n_heads % cores:
            raise PlanError(f"attention heads: {cfg.n_heads} heads are not divisible by tp={cores}; use tp dividing "
                            f"{cfg.n_heads}")
        if cfg.d_ff % cores:
            raise PlanError(f"d_ff={cfg.d_ff} is not divisible by tp={cores}")
    return cores, batch


def simulated_step_time(mode: str = "single", cores: int = 1, batch: int = 16, *,
                        config: tg.TinyConfig | None = None, instance: str = "trn1.32xlarge",
                        dtype: str = "float32") -> dict[str, float]:
    """Simulated seconds of one training step without running it: {"compute", "comm", "step"}.

    Same accounting as :func:`train`: compute = the rank's FLOPs / fp32 peak of one
    NeuronCore; comm = the ring all-reduces trnsim.cluster would time (DP: one all-reduce of
    all gradients; TP: 4 all-reduces of a (batch, seq, d_model) activation per layer).
    """
    from trnsim import cluster

    cfg = config or tg.TinyConfig.from_spec("tinygpt")
    cores, batch = check_run(mode, cores, batch, cfg, instance)
    sysspec = system(instance)
    peak = sysspec.peak_flops("fp32")
    item = np.dtype(dtype).itemsize
    tokens = batch * cfg.seq_len
    if mode == "single" or cores == 1:
        return {"compute": step_flops(cfg, tokens) / peak, "comm": 0.0, "step": step_flops(cfg, tokens) / peak}
    topo = comm._group(instance, cores, 1)
    if mode == "dp":
        n_par = tg.n_params(tg.init_params(cfg, 0, dtype=np.float32))
        comm_s = cluster.collective_time("all_reduce", n_par * item, topo, algorithm="ring").time_us * 1e-6
        compute = step_flops(cfg, tokens // cores) / peak
    else:
        one = cluster.collective_time("all_reduce", tokens * cfg.d_model * item, topo, algorithm="ring").time_us * 1e-6
        comm_s = 4 * cfg.n_layers * one
        compute = step_flops(cfg, tokens, cores) / peak
    return {"compute": compute, "comm": comm_s, "step": compute + comm_s}


# ------------------------------------------------------------------ training loops
@lru_cache(maxsize=8)
def _corpus_ids(seed: int) -> np.ndarray:
    ids = encode(generate_corpus(2000, seed))
    ids.flags.writeable = False
    return ids


def default_data(seed: int = 0) -> np.ndarray:
    """Token ids of the generated 2000-sentence corpus for ``seed`` (cached, read-only)."""
    return _corpus_ids(seed)


def train(steps: int = 100, *, mode: str = "single", cores: int = 1, batch: int = 16, lr: float = 3e-3,
          seed: int = 0, config: tg.TinyConfig | None = None, instance: str = "trn1.32xlarge",
          dtype: str = "float32", data: np.ndarray | None = None) -> TrainingRun:
    """Train the tiny GPT for ``steps`` Adam steps and record loss and simulated time per step.

    ``batch`` is the global batch (sequences); DP splits it evenly over ``cores``. The
    arithmetic runs in numpy ``dtype`` ("float32" or "float64"); the simulated compute time
    uses the catalog peak of one NeuronCore of ``instance`` for that dtype (fp32 peak for
    both: NeuronCores have no fp64), and the all-reduces move arrays of that dtype.
    """
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype={dtype!r}: use 'float32' or 'float64'")
    cfg = config or tg.TinyConfig.from_spec("tinygpt")
    cores, batch = check_run(mode, cores, batch, cfg, instance)
    sysspec = system(instance)
    peak = sysspec.peak_flops("fp32")
    data = default_data(seed) if data is None else data
    params = tg.init_params(cfg, seed, dtype=np.dtype(dtype))
    run = TrainingRun(mode, cores, instance, cfg)
    tokens = batch * cfg.seq_len
    if mode == "tp":
        shards = shard_params(params, cfg, cores)
        opts = [tg.Adam(lr=lr) for _ in range(cores)]
    else:
        replicas = [params] + [{k: v.copy() for k, v in params.items()} for _ in range(cores - 1)]
        opts = [tg.Adam(lr=lr) for _ in range(cores)]
    for step, (x, y) in enumerate(batches(data, batch, cfg.seq_len, steps, seed)):
        if mode == "tp":
            loss, grads, comm_s = tp_loss_and_grads(shards, cfg, x, y, instance)
            for s, g, o in zip(shards, grads, opts):
                o.step(s, g)
            compute_s = step_flops(cfg, tokens, cores) / peak
        else:
            n = cores
            xs, ys = np.split(x, n), np.split(y, n)
            results = [tg.loss_and_grads(p, cfg, xi, yi) for p, xi, yi in zip(replicas, xs, ys)]
            loss = float(np.mean([r[0] for r in results]))
            keys = list(results[0][1])
            comm_s = 0.0
            if n > 1:
                flat = [np.concatenate([r[1][k].ravel() for k in keys]) for r in results]
                summed, comm_s = comm.all_reduce_arrays(flat, instance)  # functional ring all-reduce
                grads_per_rank = []
                for vec in summed:
                    g, off = {}, 0
                    for k in keys:
                        size = results[0][1][k].size
                        g[k] = vec[off:off + size].reshape(results[0][1][k].shape) / n
                        off += size
                    grads_per_rank.append(g)
            else:
                grads_per_rank = [results[0][1]]
            for p, g, o in zip(replicas, grads_per_rank, opts):
                o.step(p, g)
            compute_s = step_flops(cfg, tokens // n) / peak
        run.records.append(StepRecord(step, float(loss), compute_s, comm_s))
    if mode == "tp":
        run.params = unshard_params(shards, cfg)
    else:
        run.params = replicas[0]
        run.replicas_identical = all(np.array_equal(replicas[0][k], r[k]) for r in replicas[1:] for k in replicas[0])
    return run
