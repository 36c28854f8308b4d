"""Decoders (issue 54): count_decoder equals sum(p.numel()) of what transformers builds, to the parameter.

For each family, 100 random config.json dicts, drawn as the family's config class reads them (its own key names; keys
left out so that transformers' defaults apply: GPT-2's n_inner of 4·H, Qwen2's 32 key/value heads, Qwen3's head_dim
128, Gemma-3's 4 key/value heads and head_dim 256, Llama's heads and head_dim that follow the query heads), read by
decoders.decoder_config.from_hf and built by AutoConfig.for_model(**d) + AutoModel on the meta device, independently of our
own mapping; every row of the breakdown equals the numel of the module it names in layer 0 (or the model), times the
layers; every preset equals its published count and what transformers builds from our config.json (to_hf), with the
causal LM's head (tied: counted once) too.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert_core.decoders import FAMILIES
from albert_core.decoders.decoder_config import DecoderConfig, DecoderError, from_hf
from albert_core.decoders.decoder_params import count_decoder
from albert_core.decoders.decoder_presets import DECODER_PRESETS
from albert_core.engine.building import on_device

N = 100  # random configs per family (issue 54: at least 100)


def built(d: dict, causal_lm: bool = False):
    """transformers' model for the config.json d, on the meta device (no storage)."""
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM
    from transformers.utils import logging

    logging.set_verbosity_error()
    conf = AutoConfig.for_model(**d)
    with on_device("meta"):
        return (AutoModelForCausalLM if causal_lm else AutoModel).from_config(conf)


def numel(model) -> int:
    """sum(numel) over named_parameters(): a tied tensor counted once."""
    return sum(p.numel() for _, p in model.named_parameters())


def rows_equal_modules(count, model) -> None:
    """Each row's per-copy parameters are the numel of the module it names (layer 0 for a layer's row), and the
    copies are the layers; together they are every parameter."""
    own = f"{model.base_model_prefix}."  # a causal LM holds the base model under it (model., transformer.)
    params = {k.removeprefix(own) if model.base_model is not model else k: p for k, p in model.named_parameters()}
    seen = set()
    layer0 = next(p for p in ("layers.0.", "h.0.") if any(k.startswith(p) for k in params))
    for g in count.groups:
        module = g.module.split(" ")[0]
        if g.component == "head":
            names = [k for k in params if k.startswith("lm_head.")]
            assert sum(params[k].numel() for k in names) == (g.per_copy if g.copies else 0), g
            seen.update(names)
            continue
        prefix = (layer0 if g.component == "layers" else "") + module + "."
        names = [k for k in params if k.startswith(prefix)]
        assert names and sum(params[k].numel() for k in names) == g.per_copy, (g, names)
        if g.component == "layers":
            assert g.copies == count.cfg.num_layers
            names = [k for k in params if re.sub(r"^(layers|h)\.\d+\.", layer0, k).startswith(prefix)]
        seen.update(names)
    assert seen == set(params), set(params) - seen


@st.composite
def decoder_dicts(draw, family: str) -> dict:
    fam = FAMILIES[family]
    rope = fam.rope
    kv_default = {"llama": None, "qwen2": 32, "qwen3": 32, "gemma3_text": 4}.get(family)
    omit_kv = family != "gpt2" and draw(st.booleans())
    if family == "gpt2":
        heads = draw(st.integers(1, 6))
        kv = heads
    elif omit_kv and kv_default:
        kv = kv_default
        heads = kv * draw(st.integers(1, 2))
    else:
        kv = draw(st.integers(1, 4))
        heads = kv * draw(st.integers(1, 3))
    d_default = {"qwen3": 128, "gemma3_text": 256}.get(family)
    width = draw(st.integers(1, 8)) * (2 if rope else 1)
    if family in ("gpt2", "llama", "qwen2"):  # head_dim = hidden / heads unless set: even for RoPE
        hidden = heads * width
    elif fam.heads_divide_hidden:
        hidden = heads * draw(st.integers(1, 16))
    else:
        hidden = draw(st.integers(4, 64))
    k = fam.keys
    d = {"model_type": family, k["vocab_size"]: draw(st.integers(8, 3000)), k["hidden_dim"]: hidden,
         k["num_layers"]: draw(st.integers(1, 4)), k["num_heads"]: heads,
         k["max_position"]: draw(st.integers(16, 2048)), k["intermediate_dim"]: draw(st.integers(1, 96))}
    if family == "gpt2" and draw(st.booleans()):
        del d["n_inner"]  # 4·H
    if family != "gpt2":
        if not omit_kv:
            d["num_key_value_heads"] = kv
        elif kv_default is None and draw(st.booleans()):
            d["num_key_value_heads"] = None  # null: one per query head
        if family in ("qwen3", "gemma3_text") and draw(st.booleans()):
            d["head_dim"] = draw(st.integers(1, 16)) * 2
        elif family == "llama" and draw(st.booleans()):
            d["head_dim"] = draw(st.integers(1, 16)) * 2  # set apart from hidden / heads
        elif d_default is None:
            pass  # hidden / heads, which the draw made even
    for key in ("attention_bias", "mlp_bias"):
        if key in k.values() and draw(st.booleans()):
            d[key] = draw(st.booleans())
    if draw(st.booleans()):
        d[k["tied"]] = draw(st.booleans())
    if family == "gemma3_text":
        d["sliding_window"] = draw(st.integers(1, d["max_position_embeddings"]))
        d["use_bidirectional_attention"] = draw(st.booleans())
    return d


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_count_equals_what_transformers_builds(family):
    @settings(max_examples=N, deadline=None)
    @given(decoder_dicts(family), st.booleans())
    def run(d, causal_lm):
        cfg = from_hf(d)
        model = built(d, causal_lm)
        count = count_decoder(cfg, heads=causal_lm)
        assert count.total == numel(model), (d, cfg)
        rows_equal_modules(count, model)
        assert from_hf(cfg.to_hf()) == cfg.replace(name=family)  # our own config.json reads back the same

    run()


