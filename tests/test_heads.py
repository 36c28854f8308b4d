"""Task heads: head_parameters and hf_modules.named_parameters against the AutoModelFor... models transformers builds.

Random config.json dicts of every family (the strategies of test_families_params), each head, a random
number of labels; the model is built by AutoConfig.for_model(**d) + AutoModel / AutoModelFor... on the
meta device, independently of our own config mapping.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_families_params import STRATEGIES

from albert_core.engine.building import on_device
from albert_core.estimate.heads import HEADS, head_parameters, parse_head
from albert_core.estimate.hf_modules import named_parameters
from albert_core.estimate.params import count_parameters
from albert_core.formats.hf import from_hf_config

N = 25  # random configs per family and head


def auto_model(d: dict, head: str, num_labels: int):
    """The model of `head` for the config.json d, built on the meta device."""
    from transformers import (
        AutoConfig,
        AutoModel,
        AutoModelForMaskedLM,
        AutoModelForSequenceClassification,
        AutoModelForTokenClassification,
    )
    from transformers.utils import logging

    logging.set_verbosity_error()
    cls = {"none": AutoModel, "classification": AutoModelForSequenceClassification,
           "token": AutoModelForTokenClassification, "mlm": AutoModelForMaskedLM}[head]
    conf = AutoConfig.for_model(**d, num_labels=num_labels)
    with on_device("meta"):
        return cls.from_config(conf)


def check(d: dict, head: str, num_labels: int) -> None:
    cfg = from_hf_config(d)
    model = auto_model(d, head, num_labels)
    real = {n: p.numel() for n, p in model.named_parameters()}
    count = head_parameters(cfg, head, num_labels)
    assert count.total == sum(real.values()), (d, head, count, sum(real.values()))
    ours = named_parameters(cfg, head, num_labels)
    assert len(ours) == len(real)
    names = {}  # a tied tensor has several names; named_parameters() yields the first registered
    for n, p in model.named_parameters(remove_duplicate=False):  # (XLM-RoBERTa's lm_head comes before roberta)
        names.setdefault(id(p), set()).add(n)
    for n, p in model.named_parameters():
        assert ours.get(next(iter(names[id(p)] & ours.keys()), None)) == p.numel(), (n, sorted(names[id(p)]))
    if head == "mlm":  # the decoder's weight is the word-embedding table itself
        out = model.get_output_embeddings()
        assert out.weight is model.get_input_embeddings().weight
        assert count.tied_decoder == out.weight.numel()
    else:
        assert count.tied_decoder == 0


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("family", sorted(STRATEGIES))
def test_head_count_equals_automodel_for(family, head):
    @settings(max_examples=N, deadline=None)
    @given(STRATEGIES[family](), st.integers(1, 40))
    def run(d, labels):
        check(d, head, labels)

    run()


@pytest.mark.parametrize("preset", ["bert-base", "albert-base", "roberta-base", "distilbert-base-uncased",
                                    "electra-base-discriminator", "deberta-v3-base", "ModernBERT-base"])
def test_presets_every_head(preset):
    from albert_core.formats.hf import hf_dict
    from albert_core.presets import PRESETS

    for head in HEADS:
        check(hf_dict(PRESETS[preset]), head, 3)


def test_none_is_the_base_model_and_bert_numbers():
    from albert_core.presets import PRESETS

    b = PRESETS["bert-base"]
    assert head_parameters(b).total == count_parameters(b).total
    cls = head_parameters(b, "classification", 3)
    assert cls.pooler_dropped == 0 and cls.head_params == 768 * 3 + 3  # classifier on the pooled [CLS]
    tok = head_parameters(b, "token", 3)
    assert tok.pooler_dropped == 768 * 768 + 768  # BertForTokenClassification: add_pooling_layer=False


def test_parse_head():
    assert parse_head("classification:3") == ("classification", 3)
    assert parse_head("token") == ("token", 2)
    assert parse_head("mlm") == ("mlm", 0)
    assert parse_head("none") == ("none", 0)
    for bad, match in [("mlm:3", "takes no number"), ("classification:x", "whole number"), ("cls", "one of"),
                       ("token:0", "from 1 to")]:
        with pytest.raises(ValueError, match=match):
            parse_head(bad)
    from albert_core.presets import PRESETS

    with pytest.raises(ValueError, match="num_labels"):
        head_parameters(PRESETS["bert-base"], "classification", True)


@st.composite
def shared_configs(draw):
    """Any family in any sharing mode the explorer models (most of them beyond what Hugging Face builds)."""
    from albert_core.config import ConfigError

    fam = draw(st.sampled_from(sorted(STRATEGIES)))
    cfg = from_hf_config(draw(STRATEGIES[fam]()))
    L = cfg.num_layers
    try:
        return cfg.replace(sharing=draw(st.sampled_from(["none", "attention", "ffn", "all"])),
                           num_groups=draw(st.sampled_from([g for g in range(1, L + 1) if L % g == 0])),
                           inner_group_num=draw(st.integers(1, 3)))
    except ConfigError:
        return cfg


@settings(max_examples=200, deadline=None)
@given(shared_configs(), st.sampled_from(HEADS), st.integers(1, 9))
def test_the_module_list_adds_up_to_count_parameters_in_every_sharing_mode(cfg, head, labels):
    """Every stored tensor once: the modules' parameters are count_parameters(cfg) (plus the head's)."""
    from albert_core.estimate.params import stored_copies

    assert sum(named_parameters(cfg).values()) == count_parameters(cfg).total
    assert sum(named_parameters(cfg, head, labels).values()) == head_parameters(cfg, head, labels).total
    from albert_core.estimate.hf_modules import layer_modules

    steps = layer_modules(cfg)
    assert len(steps) == cfg.num_layers and len(steps[0]) > 0
    ffn_name = {"albert": "ffn_output", "distilbert": "ffn.lin2", "modernbert": "mlp.Wo"}.get(cfg.family, "intermediate.dense")
    assert sum(m.path.endswith(ffn_name) for s in steps for m in s) == stored_copies(cfg, "ffn")
