"""`params` for a decoder (albert_core.decoders): the breakdown as transformers builds it, the token table's share,
and the output projection, tied or not; beside a preset, its published count."""

from __future__ import annotations

from typing import Any

from ..decoders import family
from ..decoders.decoder_config import DecoderConfig
from ..decoders.decoder_flops import decoder_forward_flops, decoder_training_flops
from ..decoders.decoder_params import count_decoder
from ..decoders.decoder_presets import DECODER_PRESETS
from ..decoders.decoder_serving import has_cache, kv_cache
from ..units import format_bytes, format_count, format_flops
from .columns import groups_lines, part_line
from .columns import pct as _pct


def _published(cfg: DecoderConfig) -> tuple[str, int] | None:
    p = DECODER_PRESETS.get(cfg.name)
    return (p.model_id, p.base_params) if p is not None and p.cfg == cfg else None


def kv_json(cfg: DecoderConfig, context: int | None) -> dict[str, Any] | None:
    """The KV cache at `context` tokens (default max_position), batch 1, bfloat16: after a prompt that long, and while
    generating there (a prompt one shorter and one token generated: local layers then hold their window)."""
    if not has_cache(cfg):
        return None
    n = context or cfg.max_position
    if not 2 <= n <= cfg.max_position:
        raise ValueError(f"--context must be between 2 and max_position ({cfg.max_position:,}), got {n:,}")
    prompt, generating = kv_cache(cfg, 1, n), kv_cache(cfg, 1, n - 1, 1)
    return {"dtype": "bfloat16", "batch_size": 1, "context": n, "token_bytes_per_layer": prompt.token_bytes,
            "per_token_all_layers": prompt.per_token_all_layers, "global_layers": prompt.global_layers,
            "local_layers": prompt.local_layers, "after_prompt": prompt.total, "generating": generating.total}


def _kv_lines(cfg: DecoderConfig, context: int | None) -> list[str]:
    k = kv_json(cfg, context)
    if k is None:
        return [f"KV cache: none ({cfg.name} attends both ways and reads its input at once)"]
    lines = [f"KV cache (bfloat16, batch 1): 2 × kv_heads {cfg.kv_heads} × head_dim {cfg.head_dim} × 2 B = "
             f"{k['token_bytes_per_layer']:,} B a token per layer, {k['per_token_all_layers']:,} B over all "
             f"{cfg.num_layers} layers"]
    if k["local_layers"]:
        lines.append(f"  {k['global_layers']} global layers hold every token, {k['local_layers']} local ones their "
                     f"window of {cfg.sliding_window:,}")
    lines.append(f"  at {k['context']:,} tokens: {format_bytes(k['after_prompt'])} ({k['after_prompt']:,} B) after "
                 "a prompt that long" + (f", {format_bytes(k['generating'])} ({k['generating']:,} B) while "
                                         "generating there" if k["generating"] != k["after_prompt"] else ""))
    return lines


def decoder_text(cfg: DecoderConfig, heads: bool, context: int | None = None) -> str:
    c = count_decoder(cfg, heads=heads)
    gqa = f"{cfg.num_heads}/{cfg.kv_heads}" + (" (grouped-query)" if cfg.kv_heads < cfg.num_heads else "")
    lines = [f"{cfg.name}: {cfg.family}, V={cfg.vocab_size:,} H={cfg.hidden_dim:,} L={cfg.num_layers:,} "
             f"heads/kv={gqa} head_dim={cfg.head_dim:,} I={cfg.intermediate_dim:,}, "
             f"output projection {'tied to the token table' if cfg.tied else 'untied'}", "",
             *groups_lines(c.groups, c.total), ""]
    parts = [("embedding", c.embedding), ("layers", c.layers), ("final norm", c.final_norm)]
    if heads:
        parts.append(("LM head", c.head))
    lines += [part_line(name, n, c.total) for name, n in parts]
    lines.append(f"{'total':<10} {format_count(c.total):>8}  {c.total:>20,}  100.0%  "
                 + ("(the causal LM: base model and LM head)" if heads else "(the base model, AutoModel: no LM head)"))
    lines.append(f"one layer: {c.per_layer:,} parameters; the token table V×H: {c.token_table:,} "
                 f"({_pct(c.token_table, c.total).strip()} of the total)")
    lines += [f"note: {n}" for n in family(cfg.family).notes]
    published = _published(cfg)
    if published is not None:
        mid, n = published
        lines.append(f"published ({mid}, base model): {n:,}: " + ("equal" if n == count_decoder(cfg).total
                                                                 else f"differs by {count_decoder(cfg).total - n:+,}"))
        note = DECODER_PRESETS[cfg.name].note
        if note:
            lines.append(f"note: {note}")
    return "\n".join(lines + _kv_lines(cfg, context))


def decoder_json(cfg: DecoderConfig, heads: bool, context: int | None = None) -> dict[str, Any]:
    c = count_decoder(cfg, heads=heads)
    published = _published(cfg)
    return {
        "config": cfg.to_dict(), "decoder": True, "embedding": c.embedding, "per_layer": c.per_layer,
        "all_layers": c.layers, "final_norm": c.final_norm, "lm_head": c.head, "total": c.total,
        "token_table": c.token_table, "embedding_pct": c.embedding_pct,
        "groups": [{**g._asdict(), "params": g.params} for g in c.groups],
        "published": None if published is None else {"model_id": published[0], "base_params": published[1]},
        "kv_cache": kv_json(cfg, context), "notes": list(family(cfg.family).notes),
    }


def decoder_flops_text(cfg: DecoderConfig, seq_len: int, batch_size: int, as_json: bool) -> str:
    """`flops` for a decoder: the causal LM's forward by component (the LM head over every position), and training."""
    import json

    f = decoder_forward_flops(cfg, seq_len, batch_size, head=True)
    names = ("qkv", "attention_scores", "attention_values", "attention_output", "ffn", "lm_head")
    train = decoder_training_flops(cfg, seq_len, batch_size, head=True)
    if as_json:
        return json.dumps({"config": cfg.to_dict(), "decoder": True, **{n: getattr(f, n) for n in names},
                           "seq_len": seq_len, "batch_size": batch_size, "total": f.total, "training": train}, indent=2)
    lines = [f"{cfg.name}: the causal LM's forward over {batch_size} × {seq_len} tokens, matmul FLOPs "
             "(2 per multiply-add)", ""]
    for name in names:
        n = getattr(f, name)
        lines.append(f"{name:<22} {format_flops(n):>14}  {n:>28,}  {_pct(n, f.total)}")
    lines.append(f"{'forward':<22} {format_flops(f.total):>14}  {f.total:>28,}")
    lines.append(f"{'training (3× forward)':<22} {format_flops(train):>14}  {train:>28,}")
    return "\n".join(lines)