@pytest.mark.parametrize("name", sorted(DECODER_PRESETS))
def test_every_preset_equals_its_published_count_and_what_transformers_builds(name):
    p = DECODER_PRESETS[name]
    base, lm = count_decoder(p.cfg), count_decoder(p.cfg, heads=True)
    assert base.total == p.base_params  # the published count (the reference's)
    model = built(p.cfg.to_hf())
    assert type(model).__name__ == FAMILIES[p.cfg.family].model_class
    assert numel(model) == base.total
    rows_equal_modules(base, model)
    causal = built(p.cfg.to_hf(), causal_lm=True)
    assert numel(causal) == lm.total == base.total + (0 if p.cfg.tied else base.token_table)
    rows_equal_modules(lm, causal)


def test_the_embedding_share_the_issue_gives():
    """Issue 54's numbers: V×H over the base model's total."""
    share = {n: count_decoder(DECODER_PRESETS[n].cfg) for n in ("Qwen2.5-0.5B", "Llama-3.2-1B", "gemma-3-270m")}
    assert (share["Qwen2.5-0.5B"].token_table, share["Qwen2.5-0.5B"].total) == (136_134_656, 494_032_768)
    assert (share["Llama-3.2-1B"].token_table, share["Llama-3.2-1B"].total) == (262_668_288, 1_235_814_400)
    assert round(share["gemma-3-270m"].embedding_pct) == 63


def test_untied_head_adds_its_own_table():
    cfg = DECODER_PRESETS["Llama-3.2-1B"].cfg.replace(tied=False)
    assert count_decoder(cfg, heads=True).head == cfg.vocab_size * cfg.hidden_dim
    assert count_decoder(cfg.replace(tied=True), heads=True).head == 0


BAD = [
    ({"num_key_value_heads": 3}, ("num_key_value_heads (3) must divide num_attention_heads (14)", "try 2 or 7")),
    ({"vocab_size": 0}, ("vocab_size must be between 1 and", "got 0")),
    ({"vocab_size": 10**12}, ("vocab_size must be between 1 and 1,073,741,824", "got 1,000,000,000,000")),
    ({"vocab_size": "many"}, ("vocab_size", "whole number")),
    ({"hidden_size": -896}, ("hidden_size must be between 1", "got -896")),
    ({"head_dim": 63}, ("head_dim (63) must be even", "try 64")),
    ({"num_experts": 8}, ("num_experts=8 is not supported", "mixture-of-experts")),
    ({"quantization_config": {"bits": 4}}, ("quantization_config", "remove the key")),
]


@pytest.mark.parametrize("change, said", BAD, ids=[next(iter(b[0])) + "=" + str(next(iter(b[0].values())))[:12]
                                                    for b in BAD])
def test_bad_config_json_says_which_key_and_what_to_change(change, said):
    d = {**DECODER_PRESETS["Qwen2.5-0.5B"].cfg.to_hf(), **change}
    with pytest.raises(DecoderError) as e:
        from_hf(d)
    for s in said:
        assert s in str(e.value), str(e.value)


