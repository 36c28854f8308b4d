"""One color per config on every page, distinct and colorblind-safe.

Presets keep fixed colors from Okabe & Ito's palette ("Color Universal Design", 2008) and Paul Tol's
muted scheme; every other config (an edited preset, a custom one) takes the next unused color of Tol's
palette in the order the configs are shown. The app shows the sidebar config first and the compared
ones after it on every page, so a config keeps its color from page to page.
"""

from __future__ import annotations

# Okabe-Ito (yellow and black left out: unreadable on white / on dark) plus Tol's muted wine
PRESET_COLORS = {
    "bert-base": "#E69F00",  # orange
    "bert-large": "#D55E00",  # vermillion
    "bert-xlarge": "#882255",  # wine (Tol muted)
    "albert-base": "#56B4E9",  # sky blue
    "albert-large": "#009E73",  # bluish green
    "albert-xlarge": "#0072B2",  # blue
    "albert-xxlarge": "#CC79A7",  # reddish purple
}
# for the other configs: Paul Tol's muted and bright schemes, minus near-duplicates of the colors above
PALETTE = ("#332288", "#999933", "#EE6677", "#44AA99", "#AA4499", "#DDCC77", "#117733", "#66CCEE",
           "#BBBBBB", "#CC6677", "#4477AA", "#AA3377")
# parts of a model, the same on every chart
COMPONENT_COLORS = {
    "embedding": "#E69F00",
    "layers": "#0072B2",
    "pooler": "#999999",
    "heads": "#CC79A7",
}
MEMORY_COLORS = {
    "weights": "#0072B2",
    "gradients": "#E69F00",
    "optimizer": "#CC79A7",
    "master_weights": "#009E73",
    "activations": "#56B4E9",
    "quadratic": "#D55E00",
    "linear": "#0072B2",
}


def color_map(names) -> dict[str, str]:
    """Color of each config: presets fixed, the others the palette in order of appearance (distinct)."""
    out: dict[str, str] = {}
    free = [c for c in PALETTE]
    i = 0
    for n in dict.fromkeys(names):
        if n in PRESET_COLORS:
            out[n] = PRESET_COLORS[n]
        else:
            out[n] = free[i % len(free)]
            i += 1
    return out


def config_color(name: str, names=None) -> str:
    """Color of one config among `names` (the configs shown, in order; default: it alone)."""
    return color_map(list(names) if names is not None else [name])[name]
