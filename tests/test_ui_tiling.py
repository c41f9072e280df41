"""Tiling pictures for notebook 04: the pure plan, the simulated coverage, the plot and the panel."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from trnsim.course.ui.tiling import TilingPanel  # noqa: E402
from trnsim.models.tiling import TilingChoice, format_coverage, plan_coverage, simulate_coverage  # noqa: E402
from trnsim.course.viz.tiling import plot_coverage  # noqa: E402


@pytest.mark.parametrize("choice", [
    TilingChoice(300, 1000, 128, 512, (3, 2)),          # ragged in both dims, exact trip counts
    TilingChoice(256, 512, 128, 512, (2, 1)),           # no ragged tile
    TilingChoice(300, 1000, 64, 256, (2, 2)),           # too few iterations
    TilingChoice(100, 100, 32, 128, (5, 2)),            # too many iterations: idle ones
])
def test_simulated_coverage_matches_the_plan(choice):
    cov = simulate_coverage(choice)
    assert cov.ok, cov.error
    want = plan_coverage(choice)
    np.testing.assert_array_equal(np.isnan(cov.owner), np.isnan(want))
    np.testing.assert_array_equal(np.nan_to_num(cov.owner, nan=-1), np.nan_to_num(want, nan=-1))


def test_counts_for_ragged_exact_loops():
    cov = simulate_coverage(TilingChoice(300, 1000, 128, 512, (3, 2)))
    assert cov.unwritten == 0 and cov.idle_iterations == 0
    assert cov.clipped_elements == 6 * 128 * 512 - 300 * 1000
    assert set(np.unique(cov.owner)) == {0, 1, 2, 3, 4, 5}
    assert "clipped to 44 of 128 partitions" in format_coverage(cov)


def test_too_many_iterations_are_idle_and_write_nothing_twice():
    cov = simulate_coverage(TilingChoice(100, 100, 32, 128, (5, 2)))
    assert cov.ok and cov.unwritten == 0
    assert cov.idle_iterations == 5 * 2 - 4 * 1
    assert "do no work" in format_coverage(cov)


def test_too_few_iterations_leave_nan_and_say_why():
    cov = simulate_coverage(TilingChoice(300, 1000, 128, 512, (2, 2)))
    assert cov.unwritten == 44 * 1000
    assert np.isnan(cov.owner[256:]).all() and not np.isnan(cov.owner[:256]).any()
    assert "never written" in format_coverage(cov)


def test_partition_rule_and_unclipped_tail_are_kernel_errors():
    cov = simulate_coverage(TilingChoice(300, 1000, 256, 512, (2, 2)))
    assert not cov.ok and cov.owner is None
    assert cov.rule == "err_num_partition_exceed_arch_limit"
    assert "256" in cov.error and "128" in cov.error
    cov = simulate_coverage(TilingChoice(300, 1000, 128, 512, (3, 2), clip=False))
    assert cov.rule == "err_tensor_access_out_of_bound"
    assert "min(" in cov.error and "mask" not in cov.error       # the NKI 0.6 fix, not Beta 1's mask
    assert "/" not in cov.error.split("in kernel line:")[0].split("fix:")[0].replace("[", "")  # no file paths


def test_bad_choice_is_a_clear_value_error():
    with pytest.raises(ValueError, match="tile_p"):
        TilingChoice(10, 10, 0, 128)
    with pytest.raises(ValueError, match="loops"):
        TilingChoice(10, 10, 8, 128, (0, 1))


@pytest.mark.parametrize("choice", [TilingChoice(300, 1000, 128, 512, (4, 3)),
                                    TilingChoice(300, 1000, 256, 512, (2, 2)),
                                    TilingChoice(300, 1000, 128, 512, (2, 2))])
def test_plot_draws_tiles_and_legend(choice):
    fig, ax = plt.subplots()
    plot_coverage(ax, simulate_coverage(choice))
    gi, gj = choice.loops
    assert len(ax.patches) >= gi * gj + 1          # one outline per tile plus the output border
    assert ax.get_legend() is not None
    assert ax.get_ylim()[0] >= choice.rows          # rows run downwards, overhang visible
    plt.close(fig)


def test_panel_headless_drive():
    panel = TilingPanel()
    assert panel.error == "" and panel.result.unwritten == 0
    assert len(panel.out.outputs) == 2              # the figure and the summary
    panel.tile_p.value = 256
    assert panel.result.rule == "err_num_partition_exceed_arch_limit"
    assert "exceed architecture limitation of 128" in panel.error
    assert panel.out.outputs[0]["name"] == "stderr"
    panel.tile_p.value = 64
    assert panel.result.unwritten > 0               # 3 x 2 iterations no longer cover 300 rows
    panel.fit.click()
    assert (panel.loops_p.value, panel.loops_f.value) == (5, 2)
    assert panel.result.unwritten == 0 and panel.error == ""
    panel.clip.value = False
    assert panel.result.rule == "err_tensor_access_out_of_bound"
    panel.rows.value, panel.cols.value = 320, 1024
    assert panel.result.ok                          # no ragged tile: clipping not needed
    assert panel.result.clipped_elements == 0


def test_panel_callback_speed(benchmark):
    panel = TilingPanel()
    benchmark(panel.update)
    assert panel.result.ok


def test_simulate_coverage_speed(benchmark):
    cov = benchmark(simulate_coverage, TilingChoice(300, 1000, 128, 512, (3, 2)))
    assert cov.ok


def test_legend_says_whether_the_overhang_is_clipped():
    labels = {}
    for clip in (True, False):
        fig, ax = plt.subplots()
        plot_coverage(ax, simulate_coverage(TilingChoice(300, 1000, 128, 512, (3, 2), clip=clip)))
        labels[clip] = [t.get_text() for t in ax.get_legend().get_texts()]
        plt.close(fig)
    assert "beyond the output: clipped off by min()" in labels[True]
    assert "beyond the output: not clipped" in labels[False]


def _visited_overhang(c: TilingChoice) -> int:
    """Elements of the visited full-size tiles beyond the output, counted tile by tile."""
    total = 0
    for i in range(c.loops[0]):
        for j in range(c.loops[1]):
            r = max(0, min(c.rows, (i + 1) * c.tile_p) - i * c.tile_p)
            f = max(0, min(c.cols, (j + 1) * c.tile_f) - j * c.tile_f)
            total += c.tile_p * c.tile_f - r * f
    return total


def test_ragged_notes_only_for_tiles_the_loops_visit():
    from trnsim.course.ui.tiling import summarize

    # notebook 04 cell 24: tiles of 64, loops 3 x 2 over [300, 1000] visit rows 0-191 only
    cov, text = summarize(TilingChoice(300, 1000, 64, 512, (3, 2)))
    assert "ragged rows" not in text and "44 of 64" not in text
    assert "ragged columns: the last column of tiles is clipped to 488 of 512 elements" in text
    assert cov.clipped_elements == 3 * 64 * (512 - 488) == _visited_overhang(cov.choice)
    assert f"clipped off the full-size tiles: {3 * 64 * 24:,} elements" in text
    cov, text = summarize(TilingChoice(300, 1000, 64, 512, (3, 1)))     # no ragged tile visited at all
    assert "ragged" not in text and cov.clipped_elements == 0
    cov, text = summarize(TilingChoice(300, 1000, 64, 512, (5, 2)))     # fitted: both ragged edges visited
    assert "ragged rows: the last row of tiles is clipped to 44 of 64 partitions" in text
    assert "ragged columns: the last column of tiles is clipped to 488 of 512 elements" in text
    cov, text = summarize(TilingChoice(300, 1000, 64, 512, (6, 2)))     # an idle row of tiles after the ragged one
    assert "the last row of tiles that reaches the output (rows 256-299) is clipped to 44 of 64" in text


@pytest.mark.parametrize("choice", [
    TilingChoice(300, 1000, 64, 512, (3, 2)), TilingChoice(300, 1000, 64, 512, (5, 2)),
    TilingChoice(300, 1000, 64, 512, (6, 3)), TilingChoice(300, 1000, 128, 512, (2, 1)),
    TilingChoice(100, 100, 32, 128, (5, 2)),
])
def test_clipped_count_is_the_overhang_of_visited_tiles(choice):
    assert simulate_coverage(choice).clipped_elements == _visited_overhang(choice)


def test_panel_summary_in_notebook_04_cell_24():
    panel = TilingPanel()
    panel.tile_p.value = 64
    assert "ragged rows" not in panel.summary and "ragged columns" in panel.summary
    assert not any(n.startswith("ragged rows") for n in panel.result.notes)
    panel.fit.click()
    assert "clipped to 44 of 64 partitions" in panel.summary