def test_a_window_longer_than_the_context_and_gpt2_heads_are_named():
    g = DECODER_PRESETS["gemma-3-270m"].cfg.to_hf()
    with pytest.raises(DecoderError, match=r"sliding_window \(40,000\) is larger than max_position_embeddings "
                                           r"\(32,768\).*at most 32,768"):
        from_hf({**g, "sliding_window": 40_000})
    with pytest.raises(DecoderError, match=r"layer_types lists 3 layers, num_hidden_layers says 18"):
        from_hf({**g, "layer_types": ["full_attention"] * 3})
    odd = ["sliding_attention"] * 18
    odd[2] = odd[7] = "full_attention"
    with pytest.raises(DecoderError, match=r"only a repeating pattern .* layers \[2, 7\] are global here"):
        from_hf({**g, "layer_types": odd})
    assert from_hf({**g, "layer_types": None, "sliding_window_pattern": 3}).global_every == 3
    with pytest.raises(DecoderError, match=r"use_sliding_window=true is not supported"):
        from_hf({**DECODER_PRESETS["Qwen2.5-0.5B"].cfg.to_hf(), "use_sliding_window": True})
    with pytest.raises(DecoderError, match=r"n_head \(5\) must divide n_embd \(768\): try 4 or 6"):
        from_hf({**DECODER_PRESETS["gpt2"].cfg.to_hf(), "n_head": 5})
    with pytest.raises(DecoderError, match="missing field 'hidden_size'"):
        from_hf({"model_type": "llama", "vocab_size": 10, "num_hidden_layers": 1, "num_attention_heads": 1})
    with pytest.raises(DecoderError, match="must hold a JSON object"):
        from_hf(["llama"])
    with pytest.raises(DecoderError, match="model_type must be one of gpt2, llama"):
        DecoderConfig(family="mixtral", vocab_size=1, hidden_dim=2, num_layers=1, num_heads=1, kv_heads=1, head_dim=2,
                      intermediate_dim=1, max_position=1)


def test_an_encoder_config_path_given_a_decoder_says_where_decoders_are_counted():
    """The sidebar's upload and the Hub import read encoders (formats.hf): a decoder's config.json is named as one,
    with where its numbers are, not "model_type must be one of 'bert', ..."."""
    from albert_core.config import ConfigError
    from albert_core.formats.hf import from_hf_config

    with pytest.raises(ConfigError, match=r"model_type 'qwen2' is a decoder.*params --config config.json.*Verify"):
        from_hf_config(DECODER_PRESETS["Qwen2.5-0.5B"].cfg.to_hf())


def test_huge_configs_stay_exact():
    """Python integers: no float or int64 on the way (10^5 layers of width 2^20)."""
    H, L, q = 1 << 20, 100_000, 1 << 30  # q: 2^14 heads of 2^16
    cfg = DECODER_PRESETS["Llama-3.2-1B"].cfg.replace(hidden_dim=H, num_layers=L, intermediate_dim=1 << 23,
                                                     num_heads=1 << 14, kv_heads=1 << 10, head_dim=1 << 16,
                                                     vocab_size=1 << 30, tied=False)
    c = count_decoder(cfg, heads=True)
    kv = (1 << 10) * (1 << 16)
    layer = 2 * H * q + 2 * H * kv + 3 * H * (1 << 23) + 2 * H
    assert c.total == 2 * (1 << 30) * H + L * layer + H > 2**63  # tables in and out, layers, the final norm


def small_config(rng, family: str, max_layers: int) -> DecoderConfig:
    """A small random config of the family, for the tests that run the model (grouped-query heads, an even RoPE
    head_dim set apart from hidden / heads where the family allows it, Gemma-3's window and layer pattern)."""
    kv = rng.randint(1, 3)
    heads = kv * rng.randint(1, 2)
    dim = 2 * rng.randint(1, 4)
    return DecoderConfig(family=family, vocab_size=rng.randint(16, 64), hidden_dim=heads * dim,
                         num_layers=rng.randint(1, max_layers), num_heads=heads,
                         kv_heads=heads if family == "gpt2" else kv,
                         head_dim=dim if family in ("gpt2", "llama", "qwen2") else 2 * rng.randint(1, 6),
                         intermediate_dim=rng.randint(4, 24), max_position=64,
                         sliding_window=rng.randint(2, 12) if family == "gemma3_text" else 0,
                         global_every=rng.randint(1, 4) if family == "gemma3_text" else 1)


