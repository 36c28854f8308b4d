"""Verify: the page builds and measures in a separate process, the queue, the limits; no other page imports torch."""

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from test_app_pages import APP, goto, open_app

from albert_core.choices import LoraSpec
from albert_core.engine.types import Request
from albert_core.estimate.activations import activation_memory
from albert_core.estimate.finetune import trainable
from albert_core.estimate.params import count_parameters
from albert_core.presets import PRESETS
from albert_core.processes import child_request, parent_plan
from albert_core.processes.parent_queue import Runner
from albert_core.share import CONTROLS, decode
from albert_core.step.training import training_memory
from albert_core.units import format_bytes
from albert_core.workload import Workload
from ui import jobs
from ui.text import md

ROOT = Path(APP).parent
MIB = 1 << 20

TINY = {"name": "tiny", "vocab_size": "1000", "hidden_dim": "64", "num_heads": "2", "intermediate_dim": "128",
        "num_layers": "3", "max_position": "64", "embedding_dim": "32"}
TINY_CFG = PRESETS["albert-base"].replace(**{k: (v if k == "name" else int(v)) for k, v in TINY.items()})


def request(cfg, source="reference", real=False, **kw):
    """The worker's request for cfg: the reference encoder at 2 x 16, float32, eager, on the CPU; kw: Workload's
    fields (batch_size, seq_len, precision, mode, lora, ...) as the Verify page builds it."""
    w = Workload(**({"batch_size": 2, "seq_len": 16, "precision": "float32", "attention": "eager", "device": "cpu"}
                    | kw))
    return Request(w, config=cfg, source=source, real=real)


