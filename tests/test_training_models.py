"""Model catalog and model math (parameters, FLOPs, activation memory)."""
import json

import pytest

import trnsim.training as tr
from trnsim.training._data import load


def test_catalog_has_required_models():
    names = set(tr.models())
    required = {"tinygpt", "gpt2-small", "gpt3-small", "gpt3-xl", "gpt3-13b", "gpt3-175b", "llama2-7b", "llama2-13b",
                "llama2-70b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "mt-nlg-530b", "palm-540b",
                "chinchilla-70b", "megatron-1.7b", "megatron-1008b"}
    assert required <= names


def test_every_model_cites_a_known_source():
    doc = load("models.json")
    for name, rec in doc["models"].items():
        assert rec["source"] in doc["sources"], name
        if "published_params" in rec:
            assert rec["published_params"]["source"] in doc["sources"], name


@pytest.mark.parametrize("name,count", [
    ("gpt2-small", 124_439_808),      # released GPT-2 checkpoint
    ("llama2-7b", 6_738_415_616),     # released checkpoints (safetensors parameter counts)
    ("llama2-13b", 13_015_864_320),
    ("llama2-70b", 68_976_648_192),
    ("llama3.1-8b", 8_030_261_248),
    ("llama3.1-70b", 70_553_706_496),
    ("llama3.1-405b", 405_853_388_800),
])
def test_parameter_count_matches_released_checkpoints_exactly(name, count):
    assert tr.model(name).params == count


def test_computed_params_close_to_published_counts():
    for name, m in tr.models().items():
        if m.published_params is None:
            continue
        if m.family in ("megatron", "palm"):  # printed to 0.1B: within rounding (0.05B) or 1%
            assert abs(m.params - m.published_params) <= max(0.01 * m.published_params, 0.05e9), name
        else:  # nominal sizes (7B, 70B) are rounded
            assert m.params == pytest.approx(m.published_params, rel=0.10), name


def test_flops_match_megatron_formulas():
    """Narayanan (full recompute) 96*B*s*l*h^2*(1+s/6h+V/16lh); Korthikanti (model) 72*...*(1+s/6h+V/12lh)."""
    for name in ("megatron-1.7b", "megatron-145.6b", "gpt3-175b"):
        m = tr.model(name)
        s, l, h, V = 2048, m.n_layers, m.d_model, m.vocab_size
        hw = 96 * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
        model = 72 * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))
        assert m.flops_per_token(s, recompute="full") == pytest.approx(hw, rel=1e-9)
        assert m.flops_per_token(s) == pytest.approx(model, rel=1e-9)


def test_flops_rules_of_thumb():
    m = tr.model("llama2-7b")
    # without attention, training FLOPs/token are 6 x (matmul params + head): close to 6N
    assert m.flops_per_token(4096, attention=False) == pytest.approx(6 * m.params, rel=0.02)
    # recompute ordering
    f = [m.flops_per_token(4096, recompute=r) for r in ("none", "selective", "full")]
    assert f[0] < f[1] < f[2]
    # full recompute adds one forward of the layers: about 8N (scaling-book)
    assert f[2] / f[0] == pytest.approx(4 / 3, rel=0.03)


def test_palm_flops_formula():
    """PaLM: 6N + 12*L*H*Q*T per token."""
    m = tr.model("palm-540b")
    want = 6 * m.params + 12 * m.n_layers * m.n_heads * m.head_dim * 2048
    assert m.flops_per_token(2048) == pytest.approx(want, rel=2e-4)


def test_activation_memory_formula_gpt():
    """s*b*h*(34 + 5*a*s/h) bytes per layer without parallelism (Korthikanti et al. 2022)."""
    m = tr.model("gpt3-175b")
    s, b, h, a = 2048, 1, m.d_model, m.n_heads
    assert m.activation_bytes_per_layer(s, b) == pytest.approx(s * b * h * (34 + 5 * a * s / h))
    assert m.activation_bytes_per_layer(s, b, tp=8, sequence_parallel=True) == pytest.approx(
        s * b * h / 8 * (34 + 5 * a * s / h))
    assert m.activation_bytes_per_layer(s, b, tp=8, sequence_parallel=True, recompute="selective") == pytest.approx(
        34 * s * b * h / 8)
    assert m.activation_bytes_per_layer(s, b, recompute="full") == pytest.approx(2 * s * b * h)


def test_activation_memory_matches_korthikanti_figure7():
    """Relative activation memory (% of TP-only) from the paper's Figure 7, within 0.5 points."""
    v = load("training.json")["validation"]["korthikanti_fig7"]
    for name, seq_pct, sel_pct, both_pct, full_pct in v["rows"]:
        m = tr.model(name)
        base = m.activation_bytes_per_layer(v["seq_len"], 1, tp=v["tp"])
        def pct(sp, rc):
            return 100 * m.activation_bytes_per_layer(v["seq_len"], 1, tp=v["tp"], sequence_parallel=sp, recompute=rc) / base
        assert pct(True, "none") == pytest.approx(seq_pct, abs=0.5), name
        assert pct(False, "selective") == pytest.approx(sel_pct, abs=0.5), name
        assert pct(True, "selective") == pytest.approx(both_pct, abs=0.5), name
        assert pct(False, "full") == pytest.approx(full_pct, abs=0.5), name


def test_unknown_model_and_bad_recompute_give_clear_errors():
    with pytest.raises(KeyError, match="llama2-7b"):
        tr.model("llama2-7")
    with pytest.raises(ValueError, match="recompute"):
        tr.model("gpt2-small").flops_per_token(1024, recompute="some")


def test_model_records_are_frozen_and_summary_readable():
    m = tr.model("Llama3.1-70B")
    with pytest.raises(Exception):
        m.n_layers = 3  # type: ignore[misc]
    assert "70.6B params" in m.summary() and "8 KV" in m.summary()