def cache_bytes(cache) -> int:
    """Bytes of the storages a DynamicCache holds (its views keep whole storages alive), each storage once."""
    storages = {}
    for layer in cache.layers:
        for t in (layer.keys, layer.values):
            s = t.untyped_storage()
            storages[s.data_ptr()] = s.nbytes()
    return sum(storages.values())


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_kv_cache_equals_what_transformers_holds(family):
    """kv_cache after a prompt and after each of 3 generated tokens equals the storages of the real DynamicCache,
    on 6 random configs per family (Gemma-3: windows shorter and longer than the prompt), in float32 and bfloat16."""
    import random

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.utils import logging

    from albert_core.decoders.decoder_serving import kv_cache

    logging.set_verbosity_error()
    rng = random.Random(f"kv-{family}")
    for i in range(6):
        cfg = small_config(rng, family, max_layers=7)
        dtype = ("float32", "bfloat16")[i % 2]
        torch.manual_seed(i)
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**cfg.to_hf()), dtype=getattr(torch, dtype))
        model.eval()
        B, prompt = rng.randint(1, 3), rng.randint(1, 16)
        ids = torch.randint(0, cfg.vocab_size, (B, prompt + 3))
        with torch.no_grad():
            cache = model(input_ids=ids[:, :prompt], use_cache=True).past_key_values
            assert cache_bytes(cache) == kv_cache(cfg, B, prompt, 0, dtype).total, (cfg, B, prompt)
            for g in range(1, 4):
                cache = model(input_ids=ids[:, prompt + g - 1:prompt + g], past_key_values=cache,
                              use_cache=True).past_key_values
                assert cache_bytes(cache) == kv_cache(cfg, B, prompt, g, dtype).total, (cfg, B, prompt, g)


def flop_counted(cfg: DecoderConfig, B: int, S: int, attention: str, causal_lm: bool, train: bool = False) -> int:
    """FlopCounterMode over the model's forward (meta device), or forward and backward (real CPU tensors)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    d = {**cfg.to_hf(), "attn_implementation": attention}
    if train:
        torch.manual_seed(0)
        model = built_real(d, causal_lm)
        ids = torch.randint(0, cfg.vocab_size, (B, S))
    else:
        model = built(d, causal_lm)
        ids = torch.zeros(B, S, dtype=torch.long, device="meta")
    with FlopCounterMode(display=False) as fc:
        out = model(input_ids=ids)  # (use_cache=False makes the mask code read values: .item() on meta)
        if train:
            (out.logits if causal_lm else out.last_hidden_state).float().sum().backward()
    return fc.get_total_flops()


def built_real(d: dict, causal_lm: bool):
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    return (AutoModelForCausalLM if causal_lm else AutoModel).from_config(AutoConfig.for_model(**d))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_flops_equal_the_flop_counter(family):
    """decoder_forward_flops on 12 random configs per family (eager and sdpa's math path, the base model or the causal
    LM) equals FlopCounterMode on the meta device; decoder_training_flops, forward and backward on real tensors."""
    import random

    from albert_core.decoders.decoder_flops import decoder_forward_flops, decoder_training_flops

    rng = random.Random(f"flops-{family}")
    for i in range(12):
        cfg = small_config(rng, family, max_layers=3)
        B, S, lm = rng.randint(1, 3), rng.randint(1, 40), bool(i % 2)
        want = decoder_forward_flops(cfg, S, B, head=lm).total
        assert flop_counted(cfg, B, S, ("eager", "sdpa")[i % 3 == 0], lm) == want, (cfg, B, S, lm)
        if i < 3:
            assert flop_counted(cfg, B, S, "eager", lm, train=True) == decoder_training_flops(cfg, S, B, head=lm)


def test_flops_of_the_presets_equal_the_flop_counter():
    from albert_core.decoders.decoder_flops import decoder_forward_flops

    for name, p in DECODER_PRESETS.items():  # two of its layers: each layer counts alike (the draws above vary L)
        cfg = p.cfg.replace(num_layers=2)
        assert flop_counted(cfg, 2, 128, "sdpa", True) == decoder_forward_flops(cfg, 128, 2, head=True).total, name


@pytest.mark.parametrize("name", sorted(DECODER_PRESETS))
def test_albert_cuts_for_a_decoder(name):
    """decoder_cuts against independent counts: one stored layer is the count of a one-layer model (which
    transformers builds, above); the factorized tables are V·E (and GPT-2's positions) + E·H in + H·E out where tied."""
    from albert_core.decoders.decoder_params import decoder_cuts

    cfg = DECODER_PRESETS[name].cfg
    now, one = count_decoder(cfg), count_decoder(cfg.replace(num_layers=1))
    rows = {r["variant"]: r for r in decoder_cuts(cfg, 64)}
    assert rows["as stored now"]["total"] == now.total and rows["as stored now"]["saved"] == 0
    assert rows["shared all"]["layers"] == one.layers
    assert rows["shared attention"]["layers"] + rows["shared FFN"]["layers"] == now.layers + one.layers
    positions = cfg.max_position if cfg.family == "gpt2" else 0
    H = cfg.hidden_dim
    assert rows["factorized, E=64"]["embedding"] == (cfg.vocab_size + positions) * 64 + 64 * H + (H * 64 if cfg.tied else 0)
    both = rows["both: E=64, shared all"]
    assert both["total"] == rows["factorized, E=64"]["embedding"] + one.layers + now.final_norm
    for r in rows.values():
        assert r["total"] == r["embedding"] + r["layers"] + r["final_norm"] and r["saved"] == now.total - r["total"]
