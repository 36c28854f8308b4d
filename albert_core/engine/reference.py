"""ReferenceModel: BERT/ALBERT in plain PyTorch, every sharing mode, the same ops as Hugging Face.

Mirrors transformers 5.23's BertModel (family "bert") and AlbertModel (family "albert") op by op:
embeddings (modeling_{bert,albert}.py *Embeddings.forward), eager attention (eager_attention_forward)
or SDPA (integrations/sdpa_attention.py sdpa_attention_forward), the FFN and the pooler. The
dropouts sit where each family's HF modules put them: BertOutput applies dropout after the FFN
output dense; AlbertLayer does not. So for configs HF can express, autograd saves the same tensors.

Sharing is real tensor sharing: a group's layers hold the *same* Attention/FeedForward module
objects, so sum(p.numel() for p in model.parameters()) == count_parameters(cfg).total.
Layout as HF ALBERT: num_layers steps, step i runs group i // (num_layers // num_groups), a
group is inner_group_num distinct layers (ALBERT paper Sec. 3.1, cross-layer parameter sharing).
"""

from __future__ import annotations

from functools import partial

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from ..config import ModelConfig, require_choice
from ..estimate.params import stored_copies
from ..families import family

ATTENTION_IMPLS = ("eager", "sdpa")
LAYER_NORM_EPS = 1e-12  # BertConfig/AlbertConfig layer_norm_eps
PAD_TOKEN_ID = 0  # BertConfig/AlbertConfig pad_token_id (word_embeddings padding_idx)
INITIALIZER_RANGE = 0.02  # BertConfig/AlbertConfig initializer_range


def _activation(name: str) -> nn.Module:
    """The module HF's ACT2FN[name] builds; imported lazily so albert_core starts without transformers."""
    from transformers.activations import ACT2FN

    return ACT2FN[name]


class Embeddings(nn.Module):
    """BertEmbeddings / AlbertEmbeddings: word + token_type, + position, LayerNorm, Dropout (width E)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        E = cfg.embedding_dim
        self.word_embeddings = nn.Embedding(cfg.vocab_size, E, padding_idx=PAD_TOKEN_ID)
        self.position_embeddings = nn.Embedding(cfg.max_position, E)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, E)
        self.LayerNorm = nn.LayerNorm(E, eps=LAYER_NORM_EPS)
        self.dropout = nn.Dropout(cfg.dropout)
        # (1, P) buffers, not parameters, as in HF
        self.position_ids = nn.Buffer(torch.arange(cfg.max_position).expand((1, -1)), persistent=False)
        self.token_type_ids = nn.Buffer(torch.zeros(self.position_ids.size(), dtype=torch.long), persistent=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        batch_size, seq_length = input_ids.size()  # input_ids: (B, S)
        position_ids = self.position_ids[:, :seq_length]  # (1, S)
        buffered = self.token_type_ids.expand(position_ids.shape[0], -1)  # (1, P)
        buffered = torch.gather(buffered, dim=1, index=position_ids)  # (1, S)
        token_type_ids = buffered.expand(batch_size, seq_length)  # (B, S)
        inputs_embeds = self.word_embeddings(input_ids)  # (B, S, E)
        embeddings = inputs_embeds + self.token_type_embeddings(token_type_ids)  # (B, S, E)
        embeddings = embeddings + self.position_embeddings(position_ids)  # (B, S, E) + (1, S, E)
        embeddings = self.LayerNorm(embeddings)
        return self.dropout(embeddings)  # (B, S, E)


class Attention(nn.Module):
    """Self-attention + output dense + dropout + LayerNorm(residual + x): AlbertAttention, or
    BertSelfAttention followed by BertSelfOutput. One stored copy; shared layers reuse the object."""

    def __init__(self, cfg: ModelConfig, attention: str):
        super().__init__()
        H = cfg.hidden_dim
        self.family = cfg.family
        self.attention = attention
        self.attention_head_size = cfg.head_dim  # D = H / A
        self.scaling = self.attention_head_size**-0.5
        self.attention_dropout = nn.Dropout(cfg.attention_dropout)
        self.query = nn.Linear(H, H)
        self.key = nn.Linear(H, H)
        self.value = nn.Linear(H, H)
        self.dense = nn.Linear(H, H)
        self.output_dropout = nn.Dropout(cfg.dropout)
        self.LayerNorm = nn.LayerNorm(H, eps=LAYER_NORM_EPS)

    def _eager(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout: float) -> torch.Tensor:
        # modeling_bert.eager_attention_forward (ALBERT's is a copy of it)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) * self.scaling  # (B, A, S, S)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, v)  # (B, A, S, D)
        return attn_output.transpose(1, 2).contiguous()  # (B, S, A, D)

    def _sdpa(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout: float) -> torch.Tensor:
        # integrations/sdpa_attention.sdpa_attention_forward with no mask, is_causal False
        q_length = q.shape[2]
        attn_output = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=None, dropout_p=dropout, scale=self.scaling, is_causal=False
        )  # (B, A, S, D)
        attn_output = attn_output.reshape(attn_output.shape[0], -1, q_length, v.shape[-1])
        return attn_output.transpose(1, 2).contiguous()  # (B, S, A, D)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        input_shape = hidden_states.shape[:-1]  # (B, S)
        hidden_shape = (*input_shape, -1, self.attention_head_size)  # (B, S, A, D)
        q = self.query(hidden_states).view(*hidden_shape).transpose(1, 2)  # (B, A, S, D)
        k = self.key(hidden_states).view(*hidden_shape).transpose(1, 2)
        v = self.value(hidden_states).view(*hidden_shape).transpose(1, 2)
        dropout = 0.0 if not self.training else self.attention_dropout.p
        attend = self._sdpa if self.attention == "sdpa" else self._eager
        attn_output = attend(q, k, v, dropout)  # (B, S, A, D)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()  # (B, S, H)
        attn_output = self.dense(attn_output)
        attn_output = self.output_dropout(attn_output)
        # a family name: the reference encoder builds BERT's and ALBERT's layers (measure.REFERENCE_FAMILIES)
        if self.family == "bert":  # BertSelfOutput: LayerNorm(hidden_states + input_tensor)
            return self.LayerNorm(attn_output + hidden_states)
        return self.LayerNorm(hidden_states + attn_output)  # AlbertAttention


class FeedForward(nn.Module):
    """H -> I -> H with activation and LayerNorm(ffn + attention_output).

    ALBERT (AlbertLayer.ff_chunk): ffn, activation, ffn_output, then full_layer_layer_norm; no dropout.
    BERT (BertIntermediate + BertOutput): dense, activation, dense, dropout, LayerNorm.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        H, I = cfg.hidden_dim, cfg.intermediate_dim
        self.family = cfg.family
        self.ffn = nn.Linear(H, I)
        self.activation = _activation(cfg.hidden_act)
        self.ffn_output = nn.Linear(I, H)
        self.dropout = nn.Dropout(cfg.dropout)  # used by BERT only
        self.LayerNorm = nn.LayerNorm(H, eps=LAYER_NORM_EPS)

    def forward(self, attention_output: torch.Tensor) -> torch.Tensor:
        x = self.ffn(attention_output)  # (B, S, I)
        x = self.activation(x)
        x = self.ffn_output(x)  # (B, S, H)
        if self.family == "bert":  # a family name: BertOutput's dropout, which AlbertLayer does not apply
            x = self.dropout(x)
        return self.LayerNorm(x + attention_output)  # (B, S, H)


