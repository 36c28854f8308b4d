"""MPNet, the eighth family (sentence-transformers' all-mpnet-base-v2): what differs from BERT, end to end.

The random-config proofs run with the other families (tests/test_families_params.py: 100 config.json files against
MPNetModel; tests/test_families_activations.py: saved bytes against the engine on 100 random configs, FLOPs against
FlopCounterMode; tests/test_finetune.py and tests/test_serving.py: every mode, head and format). Here: the config.json
rules transformers imposes, the presets, the CLI's four commands and fake tensors against real ones.
"""

import io
import json
from contextlib import redirect_stdout

import pytest

from albert_core.cli import main as cli
from albert_core.config import ConfigError, ModelConfig
from albert_core.engine.models import count_built, hf_model
from albert_core.estimate.params import count_parameters, parameter_groups
from albert_core.formats.hf import from_hf_config, to_hf_config
from albert_core.presets import HUB_CONFIGS, PRESETS
from albert_core.workload import Workload

SMALL = {"model_type": "mpnet", "vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 37, "max_position_embeddings": 66, "relative_attention_num_buckets": 32}


def run_cli(*argv: str) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main([*argv, "--json"]) == 0
    return json.loads(out.getvalue())


def test_presets_are_the_published_configs():
    for name in ("mpnet-base", "all-mpnet-base-v2"):
        cfg = PRESETS[name]
        assert cfg.family == "mpnet" and cfg.max_position == 512 and cfg.type_vocab_size == 0
        assert to_hf_config(cfg)["max_position_embeddings"] == HUB_CONFIGS[name][1]["max_position_embeddings"] == 514
        assert count_parameters(cfg).total == count_built(hf_model(cfg, device="meta")) == 109_486_464


def test_the_breakdown_names_the_relative_bias_table_once():
    cfg = PRESETS["all-mpnet-base-v2"]
    rows = {g.module: g for g in parameter_groups(cfg)}
    bias = rows["encoder.relative_attention_bias"]
    assert (bias.per_copy, bias.copies) == (32 * 12, 1)  # buckets × heads, shared by the 12 layers
    assert rows["embeddings.position_embeddings"].per_copy == 514 * 768  # 512 positions + padding_idx 1 + 1
    assert "embeddings.token_type_embeddings" not in rows


def test_pad_token_id_does_not_move_the_positions():
    """MPNetEmbeddings fixes padding_idx at 1: any pad_token_id gives the same model, and writes back as 1."""
    a, b = from_hf_config({**SMALL, "pad_token_id": 0}), from_hf_config({**SMALL, "pad_token_id": 5})
    assert a == b and a.max_position == 64
    assert count_parameters(a).total == count_built(hf_model(a, device="meta"))
    assert from_hf_config(to_hf_config(a)) == a


@pytest.mark.parametrize("change,fragment", [
    ({"relative_attention_num_buckets": 16}, "relative_attention_num_buckets must be at least 32 for family 'mpnet'"),
    ({"relative_attention_num_buckets": "32"}, "relative_attention_num_buckets must be a whole number"),
    ({"max_position_embeddings": 2}, "max_position_embeddings (2) must exceed 2"),
    ({"pruned_heads": {"0": [1]}}, "pruned attention heads change the parameters"),
])
def test_what_transformers_cannot_build_or_run_is_refused(change, fragment):
    with pytest.raises((ConfigError, ValueError), match=__import__("re").escape(fragment)):
        from_hf_config({**SMALL, **change})


def test_a_small_bucket_table_fails_in_transformers_as_refused():
    """The refusal is transformers' own behaviour: 16 rows build, then the forward's 32 buckets index past them."""
    import torch
    from transformers import MPNetConfig, MPNetModel

    model = MPNetModel(MPNetConfig(**{**SMALL, "relative_attention_num_buckets": 16}))
    with pytest.raises(IndexError):
        model(input_ids=torch.full((1, 40), 5))
    with pytest.raises(ConfigError, match="at least 32"):
        ModelConfig(**{**PRESETS["mpnet-base"].to_dict(), "relative_attention_num_buckets": 16})


def test_cli_params_flops_memory_verify(tmp_path):
    p = run_cli("params", "--preset", "all-mpnet-base-v2")
    assert p["total"] == 109_486_464
    f = run_cli("flops", "--preset", "all-mpnet-base-v2", "--seq-len", "128")
    assert f["total"] > 2 * 85_054_464 * 128  # the layers' matmuls (two FLOPs per weight per token) and attention
    assert f["training"] == 3 * f["total"]
    m = run_cli("memory", "--preset", "all-mpnet-base-v2", "--batch-size", "4", "--seq-len", "128")
    assert m["parameters"]["stored"] == 109_486_464 and m["training_peak"]["estimate"] > 4 * 109_486_464
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL))
    args = ("verify", "--config", str(path), "--batch-size", "2", "--seq-len", "16", "--dtype", "float32")
    fake, real = run_cli(*args), run_cli(*args, "--real")
    assert fake["parameters"]["built"] == real["parameters"]["built"] == fake["parameters"]["estimate"]
    assert fake["activations"]["measured"] == real["activations"]["measured"] == fake["activations"]["estimate"]
    assert fake["training_peak"]["measured"] == real["training_peak"]["measured"]


