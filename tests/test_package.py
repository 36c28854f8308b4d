"""`pip install .`: albert_core as a library with its console script, in a fresh virtual environment.

The new environment sees this one's installed packages through a .pth file (torch and transformers are
not downloaded again; this checkout is not on its path) and the project is installed from a copy of the
tree with --no-deps; the declared dependencies are read from the built wheel's metadata. The README's full `pip install .` (dependencies
downloaded) was run by hand in a fresh venv (closing note of issue 16).
"""

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_pip_install_gives_the_library_and_the_albert_core_command(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "*.egg-info", "build", "__pycache__",
                                                            ".mypy_cache", ".pytest_cache", ".hypothesis"))
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels),
                    str(src)], check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("albert_explorer-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith("METADATA"))).decode()
        entry = z.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "albert_core/engine/core.py" in names and "albert_core/families/bert.py" in names
    assert not any(n.startswith(("ui/", "pages/", "charts/", "tests/")) for n in names)  # the library only
    # the verified releases and their patches (engine/torch_build.VERIFIED; test_torch_build holds the ranges)
    assert "Requires-Dist: torch<2.14,>=2.13.0" in meta and "Requires-Dist: transformers<5.24,>=5.23.0" in meta
    assert "albert-core = albert_core.cli.main:console" in entry  # main() as a process of its own (torchao skipped)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "--ignore-installed", str(wheel)], check=True,
                   capture_output=True, timeout=300)
    out = subprocess.run([str(venv / "bin" / "albert-core"), "params", "--preset", "bert-base", "--json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert '"total": 109482240' in out.stdout
    bad = subprocess.run([str(venv / "bin" / "albert-core"), "verify", "--preset", "bert-base", "--batch-size", "0"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("error: batch_size")
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import albert_core; print(albert_core.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert str(venv) in where.stdout  # the installed copy, not this checkout
