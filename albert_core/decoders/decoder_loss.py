"""What a causal LM's loss saves for backward: the vocabulary's cost in memory past its table (issue 54).

transformers' ForCausalLMLoss (loss/loss_utils.py) upcasts the logits to float32 (`logits.float()`), pads and shifts
the labels, and calls cross_entropy, whose log_softmax saves its float32 output (aten._log_softmax: its backward reads
the result) and whose nll_loss saves the target and total_weight (aten.nll_loss_forward). The engine measures them as
the causal LM's own row ("(model)", is_head_module): tests/test_decoder_memory.py holds them equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .decoder_config import DecoderConfig

LABEL_BYTES = 8  # int64 labels (input_ids), shifted: nll_loss's target, B x S
TOTAL_WEIGHT_BYTES = 4  # nll_loss's total_weight: a float32 scalar


def loss_saved(c: DecoderConfig, batch_size: int, seq_len: int) -> int:
    """Bytes the loss saves: log_softmax's float32 B x S x V, the B x S shifted labels, nll_loss's total_weight.

    At batch 1 the shifted labels are no copy: `labels[..., 1:]` of the padded (1, S + 1) labels is already
    contiguous (a size-1 dimension's stride does not count), so `.contiguous()` returns the view and nll_loss saves
    the padded storage, S + 1 labels."""
    labels = batch_size * seq_len if batch_size > 1 else seq_len + 1
    return 4 * batch_size * seq_len * c.vocab_size + LABEL_BYTES * labels + TOTAL_WEIGHT_BYTES


PEFT_PREFIX = "base_model.model"  # peft's PeftModelForCausalLM holds the causal LM under this path


def is_head_module(module: str) -> bool:
    """Whether a row of the engine's breakdown (engine.core.saved_breakdown) is the output projection's (it saves what
    it reads, the final norm's output) or the causal LM's own forward around it (the loss: loss_saved's tensors):
    'lm_head' and '(model)', or under peft 'base_model.model.lm_head' and 'base_model.model'."""
    return module.removeprefix(PEFT_PREFIX).removeprefix(".") in ("lm_head", "(model)", "")


def head_bytes(breakdown: Iterable[Mapping[str, Any]]) -> int:
    """The saved bytes of the breakdown's rows ({"module", "bytes"}) that is_head_module names."""
    return sum(int(r["bytes"]) for r in breakdown if is_head_module(str(r["module"])))
