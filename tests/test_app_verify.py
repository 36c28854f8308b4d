"""AppTest: the Verify page builds and measures; no other page imports torch."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_app_pages import APP, goto, open_app

from albert_core.activations import activation_memory
from albert_core.params import count_parameters
from albert_core.presets import PRESETS

ROOT = Path(APP).parent

TINY = {"name": "tiny", "vocab_size": "1000", "hidden_dim": "64", "num_heads": "2", "intermediate_dim": "128",
        "num_layers": "3", "max_position": "64", "embedding_dim": "32"}


def test_pages_other_than_verify_never_import_torch():
    """Run every page in AppTest in a fresh interpreter, then look at sys.modules."""
    script = f"""
import json, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({APP!r}, default_timeout=60)
at.query_params.update({{"checkpointing": "1", "scale": "log"}})
at.run()
seen = []
for page in ("overview", "parameters", "memory", "fit", "compute", "verify"):
    at.switch_page(f"pages/{{page}}.py").run()
    assert not at.exception, (page, [e.message for e in at.exception])
    seen.append(page)
print(json.dumps({{"pages": seen, "torch": sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))[:5],
                  "transformers": "transformers" in sys.modules}}))
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["pages"] == ["overview", "parameters", "memory", "fit", "compute", "verify"]
    assert result["torch"] == [] and result["transformers"] is False


def test_verify_counts_and_measures_a_small_model():
    at = goto(open_app(TINY | {"verify_batch": "2", "verify_seq_len": "16"}), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception and not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    cfg = PRESETS["albert-base"].replace(**{k: (v if k == "name" else int(v)) for k, v in TINY.items()})
    assert metrics["Estimated (albert_core)"] == f"{count_parameters(cfg).total:,}"
    assert metrics["Built in PyTorch"] == f"{count_parameters(cfg).total:,}"
    est = activation_memory(cfg, batch_size=2, seq_len=16, device="cpu").total
    caption = " ".join(c.value for c in at.caption)
    assert f"estimated {est:,}" in caption
    assert any("exactly the parameters" in s.value for s in at.success)


@pytest.mark.slow
def test_verify_hf_model_with_sharing_hf_cannot_express():
    at = goto(open_app(TINY | {"sharing": "attention", "source": "hf", "verify_seq_len": "8"}), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception and not at.error
    cfg = PRESETS["albert-base"].replace(**{k: (v if k == "name" else int(v)) for k, v in TINY.items()},
                                         sharing="attention")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Built in PyTorch"] == f"{count_parameters(cfg.replace(sharing='none')).total:,}"
    assert any("cannot express sharing 'attention'" in c.value for c in at.caption)


def test_verify_refuses_what_is_too_big_but_still_counts_on_meta():
    at = goto(open_app({"preset": "bert-xlarge"}), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Built in PyTorch"] == f"{count_parameters(PRESETS['bert-xlarge']).total:,}"
    (err,) = at.error
    assert err.value.startswith("Not measured:") and "parameters" in err.value


def test_verify_seq_len_beyond_max_position_is_explained():
    at = goto(open_app(TINY | {"verify_seq_len": "128"}), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception
    (err,) = at.error
    assert "max_position" in err.value


@pytest.mark.slow
def test_verify_hf_bert_with_shared_layers_counts_what_hf_builds():
    q = TINY | {"preset": "bert-base", "embedding_dim": "64", "sharing": "all",
                "source": "hf", "verify_seq_len": "8"}
    at = goto(open_app(q), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception and not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Difference"] == "0"  # HF's BertModel: 3 unshared layers, counted by albert_core too
    unshared = PRESETS["bert-base"].replace(**{k: (v if k == "name" else int(v)) for k, v in TINY.items()
                                               if k != "embedding_dim"}, embedding_dim=64)
    assert metrics["Built in PyTorch"] == f"{count_parameters(unshared).total:,}"
