"""Checker fixes from a learner review of notebooks 09 and 12: a hint names the slip the answer shows (the closest
known ratio, GiB versus GB among them), and the TP all-reduce problem at TP = 8 tells the ring-factor slips apart."""
from trnsim.course.check import expect_close
from trnsim.course.exercises.scaling import check_tp_decode_allreduce_bytes
from trnsim.training import model

N_CHUNKS = {32 / 31: "each pass sends N-1 of the N chunks"}


def _hints(result) -> str:
    return " ".join(result.hints)


def test_a_gib_read_as_gb_is_named_not_mistaken_for_the_chunk_count():
    want = 2 * 31 / 32 * 2**30
    r = expect_close("busbw bytes", 2 * 31 / 32 * 1e9, want, unit="B", factor_hints=N_CHUNKS)
    assert not r.passed and "GiB versus GB" in _hints(r) and "chunks" not in _hints(r)
    r = expect_close("busbw bytes", 2 * 2**30, want, unit="B", factor_hints=N_CHUNKS)
    assert not r.passed and "chunks" in _hints(r) and "GiB" not in _hints(r)


def test_the_closest_slip_wins_and_no_hint_is_forced():
    r = expect_close("t", 2.5, 5.0, factor_hints={2: "half of it", 1.9375: "2(p-1)/p"})
    assert "half of it" in _hints(r) and "2(p-1)/p" not in _hints(r)
    r = expect_close("t", 3.0, 5.0, factor_hints={2: "half of it"})
    assert "off by a factor" not in _hints(r)


def test_tp8_all_reduce_bytes_hints_tell_the_ring_factor_slips_apart():
    m = model("llama3.1-8b")
    per_buffer = 8 * m.d_model * 2
    right = m.n_layers * 2 * (2 * 7 / 8) * per_buffer
    assert check_tp_decode_allreduce_bytes(right, tp=8).passed
    twice = check_tp_decode_allreduce_bytes(m.n_layers * 2 * 2 * per_buffer, tp=8)
    once = check_tp_decode_allreduce_bytes(m.n_layers * 2 * per_buffer, tp=8)
    one_per_layer = check_tp_decode_allreduce_bytes(right / 2, tp=8)
    assert "not 2 times" in _hints(twice)
    assert "not the buffer once" in _hints(once)
    assert "two all-reduces per layer" in _hints(one_per_layer)


def test_prefix_slips_are_hinted_only_for_bytes_and_only_when_exact():
    """A fraction, a token count or a day count near 1.05x / 1.07x off is not a MiB / GiB slip (the notebook 11
    review: bubble 0.25, Chinchilla 1.5e12 tokens and 24.9 days were told 'GiB versus GB')."""
    from trnsim.course.exercises.training import check_chinchilla, check_model_state_gib
    from trnsim.course.exercises.scaling import check_bubble_fraction
    for r in (check_bubble_fraction(0.25), check_chinchilla(1.5e12), expect_close("days", 25.77, 24.0, unit="days"),
              check_model_state_gib(12.0)):
        assert not r.passed and "versus" not in _hints(r)
    assert "GiB versus GB" in _hints(check_model_state_gib(12.55 * 1e9 / 2**30))


def test_a_sensitive_plan_without_an_s40_basis_names_the_basis_not_a_transfer_route():
    """Review of notebook 13: every option said 'choose a transfer route', also the in-country ones, whose missing
    step is the s.40 basis."""
    import dataclasses

    from trnsim import deploy

    req = dataclasses.replace(deploy.PlanRequest(), data_class="sensitive")
    options = {o.key: o for o in deploy.plan(req, rank_by="residency")}
    in_country = options["in-country-gpu"]
    assert not in_country.residency.ok
    text = " ".join(in_country.reasons)
    assert "s.40 basis" in text and "transfer route" not in text
    ok = dataclasses.replace(req, sensitive_basis="medical_purposes")
    assert {o.key: o for o in deploy.plan(ok, rank_by="residency")}["in-country-gpu"].residency.ok
