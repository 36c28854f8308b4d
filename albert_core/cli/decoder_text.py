"""`params` for a decoder (albert_core.decoders): the breakdown as transformers builds it, the token table's share,
and the output projection, tied or not; beside a preset, its published count."""

from __future__ import annotations

from typing import Any

from ..decoders.decoder_config import DecoderConfig
from ..decoders.decoder_params import count_decoder
from ..decoders.decoder_presets import DECODER_PRESETS
from ..units import format_count


def _pct(part: int, total: int) -> str:
    return f"{100 * part / total:5.1f}%" if total else "  -  "


def _published(cfg: DecoderConfig) -> tuple[str, int] | None:
    p = DECODER_PRESETS.get(cfg.name)
    return (p.model_id, p.base_params) if p is not None and p.cfg == cfg else None


def decoder_text(cfg: DecoderConfig, heads: bool) -> str:
    c = count_decoder(cfg, heads=heads)
    rows = [("module", "shape", "copies", "params", "exact", "share")]
    for g in c.groups:
        rows.append((g.module, g.shape, str(g.copies), format_count(g.params), f"{g.params:,}", _pct(g.params, c.total)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {2, 3, 4, 5}
    gqa = f"{cfg.num_heads}/{cfg.kv_heads}" + (" (grouped-query)" if cfg.kv_heads < cfg.num_heads else "")
    lines = [f"{cfg.name}: {cfg.family}, V={cfg.vocab_size:,} H={cfg.hidden_dim:,} L={cfg.num_layers:,} "
             f"heads/kv={gqa} head_dim={cfg.head_dim:,} I={cfg.intermediate_dim:,}, "
             f"output projection {'tied to the token table' if cfg.tied else 'untied'}", ""]
    for k, r in enumerate(rows):
        lines.append("  ".join(x.rjust(w) if i in right else x.ljust(w) for i, (x, w) in enumerate(zip(r, widths, strict=True))))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("")
    parts = [("embedding", c.embedding), ("layers", c.layers), ("final norm", c.final_norm)]
    if heads:
        parts.append(("LM head", c.head))
    for name, n in parts:
        lines.append(f"{name:<10} {format_count(n):>8}  {n:>20,}  {_pct(n, c.total)}")
    lines.append(f"{'total':<10} {format_count(c.total):>8}  {c.total:>20,}  100.0%  "
                 + ("(the causal LM: base model and LM head)" if heads else "(the base model, AutoModel: no LM head)"))
    lines.append(f"one layer: {c.per_layer:,} parameters; the token table V×H: {c.token_table:,} "
                 f"({_pct(c.token_table, c.total).strip()} of the total)")
    published = _published(cfg)
    if published is not None:
        mid, n = published
        lines.append(f"published ({mid}, base model): {n:,}: " + ("equal" if n == count_decoder(cfg).total
                                                                 else f"differs by {count_decoder(cfg).total - n:+,}"))
        note = DECODER_PRESETS[cfg.name].note
        if note:
            lines.append(f"note: {note}")
    return "\n".join(lines)


def decoder_json(cfg: DecoderConfig, heads: bool) -> dict[str, Any]:
    c = count_decoder(cfg, heads=heads)
    published = _published(cfg)
    return {
        "config": cfg.to_dict(), "decoder": True, "embedding": c.embedding, "per_layer": c.per_layer,
        "all_layers": c.layers, "final_norm": c.final_norm, "lm_head": c.head, "total": c.total,
        "token_table": c.token_table, "embedding_pct": c.embedding_pct,
        "groups": [{**g._asdict(), "params": g.params} for g in c.groups],
        "published": None if published is None else {"model_id": published[0], "base_params": published[1]},
    }
