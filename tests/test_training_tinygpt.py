"""The numpy tiny GPT: gradients vs finite differences, learning, DP and TP equivalence."""
import numpy as np
import pytest

from trnsim.training import tinygpt as tg
from trnsim.training.corpus import ALPHABET, decode, encode, generate_corpus
from trnsim.training.parallel import shard_params, simulated_step_time, tp_loss_and_grads, train, unshard_params
from trnsim.training.systems import PlanError

SMALL = tg.TinyConfig(vocab_size=11, seq_len=6, d_model=8, n_heads=2, n_layers=2, d_ff=12)


def _perturbed_params(cfg, seed=1):
    p = tg.init_params(cfg, seed)
    rng = np.random.default_rng(seed + 10)
    return {k: v + rng.normal(0, 0.3, v.shape) for k, v in p.items()}  # break LayerNorm/bias symmetry


def test_backward_matches_finite_differences():
    cfg = SMALL
    p = _perturbed_params(cfg)
    rng = np.random.default_rng(0)
    idx, tgt = rng.integers(0, cfg.vocab_size, (3, 6)), rng.integers(0, cfg.vocab_size, (3, 6))
    _, g = tg.loss_and_grads(p, cfg, idx, tgt)
    assert set(g) == set(p)
    for k in p:
        shape = p[k].shape if k != "wpe" else (6, cfg.d_model)
        pos = [tuple(int(rng.integers(0, s)) for s in shape) for _ in range(5)]
        num = tg.numerical_grad(p, cfg, idx, tgt, k, pos)
        ana = np.array([g[k][q] for q in pos])
        np.testing.assert_allclose(ana, num, rtol=1e-5, atol=1e-8, err_msg=k)


def test_operator_backwards_match_finite_differences():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 5))
    dy = rng.normal(size=(2, 5))
    _, c = tg.gelu_fwd(x)
    h = 1e-6
    num = ((tg.gelu_fwd(x + h)[0] - tg.gelu_fwd(x - h)[0]) / (2 * h)) * dy
    np.testing.assert_allclose(tg.gelu_bwd(dy, c), num, rtol=1e-6)


def test_causal_attention_does_not_look_ahead():
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(1, 2, 5, 4)) for _ in range(3))
    out, _ = tg.attention_fwd(q, k, v)
    v2 = v.copy()
    v2[..., 4, :] += 10.0  # change only the last position
    out2, _ = tg.attention_fwd(q, k, v2)
    np.testing.assert_array_equal(out[..., :4, :], out2[..., :4, :])
    assert not np.allclose(out[..., 4, :], out2[..., 4, :])


def test_corpus_is_deterministic_and_round_trips():
    a, b = generate_corpus(50, seed=3), generate_corpus(50, seed=3)
    assert a == b and a != generate_corpus(50, seed=4)
    assert decode(encode(a)) == a
    assert len(ALPHABET) == 32
    with pytest.raises(ValueError, match="'Z' is not in the 32-symbol alphabet"):
        encode("Zebra")


def test_tiny_gpt_loss_falls():
    run = train(40, batch=8)
    assert run.losses[0] == pytest.approx(np.log(32), abs=0.05)  # uniform guess over 32 symbols
    assert run.losses[-5:].mean() < run.losses[0] - 0.8
    assert run.comm_s == 0.0 and run.compute_s > 0


def test_data_parallel_matches_single_core_and_replicas_stay_identical():
    cfg = tg.TinyConfig.from_spec("tinygpt", n_layers=1, seq_len=16)
    single = train(6, batch=8, config=cfg, dtype="float64")
    dp = train(6, mode="dp", cores=4, batch=8, config=cfg, dtype="float64")
    np.testing.assert_allclose(dp.losses, single.losses, rtol=1e-12, atol=1e-12)
    for k in single.params:
        np.testing.assert_allclose(dp.params[k], single.params[k], rtol=1e-9, atol=1e-12)
    assert dp.replicas_identical
    assert dp.comm_s > 0
    assert all(r.comm_s > 0 for r in dp.records)


