"""trnsim.models.numerics: format facts, bit decoding, rounding (nearest and stochastic), sums, speed rows;
and notebook 07's checkers."""
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trnsim.course.exercises.numerics import (check_format_facts, check_largest_exact_integer, check_stall_point, check_ulp,
                                       largest_exact_integer, sum_of_ones_stalls_at)
from trnsim.models.numerics import (FORMATS, accumulate, decode, decode_bits, error_sweep, float_format, format_table,
                             matmul_accuracy, neighbours, relative_error, representable, round_nearest, round_stochastic,
                             round_to, stochastic_up_probability, summation_error_bound, tensor_speed, ulp)


def test_format_facts_match_the_standards():
    # widths and limits from the format definitions (IEEE 754, bfloat16 paper, FP8 paper)
    f32, bf16, f16 = FORMATS["fp32"], FORMATS["bf16"], FORMATS["fp16"]
    assert (f32.exponent_bits, f32.mantissa_bits, f32.bias) == (8, 23, 127)
    assert (bf16.exponent_bits, bf16.mantissa_bits, bf16.bias) == (8, 7, 127)
    assert (f16.exponent_bits, f16.mantissa_bits, f16.bias) == (5, 10, 15)
    assert f16.max_normal == 65504.0 and bf16.epsilon == 2.0 ** -7 and f32.epsilon == 2.0 ** -23
    e4, e4fn, e5 = FORMATS["fp8_e4m3"], FORMATS["fp8_e4m3fn"], FORMATS["fp8_e5m2"]
    assert e4.max_normal == 240.0 and e4.has_inf
    assert e4fn.max_normal == 448.0 and not e4fn.has_inf
    assert e5.max_normal == 57344.0 and e5.min_normal == 2.0 ** -14 and e5.has_inf
    for f in FORMATS.values():
        assert f.bits == 1 + f.exponent_bits + f.mantissa_bits
        assert f.epsilon == 2.0 ** (1 - f.precision_bits)
        assert f.min_normal == 2.0 ** (1 - f.bias)
        assert f.unit_roundoff == f.epsilon / 2


def test_lookup_aliases_and_error():
    assert float_format("bfloat16") is FORMATS["bf16"]
    assert float_format("float8_e5m2") is FORMATS["fp8_e5m2"]
    with pytest.raises(ValueError, match="known formats: fp32"):
        float_format("fp4")


def test_decode_known_values():
    d = decode(1.0, "bf16")
    assert (d.sign, d.exponent, d.mantissa, d.kind) == (0, 127, 0, "normal")
    assert d.bit_string == "0 01111111 0000000"
    d = decode(-2.5, "fp8_e5m2")            # -1.25 x 2^1
    assert (d.sign, d.exponent, d.mantissa, d.value) == (1, 16, 1, -2.5)
    assert decode(1e-40, "fp32").kind == "subnormal"
    assert decode(0.0, "fp16").kind == "zero"
    assert decode(1000.0, "fp8_e4m3").kind == "inf"
    assert decode(1000.0, "fp8_e4m3fn").kind == "nan"      # no inf in the FN variant
    assert "2^(128 - 127) x (1 + 73/128)" in decode(3.14159, "bf16").formula


@pytest.mark.parametrize("name", ["bf16", "fp16", "fp8_e4m3", "fp8_e4m3fn", "fp8_e5m2"])
def test_field_formula_reproduces_every_value(name):
    f = FORMATS[name]
    for bits in range(0, 2 ** f.bits, 1 if f.bits == 8 else 97):
        d = decode_bits(bits, f)
        if d.kind in ("nan", "inf"):
            continue
        m = d.mantissa / 2 ** f.mantissa_bits
        v = 2.0 ** (d.exponent - f.bias) * (1 + m) if d.kind == "normal" else 2.0 ** (1 - f.bias) * m
        assert (-v if d.sign else v) == d.value, (bits, d)
    with pytest.raises(ValueError, match="does not fit"):
        decode_bits(2 ** f.bits, f)


