"""The family contract (families/base.py) at run time, and the import graph it keeps straight.

The type checker (mypy in scripts/test.sh) holds each module's signatures to base.Family through the
TYPE_CHECKING block at the end of each family module; these tests hold those blocks complete, the optional parts
consistent with HEADS and with what albert_core models, and the import graph free of cycles.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from albert_core.config import FIELD_KINDS, ModelConfig
from albert_core.families import NAMES, family
from albert_core.families.base import Family, Heads, Inference
from albert_core.names import FAMILIES

ROOT = Path(__file__).resolve().parents[1]


def test_names_module_and_families_agree():
    assert NAMES == FAMILIES
    assert sorted(p.stem for p in (ROOT / "albert_core" / "families").glob("*.py")
                  if p.stem not in ("__init__", "base", "modules")) == sorted(n.replace("-", "_") for n in FAMILIES)


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_defines_the_contract(name):
    mod = family(name)
    assert isinstance(mod, Family)
    assert mod.NAME == name and mod.MODEL_TYPES and all(isinstance(t, str) for t in mod.MODEL_TYPES)
    # LoRA's default targets are the family's, one entry per model type it reads (peft's: tests/test_finetune.py)
    assert tuple(mod.LORA_TARGETS) == mod.MODEL_TYPES


@pytest.mark.parametrize("name", FAMILIES)
def test_the_type_checker_sees_every_family(name):
    """A family module without its TYPE_CHECKING block against the contract would go unchecked."""
    m = name.replace("-", "_")
    src = (ROOT / "albert_core" / "families" / f"{m}.py").read_text()
    assert re.search(rf"^    from \. import {m} as _this$", src, re.M), f"{m}.py: import itself as _this under TYPE_CHECKING"
    assert re.search(r"^    _family: Family = _this$", src, re.M), f"add `_family: Family = _this` to {m}.py"
    for part in ("Heads", "Inference"):
        has = isinstance(family(name), Heads if part == "Heads" else Inference)
        checked = re.search(rf"^    _{part.lower()}: {part} = _this$", src, re.M) is not None
        assert has == checked, f"{name}: defines {part} {has}, checked against it {checked}"


def test_a_family_rule_on_arrays_is_where_validate_has_rules_of_its_own():
    """validate_arrays is optional (sweeps reads it with getattr): the families that define it are the ones whose
    validate refuses something the common rules let through (RoBERTa's position_offset, MPNet's buckets)."""
    from dataclasses import asdict

    from albert_core.config_fields import ConfigFields
    from albert_core.presets import PRESETS

    own = {n for n in FAMILIES if hasattr(family(n), "validate_arrays")}
    assert own == {"roberta", "mpnet"}
    for n in own:
        cfg = next(c for c in PRESETS.values() if c.family == n)
        # ModelConfig refuses the bad value itself, so the family's rules are asked of the fields unvalidated
        bad = ConfigFields(**{**asdict(cfg), **({"position_offset": 0} if n == "roberta"
                                                 else {"relative_attention_num_buckets": 31})})
        assert family(n).validate(bad) and not family(n).validate(cfg), n
        arrays = {f: np.array([getattr(cfg, f), getattr(bad, f)]) for f in ModelConfig.__dataclass_fields__}
        assert family(n).validate_arrays(arrays).tolist() == [True, False], n


@pytest.mark.parametrize("name", FAMILIES)
def test_heads_are_defined_exactly_where_they_are_modelled(name):
    mod = family(name)
    assert (mod.HEADS is None) == isinstance(mod, Heads)
    assert isinstance(mod.HEADS, str | None)


def test_the_inference_peak_is_modelled_where_infer_is_defined():
    from albert_core.config import ConfigError
    from albert_core.estimate.activations import inference_peak
    from albert_core.presets import PRESETS

    for name in FAMILIES:
        cfg = next(c for c in PRESETS.values() if c.family == name)
        if isinstance(family(name), Inference):
            assert inference_peak(cfg, batch_size=1, seq_len=8)[0] > 0
        else:
            with pytest.raises(ConfigError, match="not modelled"):
                inference_peak(cfg, batch_size=1, seq_len=8)


def test_deberta_field_kinds_are_the_config_fields_kinds():
    from albert_core.families.deberta_v2 import HF_FIELDS

    for ours, _, _, kind in HF_FIELDS:
        assert FIELD_KINDS[ours] == kind, ours
    assert set(FIELD_KINDS) == {f for f in ModelConfig.__dataclass_fields__}


def test_the_import_graph_has_no_cycle_and_follows_the_written_layers():
    r = subprocess.run([sys.executable, "scripts/import_graph.py"], capture_output=True, text=True, cwd=ROOT,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cycles: 0" in r.stdout and "arrows back up (fewest in any layering): 0" in r.stdout
    assert "against the layers: 0; parts the layers do not name: 0" in r.stdout


def _import_graph_of_a_copy(tmp_path, plant):
    """scripts/import_graph.py over a copy of albert_core and docs/typing.md with plant(copy root) applied."""
    shutil.copytree(ROOT / "albert_core", tmp_path / "albert_core", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "typing.md", tmp_path / "docs" / "typing.md")
    plant(tmp_path)
    return subprocess.run([sys.executable, "scripts/import_graph.py", "--root", str(tmp_path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)


def test_the_import_check_fails_on_a_planted_wrong_way_arrow(tmp_path):
    """A lazy import (inside a function) from replay, low in the layers, up to estimate: no cycle among modules, but
    an arrow against the written order, which the check names with its file and line."""
    def plant(root):
        f = root / "albert_core" / "replay" / "liveness.py"
        f.write_text(f.read_text() + "\n\ndef _planted() -> None:\n    from ..estimate import params  # noqa: F401\n")
    r = _import_graph_of_a_copy(tmp_path, plant)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "against the layers: 1;" in r.stdout
    assert "against the layers: replay -> estimate (a higher layer)" in r.stdout
    n = len((ROOT / "albert_core" / "replay" / "liveness.py").read_text().splitlines())
    assert f"replay.liveness -> estimate.params at albert_core/replay/liveness.py:{n + 4}" in r.stdout


def test_the_import_check_fails_on_a_type_checking_arrow_and_on_a_part_the_layers_do_not_name(tmp_path):
    def plant(root):
        f = root / "albert_core" / "choices.py"
        f.write_text(f.read_text().replace("from dataclasses import dataclass\n", "from dataclasses import dataclass\n"
                     "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .workload import Workload\n", 1))
        (root / "albert_core" / "extra.py").write_text("from .config import ModelConfig\n")
    r = _import_graph_of_a_copy(tmp_path, plant)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "against the layers: choices -> workload (a higher layer)" in r.stdout
    assert "not in the layers: extra" in r.stdout


def test_a_familys_own_fields_are_described_once_and_each_reader_follows_it():
    """base.OwnField is the one description of a family's own field: ModelConfig declares it, config.validate rejects
    what is past its bounds (or not one of its choices), and the vectorized sweeps agree with validate at each bound."""
    from albert_core.config import ConfigError
    from albert_core.estimate.sweeps import grid
    from albert_core.families import family_fields, own_fields
    from albert_core.presets import PRESETS

    own = own_fields()
    assert set(own) == set(family_fields()) and set(own) <= set(FIELD_KINDS)
    for f, owners in family_fields().items():
        for name in owners:  # a field two families own is described alike by both
            assert family(name).FIELDS[f] == own[f], (f, name)
        o = own[f]
        assert (o.lo is not None) == (FIELD_KINDS[f] == "int") and bool(o.choices) == (FIELD_KINDS[f] == "str"), f
        assert o.help and not o.help.startswith(owners[0]), f  # the sidebar puts the family's name before it
        base = next(c for c in PRESETS.values() if c.family == owners[0])
        if o.choices:
            for bad in ("nonsense", o.choices[0] + "x"):
                with pytest.raises(ConfigError, match=rf"^{f} must be one of"):
                    base.replace(**{f: bad})
            continue
        if o.lo is None:
            continue
        below = [o.lo - 1] if not (o.unset and o.lo - 1 == -1) else [o.lo - 2]
        for bad in (*below, o.hi + 1):
            with pytest.raises(ConfigError, match=rf"^{f} must be"):
                base.replace(**{f: bad})
        values = [*below, o.lo, o.hi, o.hi + 1] + ([-1] if o.unset else [])
        rows = grid(base, **{f: values})
        for v, valid in zip(values, rows["valid"], strict=True):
            try:
                base.replace(**{f: v})
                ok = True
            except ConfigError:
                ok = False
            assert bool(valid) == ok, (f, v)  # the sweeps' vectorized rules = config.validate's


def test_the_sidebar_draws_a_familys_own_fields_from_its_module():
    """Each family's own fields in the sidebar: the widget their OwnField asks for, its help prefixed by the family."""
    from test_app_pages import open_app, open_fields

    from albert_core.families import own_fields
    from albert_core.presets import PRESET_FAMILIES

    own = own_fields()
    for name in ("roberta", "deberta-v2", "modernbert", "mpnet"):
        at = open_fields(open_app({"preset": PRESET_FAMILIES[name][0]}), "model_fields", "more_fields")
        for f in family(name).FIELDS:
            o = own[f]
            kind = at.sidebar.number_input if o.lo is not None else at.sidebar.selectbox if o.choices else at.sidebar.checkbox
            w = kind(key=f"f.{f}")
            assert w.help == f"{name}: {o.help}", f
            if o.choices:
                assert list(w.options) == [c or "(none)" for c in o.choices], f