@pytest.mark.parametrize("B,S,dtype", [(8, 512, "float32"), (16, 512, "mixed_bf16"), (2, 8, "float16")])
def test_the_step_peak_equals_the_engine_at_real_size(B, S, dtype):
    """all-mpnet-base-v2 on fake tensors: the replay (the relative bias's (B, A, S, S) tensor held through the forward,
    its gradient summed over the layers, MPNetSelfAttention's locals) equals the engine to the byte. Before it, the
    lower-bound candidates gave 8 x 512 float32 7,709,000,208 B against 7,809,606,160 B (-1.29%). The random draws
    (modes, heads, LoRA, dtypes, optimizers) are tests/test_step_peak.py's."""
    from albert_core.engine import core as engine
    from albert_core.engine.measure import maker
    from albert_core.step.peak import step_peak

    cfg = PRESETS["all-mpnet-base-v2"]
    m = engine.measure(maker(cfg, "hf", "eager"), cfg.vocab_size,
                       engine.Run(Workload(B, S, dtype, "eager", device="cpu"), fake=True),
                       what=("step",)).step
    e = step_peak(cfg, Workload(B, S, dtype, "eager", device="cpu"))
    assert e.replayed and e.activations_exact
    assert (e.peak, e.phase, e.at_start) == (m.peak, m.phase, m.at_start)


def test_the_report_carries_mpnet_beside_bert():
    """The HTML report with all-mpnet-base-v2 beside bert-base: every figure, MPNet's own field in the configs table."""
    import datetime as dt

    from albert_core.share import CONTROLS
    from albert_core.step.compare import Settings
    from ui import report

    cfgs = (PRESETS["all-mpnet-base-v2"], PRESETS["bert-base"])
    ctl = {k: c.default for k, c in CONTROLS.items()}
    doc = report.html(cfgs, ctl, "http://localhost:8501/?preset=all-mpnet-base-v2&compare=bert-base", Settings(),
                      dt.datetime(2026, 12, 4, 10, 0, tzinfo=dt.UTC))
    assert doc.count("<div class='figure'") == len(report.main_figures(cfgs, ctl)) == 7
    table = report.configs_table(cfgs)
    assert table.loc["relative_attention_num_buckets"].tolist() == ["32", "n/a"]  # MPNet's own field, not BERT's
    assert table.loc["family"].tolist() == ["mpnet", "bert"]
    assert "109,486,464" in doc or "109.5M" in doc


def test_verify_takes_precision_as_memory_does(tmp_path):
    """One name for the precision in every command (issue 26): verify's --precision, --dtype kept as its alias."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL))
    a = run_cli("verify", "--config", str(path), "--batch-size", "1", "--seq-len", "8", "--precision", "bfloat16")
    b = run_cli("verify", "--config", str(path), "--batch-size", "1", "--seq-len", "8", "--dtype", "bfloat16")
    assert a["settings"]["dtype"] == b["settings"]["dtype"] == "bfloat16"
    assert a["activations"] == b["activations"]