def test_pages_never_import_torch_in_the_server_process_even_after_verify_ran():
    """Every page in AppTest in a fresh interpreter, Verify's button pressed; then look at sys.modules."""
    script = f"""
import json, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({APP!r}, default_timeout=120)
at.query_params.update({{"checkpointing": "1", "scale": "log", **{TINY!r}, "verify_seq_len": "16"}})
at.run()
seen = []
for page in ("overview", "parameters", "memory", "fit", "compute", "verify"):
    at.switch_page(f"pages/{{page}}.py").run()
    assert not at.exception, (page, [e.message for e in at.exception])
    seen.append(page)
at.button(key="verify_run").click().run()
assert not at.exception and not at.error, [e.value for e in at.error]
metrics = {{m.label: m.value for m in at.metric}}
def kinds(v, out):
    out.add(type(v).__module__.split(".")[0])
    for x in (list(v.items()) if isinstance(v, dict) else v if isinstance(v, (list, tuple, set)) else []):
        kinds(x, out)
    return out
kinds = sorted(kinds(list(at.session_state.values()), set()))
print(json.dumps({{"pages": seen, "torch": sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))[:5],
                  "transformers": "transformers" in sys.modules, "metrics": metrics, "kinds": kinds}}))
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["pages"] == ["overview", "parameters", "memory", "fit", "compute", "verify"]
    assert result["metrics"]["Built in PyTorch"] == f"{count_parameters(TINY_CFG).total:,}"  # Verify really ran
    assert result["torch"] == [] and result["transformers"] is False  # ... in another process
    assert "torch" not in result["kinds"] and "transformers" not in result["kinds"]


def test_verify_counts_and_measures_a_small_model():
    at = goto(open_app(TINY | {"verify_batch": "2", "verify_seq_len": "16"}), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception and not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Estimated (albert_core)"] == f"{count_parameters(TINY_CFG).total:,}"
    assert metrics["Built in PyTorch"] == f"{count_parameters(TINY_CFG).total:,}"
    dtype = CONTROLS["precision"].default  # Memory's and Fit's precision, now Verify's too (issue 29 item 6)
    est = activation_memory(
        TINY_CFG, Workload(batch_size=2, seq_len=16, precision=dtype, attention="eager", device="cpu")
    ).total
    cuda = activation_memory(
        TINY_CFG, Workload(batch_size=2, seq_len=16, precision=dtype, attention="eager", device="cuda")
    ).total
    caption = " ".join(c.value for c in at.caption)
    assert f"estimated {est:,}" in caption and f"{dtype}, eager attention" in caption
    # Memory's CUDA figure beside the CPU's measured here, and why they differ (autocast's lists under mixed_*)
    assert metrics["Estimated for CUDA"] == format_bytes(cuda) and f"for CUDA {cuda:,}" in caption
    assert (f"({cuda - est:+,} bytes). Why they differ: " in caption and "autocast" in caption) if cuda != est else \
        "gives the same activations" in caption
    assert "The build process peaked at" in caption
    assert any("exactly the parameters" in s.value for s in at.success)
    assert "_ae_verify_job" not in at.session_state  # the job is collected; only numbers stay


def test_verify_measures_a_decoder_preset_as_a_causal_lm_beside_its_exact_count():
    """Issue 54: a decoder preset on Verify, at its real size (SmolLM2-135M), trained as a causal LM on its own loss:
    the built parameters beside albert_core.decoders' count, the saved bytes and the step's peak the engine gives for
    the same request, and what the loss keeps (its float32 log-softmax: decoder_loss.loss_saved)."""
    from albert_core.decoders.decoder_loss import loss_saved
    from albert_core.decoders.decoder_params import count_decoder
    from albert_core.decoders.decoder_presets import DECODER_PRESETS

    at = goto(open_app({"verify_batch": "1", "verify_seq_len": "16"}), "verify")
    at.selectbox(key="verify_other_preset").select("SmolLM2-135M").run()
    assert at.toggle(key="verify_other_lm").value  # a causal decoder trains as a causal LM by default
    at.button(key="verify_other_run").click().run(timeout=120)
    assert not at.exception and not at.error, [e.value for e in at.error]
    cfg = DECODER_PRESETS["SmolLM2-135M"].cfg
    n = count_decoder(cfg, heads=True).total
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Parameters built (SmolLM2-135M)"] == f"{n:,}" == "134,515,008"  # tied: the table once
    caption = " ".join(c.value for c in at.caption)
    assert f"albert_core.decoders counts {n:,} (causal LM): equal" in caption
    assert "Saved by one training forward" in metrics and "Training step peak" in metrics
    # under the default mixed_bf16 the projection keeps its bfloat16 input (B x S x H) and autocast's bfloat16 copy of
    # the tied table (V x H) beside the loss's float32 log-softmax (the engine's rows: tests/test_decoder_memory.py)
    assert CONTROLS["precision"].default == "mixed_bf16"
    head = loss_saved(cfg, 1, 16) + 2 * 16 * cfg.hidden_dim + 2 * cfg.vocab_size * cfg.hidden_dim
    assert f"the loss keep {format_bytes(head)} ({head:,} B)" in caption


@pytest.mark.slow
def test_verify_hf_model_with_sharing_hf_cannot_express():
    at = goto(open_app(TINY | {"sharing": "attention", "source": "hf", "verify_seq_len": "8"}), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception and not at.error
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Built in PyTorch"] == f"{count_parameters(TINY_CFG.replace(sharing='none')).total:,}"
    assert any("cannot express sharing 'attention'" in c.value for c in at.caption)


def test_verify_counts_a_deep_shared_model_at_once_and_says_why_it_is_not_measured():
    at = goto(open_app({"preset": "albert-base", "num_layers": "10000"}), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Built in PyTorch"] == f"{count_parameters(PRESETS['albert-base']).total:,}"  # one layer, shared
    (err,) = at.error
    assert err.value.startswith("Not measured:") and "10,000 layer applications" in err.value, err.value


def test_real_tensor_measurement_over_the_budget_is_refused_before_building_naming_the_figure(monkeypatch):
    monkeypatch.setenv(jobs.BUDGET_ENV, "600")
    at = goto(open_app({"preset": "bert-base", "verify_real": "1"}), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Built in PyTorch"] == f"{count_parameters(PRESETS['bert-base']).total:,}"  # still counted
    (err,) = at.error
    est = parent_plan.estimate(request(PRESETS["bert-base"], batch_size=2, seq_len=64, real=True,
                                  precision=CONTROLS["precision"].default),  # the page's precision: Memory's and Fit's
                          jobs.imports_bytes())  # the warm process's measured size, where one ran in this process
    assert est["total"] > 600 * MIB
    assert err.value.startswith("Not measured:")
    assert f"about {est['total'] / MIB:,.0f} MiB" in err.value and "over the 600 MiB" in err.value
    assert "measure on fake tensors" in err.value  # advice that works: the same press without real tensors
    # refused before building: the process that counted on the meta device never held bert-base's weights
    peak = at.session_state["_ae_verify"]["peak_rss"]
    assert 0 < peak < parent_plan.IMPORT_BYTES + est["weights"] // 2


def test_too_big_and_too_long_are_refused_without_a_process():
    xl = parent_plan.plan(request(PRESETS["bert-xlarge"], batch_size=2, seq_len=64, real=True), 700 * MIB)
    est = parent_plan.estimate(request(PRESETS["bert-xlarge"], batch_size=2, seq_len=64, real=True))
    assert xl.count and not xl.measure  # counted on fake tensors, not measured on real ones
    assert f"weights {est['weights'] / MIB:,.0f} MiB" in xl.measure_error
    assert est["weights"] == 4 * count_parameters(PRESETS["bert-xlarge"]).total
    fake = parent_plan.plan(request(PRESETS["bert-xlarge"], batch_size=64, seq_len=512), 700 * MIB)
    assert fake.count and fake.measure and fake.estimate["weights"] == 0  # fake tensors: no storage
    long = parent_plan.plan(request(TINY_CFG, seq_len=128), 700 * MIB)
    assert not long.measure and "max_position" in long.measure_error


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


# ---- the worker and the runner, without Streamlit ----------------------------------------
def test_worker_in_process_returns_plain_numbers():
    out = child_request.run(request(TINY_CFG))
    assert out["built"] == count_parameters(TINY_CFG).total
    m = out["measurement"]
    assert (
        m["total"]
        == m["estimate"]
        == activation_memory(
            TINY_CFG, Workload(batch_size=2, seq_len=16, precision="float32", attention="eager", device="cpu")
        ).total
    )
    assert sum(r["bytes"] for r in m["breakdown"]) == m["total"]
    json.dumps(out)  # JSON-able: nothing of torch crosses the process boundary


def test_plan_refuses_counts_and_measurements_with_the_reason():
    tiny = parent_plan.plan(request(TINY_CFG), 700 * MIB)
    assert tiny.count and tiny.measure and tiny.estimate["total"] < 700 * MIB
    big = parent_plan.plan(request(PRESETS["bert-large"], batch_size=2, seq_len=64, real=True), 700 * MIB)
    assert big.count and not big.measure and "700 MiB" in big.measure_error
    nothing = parent_plan.plan(request(TINY_CFG), 100 * MIB)
    assert not nothing.count and not nothing.measure and "100 MiB free" in nothing.count_error
    deep = parent_plan.plan(request(TINY_CFG.replace(sharing="none", num_layers=5000)), 700 * MIB)
    assert not deep.count and "5,000 layer modules" in deep.count_error


def test_a_shared_layer_run_past_the_measured_applications_is_counted_not_measured():
    """Sharing builds one layer however deep the model is, but a measurement runs every application (about 50 ms
    each on fake tensors): albert-base at num_layers 10,000 ran 180 s to the time limit; it is now refused at once,
    its count kept, the advice a depth that is measured; the Memory page's points refuse it too."""
    from albert_core.engine import models

    most = models.MAX_MEASURE_APPLICATIONS
    deep = PRESETS["albert-base"].replace(num_layers=10_000)
    p = parent_plan.plan(request(deep), 700 * MIB)
    assert p.count and not p.measure, p
    assert "10,000 layer applications" in p.measure_error and "(1 stored layer, run 10,000 times)" in p.measure_error
    assert f"lower num_layers to {most:,} or fewer" in p.measure_error
    assert parent_plan.plan(request(deep.replace(num_layers=most)), 700 * MIB).measure
    grouped = deep.replace(num_layers=most, inner_group_num=2)  # HF runs the whole inner group at each step
    assert f"lower num_layers to {most // 2:,} or fewer" in parent_plan.plan(request(grouped), 700 * MIB).measure_error
    pts = child_request.run_points(parent_plan.points_request([deep], {deep.name: [64]}, Workload(1, 64, "float32", "eager"),
                                                  training=True))
    assert "10,000 layer applications" in pts["points_error"] and "points" not in pts


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie not yet reaped is dead too
        return f.read().split()[2] != "Z"


