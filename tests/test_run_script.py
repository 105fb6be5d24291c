"""./run picks a Blender line and says clearly what is missing (no bpy needed)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

TOOLS = ("bash", "cat", "sha256sum", "cut", "ls", "sort", "grep", "head", "dirname", "rm", "env")


@pytest.fixture
def checkout(tmp_path):
    """A copy of run and the requirements files, and a PATH holding the shell tools run uses and no
    Python at all."""
    for name in ["run"] + [p.name for p in ROOT.glob("requirements*.txt")]:
        shutil.copy2(ROOT / name, tmp_path / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        os.symlink(shutil.which(tool), bin_dir / tool)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "no-pyenv")}
    return tmp_path, env


def run(checkout, *args, **env):
    folder, base = checkout
    return subprocess.run(["./run", *args], cwd=folder, env={**base, **env}, capture_output=True,
                          text=True, timeout=60)


def test_an_unknown_line_is_refused_with_the_known_ones(checkout):
    res = run(checkout, "tests", HAIR_WIG_BLENDER="6.0")
    assert res.returncode == 2
    assert "HAIR_WIG_BLENDER=6.0 is not a Blender line hair_wig runs on; use one of: 4.5 5.2" in res.stderr


@pytest.mark.parametrize("line, python", [("5.2", "3.13"), ("4.5", "3.11")])
def test_a_line_without_its_python_says_what_to_install(checkout, line, python):
    res = run(checkout, "python", "-c", "1", HAIR_WIG_BLENDER=line)
    assert res.returncode == 2, res.stderr
    assert f"Blender {line}'s bpy module needs Python {python}, and none was found" in res.stderr
    assert f"pyenv install {python}" in res.stderr and f"PYTHON{python.replace('.', '_')}=" in res.stderr
    assert not (checkout[0] / f".venv-{line}").exists()


def test_tests_without_a_line_need_every_line(checkout):
    """./run tests runs every line: with no Python for the first one it stops before running any."""
    res = run(checkout, "tests")
    assert res.returncode == 2
    assert "Blender 4.5's bpy module needs Python 3.11" in res.stderr


def test_a_python_of_the_wrong_version_is_passed_over(checkout):
    """This test's own Python, named as the other line's Python and put on the PATH under that
    line's name, is passed over: run asks each candidate its version."""
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    line, python = next((l, p) for l, p in (("4.5", "3.11"), ("5.2", "3.13")) if p != here)
    os.symlink(sys.executable, checkout[0] / "bin" / f"python{python}")
    res = run(checkout, "python", "-c", "1", HAIR_WIG_BLENDER=line,
              **{f"PYTHON{python.replace('.', '_')}": sys.executable})
    assert res.returncode == 2 and f"needs Python {python}, and none was found" in res.stderr
    assert not (checkout[0] / f".venv-{line}").exists()