class Layer(nn.Module):
    """One layer application: attention then FFN. Holds (possibly shared) sublayer modules."""

    def __init__(self, attention: Attention, ffn: FeedForward):
        super().__init__()
        self.attention = attention
        self.ffn = ffn

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.ffn(self.attention(hidden_states))  # (B, S, H)


class ReferenceModel(nn.Module):
    """BertModel/AlbertModel (pooler included) for any ModelConfig; forward(input_ids) -> (sequence, pooled)."""

    def __init__(self, cfg: ModelConfig, attention: str = "eager"):
        super().__init__()
        require_choice("attention", attention, ATTENTION_IMPLS)
        self.cfg = cfg
        self.attention_impl = attention
        self.gradient_checkpointing = False  # in training, recompute each layer application in backward
        H = cfg.hidden_dim
        self.embeddings = Embeddings(cfg)
        # ALBERT Sec. 3.1: project the E-wide embeddings up to H (AlbertTransformer.embedding_hidden_mapping_in)
        self.embedding_hidden_mapping_in = nn.Linear(cfg.embedding_dim, H) if cfg.factorized else None
        # the stored copies: shared sublayers once per (group, inner slot), unshared once per application
        n_att, n_ffn = stored_copies(cfg, "attention"), stored_copies(cfg, "ffn")
        self.attentions = nn.ModuleList([Attention(cfg, attention) for _ in range(n_att)])
        self.ffns = nn.ModuleList([FeedForward(cfg) for _ in range(n_ffn)])
        # layer application j = step i, inner slot k; groups: step i runs group i // (L / G)
        inner, steps_per_group = cfg.inner_group_num, cfg.num_layers // max(1, cfg.num_groups)
        layers = []
        for i in range(cfg.num_layers):
            g = i // steps_per_group if cfg.sharing != "none" else 0
            for k in range(inner):
                unshared = i * inner + k  # own copy per application
                shared = g * inner + k  # one copy per (group, slot)
                a = shared if cfg.sharing in ("all", "attention") else unshared
                f = shared if cfg.sharing in ("all", "ffn") else unshared
                layers.append(Layer(self.attentions[a], self.ffns[f]))
        self.layers = nn.ModuleList(layers)  # cfg.layer_applications entries, sharing modules
        self.pooler = nn.Linear(H, H)
        self.pooler_activation = nn.Tanh()
        if not any(p.is_meta for p in self.parameters()):
            self.apply(self._init_weights)

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """As PreTrainedModel._init_weights for BERT/ALBERT: N(0, 0.02), zero bias, LayerNorm 1/0."""
        if isinstance(module, nn.Linear):
            module.weight.normal_(0.0, INITIALIZER_RANGE)
            module.bias.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.normal_(0.0, INITIALIZER_RANGE)
            if module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.weight.fill_(1.0)
            module.bias.zero_()

    def _run_layer(self, layer: Layer, hidden_states: torch.Tensor) -> torch.Tensor:
        if self.gradient_checkpointing and self.training:
            # transformers GradientCheckpointingLayer: checkpoint(partial(forward, self), *args), use_reentrant=False
            # (PreTrainedModel._activation_checkpointing_enable's default kwargs)
            return checkpoint(partial(Layer.forward, layer), hidden_states, None, use_reentrant=False)
        return layer(hidden_states, None)

    def forward(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden_states = self.embeddings(input_ids)  # (B, S, E)
        if self.embedding_hidden_mapping_in is not None:
            hidden_states = self.embedding_hidden_mapping_in(hidden_states)  # (B, S, H)
        for layer in self.layers:
            hidden_states = self._run_layer(layer, hidden_states)  # (B, S, H)
        sequence_output = hidden_states
        pooled_output = self.pooler_activation(self.pooler(sequence_output[:, 0]))  # (B, H)
        return sequence_output, pooled_output

    # ---- weights from / to Hugging Face ----------------------------------------------------------
    def hf_parameter_map(self) -> dict[str, str]:
        """Our parameter name -> HF BertModel/AlbertModel name; only for configs hf_expressible(cfg)."""
        from ..formats.hf import hf_expressible

        cfg = self.cfg
        if not hf_expressible(cfg):
            raise ValueError(f"{cfg.name}: Hugging Face cannot express sharing={cfg.sharing!r} with these groups")
        m: dict[str, str] = {}
        for n in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
            m[f"embeddings.{n}.weight"] = f"embeddings.{n}.weight"
        for t in ("weight", "bias"):
            m[f"embeddings.LayerNorm.{t}"] = f"embeddings.LayerNorm.{t}"
            m[f"pooler.{t}"] = f"{family(cfg.family).STEP.pooler}.{t}"  # BERT's pooler.dense, ALBERT's pooler
            if cfg.factorized:
                m[f"embedding_hidden_mapping_in.{t}"] = f"encoder.embedding_hidden_mapping_in.{t}"
        inner = cfg.inner_group_num
        for j, layer in enumerate(self.layers):
            a = next(i for i, x in enumerate(self.attentions) if x is layer.attention)
            f = next(i for i, x in enumerate(self.ffns) if x is layer.ffn)
            if cfg.family == "bert":  # a family name: HF's names for the reference's BERT and ALBERT layers
                hf = f"encoder.layer.{j}."
                att = {"query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
                       "dense": "attention.output.dense", "LayerNorm": "attention.output.LayerNorm"}
                ffn = {"ffn": "intermediate.dense", "ffn_output": "output.dense", "LayerNorm": "output.LayerNorm"}
            else:  # stored copy a (== f) is HF group a // inner, inner layer a % inner
                hf = f"encoder.albert_layer_groups.{a // inner}.albert_layers.{a % inner}."
                att = {n: f"attention.{n}" for n in ("query", "key", "value", "dense", "LayerNorm")}
                ffn = {"ffn": "ffn", "ffn_output": "ffn_output", "LayerNorm": "full_layer_layer_norm"}
            for t in ("weight", "bias"):
                for ours, theirs in att.items():
                    m[f"attentions.{a}.{ours}.{t}"] = hf + theirs + "." + t
                for ours, theirs in ffn.items():
                    m[f"ffns.{f}.{ours}.{t}"] = hf + theirs + "." + t
        return m

    @torch.no_grad()
    def load_hf_weights(self, hf_model: nn.Module) -> None:
        """Copy every parameter from HF's BertModel/AlbertModel built for the same cfg."""
        theirs = dict(hf_model.named_parameters(remove_duplicate=False))
        ours = dict(self.named_parameters(remove_duplicate=False))
        for mine, their_name in self.hf_parameter_map().items():
            ours[mine].copy_(theirs[their_name])
