"""Command line: `python -m albert_core params --preset albert-base` prints where the parameters are.

    python -m albert_core params --preset bert-base [--heads] [--json]
    python -m albert_core params --config config.json     # ours (ModelConfig fields) or a HF config.json
                                                          # of any family: bert, albert, roberta (xlm-roberta,
                                                          # camembert), distilbert, electra, deberta-v2, modernbert
    python -m albert_core params --hub FacebookAI/xlm-roberta-large   # fetches only its config.json
    python -m albert_core params --paper [--preset albert-base] [--json]  # the ALBERT paper's results rows beside
                                                          # exact counts; with a config: which rows trained it
    python -m albert_core flops --preset albert-xxlarge --seq-len 512 [--batch-size 8] [--json]

Bad input (unknown preset, unreadable or malformed JSON, invalid config) prints one clear message on
stderr and exits with status 2, never a traceback. No torch here.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..config import ConfigError, ModelConfig
from ..decoders.decoder_config import DecoderConfig
from ..decoders.decoder_presets import DECODER_PRESETS
from ..estimate.flops import forward_flops, training_flops
from ..estimate.params import count_parameters
from ..formats.hf import from_hf_config
from ..presets import DEFAULT_PRESET, PRESETS
from ..units import format_count, format_flops
from . import verify_memory as cli_measure
from .columns import aligned, groups_lines, part_line
from .decoder_text import decoder_flops_text, decoder_json, decoder_text

EXIT_USAGE = 2


class CliError(Exception):
    """A problem with the user's input; main() prints it and exits 2."""


