"""Build the extension packages an artist installs: one .zip a platform, each holding the add-on and
the compiled wheels its kernels need (numba and llvmlite, for both Blender lines' Pythons), so
Blender's *Install from Disk* — or a render-farm node — needs nothing else.

    ./run package [--output DIR]

The wheels ``blender_manifest.toml`` lists are downloaded into ``./wheels`` (once: later builds
reuse them), each by its exact file name; Blender's own extension tool then validates the
manifest and builds with ``--split-platforms``.

The Linux package also carries its **kernels, prebuilt** for both Blender lines' Pythons and any
x86-64 CPU (``hair_wig/kernels/prebuilt/``, compiled by ``scripts/prepare_kernels.py`` in each
line's environment, once, then kept), so an artist or a farm node on Linux compiles nothing.
The other platforms' packages prepare their kernels in the background when the add-on is enabled
(this machine cannot compile for them).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = "blender_manifest.toml"
# the platform whose packages carry prebuilt kernels: the one this machine compiles for
PREBUILT_PLATFORM = "linux-x64"
# each Blender line's Python, as ./run tells the tests and this script (HAIR_WIG_BPY_4_5=...)
LINE_PYTHONS = {"4.5": "HAIR_WIG_BPY_4_5", "5.2": "HAIR_WIG_BPY_5_2"}

# a wheel's platform tag -> Blender's platform name (as Blender's own tool maps them)
_PLATFORMS = ((re.compile(r"manylinux_\d+_\d+_x86_64"), "linux-x64"),
              (re.compile(r"win_amd64"), "windows-x64"),
              (re.compile(r"macosx_\d+_\d+_arm64"), "macos-arm64"))


def manifest(root: Path = ROOT) -> dict:
    return tomllib.loads((root / MANIFEST).read_text())


def platform_of(wheel: str) -> str:
    """Blender's platform name for a wheel's file name."""
    tag = Path(wheel).stem.split("-")[-1]
    for pattern, name in _PLATFORMS:
        if pattern.fullmatch(tag.split(".")[-1]) or pattern.fullmatch(tag.split(".")[0]):
            return name
    raise ValueError(f"{Path(wheel).name}: no Blender platform for the wheel's tag {tag!r}")


def wheels_for(platforms, root: Path = ROOT) -> list[str]:
    """The manifest's wheels (paths relative to ``root``) for ``platforms``."""
    return [w for w in manifest(root)["wheels"] if platform_of(w) in platforms]


def fetch(wheels, root: Path = ROOT) -> None:
    """Download the ``wheels`` (manifest paths) not yet on disk, each by its exact file name:
    name, version, CPython version and platform tag from the name, nothing else (``--no-deps``:
    numpy is Blender's own)."""
    for rel in wheels:
        path = root / rel
        if path.is_file():
            continue
        name, version, python = Path(rel).name.split("-")[:3]
        tag = Path(rel).stem.split("-")[-1]
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                   "--implementation", "cp", "--python-version", f"{python[2]}.{python[3:]}", "--abi", python,
                   "--dest", tmp, f"{name}=={version}"]
            for t in tag.split("."):
                cmd[-1:-1] = ["--platform", t]
            res = subprocess.run(cmd, capture_output=True, text=True)
            got = Path(tmp) / Path(rel).name
            if res.returncode != 0 or not got.is_file():
                found = ", ".join(p.name for p in Path(tmp).iterdir()) or "nothing"
                raise RuntimeError(f"could not download {Path(rel).name} (pip got {found}):\n{res.stderr[-2000:]}")
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(path.name + ".part")      # a wheel is there whole or not at all
            shutil.copyfile(got, part)
            part.replace(path)


def blender_ext() -> Path:
    """Blender's own extension command-line tool, as the bpy module ships it."""
    import bpy
    path = Path(bpy.utils.system_resource("SCRIPTS")) / "addons_core/bl_pkg/cli/blender_ext.py"
    if not path.is_file():
        raise RuntimeError(f"bpy ships no extension command-line tool at {path}")
    return path


def line_pythons() -> dict[str, str]:
    """Each Blender line's Python that is ready: the one ./run names, else its environment's."""
    found = {}
    for line, var in LINE_PYTHONS.items():
        py = os.environ.get(var) or str(ROOT / f".venv-{line}" / "bin" / "python")
        if Path(py).is_file():
            found[line] = py
    return found


