"""Controls set to a bad value from code (a Dropdown or ToggleButtons set to None, a slider at its limit): every
panel shows a message naming the control in its output area and sets ``error``, never raises from deep inside,
and never leaves an earlier result on show as if it were current (notebooks 02, 09, 10, 11, 12)."""
import matplotlib
import pytest

matplotlib.use("Agg")


def _stderr(out) -> str:
    return "".join(o.get("text", "") for o in out.outputs if o.get("output_type") == "stream" and o.get("name") == "stderr")


def _has_figure(out) -> bool:
    return any(o.get("output_type") == "display_data" for o in out.outputs)


def test_missing_choices_names_unlabelled_controls_and_uses_an_before_a_vowel():
    from trnsim.course.ui.render import missing_choices

    class W:
        def __init__(self, d, v):
            self.description, self.value = d, v

    assert missing_choices([("step 2 engine", W("", None))]) == "choose the step 2 engine to see the result"
    assert missing_choices([W("op", None), W("algorithm", None)]) == "choose the op and algorithm to see the result"
    assert missing_choices([W("users in", None)]) == "choose the users in to see the result"
    assert missing_choices([("step 2 engine", W("", "vector"))]) == ""


# ------------------------------------------------------------------ notebook 02: EnginePanel
def test_engine_panel_preset_none_says_choose_the_preset():
    from trnsim.course.ui.engines import EnginePanel
    p = EnginePanel()
    assert p.error == "" and p.result is not None
    p.preset.value = None                        # was: KeyError: None from the preset observer
    assert p.error == "choose the preset to see the result"
    assert p.result is None and p.summary == ""
    assert "choose the preset" in _stderr(p.out) and not _has_figure(p.out)
    p.preset.value = p.preset.options[1]
    assert p.error == "" and p.result is not None and _has_figure(p.out)


def test_engine_panel_names_the_step_whose_engine_is_missing():
    from trnsim.course.ui.engines import EnginePanel
    p = EnginePanel()
    p.engine[1].value = None                     # was: "pick a value" (the engine dropdowns have no description)
    assert p.error == "choose the step 2 engine to see the result"
    assert "step 2 engine" in _stderr(p.out) and p.result is None


def test_engine_panel_apply_preset_names_the_presets_on_an_unknown_name():
    from trnsim.course.ui.engines import EnginePanel
    p = EnginePanel()
    with pytest.raises(ValueError, match="preset='nope': choose one of"):
        p.apply_preset("nope")


# ------------------------------------------------------------------ notebooks 10 and 11: training panels
@pytest.mark.parametrize("control, name", [("mode", "mode"), ("cores", "cores"), ("batch", "batch")])
def test_parallel_step_panel_none_is_reported(control, name):
    from trnsim.course.ui.training import ParallelStepPanel
    p = ParallelStepPanel()
    getattr(p, control).value = None             # was: ValueError (mode) / TypeError from int(None)
    assert p.result is None and p.error == f"choose the {name} to see the result"
    assert p.error in _stderr(p.output) and not _has_figure(p.output)
    getattr(p, control).value = {"mode": "dp", "cores": 8, "batch": 16}[control]
    assert p.error is None and p.result is not None and _has_figure(p.output)


@pytest.mark.parametrize("control, name", [("model", "model"), ("instance", "instance"), ("nodes", "nodes"),
                                           ("seq_len", "seq len"), ("global_batch", "batch (seq)")])
def test_training_planner_none_is_reported(control, name):
    from trnsim.course.ui.training import PlannerPanel
    p = PlannerPanel()
    good = getattr(p, control).value
    getattr(p, control).value = None             # nodes, seq_len, batch were: TypeError from int(None)
    assert p.result is None and p.error == f"choose the {name} to see the result"
    assert p.error in _stderr(p.output) and not _has_figure(p.output)
    getattr(p, control).value = good
    assert p.error is None and p.result.best is not None and _has_figure(p.output)


# ------------------------------------------------------------------ notebook 12: serving panels
def test_estimator_panel_tp_none_is_reported():
    from trnsim.course.ui.serving import EstimatorPanel
    p = EstimatorPanel()
    p.tp.value = None                            # was: TypeError from int(None)
    assert p.error == "choose the TP degree to see the result"
    assert p.result is None and p.summary == ""
    assert "TP degree" in _stderr(p.out) and not _has_figure(p.out)
    p.tp.value = 2
    assert p.error == "" and p.result is not None and _has_figure(p.out)


