"""Notebook 02: what runs where, sequences built as real trnsim.nki kernels, timelines, and the panel."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pytest

import trnsim
from trnsim.perf.build import elementwise
from trnsim.perf.cost import instruction_cost_ns
from trnsim.course.ui.engines import EnginePanel
from trnsim.models.engines import PRESETS, STEP_KINDS, SequenceError, reference, run_sequence, validate_steps


def test_what_runs_where_rules():
    assert STEP_KINDS["matmul"].engines == ("tensor",)
    assert STEP_KINDS["exp"].engines == ("scalar",) and STEP_KINDS["fused"].engines == ("scalar",)
    assert "tensor" not in STEP_KINDS["scale"].engines
    with pytest.raises(SequenceError, match="cannot run on the Vector"):
        validate_steps([("exp", "vector")])
    with pytest.raises(SequenceError, match="GpSimd engine cannot access PSUM"):
        validate_steps([("matmul", "tensor"), ("scale", "gpsimd")])
    with pytest.raises(SequenceError, match="reads only SBUF"):
        validate_steps([("matmul", "tensor"), ("matmul", "tensor")])
    with pytest.raises(SequenceError, match="unknown operation"):
        validate_steps([("sqrt", "scalar")])


@pytest.mark.parametrize("preset", list(PRESETS))
def test_presets_compute_the_numpy_answer(preset):
    r = run_sequence(PRESETS[preset], 128, 256, tiles=2, target="trn1")
    assert r.max_rel_error < 1e-5
    trace = r.profile.trace
    engines = {ins.engine for ins in trace.instructions}
    for _, eng in PRESETS[preset]:
        assert eng in engines
    assert r.profile.instructions_by_engine["dma"] >= 4        # 2 loads + 2 stores at least


def test_reference_matches_hand_computation():
    x = np.arange(6, dtype=np.float64).reshape(2, 3) / 10
    w = np.eye(2)
    out = reference([("scale", "vector"), ("bias", "vector")], x, w, tiles=1)
    np.testing.assert_allclose(out, x * 2.0 + 0.5, rtol=1e-6)
    np.testing.assert_allclose(reference([("fused", "scalar")], x, w, 1), np.exp(2.0 * x + 0.5), rtol=1e-6)


def test_fusion_is_three_times_less_scalar_time():
    unf = run_sequence(PRESETS["unfused: scale, bias, exp on Scalar"], 128, 512)
    fus = run_sequence(PRESETS["fused: one activation"], 128, 512)
    busy_u, busy_f = unf.engine_busy_us()["scalar"], fus.engine_busy_us()["scalar"]
    assert busy_u / busy_f == pytest.approx(3.0, rel=0.02)
    # each activation/tensor_scalar costs its documented formula plus any dependency overhead
    tgt = trnsim.target("trn1")
    one = instruction_cost_ns(elementwise("activation", "scalar", 128, 512), tgt.core, tgt.chip)
    assert busy_f * 1e3 >= one
    assert fus.latency_us < unf.latency_us


def test_spreading_over_engines_overlaps_tiles():
    r = run_sequence(PRESETS["unfused, spread over engines"], 128, 512, tiles=4)
    tl = r.profile.timeline
    busy = r.engine_busy_us()
    assert busy["vector"] > 0 and busy["gpsimd"] > 0 and busy["scalar"] > 0
    # engines run at the same time: the sum of compute busy time exceeds the compute span
    comp = np.isin(tl.engine, [1, 2, 3])
    span = (tl.end_ns[comp].max() - tl.start_ns[comp].min()) / 1e3
    assert busy["vector"] + busy["gpsimd"] + busy["scalar"] > span
    assert "start ns" in r.instruction_table()


def test_bad_sizes_are_clear():
    with pytest.raises(SequenceError, match="one PSUM bank holds 2048 bytes .512 fp32 elements"):
        run_sequence([("matmul", "tensor")], 128, 1024)   # its [128, 1024] fp32 result does not fit one bank
    with pytest.raises(SequenceError, match="tiles=9"):
        run_sequence([("exp", "scalar")], 128, 64, tiles=9)


def test_engine_panel_headless():
    p = EnginePanel()
    assert p.steps == list(PRESETS["unfused: scale, bias, exp on Scalar"])
    lat_unfused = p.result.latency_us
    p.preset.value = "fused: one activation"
    assert p.steps == [("fused", "scalar")] and p.result.latency_us < lat_unfused
    p.tiles.value = 3
    assert p.result.tiles == 3 and "3 tile(s)" in p.summary
    p.kind[1].value = "square"
    p.engine[1].value = "vector"
    assert p.steps == [("fused", "scalar"), ("square", "vector")] and p.error == ""
    p.engine[1].value = "tensor"
    assert p.result is None and "cannot run on the Tensor" in p.error
    assert any(o["output_type"] == "stream" and o["name"] == "stderr" for o in p.out.outputs)
    p.engine[1].value = "gpsimd"
    assert p.error == "" and p.result.engine_busy_us()["gpsimd"] > 0
    assert any(o["output_type"] == "display_data" for o in p.out.outputs)


def test_engine_panel_update_speed(benchmark):
    p = EnginePanel()
    sizes = iter([256, 512, 768, 1024] * 10_000)
    benchmark(lambda: setattr(p.free, "value", next(sizes)))
    assert p.error == ""


def test_outline_marks_each_back_to_back_instruction():
    import matplotlib.pyplot as plt

    from trnsim.course.ui.engines import outline_instructions
    from trnsim.course.viz.timeline import plot_timeline

    r = run_sequence(PRESETS["unfused: scale, bias, exp on Scalar"], 128, 512)
    fig, ax = plt.subplots()
    plot_timeline(r.profile, ax)
    n_before = len(ax.collections)
    outline_instructions(ax, r.profile)
    ticks = ax.collections[n_before:]
    assert sum(len(c.get_segments()) for c in ticks) == 2      # 3 Scalar instructions -> 2 boundaries
    plt.close("all")


def test_run_sequence_speed(benchmark):
    r = benchmark(run_sequence, PRESETS["matmul, then fused activation"], 128, 512, 4)
    assert r.max_rel_error < 1e-5


def test_numerics_check_reports_both_ways():
    import dataclasses

    r = run_sequence(PRESETS["fused: one activation"], 128, 128)
    assert r.numerics_check().startswith("result matches numpy")
    bad = dataclasses.replace(r, max_rel_error=0.5)
    assert "DIFFERS from numpy" in bad.numerics_check() and "5.00e-01" in bad.numerics_check()


def test_partition_limit_comes_from_the_catalog():
    pmax = trnsim.target("trn1").core.tile.pmax
    with pytest.raises(SequenceError, match=f"1..{pmax} partitions"):
        run_sequence([("exp", "scalar")], pmax + 1, 64)
    r = run_sequence([("exp", "scalar")], 32, 64)
    assert r.partitions == 32 and r.numerics_check().startswith("result matches")


def test_choosing_an_operation_moves_its_engine_to_a_valid_one():
    p = EnginePanel(preset="fused: one activation")
    p.kind[1].value = "matmul"              # engine dropdown was "scalar": moved to the Tensor Engine
    assert p.engine[1].value == "tensor"
    assert p.error == "" and p.result.engine_busy_us()["tensor"] > 0
    p.kind[1].value = "square"
    assert p.engine[1].value in STEP_KINDS["square"].engines and p.error == ""
    p.engine[1].value = "scalar"            # an explicit wrong choice is explained, not corrected
    assert "cannot run on the Scalar" in p.error


def test_matmul_after_an_fp32_step_runs_in_fp32_at_a_quarter_rate():
    first = run_sequence([("matmul", "tensor")], 128, 512)
    after = run_sequence([("scale", "vector"), ("matmul", "tensor")], 128, 512)
    assert after.numerics_check().startswith("result matches")
    mm_first = [i for i, ins in enumerate(first.profile.trace.instructions) if ins.opcode == "nc_matmul"]
    mm_after = [i for i, ins in enumerate(after.profile.trace.instructions) if ins.opcode == "nc_matmul"]
    d = lambda r, i: r.profile.timeline.end_ns[i] - r.profile.timeline.start_ns[i]   # noqa: E731
    assert d(after, mm_after[0]) > 3 * d(first, mm_first[0])
    assert all(o.dtype == "float32" for o in after.profile.trace.instructions[mm_after[0]].reads)


def test_kernel_errors_do_not_point_into_library_files():
    with pytest.raises(SequenceError) as err:
        run_sequence([("matmul", "tensor")], 128, 1024)
    assert "engines.py" not in str(err.value) and "psum_bank_fmax" in str(err.value)
