"""Memory page: points measured by the engine (a build process, fake tensors) on the activation chart."""

import json

from test_app_pages import figure, goto, no_errors, open_app, traces

from albert_core import engine
from albert_core.measure import maker
from albert_core.presets import PRESETS


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
        real = engine.measure(maker(cfg, "hf", "eager"), cfg.vocab_size, engine.Run(2, s, fake=True), ("saved",))
        assert got["customdata"][-1][0] == real.saved  # the exact bytes in the hover
    layout = json.dumps(figure(at, "memory_activations")["layout"]).replace("<br>", " ")
    assert "points measured by PyTorch on this server (fake tensors, CPU kernels)" in layout  # the settings line
    assert not [b for b in at.button if b.key == "memory_measure"]  # measured: the button is gone for this view
