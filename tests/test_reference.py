"""albert_core.engine.reference against Hugging Face's BertModel/AlbertModel: same outputs, same saved tensors."""

import pytest
import torch

from albert_core.config import ModelConfig
from albert_core.engine.models import count_built, hf_model, reference_model
from albert_core.estimate.params import count_parameters


def small(family: str, **kw) -> ModelConfig:
    base = dict(name="t", family=family, vocab_size=50, hidden_dim=32, embedding_dim=32 if family == "bert" else 16,
                num_layers=4, num_heads=4, intermediate_dim=48, max_position=20, hidden_act="gelu_new",
                dropout=0.1, attention_dropout=0.1, sharing="none")
    base.update(kw)
    return ModelConfig(**base)


CASES = [
    small("bert"),
    small("bert", hidden_act="gelu", num_layers=2),
    small("bert", sharing="all", num_groups=4),  # every layer its own group: HF-expressible
    small("albert"),
    small("albert", sharing="all", num_groups=1),
    small("albert", sharing="all", num_groups=2, inner_group_num=2, hidden_act="relu"),
    small("albert", sharing="all", num_groups=1, inner_group_num=3, hidden_act="silu"),
    small("albert", sharing="attention", num_groups=4),
]


def _pair(cfg, attention, seed=0):
    torch.manual_seed(seed)
    hf = hf_model(cfg, device="cpu", attention=attention)
    ref = reference_model(cfg, device="cpu", attention=attention)
    ref.load_hf_weights(hf)
    return hf, ref


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("cfg", CASES, ids=lambda c: f"{c.family}-{c.sharing}-g{c.num_groups}-i{c.inner_group_num}")
def test_outputs_equal_hf(cfg, attention):
    hf, ref = _pair(cfg, attention)
    hf.eval()
    ref.eval()
    ids = torch.randint(0, cfg.vocab_size, (3, 11), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out = hf(ids)
        seq, pooled = ref(ids)
    assert seq.shape == (3, 11, cfg.hidden_dim) and pooled.shape == (3, cfg.hidden_dim)
    torch.testing.assert_close(seq, out.last_hidden_state, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(pooled, out.pooler_output, rtol=1e-5, atol=1e-5)
    assert count_built(ref) == count_built(hf) == count_parameters(cfg).total


def _saved_tensors(model, ids, seed):
    """Every tensor autograd saves for backward, in order, with the loss (dropout active: training mode)."""
    saved = []

    def pack(t):
        saved.append(t.detach().clone())
        return t

    torch.manual_seed(seed)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(ids)
        seq, pooled = out if isinstance(out, tuple) else (out.last_hidden_state, out.pooler_output)
        loss = seq.square().mean() + pooled.sum()
    return saved, loss


# transformers' AlbertModel does not support gradient checkpointing: BERT only for that comparison
@pytest.mark.parametrize("family,attention,checkpointing", [
    ("bert", "eager", False), ("bert", "sdpa", False), ("bert", "eager", True), ("bert", "sdpa", True),
    ("albert", "eager", False), ("albert", "sdpa", False),
])
def test_saved_tensors_equal_hf_in_training(family, attention, checkpointing):
    cfg = small(family, num_layers=3) if family == "bert" else small(family, sharing="all", num_groups=1,
                                                                       inner_group_num=2, num_layers=3)
    hf, ref = _pair(cfg, attention)
    hf.train()
    ref.train()
    if checkpointing:
        hf.activation_checkpointing_enable()
        ref.gradient_checkpointing = True
    ids = torch.randint(0, cfg.vocab_size, (2, 7), generator=torch.Generator().manual_seed(2))
    a, loss_a = _saved_tensors(hf, ids, seed=3)
    b, loss_b = _saved_tensors(ref, ids, seed=3)
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        assert x.shape == y.shape and x.dtype == y.dtype
        assert torch.equal(x, y)
    assert torch.equal(loss_a, loss_b)
    # and the gradients agree
    loss_a.backward()
    loss_b.backward()
    theirs = dict(hf.named_parameters())
    ours = dict(ref.named_parameters(remove_duplicate=False))
    for mine, their_name in ref.hf_parameter_map().items():
        torch.testing.assert_close(ours[mine].grad, theirs[their_name].grad, rtol=1e-5, atol=1e-6)


def test_checkpointing_saves_less_and_gives_same_gradients():
    cfg = small("albert", sharing="ffn", num_groups=2, dropout=0.0, attention_dropout=0.0)
    torch.manual_seed(0)
    ref = reference_model(cfg, device="cpu").train()
    ids = torch.randint(0, cfg.vocab_size, (2, 9))
    full, loss = _saved_tensors(ref, ids, seed=0)
    loss.backward()
    grads = [p.grad.clone() for p in ref.parameters()]
    ref.zero_grad()
    ref.gradient_checkpointing = True
    ckpt, loss2 = _saved_tensors(ref, ids, seed=0)
    loss2.backward()
    assert sum(t.numel() for t in ckpt) < sum(t.numel() for t in full)
    for g, p in zip(grads, ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, g)


@pytest.mark.parametrize("sharing", ["none", "attention", "ffn", "all"])
def test_sharing_is_real_tensor_sharing(sharing):
    cfg = small("albert", sharing=sharing, num_layers=6, num_groups=3, inner_group_num=2)
    ref = reference_model(cfg, device="meta")
    assert len(ref.layers) == cfg.layer_applications == 12
    assert count_built(ref) == count_parameters(cfg).total
    att_ids = [id(layer.attention) for layer in ref.layers]
    ffn_ids = [id(layer.ffn) for layer in ref.layers]
    n_att = 6 if sharing in ("all", "attention") else 12
    n_ffn = 6 if sharing in ("all", "ffn") else 12
    assert len(set(att_ids)) == n_att and len(set(ffn_ids)) == n_ffn
    if sharing != "none":
        # steps 0 and 1 belong to group 0: the same inner-slot modules; step 2 starts group 1
        shared = ref.layers[0].attention if sharing in ("all", "attention") else ref.layers[0].ffn
        again = ref.layers[2].attention if sharing in ("all", "attention") else ref.layers[2].ffn
        other = ref.layers[4].attention if sharing in ("all", "attention") else ref.layers[4].ffn
        assert shared is again and shared is not other


def test_bad_attention_and_inexpressible_map():
    cfg = small("albert", sharing="attention", num_groups=2)
    with pytest.raises(ValueError, match="attention"):
        reference_model(cfg, attention="flash")
    with pytest.raises(ValueError, match="cannot express"):
        reference_model(cfg).hf_parameter_map()
