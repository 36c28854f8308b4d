"""The presets tables of docs/parameters.md: every preset's total, embedding and embedding share (the encoders, then
the decoders).

    python scripts/preset_table.py    # prints the Markdown tables; tests/test_families_docs.py checks the doc holds them

Sorted by embedding share, largest first: where the parameter problem is worst.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere without installing

from albert_core.decoders.decoder_params import count_decoder  # noqa: E402
from albert_core.decoders.decoder_presets import DECODER_PRESETS  # noqa: E402
from albert_core.estimate.params import albert_cuts, count_parameters  # noqa: E402
from albert_core.presets import HUB_CONFIGS, PRESETS  # noqa: E402
from albert_core.units import format_count  # noqa: E402

_SOURCES = {"bert-base": "`google-bert/bert-base-uncased`", "bert-large": "`google-bert/bert-large-uncased`",
            "bert-xlarge": "ALBERT paper, Table 1", **{f"albert-{s}": f"`albert/albert-{s}-v2`"
                                                       for s in ("base", "large", "xlarge", "xxlarge")}}
BEGIN, END = "<!-- presets table: scripts/preset_table.py -->", "<!-- end presets table -->"
DECODER_BEGIN = "<!-- decoder presets table: scripts/preset_table.py -->"
DECODER_END = "<!-- end decoder presets table -->"


def table() -> str:
    rows = ["| preset | family | config.json | total | embedding | embedding share | layers | "
            "ALBERT's cuts (E=128, all shared) |",
            "|---|---|---|---:|---:|---:|---:|---:|"]
    counts = {n: count_parameters(c) for n, c in PRESETS.items()}
    for name in sorted(PRESETS, key=lambda n: (-counts[n].embedding_pct, n)):
        c, cfg = counts[name], PRESETS[name]
        source = f"`{HUB_CONFIGS[name][0]}`" if name in HUB_CONFIGS else _SOURCES[name]
        both = albert_cuts(cfg, min(128, cfg.hidden_dim))[-1]["total"]
        rows.append(f"| {name} | {cfg.family} | {source} | {c.total:,} ({format_count(c.total)}) | "
                    f"{c.embedding:,} | {c.embedding_pct:.1f} % | {c.all_layers:,} | {format_count(both)} |")
    return "\n".join([BEGIN, *rows, END])


def decoder_table() -> str:
    rows = ["| preset | model_type | config.json | total (base model) | published | token table V×H | its share | "
            "layers |", "|---|---|---|---:|---:|---:|---:|---:|"]
    counts = {n: count_decoder(p.cfg) for n, p in DECODER_PRESETS.items()}
    for name in sorted(DECODER_PRESETS, key=lambda n: (-counts[n].token_table / counts[n].total, n)):
        c, p = counts[name], DECODER_PRESETS[name]
        rows.append(f"| {name} | {p.cfg.family} | `{p.model_id}` | {c.total:,} ({format_count(c.total)}) | "
                    f"{p.base_params:,} | {c.token_table:,} | {100 * c.token_table / c.total:.1f} % | {c.layers:,} |")
    return "\n".join([DECODER_BEGIN, *rows, DECODER_END])


if __name__ == "__main__":
    print(table())
    print()
    print(decoder_table())