def test_every_optional_name_is_declared_typed_and_read_through_its_accessor():
    """Issue 53: the hooks a family may define beside the contract are declared in one place (families/base.py
    OPTIONAL, with an accessor each that gives its default), each family's own is of the declared type, and no module
    reads one with getattr or hasattr but those accessors."""
    import inspect
    import re
    from pathlib import Path

    from albert_core.families import base as fb
    from albert_core.families import family
    from albert_core.names import FAMILIES

    root = Path(__file__).resolve().parents[1] / "albert_core"
    names = "|".join(fb.OPTIONAL)
    reads = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py") if p.name != "base.py" or p.parent.name != "families"
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(rf"""(getattr|hasattr)\([^)]*["']({names})["']""", line)]
    assert reads == []
    arity = {"relative_position_flops": 3, "unread_parameter": 2, "validate_arrays": 1, "replay_checkpoint_inputs": 2}
    assert set(arity) | {"HF_ATTENTIONS", "LORA_ALIASES", "FFN_MATRICES", "FIRST_LAYER_DIFFERS"} == set(fb.OPTIONAL)
    defined = 0
    for name in FAMILIES:
        fam = family(name)
        for hook in fb.OPTIONAL:
            if not hasattr(fam, hook):
                continue
            defined += 1
            value = getattr(fam, hook)
            if hook in arity:
                assert callable(value) and len(inspect.signature(value).parameters) == arity[hook], (name, hook)
            elif hook == "HF_ATTENTIONS":
                assert isinstance(value, tuple) and set(value) <= {"eager", "sdpa"} and value, name
            elif hook == "LORA_ALIASES":
                assert set(value) <= {"query", "key", "value"} and all(isinstance(v, tuple) for v in value.values())
            elif hook == "FFN_MATRICES":
                assert value in (2, 3), name
            else:
                assert isinstance(value, bool), name
    assert defined >= 10  # DeBERTa, ModernBERT, MPNet, RoBERTa, DistilBERT define some
    bert = family("bert")  # a family that defines none: every default
    assert (fb.hf_attentions(bert), fb.lora_aliases(bert), fb.ffn_matrices(bert), fb.first_layer_differs(bert)) == \
        (("eager", "sdpa"), {}, 2, False)
    assert fb.relative_position_flops(bert) is fb.unread_parameter(bert) is fb.validate_arrays(bert) is \
        fb.replay_checkpoint_inputs(bert) is None
    assert fb.hf_attentions(family("deberta-v2")) == ("eager",) and fb.ffn_matrices(family("modernbert")) == 3
