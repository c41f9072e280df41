"""Headless tests of the training widget panels (set controls, assert on results)."""
import time

import matplotlib

matplotlib.use("Agg")

from trnsim.course.ui.training import ParallelStepPanel, PlannerPanel  # noqa: E402


def test_planner_panel_searches_and_reacts():
    p = PlannerPanel()
    assert p.error is None and p.result.best is not None
    first = p.result.best.step_time_s
    assert "feasible plans" in p.summary and "days" in p.summary
    assert p.output.outputs  # figure and text were rendered into the output widget
    p.nodes.value = 8
    assert p.result.best.step_time_s < first  # twice the nodes, shorter steps
    p.instance.value = "trn2.48xlarge"
    assert "no price in the sources" in p.summary
    p.instance.value = "dgx-a100-80gb"
    assert "GPU" in p.summary


def test_planner_panel_reports_infeasible_clusters():
    p = PlannerPanel(draw=False)
    p.model.value = "llama3.1-405b"
    p.nodes.value = 1
    assert p.result.best is None
    assert p.error.startswith("no feasible plan") and "memory" in p.error
    p.train_tokens_b.value = -1
    assert "must be a finite number from 0" in p.error


def test_planner_token_budget():
    p = PlannerPanel(draw=False, train_tokens_b=100)
    assert p.tokens == 100e9 and "100B tokens" in p.summary
    p.train_tokens_b.value = 0
    assert p.tokens > 100e9  # Chinchilla-optimal for 6.7B params is about 135B


def test_planner_callback_is_fast_when_warm():
    p = PlannerPanel(draw=False)
    p.nodes.value = 8
    p.nodes.value = 4
    t = time.perf_counter()
    p.nodes.value = 8
    assert time.perf_counter() - t < 0.5  # generous bound for a shared machine; measured ~20 ms


def test_parallel_step_panel():
    q = ParallelStepPanel(draw=False)
    assert q.result["comm"] > 0 and q.result["compute"] > 0
    dp8 = q.result["step"]
    q.cores.value = 1
    q.mode.value = "single"
    assert q.result["comm"] == 0.0 and q.result["step"] != dp8
    q.mode.value = "tp"
    q.cores.value = 8
    assert q.result is None and "4 heads" in q.error
    q.cores.value = 4
    assert q.error is None and q.result["comm"] > 0


def test_training_figures_draw_what_they_are_given():
    import matplotlib.pyplot as plt

    import trnsim.training as tr
    from trnsim.training.parallel import train
    from trnsim.course.viz import training as vt

    es = [tr.estimate("llama2-7b", "trn1.32xlarge", 4, tp, 1, seq_len=4096, global_batch=1024) for tp in (8, 32)]
    fig, axes = plt.subplots(2, 3)
    vt.plot_step_breakdown(axes[0, 0], es)
    assert len(axes[0, 0].get_yticklabels()) == 2
    vt.plot_memory(axes[0, 1], es)
    heights = sum(p.get_height() for p in axes[0, 1].patches[::2])  # first bar's stacked parts
    assert heights > 0
    vt.plot_plan_map(axes[0, 2], tr.search("llama2-7b", "trn1.32xlarge", 4, 4096, 1024))
    assert axes[0, 2].collections
    vt.plot_validation(axes[1, 0], [190.0, 180.0], [137.0, 142.0], ["a", "b"])
    assert [t.get_text() for t in axes[1, 0].get_yticklabels()] == ["a", "b"]
    runs = [train(3, batch=4), train(3, mode="dp", cores=2, batch=4)]
    vt.plot_losses(axes[1, 1], runs)
    assert len(axes[1, 1].lines) == 2
    vt.plot_time_split(axes[1, 2], runs)
    assert len(axes[1, 2].patches) == 4
    plt.close(fig)