# in a line's Python: the core at argv[1] — its kernels prepared for any CPU unless argv[2] is
# "ask" — then where its kernels are kept and where its prepared ones are
_PREPARE = """
import sys
sys.path.insert(0, sys.argv[1])
from hair_wig import kernels, prepare
ok = True
if sys.argv[2] != "ask":
    job = prepare.Preparation(prepare.missing(cpu=prepare.store.GENERIC))
    ok = job.wait(report=lambda done, total, now: print(f"{done}/{total}", file=sys.stderr, flush=True))
    print(job.error, file=sys.stderr)
print(kernels.ROOT, kernels.PREPARED)
sys.exit(0 if ok else 1)
"""


def prebuilt_kernels(root: Path = ROOT) -> dict[str, Path]:
    """The kernels of ``root``'s core prepared for any CPU, for every line's Python: archive
    name -> file, under ``hair_wig/kernels/prebuilt/`` as the kernels find them there (their
    name, numba's version). Kept where this checkout keeps its own (the name is the sources'
    digest: the same sources share them). Refuses when a line has no Python."""
    pythons = line_pythons()
    missing = sorted(set(LINE_PYTHONS) - set(pythons))
    if missing:
        raise RuntimeError(f"no Python for Blender {', '.join(missing)} to prebuild the Linux package's kernels: "
                           f"make its environment (HAIR_WIG_BLENDER={missing[0]} ./run python -c pass)")
    folders = set()
    for line, py in pythons.items():
        own = subprocess.run([py, "-c", _PREPARE, str(ROOT), "ask"], capture_output=True, text=True, cwd=ROOT)
        if own.returncode != 0:
            raise RuntimeError(f"Blender {line}'s Python cannot import the core:\n{own.stderr[-3000:]}")
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
        env["HAIR_WIG_KERNEL_CACHE"] = own.stdout.split()[-2]
        res = subprocess.run([py, "-c", _PREPARE, str(root), "prepare"], capture_output=True, text=True,
                             cwd=root, env=env)
        if res.returncode != 0:
            raise RuntimeError(f"preparing the kernels for Blender {line} failed:\n{res.stdout[-3000:]}{res.stderr[-3000:]}")
        folders.add(res.stdout.split()[-1])
    (folder,) = folders                   # the same sources and numba: one folder
    prepared = Path(folder)
    kept = prepared.parent.relative_to(prepared.parents[2])          # <kernels' name>/numba-<version>
    return {f"hair_wig/kernels/prebuilt/{kept.as_posix()}/{p.name}": p for p in sorted(prepared.iterdir())
            if p.suffix in (".nbi", ".nbc", ".ok")}


def add_prebuilt(package: Path, files: dict[str, Path]) -> None:
    """Add the prebuilt kernels to a built package (a zip Blender's installer extracts whole)."""
    with zipfile.ZipFile(package, "a", compression=zipfile.ZIP_DEFLATED) as z:
        for arc, path in files.items():
            z.write(path, arc)


def build(out: Path, root: Path = ROOT) -> dict[str, Path]:
    """Fetch the wheels and build one package a platform into ``out``: each platform's .zip, the
    Linux one with its kernels prebuilt."""
    every = manifest(root)["platforms"]
    fetch(manifest(root)["wheels"], root)
    out.mkdir(parents=True, exist_ok=True)
    ext = blender_ext()
    for args in (["validate", str(root)],
                 ["build", "--source-dir", str(root), "--output-dir", str(out), "--split-platforms"]):
        res = subprocess.run([sys.executable, str(ext), *args], capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"blender_ext {args[0]} failed:\n{res.stdout[-3000:]}{res.stderr[-3000:]}")
    m = manifest(root)
    built = {p: out / f"{m['id']}-{m['version']}-{p.replace('-', '_')}.zip" for p in every}
    missing = [str(path) for path in built.values() if not path.is_file()]
    if missing:
        raise RuntimeError(f"blender_ext build made no {', '.join(missing)}")
    add_prebuilt(built[PREBUILT_PLATFORM], prebuilt_kernels(root))
    return built


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--output", default="package_output", help="where the .zip files go")
    args = p.parse_args(argv)
    for path in build(Path(args.output).resolve()).values():
        print(f"{path} ({path.stat().st_size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
