"""Notebook 08's pure comparison layer, its figures and its widget panel (driven headlessly)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

import trnsim
from trnsim.models import compare
from trnsim.course.exercises import foundations as ex
from trnsim.course.ui.instances import InstancePanel
from trnsim.course.viz import chips as vc


def test_metric_rows_compute_from_catalog():
    rows = compare.metric_rows(["trn1.32xlarge", "inf2.48xlarge"], "tflops_per_usd")
    by = {r.instance: r for r in rows}
    assert by["trn1.32xlarge"].value == pytest.approx(16 * 190 / 21.50)
    assert by["inf2.48xlarge"].value == pytest.approx(12 * 190 / 12.981)
    assert by["trn1.32xlarge"].price_as_of == "2023-03-21"


def test_missing_price_gives_reason_not_number():
    (row,) = compare.metric_rows(["trn2.48xlarge"], "tflops_per_usd")
    assert row.value is None and row.reason == "no On-Demand price in the sources"
    text = compare.format_rows([row], "tflops_per_usd")
    assert "n/a" in text and "no On-Demand price in the sources" in text


def test_missing_dtype_gives_reason():
    (row,) = compare.metric_rows(["inf1.xlarge"], "peak_tflops", dtype="fp8")
    assert row.value is None and "FP8" in row.reason


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown metric 'speed'"):
        compare.metric_rows(["trn1.2xlarge"], "speed")
    with pytest.raises(ValueError, match="at least one instance"):
        compare.metric_rows([], "price")
    with pytest.raises(ValueError, match="Did you mean"):
        compare.metric_rows(["trn1.2xlarg"], "price")


def test_format_rows_sorts_best_first():
    rows = compare.metric_rows(["trn1.32xlarge", "inf2.xlarge", "trn1.2xlarge"], "price")
    lines = compare.format_rows(rows, "price").splitlines()[1:]
    assert [ln.split()[0] for ln in lines] == ["inf2.xlarge", "trn1.2xlarge", "trn1.32xlarge"]  # cheapest first


def test_generation_table_ridge_points():
    rows = {r.year_label: r for r in compare.generation_table()}
    trn2 = trnsim.chip("trn2")
    assert rows["trainium2"].flops_per_byte == pytest.approx(667e12 / (trn2.hbm_gbytes_per_s * 1e9))
    assert "Trainium3" in compare.format_generation_table()


def test_figures_draw(tmp_path):
    fig, axs = plt.subplots(2, 2)
    vc.plot_generation_compute(axs[0, 0])
    vc.plot_generation_bar(axs[0, 1], "hbm_gbytes_per_s", "GB/s")
    vc.plot_metric_bars(axs[1, 0], compare.metric_rows(["trn1.2xlarge", "trn2.48xlarge"], "price"), "price")
    vc.plot_price_performance(axs[1, 1])
    assert len(axs[0, 0].patches) == 13  # FP32 x4 chips, BF16 x5, FP8 x4 (Inferentia has only BF16/FP16)
    fig.savefig(tmp_path / "x.png")
    plt.close(fig)


def test_panel_driven_headlessly():
    panel = InstancePanel()
    assert panel.error == "" and panel.rows
    panel.metric.value = "device_memory_gib"
    assert {r.instance: r.value for r in panel.rows}["trn2.48xlarge"] == 1536
    panel.instances.value = ("inf2.xlarge",)
    assert [r.instance for r in panel.rows] == ["inf2.xlarge"]
    panel.instances.value = ()
    assert panel.rows == [] and "at least one instance" in panel.error
    panel.instances.value = ("trn1.32xlarge",)
    assert panel.error == ""
    plt.close("all")


def test_exercise_checkers_pass_right_and_hint_wrong():
    assert ex.check_flops_per_cycle(32768)
    wrong = ex.check_flops_per_cycle(16384)
    assert not wrong and "multiply and one add" in str(wrong)
    assert ex.check_peak_tflops(91.75)
    assert not ex.check_peak_tflops(91750)
    assert "factor of 1,000" in str(ex.check_peak_tflops(91750))
    assert ex.check_instance_choice(100, "inf1.24xlarge")  # 128 GiB for $4.721/h
    assert ex.check_instance_choice(150, "inf2.24xlarge")  # 192 GiB; inf1.24xlarge no longer fits
    too_small = ex.check_instance_choice(100, "inf2.xlarge")
    assert not too_small and "32 GiB" in str(too_small)
    trn2, trn3 = trnsim.chip("trn2"), trnsim.chip("trn3")
    assert ex.check_ridge_points(1299e3 / trn2.hbm_gbytes_per_s, 2517e3 / trn3.hbm_gbytes_per_s)
    assert not ex.check_ridge_points(1299 / 2900, 2517 / 4.9)
    # the BF16 ridge (printed in the table before the exercise) is named as the slip, per chip
    bf16 = ex.check_ridge_points(667e3 / trn2.hbm_gbytes_per_s, 671e3 / trn3.hbm_gbytes_per_s)
    assert not bf16 and str(bf16).count("that is the BF16 ridge point") == 2



def test_peak_tflops_names_the_per_chip_slip():
    per_core = trnsim.core("NC-v2").tensor_peak_tflops("bf16")
    cores = trnsim.chip("trn1").neuroncores
    assert cores == trnsim.chip("inf2").neuroncores == 2
    assert str(ex.check_peak_tflops(per_core)).endswith(": 91.75 TFLOPS is right")
    for chip_figure in (cores * per_core, 183.5, trnsim.chip("trn1").peak_tflops["bf16"]):  # 190: the vendor's
        r = ex.check_peak_tflops(chip_figure)
        assert not r
        assert any("per-chip figure" in h and "per NeuronCore" in h and f"divide by {cores}" in h
                   for h in r.hints), str(r)
    for other in (per_core / 2, 91750, 120):
        assert not any("per-chip" in h for h in ex.check_peak_tflops(other).hints)

def test_panel_output_is_widget_state_with_figure_and_text():
    panel = InstancePanel(selection=("trn1.2xlarge",), metric="price")
    kinds = [o.get("output_type") for o in panel.out.outputs]
    assert kinds == ["display_data", "stream"]
    assert "image/png" in panel.out.outputs[0]["data"]
    assert "trn1.2xlarge" in panel.out.outputs[1]["text"]
    panel.instances.value = ()
    assert panel.out.outputs[0]["name"] == "stderr" and "at least one instance" in panel.out.outputs[0]["text"]


def test_chip_explorer():
    from trnsim.course.ui.intro import ChipExplorer

    e = ChipExplorer()
    e.chip.value = "trainium3"
    assert "Trainium3" in e.summary and "as of" in e.summary
    assert "image/png" in e.out.outputs[0]["data"]


def test_exercise_stubs_get_not_answered_hints():
    assert "not answered yet" in str(ex.check_instance_choice(100, None))
    assert "not answered yet" in str(ex.check_ridge_points(..., ...))
    assert "not answered yet" in str(ex.check_flops_per_cycle(None))


def test_format_value_is_readable():
    assert compare.format_value(10672.0) == "10,672"
    assert compare.format_value(141.395) == "141"
    assert compare.format_value(96.447) == "96.4"
    assert compare.format_value(1.34) == "1.34"
    assert compare.format_value(0.228) == "0.228"
