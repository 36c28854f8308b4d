"""One color per config on every page, distinct, and the same whichever configs are beside it.

Presets keep fixed colors: BERT's and ALBERT's from Okabe & Ito's palette ("Color Universal Design", 2008) and Paul
Tol's muted scheme; the other families' presets each a fixed color of Tol's palette (16 presets on 12 colors: four pairs
share one, drawn apart below). Any other config (an edited preset, a custom one, a Hub model) has a color of its own
name too (a CRC-32 of it picks one of the palette). Where two shown configs would share a color, the later one in the
order shown takes the next free one: the app shows the sidebar config first and the compared ones after it on every
page, so a config keeps its color from page to page, and adding or removing another config leaves it as it is
unless the two would have shared. The colors come from colorblind-safe schemes; no two of the 19 are closer than
10.9 in CIEDE2000 (to a reader with full color vision); a config is also named in every legend and hover.
"""

from __future__ import annotations

import zlib

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
# for the other configs: 12 colors of Paul Tol's schemes (bright, muted, vibrant, light) chosen one by one as the
# farthest (CIEDE2000) from the presets' colors and the ones before: no two of the 19 closer than 10.9 (the earlier
# list had 4.7 between #4477AA and the preset blue, 8.5 between #66CCEE and sky blue, and a new user could not tell
# albert-base from bert-base-multilingual-cased); tests/test_charts.py measures it
PALETTE = ("#666633", "#BBCC33", "#225555", "#999999", "#117733", "#FFAABB", "#EE8866", "#AA4499", "#EE6677",
           "#999933", "#CC3311", "#DDCC77")
# the other presets (albert_core.presets.HUB_CONFIGS): a family's members on different colors, the most distinct
# colors first; the four colors used twice go to presets of different families (deberta-v3-base and
# xlm-roberta-large, ...)
PREFERRED = {
    "roberta-base": PALETTE[0], "deberta-v3-base": PALETTE[1], "ModernBERT-base": PALETTE[2],
    "distilbert-base-uncased": PALETTE[3], "electra-base-discriminator": PALETTE[4], "xlm-roberta-base": PALETTE[5],
    "mpnet-base": PALETTE[6], "roberta-large": PALETTE[7], "deberta-v3-large": PALETTE[8],
    "ModernBERT-large": PALETTE[9], "electra-small-discriminator": PALETTE[10],
    "bert-base-multilingual-cased": PALETTE[11], "xlm-roberta-large": PALETTE[1], "mdeberta-v3-base": PALETTE[2],
    "all-mpnet-base-v2": PALETTE[3], "electra-large-discriminator": PALETTE[5],
}
# parts of a model, the same on every chart
COMPONENT_COLORS = {
    "embedding": "#E69F00",
    "layers": "#0072B2",
    "pooler": "#999999",
    "final_norm": "#009E73",  # a decoder's norm after its last layer (Okabe-Ito green)
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


def preferred(name: str) -> str:
    """The color `name` takes when no config shown before it has taken it: fixed for a preset, else its name's."""
    return PRESET_COLORS.get(name) or PREFERRED.get(name) or PALETTE[zlib.crc32(name.encode()) % len(PALETTE)]


def color_map(names) -> dict[str, str]:
    """Color of each config in `names` (in the order shown): its preferred color, or where a config before it took
    that, the next free one of the palette after it (colors repeat only past a dozen configs off the presets')."""
    out: dict[str, str] = {}
    for n in dict.fromkeys(names):
        want = preferred(n)
        if n in PRESET_COLORS or want not in out.values():
            out[n] = want
            continue
        taken = set(out.values())
        start = PALETTE.index(want)
        ring = [PALETTE[(start + k) % len(PALETTE)] for k in range(1, len(PALETTE))]
        out[n] = next((c for c in ring if c not in taken), want)
    return out


def config_color(name: str, names=None) -> str:
    """Color of one config among `names` (the configs shown, in order; default: it alone)."""
    return color_map(list(names) if names is not None else [name])[name]
