"""The --lora-* flags of `memory` and `verify`, read once for an encoder's fine-tuning and a decoder's alike."""

from __future__ import annotations

import argparse

from ..choices import LoraSpec
from ..estimate.lora import parse_targets
from ..share import CONTROLS

FLAGS = ("r", "alpha", "dropout", "targets")  # --lora-r, --lora-alpha, --lora-dropout, --lora-targets


def verb(flags: list[str]) -> str:
    return "applies" if len(flags) == 1 else "apply"


def number(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def lora_of(args: argparse.Namespace, mode: str) -> LoraSpec | None:
    """The LoraSpec the flags name where mode is lora (a flag left out: the app's default, share.CONTROLS; targets
    left out: peft's default for the model type), else None; a --lora-* flag without --train lora is a ValueError."""
    given = [f"--lora-{n}" for n in FLAGS if getattr(args, f"lora_{n}", None) is not None]
    if mode != "lora":
        if given:
            raise ValueError(f"{', '.join(given)} only {verb(given)} with --train lora (the mode is {args.train!r})")
        return None
    return LoraSpec(r=CONTROLS["lora_r"].default if args.lora_r is None else args.lora_r,
                    lora_alpha=CONTROLS["lora_alpha"].default if args.lora_alpha is None else number(args.lora_alpha),
                    lora_dropout=(CONTROLS["lora_dropout"].default if args.lora_dropout is None
                                  else number(args.lora_dropout)),
                    targets=parse_targets(args.lora_targets) if args.lora_targets is not None else None)
