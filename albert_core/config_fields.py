"""ConfigFields: the fields of a model configuration and what follows from them, below the families.

Field names follow the source texts (embedding_dim, hidden_dim, num_layers, num_heads,
intermediate_dim, dropout, max_position). Layer layout follows Hugging Face's ALBERT: the
encoder applies `num_layers` times a group of `inner_group_num` layers, and the layers are split
evenly into `num_groups` groups, each owning its parameters. The fields after inner_group_num
belong to one family each: declared here with their type and default, described (bounds or choices, help) in
albert_core/families/<name>.FIELDS; every other family leaves them at their defaults.

The families read a config through this type; `albert_core.config.ModelConfig` is the same fields, validated
against the families' rules when it is made (config.py sits above the families, this module below them, so no
import runs in a circle, not even the type checker's).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigFields:
    """A config's fields, not validated: make a config as albert_core.config.ModelConfig(...), which checks them;
    this type is what the code below the families annotates with."""

    name: str = "albert-base"  # shown in legends and tables
    family: str = "albert"  # "bert": V×H embedding; "albert": factorized V×E + E×H
    vocab_size: int = 30000  # V, rows of the token embedding
    embedding_dim: int = 128  # E, width of the embeddings (equals hidden_dim for bert)
    hidden_dim: int = 768  # H, width of the residual stream
    num_layers: int = 12  # L, number of layer applications (HF num_hidden_layers)
    num_heads: int = 12  # A, attention heads; must divide hidden_dim
    intermediate_dim: int = 3072  # I, FFN inner width, typically 4H
    dropout: float = 0.0  # hidden dropout probability (HF hidden_dropout_prob)
    attention_dropout: float = 0.0  # dropout on attention probabilities
    max_position: int = 512  # P, longest sequence (= position rows, plus position_offset where a table exists)
    type_vocab_size: int = 2  # segment (token type) embedding rows; 0 = no segment table (distilbert, deberta-v3)
    hidden_act: str = "gelu_new"  # FFN activation, a key of HF's ACT2FN
    sharing: str = "all"  # which sublayers the layers of a group share: none/attention/ffn/all
    num_groups: int = 1  # layers split evenly into groups, each owning its params (HF num_hidden_groups)
    inner_group_num: int = 1  # distinct layers inside one group, all run at each step (HF inner_group_num)
    # ---- fields of one or a few families; every other family keeps the default ----------
    position_offset: int = 0  # roberta: position rows before position 0 (pad_token_id + 1)
    relative_attention: bool = False  # deberta-v2: disentangled attention over relative positions
    max_relative_positions: int = -1  # deberta-v2: relative span k; below 1 means max_position
    position_buckets: int = -1  # deberta-v2: log buckets of relative distance; below 1 means none
    share_att_key: bool = False  # deberta-v2: position terms reuse the content key/query projections
    pos_att_type: str = ""  # deberta-v2: which position terms, "c2p", "p2c" or "c2p|p2c"
    position_biased_input: bool = True  # deberta-v2: absolute position table added to the input (v3: False)
    norm_rel_ebd: str = "none"  # deberta-v2: "layer_norm" normalizes the relative embeddings
    attention_bias: bool = True  # modernbert: biases in Wqkv and Wo
    mlp_bias: bool = True  # modernbert: biases in the gated FFN's Wi and Wo
    norm_bias: bool = True  # modernbert: LayerNorm with a bias
    global_attn_every_n_layers: int = 1  # modernbert: every n-th layer attends globally, the others locally
    local_attention: int = 128  # modernbert: local (sliding) window width in tokens, both sides together
    relative_attention_num_buckets: int = 32  # mpnet: rows of the relative attention bias table (at least 32)

    # ---- derived quantities -------------------------------------------------------------
    @property
    def head_dim(self) -> int:
        return self.hidden_dim // self.num_heads

    @property
    def factorized(self) -> bool:
        """ALBERT's factorized embedding (V×E + E×H); ELECTRA's/DeBERTa's projection is family-specific."""
        return self.family == "albert"  # a family name: ALBERT's factorization is the lens of the whole app

    @property
    def layer_applications(self) -> int:
        """Layer forwards per pass: HF runs the whole inner group at each of num_layers steps."""
        return self.num_layers * self.inner_group_num

    @property
    def effective_groups(self) -> int:
        """Groups that own parameters; with sharing='none' every layer application owns its own."""
        return self.num_layers if self.sharing == "none" else self.num_groups
