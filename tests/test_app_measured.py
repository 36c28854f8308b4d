"""Memory page: points measured by the engine (a build process, fake tensors) on the activation chart."""

import json

import pytest
from test_app_pages import figure, goto, no_errors, open_app, traces

from albert_core.engine import core as engine
from albert_core.engine.measure import maker
from albert_core.presets import PRESETS
from albert_core.workload import Workload


def test_memory_measures_points_that_equal_the_cpu_estimate():
    at = goto(open_app({"preset": "albert-base", "compare": "bert-base", "seq_max": "1024", "batch_size": "2"}),
              "memory")
    assert not [t for t in traces(figure(at, "memory_activations")) if "measured" in t]  # none before the press
    at.button(key="memory_measure").click().run(timeout=180)
    no_errors(at)
    tr = traces(figure(at, "memory_activations"))
    for name in ("albert-base", "bert-base"):
        got, est = tr[f"{name}: measured in PyTorch (CPU)"], tr[f"{name}: estimate, CPU kernels"]
        assert len(got["x"]) >= 3 and got["y"] == est["y"]  # PyTorch's bytes on albert_core's CPU estimate
        s = int(got["x"][-1])
        cfg = PRESETS[name].replace(max_position=s)
        real = engine.measure(maker(cfg, "hf", "eager"), cfg.vocab_size,
                              engine.Run(Workload(2, s, "float32", "eager", device="cpu"), fake=True), ("saved",))
        assert got["customdata"][-1][0] == real.saved  # the exact bytes in the hover
    layout = json.dumps(figure(at, "memory_activations")["layout"]).replace("<br>", " ")
    assert "points measured by PyTorch on this server (fake tensors, CPU kernels)" in layout  # the settings line
    assert not [b for b in at.button if b.key == "memory_measure"]  # measured: the button is gone for this view


def test_training_chart_measures_step_peaks_beside_the_modelled_peak():
    from test_app_pages import open_tab

    from albert_core.step.peak import step_peak

    q = {"preset": "bert-base", "compare": "albert-base", "seq_max": "1024", "batch_size": "2", "precision": "float32",
         "optimizer": "sgd", "memory_tab": "training"}
    at = open_tab(goto(open_app(q), "memory"), "memory", "training")
    at.button(key="memory_measure_training").click().run(timeout=180)
    no_errors(at)
    fig = figure(at, "memory_training_sweep")
    tr = traces(fig)
    got = tr["bert-base: measured step peak"]
    s = int(got["x"][-1])
    cfg = PRESETS["bert-base"].replace(max_position=s)
    # the page's attention (the link's default, eager)
    real = engine.measure(maker(cfg, "hf", "eager"), cfg.vocab_size,
                          engine.Run(Workload(2, s, "float32", "eager", device="cpu", optimizer="sgd")),
                          ("step",))
    assert got["customdata"][-1][0] == real.step.peak  # the engine's bytes in the hover
    modelled = tr["bert-base: modelled peak, CPU"]["customdata"][-1][0]
    assert modelled == step_peak(cfg, Workload(2, s, "float32", "eager", device="cpu", optimizer="sgd")).peak
    layout = json.dumps(fig["layout"]).replace("<br>", " ")
    assert "measured by PyTorch on this server" in layout


@pytest.mark.parametrize("precision", ["mixed_bf16", "bf16_master"])
def test_training_points_measure_every_precision(precision):
    """autocast and the master-copy step both run on the engine as the chart counts them: each can be measured."""
    from test_app_pages import open_tab

    at = open_tab(goto(open_app({"precision": precision, "memory_tab": "training"}), "memory"), "memory", "training")
    assert [b for b in at.button if b.key == "memory_measure_training"]
    assert not any("which PyTorch's autocast does not build" in c.value for c in at.caption)
