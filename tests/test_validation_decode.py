"""Decode time per output token vs AWS's published trn1 latency table (validation, never inputs).

Prints every row's published and predicted TPOT and its cross-validated error (the decode
framework factor fitted on the other 14 rows), and the physics-only TTFT error (no residual).
Run with ``-s`` to see the tables.
"""
import pytest

from trnsim.catalog.datafiles import load_json
from trnsim.serving import validation as V
from trnsim.models.calibration import median_abs_error, table


@pytest.fixture(scope="module")
def loo():
    return V.validate()


def test_every_row_is_predicted_and_printed(loo):
    rows, _ = loo
    print("\n" + table(rows, "TPOT ms"))
    for label, pub, pred in V.ttft_rows():
        print(f"TTFT {label:40s} published {pub:8.1f} ms predicted {pred:8.1f} ms ({100 * (pred / pub - 1):+.0f}%)")
    assert len(rows) == len(V.published_runs()) == 15
    assert all(r.predicted > 0 for r in rows)


def test_cross_validated_median_error_within_20_percent(loo):
    rows, _ = loo
    assert median_abs_error(rows) <= 0.20


def test_stored_residual_is_the_procedure_result(loo):
    _, fitted = loo
    stored = float(load_json("serving.json")["residuals"]["NC-v2"]["value"])
    assert stored == pytest.approx(fitted, abs=5e-4)
    assert stored == pytest.approx(V.calibrate_residual(), abs=5e-4)


def test_decode_grows_with_context_and_model_size(loo):
    runs = {r.label: V.predict(r).tpot_ms for r in V.published_runs()}
    assert runs["llama-2-13b in8192/out8192"] > runs["llama-2-13b in4096/out4096"]
    assert runs["llama-2-70b in128/out128"] > 2 * runs["llama-2-13b in4096/out4096"]


def test_context_beyond_the_model_maximum_warns_not_refuses():
    run = next(r for r in V.published_runs() if r.model == "llama-2-7b")  # 128 + 8064 > 4096
    est = V.predict(run)
    assert any("exceeds" in n for n in est.notes) and est.tpot_ms > 0


def test_predicted_vs_published_figure(loo, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from trnsim.course.viz.training import plot_predicted_vs_published

    rows, _ = loo
    fig, ax = plt.subplots()
    plot_predicted_vs_published(ax, rows, unit="TPOT (ms)", title="decode")
    labels = [t.get_text() for t in ax.texts]
    assert any("mistral-7b-instruct-v0.2" in t for t in labels)  # rows off by 10% or more are named
    assert len(ax.collections) >= 3  # band, physics points, calibrated points
    fig.savefig(tmp_path / "validation.png")
    lo, hi = ax.get_xlim()
    shown = [t.get_text() for t in ax.get_xticklabels() if t.get_text() and lo <= t.get_position()[0] <= hi]
    assert len(shown) >= 3, shown          # a range under a decade and a half still gets three labels
    plt.close(fig)
