"""What a causal LM's loss saves for backward: the vocabulary's cost in memory past its table (issue 54).

transformers' ForCausalLMLoss (loss/loss_utils.py) upcasts the logits to float32 (`logits.float()`), pads and shifts
the labels, and calls cross_entropy, whose log_softmax saves its float32 output (aten._log_softmax: its backward reads
the result) and whose nll_loss saves the target and total_weight (aten.nll_loss_forward). The engine measures them as
the causal LM's own rows (cli/decoder_memory.HEAD_MODULES): tests/test_decoder_memory.py holds them equal.
"""

from __future__ import annotations

from .decoder_config import DecoderConfig

LABEL_BYTES = 8  # int64 labels (input_ids), shifted: nll_loss's target, B x S
TOTAL_WEIGHT_BYTES = 4  # nll_loss's total_weight: a float32 scalar


def loss_saved(c: DecoderConfig, batch_size: int, seq_len: int) -> int:
    """Bytes the loss saves: log_softmax's float32 B x S x V, the B x S shifted labels, nll_loss's total_weight."""
    return 4 * batch_size * seq_len * c.vocab_size + LABEL_BYTES * batch_size * seq_len + TOTAL_WEIGHT_BYTES