@pytest.mark.parametrize("control, message", [("model", "choose the model"), ("instance", "choose the instance")])
def test_estimator_panel_clears_the_old_estimate_when_the_hardware_is_missing(control, message):
    from trnsim.course.ui.serving import EstimatorPanel
    p = EstimatorPanel()
    assert p.result is not None and p.summary
    good = getattr(p, control).value
    getattr(p, control).value = None             # was: an error shown, but result and summary of the old hardware kept
    assert p.error.startswith(message)
    assert p.result is None and p.summary == ""
    assert message in _stderr(p.out) and not _has_figure(p.out)
    getattr(p, control).value = good
    assert p.error == "" and p.result is not None and p.summary


def test_estimator_panel_clears_the_old_estimate_after_a_hardware_error(monkeypatch):
    import trnsim.course.ui.serving as ui_serving
    from trnsim.serving import ServingError

    p = ui_serving.EstimatorPanel()
    assert p.result is not None and "inf2.xlarge" in p.summary

    def refuse(model, instance):
        raise ServingError(f"instance={instance!r}: no serving hardware data")

    monkeypatch.setattr(ui_serving, "valid_tp", refuse)
    p.instance.value = "inf2.48xlarge"
    assert "no serving hardware data" in p.error
    assert p.result is None and p.summary == ""   # was: the inf2.xlarge estimate kept as if current
    assert "Cannot estimate" in _stderr(p.out) and not _has_figure(p.out)


def test_batching_panel_metric_none_is_reported_not_plotted():
    from trnsim.course.ui.serving import BatchingPanel
    p = BatchingPanel(n_requests=200)
    assert p.error == "" and _has_figure(p.out)
    p.metric.value = None                        # was: a latency plot drawn and labelled for metric None
    assert p.error == 'choose the "show" metric to see the result'
    assert p.results == {} and p.summary == ""
    assert "metric" in _stderr(p.out) and not _has_figure(p.out)
    p.metric.value = "latency"
    assert p.error == "" and p.results and _has_figure(p.out)


# ------------------------------------------------------------------ notebook 09: collectives
@pytest.mark.parametrize("control, message", [("op", "choose the op"), ("instance", "choose the instance"),
                                              ("algorithm", "choose the algorithm")])
def test_collectives_panel_none_is_reported(control, message):
    from trnsim.course.ui.collectives import CollectivesPanel
    p = CollectivesPanel()
    good = getattr(p, control).value
    getattr(p, control).value = None             # was: an error from deep inside ("op=None: must be one of ...")
    assert p.error.startswith(message) and p.result is None and p.summary == ""
    assert message in _stderr(p.out) and not _has_figure(p.out)
    getattr(p, control).value = good
    assert p.error == "" and p.result is not None and _has_figure(p.out)


def test_collectives_panel_one_rank_is_explained_not_plotted_empty():
    from trnsim.course.ui.collectives import CollectivesPanel
    p = CollectivesPanel()
    p.ranks.value = p.ranks.min                  # 1: was an empty log-scale plot (0 us at every size) and no error
    assert p.error.startswith("ranks = 1") and "pick 2 or more ranks" in p.error
    assert p.result is None and p.summary == ""
    assert "ranks = 1" in _stderr(p.out) and not _has_figure(p.out)
    p.ranks.value = 2
    assert p.error == "" and p.result.time_us > 0 and _has_figure(p.out)


def test_every_panel_dropdown_names_itself_and_its_choices_on_a_bad_value():
    """The panels' dropdowns are render.Choice: a value not among the options is refused with the control's
    name and the valid choices (a plain ipywidgets Dropdown says only "Invalid selection: value not found")."""
    from traitlets import TraitError
    from trnsim.course.ui.collectives import CollectivesPanel
    from trnsim.course.ui.serving import EstimatorPanel
    from trnsim.course.ui.training import PlannerPanel
    for panel, control, bad in ((CollectivesPanel(), "op", "allreduce"), (EstimatorPanel(), "model", "gpt-5"),
                                (PlannerPanel(), "nodes", 3)):
        w = getattr(panel, control)
        with pytest.raises(TraitError) as err:
            w.value = bad
        msg = str(err.value)
        assert f"{w.description}={bad!r}" in msg and repr(w.options[0] if not isinstance(w.options[0], tuple)
                                                          else w.options[0][1]) in msg
