"""The Fit planner's "measure this on Verify" link in the real app (issue 29 item 6): the browser resolves it to the
Verify page beside Fit, which opens on the same step (config, batch, length, precision, attention, fine-tuning) and,
pressed, shows the planner's CUDA number beside the CPU's measured here.

Every expected number comes from albert_core.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from albert_core.choices import LoraSpec
from albert_core.presets import PRESETS
from albert_core.share import decode
from albert_core.step.training import PRECISION_LABELS, training_memory
from albert_core.units import format_bytes
from albert_core.workload import Workload

from .harness import error_blocks, wait_until_idle

pytestmark = pytest.mark.browser
WARM_WORKER = True  # its test presses Verify's build: measured in the warm process, as a user's press is

TINY_BERT = {"preset": "bert-base", "name": "tiny-bert", "vocab_size": "1000", "hidden_dim": "64",
             "embedding_dim": "64", "num_heads": "2", "intermediate_dim": "128", "num_layers": "2",
             "max_position": "64"}
WORKLOAD = {"train_mode": "lora", "lora_targets": "query,value", "head": "classification", "num_labels": "3",
            "precision": "mixed_bf16", "attention": "sdpa", "batch_size": "2", "seq_len": "16", "compare": ""}



def test_fit_link_opens_verify_on_the_planned_step_and_shows_the_planners_number(server, page):
    page.goto(f"{server}/fit?{urlencode(TINY_BERT | WORKLOAD)}")
    wait_until_idle(page)
    assert error_blocks(page) == []
    link = page.get_by_role("link", name="measure this on Verify")
    assert link.count() == 1  # one config, one planner number
    href = link.evaluate("a => a.href")  # as the browser resolves it against /fit
    parts = urlsplit(href)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{server}/verify"
    view, warnings = decode(dict(parse_qsl(parts.query)))
    assert warnings == [] and view.config.name == "tiny-bert"
    assert (view.controls["verify_batch"], view.controls["verify_seq_len"]) == (2, 16)

    page.goto(href)
    wait_until_idle(page)
    assert error_blocks(page) == []
    precision = page.locator('[data-testid="stSelectbox"]').filter(has_text="Precision")
    shown = precision.evaluate("el => [el.innerText, ...Array.from(el.querySelectorAll('input'), i => i.value || ''),"
                               " ...Array.from(el.querySelectorAll('[value]'), e => e.getAttribute('value'))]"
                               ".join(' ')")
    assert PRECISION_LABELS["mixed_bf16"] in shown, shown  # the selected option, as the select names it
    assert page.get_by_text("Fine-tuning: LoRA r=8 alpha=8 dropout 0 on query,value, head classification:3").count()
    page.get_by_role("button", name="Build, count and measure").click()
    metric = page.locator('[data-testid="stMetric"]').filter(has_text="Planner's peak, CUDA (Memory, Fit)")
    metric.wait_for(timeout=240_000)  # drawn once the build process has answered (a signal of the page, not a time)
    wait_until_idle(page)
    cfg = PRESETS["bert-base"].replace(**{k: (v if k == "name" else int(v)) for k, v in TINY_BERT.items()
                                          if k != "preset"})
    kw = dict(batch_size=2, seq_len=16, precision="mixed_bf16", optimizer="adamw", attention="sdpa", mode="lora",
              head="classification", num_labels=3, lora=LoraSpec(targets=("query", "value")))
    cuda = training_memory(cfg, Workload(device="cuda", **kw)).planned
    cpu = training_memory(cfg, Workload(device="cpu", **kw)).planned
    assert format_bytes(cuda) in metric.inner_text()
    cpu_metric = page.locator('[data-testid="stMetric"]').filter(has_text="Planner's peak, CPU kernels")
    assert format_bytes(cpu) in cpu_metric.inner_text()
    measured = page.locator('[data-testid="stMetric"]').filter(has_text="Measured peak")
    assert format_bytes(cpu) in measured.inner_text()  # the CPU planner is the step measured, to the byte
    assert page.get_by_text("Why they differ", exact=False).count() == (1 if cuda != cpu else 0)


def test_a_sequence_past_max_position_is_said_once(server, page):
    """issue 52 item 5: a Verify link whose sequence length is past the config's max_position warns under the
    controls that Build will refuse it; pressed, Build counted the parameters and then said the same refusal again in
    a second alert ("Not measured: seq_len (128) must be at most max_position (64) ..."). It is said once: the
    warning, and a plain line where the measurement would be."""
    page.goto(f"{server}/verify?{urlencode(TINY_BERT | {'verify_seq_len': '128', 'compare': ''})}")
    wait_until_idle(page)
    said = "() => Array.from(document.querySelectorAll('[data-testid=\"stAlert\"]'), a => a.innerText)"
    alerts = page.evaluate(said)
    assert [a for a in alerts if "max_position" in a] and len([a for a in alerts if "max_position" in a]) == 1, alerts
    page.get_by_role("button", name="Build, count and measure").click()
    page.locator('[data-testid="stMetric"]').filter(has_text="Built in PyTorch").wait_for(timeout=240_000)
    wait_until_idle(page)
    alerts = page.evaluate(said)
    assert len([a for a in alerts if "max_position" in a]) == 1, alerts
    assert page.get_by_text("Not measured: sequence length 128 is past max_position (64)", exact=False).count() == 1