def test_representable_and_ulp_agree():
    vals = representable("fp8_e4m3")
    assert vals.max() == 240.0 and vals.min() == -240.0
    pos = vals[vals > 0]
    gaps = np.diff(pos)
    np.testing.assert_array_equal(gaps, ulp(pos[:-1], "fp8_e4m3"))
    assert float(ulp(1000.0, "bf16")) == 4.0 and float(ulp(1.0, "fp32")) == 2.0 ** -23
    assert float(ulp(1e-45, "fp32")) == FORMATS["fp32"].min_subnormal


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=-1e4, max_value=1e4, allow_nan=False).filter(lambda v: abs(v) > 1e-3))
def test_round_to_nearest_error_within_unit_roundoff(x):
    for name in ("bf16", "fp16", "fp8_e5m2"):
        f = FORMATS[name]
        if abs(x) > f.max_normal:
            continue
        assert float(relative_error(x, f)) <= f.unit_roundoff * (1 + 1e-12)
        lo, hi = neighbours(x, f)
        assert lo <= x <= hi and float(round_nearest(x, f)) in (lo, hi)


def test_round_nearest_ties_to_even():
    # 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties go to the even mantissa (1.0)
    assert float(round_nearest(1 + 2 ** -8, "bf16")) == 1.0
    assert float(round_nearest(1 + 3 * 2 ** -8, "bf16")) == 1 + 2 * 2 ** -7


@pytest.mark.parametrize("name", ["bf16", "fp16", "fp8_e4m3"])
def test_stochastic_rounding_is_unbiased(name):
    f = FORMATS[name]
    rng = np.random.default_rng(1)
    for x in (1 + 0.3 * f.epsilon, -7.3 * (1 + 0.11 * f.epsilon), 0.1):
        lo, hi = neighbours(x, f)
        n = 200_000
        r = round_stochastic(np.full(n, x), f, rng).astype(np.float64)
        assert set(np.unique(r)) <= {lo, hi}
        p = stochastic_up_probability(x, f)
        stderr = (hi - lo) * math.sqrt(p * (1 - p) / n)
        assert abs(r.mean() - x) < 5 * stderr + 1e-15, (x, r.mean())
        # round to nearest is biased for the same input (unless x is exactly representable)
        if lo != hi and p not in (0.5,):
            assert abs(float(round_nearest(x, f)) - x) > 5 * stderr


def test_stochastic_rounding_is_seeded_and_checks_input():
    a = round_stochastic(np.full(100, 1.001), "bf16", np.random.default_rng(3))
    b = round_stochastic(np.full(100, 1.001), "bf16", np.random.default_rng(3))
    np.testing.assert_array_equal(a.view(np.uint16), b.view(np.uint16))
    assert a.dtype == np.dtype(ml_dtypes.bfloat16)
    with pytest.raises(ValueError, match="largest FP8 E4M3"):
        round_stochastic(300.0, "fp8_e4m3", np.random.default_rng(0))
    with pytest.raises(TypeError, match="default_rng"):
        round_stochastic(1.0, "bf16", rng=None)
    with pytest.raises(ValueError, match="needs rng"):
        round_to(1.0, "bf16", "stochastic")
    with pytest.raises(ValueError, match="unknown rounding mode"):
        round_to(1.0, "bf16", "truncate")


def test_exact_values_are_kept_by_stochastic_rounding():
    r = round_stochastic(np.array([1.0, -0.5, 0.0, 3.0]), "fp8_e4m3", np.random.default_rng(0))
    np.testing.assert_array_equal(r.astype(np.float64), [1.0, -0.5, 0.0, 3.0])


def test_bf16_sum_of_ones_stalls_at_256_but_fp32_does_not():
    bf = accumulate(np.ones(1000), "bf16")
    assert bf.total == 256.0 and bf.exact_total == 1000.0
    assert accumulate(np.ones(1000), "fp32").total == 1000.0
    assert sum_of_ones_stalls_at("bf16") == 256 and sum_of_ones_stalls_at("fp16") == 2048


def test_bf16_fast_loop_matches_ml_dtypes_rounding():
    rng = np.random.default_rng(0)
    v = rng.standard_normal((500, 4)) * 10.0 ** rng.uniform(-3, 3, (500, 4))
    got = accumulate(v, "bf16").partial
    s = np.zeros(4, np.float32)
    want = []
    for k in range(500):
        s = (s + v[k].astype(np.float32)).astype(ml_dtypes.bfloat16).astype(np.float32)
        want.append(s.copy())
    np.testing.assert_array_equal(got, np.array(want, dtype=np.float64))


