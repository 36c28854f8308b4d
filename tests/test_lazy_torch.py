"""`import albert_core` and every non-torch submodule leave torch and transformers unimported."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import albert_core

ROOT = Path(__file__).resolve().parents[1]
TORCH_MODULES = {"engine.reference", "engine.measure"}  # build real models at import: torch is theirs to import
NOT_IMPORTABLE = {"__main__"}  # runs the CLI
REQUIRED = {"config", "presets", "formats.hf", "estimate.params", "units", "estimate.flops", "estimate.sweeps",
            "cli.main", "engine.models", "engine.core", "processes.parent_queue", "step.peak"}
SUBMODULES = sorted(m.name.removeprefix("albert_core.") for m in pkgutil.walk_packages(albert_core.__path__, "albert_core.")
                    if m.name.removeprefix("albert_core.") not in TORCH_MODULES | NOT_IMPORTABLE)


def test_the_listed_modules_exist():
    assert REQUIRED <= set(SUBMODULES)


def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)


CHECK = ("import sys; bad = [m for m in ('torch', 'transformers') if m in sys.modules]; "
         "assert not bad, f'{bad} imported'")


@pytest.mark.parametrize("module", ["albert_core", *(f"albert_core.{m}" for m in SUBMODULES)])
def test_import_leaves_torch_out(module):
    r = _fresh(f"import {module}; {CHECK}")
    assert r.returncode == 0, r.stderr


def test_using_the_core_leaves_torch_out():
    code = ("from albert_core.presets import PRESETS; from albert_core.estimate.params import count_parameters; "
            "from albert_core.estimate.sweeps import sweep, sharing_sweep, embedding_sweep; "
            "from albert_core.estimate.flops import forward_flops; from albert_core.formats.hf import to_hf_config, from_hf_config; "
            "b = PRESETS['albert-base']; count_parameters(b, heads=True).breakdown(); sweep(b, 'hidden_dim', "
            "range(64, 4096, 64)); sharing_sweep(b, [1, 2]); embedding_sweep(b, [64, 128]); "
            "forward_flops(b, 128).breakdown(); from_hf_config(to_hf_config(b)); "
            "from albert_core.decoders.decoder_presets import DECODER_PRESETS; "
            "from albert_core.decoders.decoder_params import count_decoder; "
            "from albert_core.decoders.decoder_config import from_hf; "
            "[count_decoder(from_hf(p.cfg.to_hf()), heads=True) for p in DECODER_PRESETS.values()]; " + CHECK)
    r = _fresh(code)
    assert r.returncode == 0, r.stderr


def test_the_torch_modules_do_import_torch():
    """The check above can fail: importing the reference model does bring torch in."""
    r = _fresh("import sys, albert_core.engine.reference; assert 'torch' in sys.modules")
    assert r.returncode == 0, r.stderr
