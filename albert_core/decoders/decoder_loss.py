"""What a causal LM's loss saves for backward: the vocabulary's cost in memory past its table (issue 54).

transformers' ForCausalLMLoss (loss/loss_utils.py) upcasts the logits to float32 (`logits.float()`), pads and shifts
the labels, and calls cross_entropy, whose log_softmax saves its float32 output (aten._log_softmax: its backward reads
the result) and whose nll_loss saves the target and total_weight (aten.nll_loss_forward). The engine measures them as
the causal LM's own row (HEAD_MODULES' "(model)"): tests/test_decoder_memory.py holds them equal.
"""

from __future__ import annotations

from .decoder_config import DecoderConfig

# the engine's breakdown rows (engine.core.saved_breakdown) of the output projection (what it reads: the final norm's
# output) and of the causal LM's own forward around it (the loss: loss_saved's tensors)
HEAD_MODULES = ("lm_head", "(model)")
LABEL_BYTES = 8  # int64 labels (input_ids), shifted: nll_loss's target, B x S
TOTAL_WEIGHT_BYTES = 4  # nll_loss's total_weight: a float32 scalar


def loss_saved(c: DecoderConfig, batch_size: int, seq_len: int) -> int:
    """Bytes the loss saves: log_softmax's float32 B x S x V, the B x S shifted labels, nll_loss's total_weight.

    At batch 1 the shifted labels are no copy: `labels[..., 1:]` of the padded (1, S + 1) labels is already
    contiguous (a size-1 dimension's stride does not count), so `.contiguous()` returns the view and nll_loss saves
    the padded storage, S + 1 labels."""
    labels = batch_size * seq_len if batch_size > 1 else seq_len + 1
    return 4 * batch_size * seq_len * c.vocab_size + LABEL_BYTES * labels + TOTAL_WEIGHT_BYTES