def test_runner_queues_one_build_at_a_time_and_both_finish():
    r = Runner()
    first = r.submit(request(TINY_CFG).to_dict(), memory_bytes=700 * MIB, timeout_s=120)
    second = r.submit(request(TINY_CFG, seq_len=8).to_dict(), memory_bytes=700 * MIB, timeout_s=120)
    assert r.place(second) == 2  # waits behind the first (running or about to)
    assert r.wait(first, 120) and first.state == "done"
    assert r.wait(second, 120) and second.state == "done"
    assert second.started >= first.ended  # never two children at once
    assert first.result["built"] == second.result["built"] == count_parameters(TINY_CFG).total
    assert second.result["measurement"]["seq_len"] == 8
    assert not _pid_alive(first.pid) and not _pid_alive(second.pid) and r.idle()


def test_runner_cancel_timeout_closed_session_and_oom_kill():
    r = Runner()
    waiting_for = r.submit(request(TINY_CFG).to_dict(), memory_bytes=700 * MIB, timeout_s=0.5)
    queued = r.submit(request(TINY_CFG).to_dict(), memory_bytes=700 * MIB, timeout_s=120)
    r.cancel(queued)  # still waiting: leaves the queue, never starts
    assert queued.state == "cancelled" and queued.pid is None
    assert r.wait(waiting_for, 60) and waiting_for.state == "timeout"
    assert "Stopped after 0 s" in waiting_for.message or "Stopped after 1 s" in waiting_for.message
    assert "ALBERT_EXPLORER_VERIFY_TIMEOUT_S" in waiting_for.message
    open_session = [True]
    orphan = r.submit(request(TINY_CFG).to_dict(), memory_bytes=700 * MIB, timeout_s=120, alive=lambda: open_session[0])
    assert r.wait_until(lambda: orphan.pid is not None, 30)  # the runner's own signal: the child started
    open_session[0] = False  # the browser went away mid-run
    assert r.wait(orphan, 30) and orphan.state == "cancelled" and "session" in orphan.message
    victim = r.submit(request(TINY_CFG).to_dict(), memory_bytes=700 * MIB, timeout_s=120)
    assert r.wait_until(lambda: victim.pid is not None, 30)
    os.kill(victim.pid, signal.SIGKILL)  # what the kernel's OOM killer does when the machine runs out first
    assert r.wait(victim, 30) and victim.state == "failed"
    assert "killed (SIGKILL)" in victim.message and "ALBERT_EXPLORER_MEMORY_BUDGET_MB" in victim.message
    for job in (waiting_for, orphan, victim):
        assert not _pid_alive(job.pid)