def test_tensor_parallel_gradients_match_single_core():
    cfg = tg.TinyConfig(vocab_size=11, seq_len=6, d_model=8, n_heads=4, n_layers=2, d_ff=12)
    p = _perturbed_params(cfg)
    rng = np.random.default_rng(1)
    idx, tgt = rng.integers(0, 11, (2, 6)), rng.integers(0, 11, (2, 6))
    loss, g = tg.loss_and_grads(p, cfg, idx, tgt)
    shards = shard_params(p, cfg, 2)
    np.testing.assert_array_equal(unshard_params(shards, cfg)["h0.attn.wqkv"], p["h0.attn.wqkv"])
    tloss, tgrads, comm_s = tp_loss_and_grads(shards, cfg, idx, tgt)
    assert tloss == pytest.approx(loss, rel=1e-12)
    merged = unshard_params(tgrads, cfg)
    for k in g:
        np.testing.assert_allclose(merged[k], g[k], rtol=1e-9, atol=1e-12, err_msg=k)
    assert comm_s > 0


def test_tensor_parallel_training_matches_single_core():
    cfg = tg.TinyConfig.from_spec("tinygpt", n_layers=1, seq_len=16)
    single = train(5, batch=4, config=cfg, dtype="float64")
    tp = train(5, mode="tp", cores=4, batch=4, config=cfg, dtype="float64")
    np.testing.assert_allclose(tp.losses, single.losses, rtol=1e-12, atol=1e-12)
    # per step: 2 all-reduces forward + 2 backward per layer, all on the simulated ring
    assert tp.compute_s < single.compute_s


def test_parallel_errors_are_clear():
    with pytest.raises(PlanError, match="attention heads: 4 heads are not divisible by tp=3"):
        train(1, mode="tp", cores=3)
    with pytest.raises(PlanError, match="global batch 10 is not divisible by 4"):
        train(1, mode="dp", cores=4, batch=10)
    with pytest.raises(PlanError, match="exceeds the 32 NeuronCores"):
        train(1, mode="dp", cores=64, batch=64)
    with pytest.raises(ValueError, match="mode='pp'"):
        train(1, mode="pp")


def test_float32_runs_match_to_float32_tolerance():
    cfg = tg.TinyConfig.from_spec("tinygpt", n_layers=1, seq_len=16)
    single = train(8, batch=8, config=cfg)
    dp = train(8, mode="dp", cores=8, batch=8, config=cfg)
    tp = train(8, mode="tp", cores=2, batch=8, config=cfg)
    assert single.params["head"].dtype == np.float32
    np.testing.assert_allclose(dp.losses, single.losses, rtol=2e-5)
    np.testing.assert_allclose(tp.losses, single.losses, rtol=2e-5)


@pytest.mark.parametrize("mode,cores", [("single", 1), ("dp", 4), ("tp", 2)])
def test_timing_only_step_time_matches_the_functional_run(mode, cores):
    cfg = tg.TinyConfig.from_spec("tinygpt", n_layers=1, seq_len=16)
    run = train(2, mode=mode, cores=cores, batch=8, config=cfg)
    t = simulated_step_time(mode, cores, 8, config=cfg)
    assert t["compute"] == pytest.approx(run.records[-1].compute_s, rel=1e-12)
    assert t["comm"] == pytest.approx(run.records[-1].comm_s, rel=1e-9)


def test_generate_is_seeded_and_uses_the_alphabet():
    run = train(30, batch=8)
    prompt = encode("the ")
    a = tg.generate(run.params, run.config, prompt, 20, np.random.default_rng(0))
    b = tg.generate(run.params, run.config, prompt, 20, np.random.default_rng(0))
    np.testing.assert_array_equal(a, b)
    assert len(a) == 20 and a.min() >= 0 and a.max() < 32
    with pytest.raises(ValueError, match="temperature"):
        tg.generate(run.params, run.config, prompt, 1, np.random.default_rng(0), temperature=0)