def test_stochastic_accumulation_keeps_small_updates():
    # 1e-3 is below half an ulp of 1 in bf16 (2^-8): round to nearest never moves, SR tracks the sum
    vals = np.full((3000, 32), 1e-3)
    rne = accumulate(vals, "bf16", start=1.0)
    sr = accumulate(vals, "bf16", "stochastic", np.random.default_rng(0), start=1.0)
    assert np.all(rne.partial[-1] == 1.0)
    exact = rne.exact[-1, 0]
    assert abs(sr.partial[-1].mean() - exact) / exact < 0.02
    fp32 = accumulate(vals, "fp32", start=1.0)
    assert abs(fp32.partial[-1, 0] - exact) / exact < summation_error_bound(3000, "fp32")


def test_summation_bound_holds():
    rng = np.random.default_rng(2)
    v = rng.uniform(0, 1, (2000, 8))
    for name in ("bf16", "fp16", "fp32"):
        r = accumulate(v, name)
        rel = np.abs(r.partial[-1] - r.exact[-1]) / r.exact[-1]
        assert np.all(rel <= summation_error_bound(2000, name) * 1.01)


def test_accumulate_rejects_bad_input():
    with pytest.raises(ValueError, match="non-empty"):
        accumulate(np.ones((0,)), "bf16")
    with pytest.raises(ValueError, match="needs rng"):
        accumulate(np.ones(3), "bf16", "stochastic")


def test_error_sweep_flags_overflow():
    sw = error_sweep("fp8_e4m3", 1.0, 1000.0, 200, rng=np.random.default_rng(0))
    assert sw.overflow.any() and np.isnan(sw.relative_error[sw.overflow]).all()
    assert np.nanmax(sw.relative_error) <= FORMATS["fp8_e4m3"].unit_roundoff
    with pytest.raises(ValueError, match="0 < lo < hi"):
        error_sweep("bf16", 0.0, 1.0)


def test_matmul_accuracy_orders_formats():
    errs = {n: matmul_accuracy(n, k=256, m=16, n=16, rng=np.random.default_rng(0)).relative_error
            for n in ("fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2")}
    assert errs["fp32"] < 1e-5 < errs["fp16"] < errs["bf16"] < errs["fp8_e4m3"] < errs["fp8_e5m2"] < 0.2
    # error of a dot product with rounded inputs is of the order of the unit roundoff
    for n in ("bf16", "fp8_e4m3"):
        assert 0.1 * FORMATS[n].unit_roundoff < errs[n] < 2 * FORMATS[n].unit_roundoff
    with pytest.raises(ValueError, match="overflow"):
        matmul_accuracy("fp8_e4m3", k=8, m=2, n=2, scale=1e4)


def test_tensor_speed_from_catalog():
    import trnsim
    assert tensor_speed("fp32", "trn1").tensor_tflops == trnsim.core("NC-v2").tensor_tflops["fp32"]
    assert tensor_speed("fp32", "trn1").speedup_vs_bf16 == pytest.approx(0.25, rel=0.01)
    assert tensor_speed("fp8_e4m3", "trn1").speedup_vs_bf16 == 1.0     # cFP8 at the BF16 rate on NC-v2
    assert tensor_speed("fp8_e5m2", "trn2").speedup_vs_bf16 == 2.0     # NC-v3 doubles FP8
    assert "as of" in tensor_speed("bf16", "trn2").source


def test_format_table_lists_formats():
    t = format_table()
    lines = t.splitlines()
    assert len(lines) == 2 + 5 and lines[3].startswith("BF16") and "6.55e+04" in lines[4]


def test_checkers():
    assert check_format_facts(256, 256, 4)
    assert check_format_facts(2048, 2048, 0.5, fmt="fp16")          # notebook 07's exercise
    assert not check_format_facts(256, 256, 4, fmt="fp16")          # the bf16 answers the notebook printed
    assert "expected a number" in str(check_stall_point([256])) and check_stall_point("256")
    assert largest_exact_integer("fp16") == 2048
    assert "implicit leading 1" in str(check_largest_exact_integer(128))
    assert "fp32 answer" in str(check_largest_exact_integer(2 ** 24))
    assert "round-half-to-even" in str(check_stall_point(257))
    assert "next binade up" in str(check_ulp(1000.0, 8))
    assert "only a bound" in str(check_ulp(1000.0, 1000 * 2 ** -7))
    assert "not answered" in str(check_format_facts(None, None, None))
