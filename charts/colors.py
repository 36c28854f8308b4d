"""One color per config on every page: presets get fixed colors, other names a stable pick by hash."""

from __future__ import annotations

import zlib

# BERT presets warm, ALBERT presets cool; readable on light and dark backgrounds
PRESET_COLORS = {
    "bert-base": "#E4572E",
    "bert-large": "#C0392B",
    "bert-xlarge": "#8E1B3A",
    "albert-base": "#2E86DE",
    "albert-large": "#17A589",
    "albert-xlarge": "#7D5BA6",
    "albert-xxlarge": "#0B5394",
}
# for custom configs (Plotly's D3 palette minus the colors above)
PALETTE = ("#FF9F1C", "#2CA02C", "#9467BD", "#8C564B", "#E377C2", "#BCBD22", "#17BECF", "#7F7F7F",
           "#F4A261", "#6A994E")
# parts of a model, the same on every chart
COMPONENT_COLORS = {
    "embedding": "#F2A541",
    "layers": "#3D7DD8",
    "pooler": "#9AA5B1",
    "heads": "#B56576",
}
MEMORY_COLORS = {
    "weights": "#3D7DD8",
    "gradients": "#F2A541",
    "optimizer": "#B56576",
    "master_weights": "#6A994E",
    "activations": "#9467BD",
    "quadratic": "#E4572E",
    "linear": "#3D7DD8",
}


def config_color(name: str) -> str:
    """Color of a config by name, stable across pages and sessions."""
    if name in PRESET_COLORS:
        return PRESET_COLORS[name]
    return PALETTE[zlib.crc32(name.encode()) % len(PALETTE)]


def color_map(names) -> dict[str, str]:
    return {n: config_color(n) for n in names}
