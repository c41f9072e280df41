"""Notebook 07 panels and figures, driven headlessly."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from trnsim.models.numerics import accumulate, decode, float_format, matmul_accuracy, tensor_speed  # noqa: E402
from trnsim.course.ui.numerics import AccumulationPanel, BitsPanel, describe, run_sums  # noqa: E402
from trnsim.course.viz.numerics import (plot_accumulation, plot_accuracy_speed, plot_bit_layout,  # noqa: E402
                                 plot_number_line, plot_relative_spacing)


def test_describe_pure():
    d, text = describe(0.1, "bf16")
    assert d.value == pytest.approx(0.10009765625) and "stochastic rounding" in text
    _, text = describe(1000.0, "fp8_e4m3")
    assert "overflows to inf" in text and "240" in text
    _, text = describe(0.5, "fp16")
    assert "rounding error: 0" in text and "stochastic" not in text     # exactly representable
    with pytest.raises(ValueError, match="finite"):
        describe(float("nan"), "bf16")


def test_bits_panel_headless():
    panel = BitsPanel()
    assert panel.result.fmt.name == "bf16" and panel.result.value == 3.140625
    assert len(panel.out.outputs) == 2 and panel.error == ""
    panel.value.value = 1000.0
    assert "ulp) here: 4" in panel.summary
    panel.fmt.value = "fp8_e4m3"
    assert panel.result.kind == "inf" and "overflows" in panel.summary
    panel.fmt.value = "fp8_e4m3fn"
    assert panel.result.kind == "nan"
    panel.fmt.value = "fp32"
    assert panel.result.bit_string.count("1") > 0 and "FP32 bits" in panel.summary
    panel.value.value = float("inf")
    assert "finite" in panel.error and panel.out.outputs[0]["name"] == "stderr"


def test_run_sums_and_errors():
    res = run_sums(500, 1e-3, 1.0, "bf16")
    assert set(res) == {"BF16, round to nearest", "BF16, stochastic rounding", "FP32 (PSUM)"}
    rne, sr, f32 = res.values()
    assert np.all(rne.partial[-1] == 1.0)                          # stuck: increments below half an ulp
    assert abs(sr.partial[-1].mean() - sr.exact[-1].mean()) < 0.1
    assert f32.relative_error < 1e-5
    assert list(run_sums(10, 1.0, 0.0, "fp32")) == ["FP32, round to nearest"]
    with pytest.raises(ValueError, match="largest FP8 E4M3"):
        run_sums(4000, 1.0, 0.0, "fp8_e4m3")
    with pytest.raises(ValueError, match="steps"):
        run_sums(0, 1.0, 0.0, "bf16")


def test_accumulation_panel_headless():
    panel = AccumulationPanel(steps=500)
    assert len(panel.results) == 3 and "relative error" in panel.summary
    panel.acc.value = "fp32"
    assert len(panel.results) == 1
    panel.acc.value = "fp8_e4m3"
    panel.increment.value = 1.0
    panel.steps.value = 4000
    assert "largest FP8 E4M3" in panel.error and panel.results == {}
    panel.steps.value = 100
    assert panel.error == "" and "FP8 E4M3, stochastic rounding" in panel.results


def test_figures_draw_something():
    fig, axs = plt.subplots(5, 1, figsize=(7, 14))
    plot_bit_layout(axs[0], decode(-0.15625, "fp16"))
    assert len(axs[0].patches) == 16 and "FP16" in axs[0].get_title()
    plot_number_line(axs[1], 0.1, "bf16", 0.4)
    assert any("SR: up" in t.get_text() for t in axs[1].texts)
    plot_relative_spacing(axs[2], ("bf16", "fp8_e4m3"))
    assert len(axs[2].get_lines()) >= 3           # two curves plus the fp8 overflow marker
    vals = np.full((100, 2), 1e-3)
    plot_accumulation(axs[3], [("a", accumulate(vals, "bf16", start=1.0)), ("b", accumulate(vals, "fp32", start=1.0))])
    assert len(axs[3].get_lines()) == 3           # two curves plus the dotted "exact (error 0)" floor line
    assert any("exact (error 0)" in t.get_text() for t in axs[3].texts)
    pts = [(float_format(n).label, tensor_speed(n, "trn2").tensor_tflops,
            matmul_accuracy(n, k=32, m=4, n=4).relative_error) for n in ("fp32", "bf16")]
    plot_accuracy_speed(axs[4], pts, "trn2")
    assert len(axs[4].collections) == 2
    plt.close(fig)


def test_bits_panel_callback_speed(benchmark):
    panel = BitsPanel()
    benchmark(panel.update)
    assert panel.result is not None


def test_accumulation_panel_callback_speed(benchmark):
    panel = AccumulationPanel()
    benchmark(panel.update)
    assert panel.error == ""


def test_run_sums_speed(benchmark):
    res = benchmark(run_sums, 2000, 1e-3, 1.0, "bf16")
    assert len(res) == 3


def test_exact_value_shows_the_adjacent_representable_values():
    _, text = describe(1000.0, "bf16")
    assert "exactly representable; adjacent values 996 and 1004" in text
    assert "neighbours 1000 and 1000" not in text
    _, text = describe(1024.0, "bf16")                 # a power of two: the spacing halves below it
    assert "adjacent values 1020 and 1032" in text
    _, text = describe(-1024.0, "bf16")
    assert "adjacent values -1032 and -1020" in text
    _, text = describe(1.0, "fp32")                    # enough digits to tell them from 1
    assert "adjacent values 0.99999994 and 1.00000012" in text
    _, text = describe(240.0, "fp8_e4m3")              # the largest finite number has nothing above
    assert "adjacent values 224 and none (240 is the largest finite FP8 E4M3 number)" in text
    _, text = describe(3.14159, "bf16")                # inexact: the current text
    assert "neighbours 3.140625 and 3.15625" in text and "exactly" not in text
    panel = BitsPanel(value=1000.0)
    assert "adjacent values 996 and 1004" in panel.summary


def test_number_line_ticks_are_the_real_neighbours():
    # an exact value: ticks at its neighbours (not x +- 1 and 3 spacings) and the title gives ulp(x), not 2 ulp
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from trnsim.course.viz.numerics import plot_number_line

    fig, ax = plt.subplots()
    plot_number_line(ax, 1000.0, "bf16")
    labels = {t.get_text() for t in ax.texts}
    assert {"996", "1004", "992", "1008"} <= labels and "988" not in labels
    assert "spacing above x: 4" in ax.get_title()
    ax.clear()
    plot_number_line(ax, 1.0, "bf16")   # below a power of two the spacing halves
    assert "0.9960938" in {t.get_text() for t in ax.texts}
    ax.clear()
    plot_number_line(ax, 1000.0, "fp32")   # fp32 neighbours need 9 digits to be told apart
    ticks = [t.get_text() for t in ax.texts if not t.get_text().startswith("x =")]
    assert len(set(ticks)) == len(ticks) == 4 and "999.999939" in ticks
    plt.close(fig)


def test_values_just_beyond_the_largest_finite_number_are_explained_not_crashed():
    from trnsim.course.ui.numerics import BitsPanel, describe

    for x, fmt, big in ((245.0, "fp8_e4m3", "240"), (65510.0, "fp16", "65504")):
        text = describe(x, fmt)[1]
        assert f"beyond the largest finite" in text and big in text and "inf" not in text
        panel = BitsPanel(x, fmt)
        assert panel.error == "" and "rounds to it" in panel.summary
