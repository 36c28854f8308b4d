"""Encoders outside the eight families: transformers builds them, the engine measures them.

`python -m albert_core verify --config X.json --json` on small configs of 12 model types no family
models: the parameters PyTorch built, the bytes one training forward saves, the training step's peak
(with what is alive at it) and the eval forward's peak, on fake tensors, equal the same command with
--real (real CPU tensors), eager and sdpa attention, and the count equals AutoModel's own.
"""

import io
import json
from contextlib import redirect_stdout

import pytest

from albert_core.cli import main as cli
from albert_core.engine import core as engine
from albert_core.workload import Workload

SMALL = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
             max_position_embeddings=64)
TYPES = {
    "mobilebert": dict(embedding_size=16, intra_bottleneck_size=16, true_hidden_size=16,
                                    num_feedforward_networks=2),
    "megatron-bert": {}, "xlm-roberta-xl": {}, "convbert": dict(embedding_size=32, head_ratio=2),
    "rembert": dict(input_embedding_size=16, output_embedding_size=16), "ernie": {}, "data2vec-text": {},
    "roformer": dict(embedding_size=32),
    "esm": dict(pad_token_id=1, mask_token_id=2, position_embedding_type="rotary"),
    "big_bird": dict(attention_type="original_full"), "layoutlm": {}, "luke": dict(entity_vocab_size=10, entity_emb_size=8),
}


def verify(path, *extra):
    out = io.StringIO()
    with redirect_stdout(out):
        rc = cli.main(["verify", "--config", str(path), "--batch-size", "2", "--seq-len", "16", "--dtype", "float32",
                       "--json", *extra])  # float32 named: the command's default is the app's precision, mixed_bf16
    assert rc == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("model_type", sorted(TYPES))
def test_verify_config_outside_the_families_equals_real_tensors(model_type, attention, tmp_path):
    d = {"model_type": model_type, **SMALL, **TYPES[model_type]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(d))
    fake, real = verify(path, "--attention", attention), verify(path, "--attention", attention, "--real")
    assert fake["settings"]["how"].startswith("fake") and real["settings"]["how"].startswith("real")
    assert fake["parameters"]["built"] == real["parameters"]["built"] > 0
    assert fake["parameters"]["estimate"] is None  # no family: no closed form beside it
    assert fake["parameters"]["built"] == sum(fake["parameters"]["by_module"].values())
    assert fake["activations"]["measured"] == real["activations"]["measured"] > 0
    assert fake["activations"]["by_module"] == real["activations"]["by_module"]
    assert fake["training_peak"] == real["training_peak"]  # peak, phase, what is alive at it
    assert fake["training_peak"]["measured"] > fake["activations"]["measured"]
    assert fake["inference_peak"] == real["inference_peak"] and fake["inference_peak"]["total"] > 0
    auto = engine.measure(lambda: engine.build_auto(d), 99, engine.Run(Workload(1, 4, "float32", "eager", device="cpu")),
                          what=())
    assert auto.parameters == fake["parameters"]["built"]


def test_a_model_type_transformers_cannot_build_is_named(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "not-a-model", **SMALL}))
    assert cli.main(["verify", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not-a-model" in err and "transformers cannot read this config.json" in err