@pytest.mark.slow
def test_child_past_its_memory_cap_gives_a_clear_message():
    """A wrong estimate ends at the OS cap (RLIMIT_DATA) with a message, not in the server."""
    cfg = PRESETS["bert-base"].replace(name="two-layers", num_layers=2)  # about 150 MiB of float32 weights
    r = Runner()
    job = r.submit(request(cfg, seq_len=64, real=True).to_dict(), memory_bytes=420 * MIB, timeout_s=120)
    assert r.wait(job, 120) and job.state == "done", job.message
    assert "measurement" not in job.result
    assert "needed more than 420 MiB" in job.result["measure_error"]


def test_verify_shows_the_training_step_peak_the_engine_measures():
    from albert_core.engine import core as engine
    from albert_core.engine.measure import maker

    at = goto(open_app(TINY | {"verify_batch": "2", "verify_seq_len": "16", "optimizer": "sgd",
                               "precision": "float32"}), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not [b for b in at.button if b.key == "verify_cancel"]  # the finished build's Cancel is gone
    metrics = {m.label: m.value for m in at.metric}
    step = engine.measure(maker(TINY_CFG, "hf", "eager"), TINY_CFG.vocab_size,
                          engine.Run(Workload(2, 16, "float32", "eager", device="cpu", optimizer="sgd"), fake=False),
                          what=("step",)).step
    assert metrics["Measured peak"] == format_bytes(step.peak)  # real tensors here, fake in the page's child
    assert metrics["When"] == step.phase
    assert any("Model: Hugging Face's model" in c.value for c in at.caption)  # auto: ALBERT, sharing all
    (modelled,) = [m for m in at.metric if m.label == "albert_core's modelled peak"]
    equal = modelled.value == format_bytes(step.peak)  # equal to the byte here (tests/test_step_peak.py)
    assert modelled.delta == f"equal to the byte, {step.phase}" if equal else "% vs measured" in modelled.delta
    assert "+0.00%" not in modelled.delta  # an equal peak is said in words, with no arrow


def test_a_step_on_the_reference_encoder_says_why_it_has_no_modelled_peak():
    """ALBERT with gradient checkpointing runs on the reference encoder (Hugging Face's AlbertModel cannot
    checkpoint), which albert_core.step.peak does not replay: the table had a column of "None" and nothing said
    why (a new user, 2026-12-05). Now the column is left out and a caption says why."""
    at = goto(open_app(TINY | {"verify_batch": "2", "verify_seq_len": "16", "optimizer": "sgd", "precision": "float32",
                               "checkpointing": "1"}), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Model: reference encoder" in c.value for c in at.caption)
    assert "albert_core's modelled peak" not in [m.label for m in at.metric]
    assert any(c.value.startswith("No modelled peak beside it") for c in at.caption)
    (table,) = [t for t in at.dataframe if "at peak" in t.value.columns]
    assert "albert_core (modelled peak)" not in table.value.columns
    assert not table.value.astype(str).isin(["None"]).any().any()


@pytest.mark.parametrize("precision", ["bf16_master", "mixed_bf16"])
def test_verify_measures_each_mixed_precision_as_the_planner_counts_it(precision):
    """Both mixed precisions run on the engine as Memory and Fit count them: the measured step peak, the modelled one
    (equal to the byte) and the sum of parts beside it, with the master copy's row where there is one."""
    from albert_core.engine import core as engine
    from albert_core.engine.measure import maker

    at = goto(open_app(TINY | {"verify_batch": "2", "verify_seq_len": "16", "precision": precision}), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception and not at.error, [e.value for e in at.error]
    step = engine.measure(maker(TINY_CFG, "hf", "eager"), TINY_CFG.vocab_size,
                          engine.Run(Workload(2, 16, precision, "eager", device="cpu")), what=("step",)).step
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Measured peak"] == format_bytes(step.peak)
    (modelled,) = [m for m in at.metric if m.label == "albert_core's modelled peak"]
    assert modelled.delta == f"equal to the byte, {step.phase}"
    rows = {r["category"]: r for r in at.dataframe[-1].value.to_dict("records")}
    n = count_parameters(TINY_CFG).total
    assert int(rows["master weights"]["at step start"]) == (4 * n if precision == "bf16_master" else 0)
    summed = training_memory(TINY_CFG, Workload(batch_size=2, seq_len=16, precision=precision, attention="eager",
                                                device="cpu"))
    assert int(rows["parameters"]["albert_core (sum of parts)"]) == summed.weights


def test_fake_tensor_build_over_the_budget_says_what_can_work():
    deep = PRESETS["bert-large"].replace(num_layers=1024)
    p = parent_plan.plan(request(deep, source="hf"), 700 * MIB)
    assert p.count is True and not p.measure  # 1,024 layer modules: about 950 MiB of Python objects
    assert "on fake tensors" in p.measure_error and "lower num_layers or share whole layers" in p.measure_error
    assert "real tensors" not in p.measure_error
    assert parent_plan.plan(request(deep.replace(sharing="all", family="albert", embedding_dim=128), source="hf"),
                       700 * MIB).measure  # shared: one layer module built


def test_a_cap_reached_before_torch_starts_its_threads_is_still_a_clear_message():
    """libgomp starts torch's threads at the first parallel op; past RLIMIT_DATA their stacks cannot be mapped and
    it exits the process without a result. The worker starts them before it caps itself, so a cap hit by the
    very first parallel op of the measurement is the out-of-memory message, never "exited with code 1"."""
    code = ("import sys; sys.argv=['w', '--memory-mb', '1']; from albert_core.processes import limits; "
            "limits._start_threads(); import re, resource, torch; "
            "d = int(re.search(r'VmData:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) * 1024; "
            "resource.setrlimit(resource.RLIMIT_DATA, (d + (4 << 20), d + (4 << 20))); "
            "print(float(torch.ones(1 << 18).sum()))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=str(Path(__file__).resolve().parents[1]))
    assert done.returncode == 0 and done.stdout.strip() == "262144.0", done.stderr[-500:]


# ---- Verify checks what the planner decides on (issue 29 item 6) ----------------------------------------
TINY_BERT = {"preset": "bert-base", "name": "tiny-bert", "vocab_size": "1000", "hidden_dim": "64",
             "embedding_dim": "64", "num_heads": "2", "intermediate_dim": "128", "num_layers": "2",
             "max_position": "64"}
TINY_BERT_CFG = PRESETS["bert-base"].replace(**{k: (v if k == "name" else int(v)) for k, v in TINY_BERT.items()
                                                if k != "preset"})
# a fine-tuned step as the design review planned it: LoRA r=8 on query,value, a 3-class head, mixed bf16, sdpa
WORKLOAD = {"train_mode": "lora", "lora_targets": "query,value", "head": "classification", "num_labels": "3",
            "precision": "mixed_bf16", "attention": "sdpa", "optimizer": "adamw", "batch_size": "2",
            "seq_len": "16"}
LINK = re.compile(r"\[measure this on Verify\]\(([^)]+)\)")


def _links(at) -> list[str]:
    """Every "measure this on Verify" link the page drew (its markdown and captions)."""
    return [u for t in [m.value for m in at.markdown] + [c.value for c in at.caption] for u in LINK.findall(t)]


def _view_of(link: str):
    parts = urlsplit(link)
    assert parts.path == "verify" and not parts.netloc  # relative: the Verify page beside this one, any base path
    view, warnings = decode(dict(parse_qsl(parts.query)))
    assert warnings == []
    return view


def test_the_fit_planners_number_links_to_verify_which_measures_that_step_and_shows_it():
    at = goto(open_app(TINY_BERT | WORKLOAD | {"compare": ""}), "fit")
    assert not at.exception and not at.error, [e.value for e in at.error]
    (link,) = _links(at)  # one config shown, one planner number, one link under it
    view = _view_of(link)
    c = view.controls
    assert view.config == TINY_BERT_CFG
    assert (c["verify_batch"], c["verify_seq_len"]) == (2, 16)
    for k in ("train_mode", "head", "num_labels", "lora_targets", "precision", "attention", "optimizer"):
        assert str(c[k]) == WORKLOAD[k], k
    lora = LoraSpec(targets=("query", "value"))
    kw = dict(batch_size=2, seq_len=16, precision="mixed_bf16", optimizer="adamw", attention="sdpa",
              mode="lora", head="classification", num_labels=3, lora=lora)
    cuda, cpu = (training_memory(TINY_BERT_CFG, Workload(device=d, **kw)) for d in ("cuda", "cpu"))
    fit_text = " ".join(m.value for m in at.markdown)
    assert f"the step's peak at least {format_bytes(cuda.planned)}" in fit_text or \
        f"the step's peak {format_bytes(cuda.planned)}" in fit_text  # what the planner decides on

    v = goto(open_app(dict(parse_qsl(urlsplit(link).query))), "verify")  # the link, opened
    assert v.selectbox(key="ctl.precision").value == "mixed_bf16" and v.selectbox(key="ctl.attention").value == "sdpa"
    assert v.selectbox(key="ctl.train_mode").value == "lora" and v.selectbox(key="ctl.head").value == "classification"
    assert v.number_input(key="ctl.verify_batch").value == 2 and v.number_input(key="ctl.verify_seq_len").value == 16
    v.button(key="verify_run").click().run(timeout=180)
    assert not v.exception and not v.error, [e.value for e in v.error]
    metrics = {m.label: m.value for m in v.metric}
    tr = trainable(TINY_BERT_CFG, "lora", head="classification", num_labels=3, lora=lora)
    assert metrics["Built in PyTorch"] == f"{tr.total:,}"  # peft's model with its head, as albert_core counts it
    result = v.session_state["_ae_verify"]
    assert result["trainable_built"] == tr.trainable
    captions = " ".join(c.value for c in v.caption)
    assert f"trainable {tr.trainable:,} counted by albert_core, {tr.trainable:,} built" in captions
    # the Fit planner's own number, on Verify, beside the CPU's for the step measured here
    assert metrics["Planner's peak, CUDA (Memory, Fit)"] == format_bytes(cuda.planned)
    assert metrics["Planner's peak, CPU kernels"] == format_bytes(cpu.planned)
    assert result["step"]["peak"] == cpu.planned  # the CPU planner is the step the engine measured, to the byte
    assert f"CUDA {cuda.planned:,} bytes" in captions and f"CPU {cpu.planned:,} bytes" in captions
    if cuda.planned != cpu.planned:  # side by side, with the reason
        assert f"({cuda.planned - cpu.planned:+,} bytes). Why they differ: " in captions
        assert "autocast" in captions and "sdpa" in captions and "dropout" in captions  # bert-base's 0.1 dropout
    assert md("LoRA r=8 alpha=8 dropout 0 on query,value, head classification:3") in captions  # as the page writes it
    assert metrics["Estimated (albert_core, CPU)"] == "no closed form"  # a fine-tuned model's saved tensors


def test_memorys_step_peaks_link_to_verify_at_each_configs_own_length():
    q = TINY_BERT | WORKLOAD | {"compare": "bert-base", "memory_tab": "training", "seq_len": "512", "batch_size": "4"}
    at = goto(open_app(q), "memory")
    assert not at.exception and not at.error, [e.value for e in at.error]
    links = _links(at)
    assert len(links) == 2  # one per config of the peak table
    views = {v.config.name: v for v in map(_view_of, links)}
    assert views["tiny-bert"].config == TINY_BERT_CFG and views["bert-base"].config == PRESETS["bert-base"]
    assert views["tiny-bert"].controls["verify_seq_len"] == 64  # clipped to its max_position, as the table is
    assert views["bert-base"].controls["verify_seq_len"] == 512
    assert all(v.controls["verify_batch"] == 4 and v.controls["train_mode"] == "lora" for v in views.values())


def test_verify_step_caption_is_short_and_the_detail_is_in_an_expander():
    at = goto(open_app(TINY | {"verify_batch": "2", "verify_seq_len": "16"}), "verify")
    at.button(key="verify_run").click().run(timeout=120)
    assert not at.exception and not at.error, [e.value for e in at.error]
    (cap,) = [c.value for c in at.caption if "training step 2" in c.value]
    assert len(cap.split()) <= 40, (len(cap.split()), cap)
    (exp,) = [e for e in at.expander if e.label == "How the step is measured and modelled"]
    assert "replays it op by op" in " ".join(m.value for m in exp.markdown)


def test_worker_refuses_a_fine_tuned_model_it_cannot_build_with_the_reason():
    ft = {"mode": "lora", "head": "none", "num_labels": 2, "lora": LoraSpec(r=8, lora_alpha=8, lora_dropout=0.0,
                                                                            targets=("query", "value"))}
    ref = parent_plan.plan(request(TINY_BERT_CFG, **ft), 700 * MIB)  # request(): the reference encoder
    assert not ref.count and "choose Hugging Face's model" in ref.count_error
    shared = parent_plan.plan(request(TINY_CFG.replace(sharing="attention"), **ft, source="hf"), 700 * MIB)
    assert not shared.measure and "sharing 'attention'" in shared.measure_error
    no_targets = parent_plan.plan(request(TINY_CFG, **(ft | {"lora": LoraSpec(r=8, lora_alpha=8)}), source="hf"),
                             700 * MIB)
    assert not no_targets.count and "LoRA" in no_targets.count_error


def test_a_tiny_gap_between_modelled_and_measured_is_said_in_bytes():
    """albert-base 2 x 64 mixed bf16 (Verify's default) models its step 1,536 B above the engine (+0.0006%):
    said in bytes, never as "+0.00%"."""
    from ui.text import gap_words

    assert gap_words(0, 243_385_352) == "equal to the byte"
    assert gap_words(1_536, 243_385_352) == "+1,536 B, +0.0006% vs measured"
    assert gap_words(-3_000_000, 243_385_352) == "-1.23% vs measured"


def test_a_sequence_past_max_position_is_said_before_build():
    """A new user's review: /verify?verify_seq_len=99999 showed no word until Build refused it; Compute says it at
    once."""
    at = goto(open_app({"preset": "bert-base", "verify_seq_len": "99999"}), "verify")
    (said,) = [w.value for w in at.warning if "max_position" in w.value]
    assert "99,999 is past bert-base's max_position (512)" in said and "at most 512" in said
    at = goto(open_app({"preset": "bert-base", "verify_seq_len": "512"}), "verify")
    assert not [w for w in at.warning if "max_position" in w.value]