def load_any(args: argparse.Namespace) -> tuple[ModelConfig | None, dict[str, Any] | None]:
    """(config, None), or (None, config.json dict) for a model_type no family models (verify measures those): a
    decoder's too (its preset as the config.json that builds it)."""
    from ..decoders.decoder_presets import DECODER_PRESETS
    from ..formats.hf import outside_families

    if getattr(args, "preset", None) in DECODER_PRESETS:
        return None, DECODER_PRESETS[args.preset].cfg.to_hf()
    raw: Any = None
    if getattr(args, "hub", None) is not None:
        from ..formats.hub import fetch_config

        raw = fetch_config(args.hub)
    elif args.config is not None:
        raw = _read_json(args.config)
    if outside_families(raw) is not None:
        return None, raw
    return load_config(args), None


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise CliError(f"{path} is not UTF-8 text; give a JSON config file") from None
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise CliError(f"{path} is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    if not isinstance(d, dict):
        raise CliError(f"{path} must hold a JSON object of config fields, got {type(d).__name__}")
    return d


def load_decoder(args: argparse.Namespace) -> DecoderConfig | None:
    """The decoder a command names (a decoder preset, or a config.json or Hub id whose model_type is a decoder
    family's: albert_core.decoders), else None."""
    from ..decoders import is_decoder
    from ..decoders.decoder_config import from_hf as decoder_from_hf
    from ..decoders.decoder_presets import DECODER_PRESETS

    if getattr(args, "preset", None) in DECODER_PRESETS:
        return DECODER_PRESETS[args.preset].cfg
    raw: Any = None
    name = None
    if getattr(args, "hub", None) is not None:
        from ..formats.hub import check_model_id, fetch_config  # fetch_config caches: a second read costs nothing

        name = check_model_id(args.hub)
        raw = fetch_config(name)
    elif args.config is not None:
        raw = _read_json(args.config)
    if not is_decoder(raw):
        return None
    try:
        return decoder_from_hf(raw, name)
    except ValueError as e:
        raise CliError(f"invalid config in {name or args.config}: {e}") from None


def load_config(args: argparse.Namespace) -> ModelConfig:
    decoder = load_decoder(args)
    if decoder is not None:
        raise CliError(f"{decoder.name} is a decoder ({decoder.family}): `params` counts its parameters and KV cache, "
                       f"`flops` its FLOPs, `memory` and `verify` measure its memory (`verify --trace` gives its "
                       f"bytes as polynomials in batch and length); `{args.command}` models the encoders so far")
    if getattr(args, "hub", None) is not None:
        from ..formats.hub import config_from_hub  # fetches config.json only; HubError/ConfigError are ValueErrors

        return config_from_hub(args.hub)
    if args.config is None:
        return PRESETS[args.preset or DEFAULT_PRESET]
    d = _read_json(args.config)
    try:
        # a Hugging Face config.json names its model_type; ours holds ModelConfig fields
        return from_hf_config(d) if "model_type" in d else ModelConfig.from_dict(d)
    except ConfigError as e:
        raise CliError(f"invalid config in {args.config}: {e}") from None


def _pct(part: int, total: int) -> str:
    return f"{100 * part / total:5.1f}%" if total else "  -  "


def params_text(cfg: ModelConfig, heads: bool) -> str:
    c = count_parameters(cfg, heads=heads)
    lines = [f"{cfg.name}: {cfg.family}, V={cfg.vocab_size:,} E={cfg.embedding_dim:,} H={cfg.hidden_dim:,} "
             f"L={cfg.num_layers:,} A={cfg.num_heads:,} I={cfg.intermediate_dim:,}, sharing={cfg.sharing} "
             f"(groups={cfg.num_groups}, inner={cfg.inner_group_num})", "", *groups_lines(c.groups, c.total), ""]
    parts = [("embedding", c.embedding), ("layers", c.all_layers), ("pooler", c.pooler)]
    if heads:
        parts.append(("heads", c.heads))
    lines += [part_line(name, n, c.total) for name, n in parts]
    lines.append(f"{'total':<10} {format_count(c.total):>8}  {c.total:>20,}  100.0%")
    lines.append(f"one layer: {c.per_layer:,} parameters; {cfg.layer_applications:,} layer applications")
    return "\n".join(lines)


def params_json(cfg: ModelConfig, heads: bool) -> dict[str, Any]:
    c = count_parameters(cfg, heads=heads)
    return {
        "config": cfg.to_dict(),
        "embedding": c.embedding, "per_layer": c.per_layer, "all_layers": c.all_layers, "pooler": c.pooler,
        "heads": c.heads, "total": c.total, "embedding_pct": c.embedding_pct, "layers_pct": c.layers_pct,
        "groups": [{**g._asdict(), "params": g.params} for g in c.groups],
    }


def cuts_output(args: argparse.Namespace) -> str:
    """`params --cuts E`: ALBERT's two cuts for the config, encoder (estimate.params.albert_cuts) or decoder
    (decoders.decoder_params.decoder_cuts), one row per variant."""
    from ..decoders.decoder_params import decoder_cuts
    from ..estimate.params import albert_cuts

    decoder = load_decoder(args)
    cfg: ModelConfig | DecoderConfig = decoder if decoder is not None else load_config(args)
    try:
        rows = decoder_cuts(decoder, args.cuts) if decoder is not None else albert_cuts(load_config(args), args.cuts)
    except ValueError as e:
        raise CliError(f"--cuts: {e} (E, the factorized embedding's width, e.g. --cuts 128)") from None
    if args.json:
        return json.dumps({"config": cfg.to_dict(), "cuts": rows}, indent=2)
    kept = "final_norm" if decoder is not None else "pooler"
    table = [("variant", "E", "sharing", "embedding", "layers", kept.replace("_", " "), "total", "saved")]
    for r in rows:
        table.append((str(r["variant"]), f"{r['embedding_dim']:,}", str(r["sharing"]), f"{r['embedding']:,}",
                      f"{r['layers']:,}", f"{r[kept]:,}", f"{r['total']:,} ({format_count(int(r['total']))})",
                      f"{r['saved_pct']:.1f}%"))
    return "\n".join([f"{cfg.name}: ALBERT's two cuts (Lan et al. 2020, Sec. 3.1) as a what-if; nothing here is built"
                      + (" (a tied output projection reads the factorized table through an H -> E Linear, counted)"
                         if decoder is not None and decoder.tied else ""), "", *aligned(table, set(range(3, 8)))])


def paper_text(cfg: ModelConfig | None) -> str:
    """The ALBERT paper's results rows (albert_core.estimate.paper_results) beside albert_core's exact counts."""
    from ..estimate import paper_results as pr

    marks = {i.key: f"[{n}]" for n, i in enumerate(pr.INCONSISTENCIES, 1)}
    rows = [("table", "row", "network", "steps", "printed", "exact", "diff", "Avg", "speedup", "")]
    for p in pr.ROWS:
        exact = p.exact_params()
        printed = f"{p.params_m}M" if p.params_m is not None else "-"
        diff = f"{100 * (exact - p.params_m * pr.M) / (p.params_m * pr.M):+.2f}%" if p.params_m else "-"
        speed = f"{p.speedup:.1f}x" if p.speedup is not None else "-"
        note = " ".join(marks[i.key] for i in p.inconsistencies())
        rows.append((str(p.table), p.label, p.arch.describe(), _steps(p.training.steps), printed,
                     f"{exact:,}", diff, f"{p.scores.avg:.1f}", speed, note))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {0, 3, 4, 5, 6, 7, 8}
    lines = [f"The ALBERT paper's results tables, {pr.PAPER}: the parameters as printed (millions) beside "
             "albert_core's exact count (Hugging Face's layout, pooler included), the dev-set Avg, the measured "
             "speedup against BERT-large", ""]
    for k, r in enumerate(rows):
        lines.append("  ".join(x.rjust(w) if i in right else x.ljust(w)
                               for i, (x, w) in enumerate(zip(r, widths, strict=True))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("")
    lines += [f"{marks[i.key]} {i.text}" for i in pr.INCONSISTENCIES]
    lines += ["", pr.TPU_NOTE]
    if cfg is not None:
        lines += ["", pr.match_text(cfg)]
    return "\n".join(lines)


def _steps(n: int) -> str:
    return f"{n / 1_000_000:g}M" if n >= 1_000_000 else f"{n // 1000:,}k"


def paper_json(cfg: ModelConfig | None) -> dict[str, Any]:
    from ..estimate import paper_results as pr

    rows = pr.rows_records()
    out: dict[str, Any] = {"source": pr.PAPER, "rows": rows,
                           "inconsistencies": [{"key": i.key, "what": i.what, "rows": list(i.rows), "text": i.text}
                                               for i in pr.INCONSISTENCIES],
                           "speedup_note": pr.TPU_NOTE}
    if cfg is not None:
        out["match"] = {"config": cfg.to_dict(), "rows": [r.key for r in pr.matches(cfg)], "text": pr.match_text(cfg)}
    return out


def flops_text(cfg: ModelConfig, seq_len: int, batch_size: int) -> str:
    f = forward_flops(cfg, seq_len, batch_size)
    lines = [f"{cfg.name}: forward over {batch_size} × {seq_len} tokens, matmul FLOPs (2 per multiply-add)", ""]
    for name in ("embedding_projection", "qkv", "attention_scores", "attention_values", "attention_output", "ffn",
                 "pooler"):
        n = getattr(f, name)
        lines.append(f"{name:<22} {format_flops(n):>14}  {n:>28,}  {_pct(n, f.total)}")
    lines.append(f"{'forward':<22} {format_flops(f.total):>14}  {f.total:>28,}")
    t = training_flops(cfg, seq_len, batch_size)
    lines.append(f"{'training (3× forward)':<22} {format_flops(t):>14}  {t:>28,}")
    return "\n".join(lines)


def build_parser(prog: str = "albert-core") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Where the parameters and FLOPs of BERT, ALBERT and other encoders go.")
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_ in (("params", "parameter breakdown"), ("flops", "forward and training FLOPs")):
        s = sub.add_parser(name, help=help_)
        _add_source(s)
        s.add_argument("--json", action="store_true", help="print JSON instead of a table")
        if name == "params":
            s.add_argument("--heads", action="store_true", help="include the MLM and NSP/SOP pretraining heads (bert, "
                           "albert); for a decoder, the causal LM's output projection")
            s.add_argument("--cuts", type=int, metavar="E",
                           help="ALBERT's two cuts as a what-if: the embedding factorized at E, the layers shared, both")
            s.add_argument("--context", type=int, metavar="TOKENS",
                           help="a decoder's KV cache at this many tokens (default its max_position)")
            s.add_argument("--paper", action="store_true",
                           help="the ALBERT paper's results rows beside exact counts (with a config: which rows "
                                "trained exactly that network)")
        else:
            s.add_argument("--seq-len", type=int, default=512, help="tokens per sequence (default 512)")
            s.add_argument("--batch-size", type=int, default=1, help="sequences (default 1)")
    cli_measure.add_parsers(sub, _add_source)
    return p


def _add_source(s: argparse.ArgumentParser) -> None:
    src = s.add_mutually_exclusive_group()
    src.add_argument("--preset", choices=sorted(PRESETS) + sorted(DECODER_PRESETS),
                     help=f"a published config (default {DEFAULT_PRESET}); the decoders after the encoders")
    src.add_argument("--config", metavar="FILE", help="a JSON file: ModelConfig fields or a HF config.json")
    src.add_argument("--hub", metavar="MODEL_ID", help="a Hugging Face model id: its config.json only is fetched")


# what the measuring commands import inside their functions (the counting commands need none of it)
ENGINE_PACKAGES = ("torch", "transformers", "peft", "huggingface_hub")


def main(argv: list[str] | None = None, prog: str = "albert-core") -> int:
    """The `albert-core` command (pip install .); `python -m albert_core` passes its own name as prog."""
    args = build_parser(prog).parse_args(argv)  # usage errors: argparse prints them and exits 2
    try:
        if args.command in ("verify", "memory"):
            out = _measure_command(args)
        elif args.command == "params" and args.paper:
            given = load_config(args) if (args.preset or args.config or args.hub) is not None else None
            out = json.dumps(paper_json(given), indent=2) if args.json else paper_text(given)
        elif args.command == "params" and args.cuts is not None:
            out = cuts_output(args)
        elif args.command == "params" and (decoder := load_decoder(args)) is not None:
            out = (json.dumps(decoder_json(decoder, args.heads, args.context), indent=2) if args.json
                   else decoder_text(decoder, args.heads, args.context))
        elif args.command == "params":
            cfg = load_config(args)
            out = json.dumps(params_json(cfg, args.heads), indent=2) if args.json else params_text(cfg, args.heads)
        elif (decoder := load_decoder(args)) is not None:
            out = decoder_flops_text(decoder, args.seq_len, args.batch_size, args.json)
        else:
            cfg = load_config(args)
            f = forward_flops(cfg, args.seq_len, args.batch_size)
            if args.json:
                d = {k: getattr(f, k) for k in f.__dataclass_fields__}
                d.update(total=f.total, training=training_flops(cfg, args.seq_len, args.batch_size))
                out = json.dumps({"config": cfg.to_dict(), **d}, indent=2)
            else:
                out = flops_text(cfg, args.seq_len, args.batch_size)
    except (CliError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ModuleNotFoundError as e:
        missing = (e.name or "").split(".")[0]
        if missing not in ENGINE_PACKAGES:
            raise
        print(f"error: `{args.command}` builds and measures models with PyTorch, and this Python has no "
              f"{missing} ({sys.executable}). Install what it needs with `pip install .` (or "
              "`pip install -r requirements.txt`) in this environment; `params` and `flops` work without it.",
              file=sys.stderr)
        return EXIT_USAGE
    print(out)
    return 0


def console(argv: list[str] | None = None, prog: str = "albert-core") -> int:
    """The command as a process of its own (`albert-core`, `python -m albert_core`): main() with transformers'
    torchao import skipped, since no command quantizes (serving.skip_torchao: 0.4 s and four lines of torchao's
    and torch's warnings on stderr before verify's table). main() itself changes nothing of the process but drop those
    messages from the log (serving.quiet_torchao), so it stays callable in any process, torchao's users included."""
    from ..estimate.serving import skip_torchao

    skip_torchao()
    return main(argv, prog)


def _measure_command(args: argparse.Namespace) -> str:
    from ..estimate.serving import quiet_torchao

    # in a process where torchao is not marked absent (main() called in-process: the tests), transformers imports
    # it on the first model class asked for, and torch's _pytree warning came before "error: ..." on stderr, or not,
    # by which tests had run in that process before
    quiet_torchao()
    from ..processes import parent_plan

    for note in parent_plan.runtime_notes():  # once, before the measurement, on stderr (not the JSON)
        print(f"note: {note}", file=sys.stderr)
    if args.command == "memory" and (decoder := load_decoder(args)) is not None:
        from .decoder_memory import decoder_memory_json, decoder_memory_text

        d = decoder_memory_json(decoder, args)
        return cli_measure.dumps(d) if args.json else decoder_memory_text(d)
    if args.command == "memory":
        d = cli_measure.memory_json(load_config(args), args)
        return cli_measure.dumps(d) if args.json else cli_measure.memory_text(d)
    cfg, raw = load_any(args)
    request = cli_measure.verify_request(args, cfg, raw)
    if args.trace:  # its refusals before the measurement
        cli_measure.trace_refusal(request)
    d = cli_measure.verify_json(cfg, request)
    if args.trace:
        d["trace"] = cli_measure.trace_json(cfg, request)
    if args.json:
        return cli_measure.dumps(d)
    return "\n".join([cli_measure.verify_text(d), *(cli_measure.trace_text(d) if args.trace else [])])
