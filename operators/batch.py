"""Batch bake of hair_wig wigs, for render farms and pipelines — shipped in the extension, so a
farm node needs nothing but the installed extension:

    blender -b FILE.blend --python-expr "<batch.COMMAND>" -- [--objects NAME ...] [--frames START END] ...

and, from a checkout of the repository (``scripts/bake.py`` calls this module):

    ./run python scripts/bake.py FILE.blend [--objects NAME ...] [--frames START END] [--output OUT.blend]
    blender --background FILE.blend --python scripts/bake.py -- [--objects ...] [--frames ...] [--output ...]

Split bakes, for a render farm (issue 18): bake a part — one object, optionally a range of its
strands — into a part file, then merge the parts into the shot's .blend:

    ./run python scripts/bake.py FILE.blend --objects Hair --strands 0:25000 --part hair_0.npz
    ./run python scripts/bake.py FILE.blend --merge hair_*.npz [--output OUT.blend]

The merged bake equals a one-process bake bit for bit. Wigs whose strands depend on each other
(the Strands or Rods dynamics layer, length control over strands of different point counts, a
keyed hairstyle) are split by object only, and say so when asked for strands.

(the first: any Python with the ``bpy`` module, as ``./run python`` gives; a system Python without
it is told so)
It bakes every hair object with hair_wig enabled in the file's scene (or only the named ones),
prints one line per object with the frames done and the frames per second, and saves to
``--output`` (default: the file itself). Any error — a missing or unreadable file, an unknown
object, a bad frame range, nothing to bake, a failed bake — prints one line naming the problem
and exits with status 1 before anything is written; the output is written to a temporary file
and renamed into place, so it is never left half-written.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import sys
from pathlib import Path

# the add-on's own package (``bl_ext.<repo>.hair_wig`` when installed as an extension)
PACKAGE = __package__.rsplit(".", 1)[0]


class BakeFailed(Exception):
    pass


def parse_args(argv: list[str], file_is_open: bool) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bake.py", description="Bake hair_wig wigs into keyframed playback data.")
    p.add_argument("file", nargs="?" if file_is_open else None, metavar="FILE.blend",
                   help="the .blend to bake (with blender --background, the file Blender opened)")
    p.add_argument("--objects", nargs="+", metavar="NAME", help="bake only these hair objects")
    p.add_argument("--frames", nargs=2, type=int, metavar=("START", "END"),
                   help="frame range (default: each wig's own range)")
    p.add_argument("--after", choices=("keep", "continue", "clear"), default="keep",
                   help="with --frames on a wig already baked, which keeps its other frames: what becomes "
                        "of its frames after the range, made by the dynamics as they ran before — keep "
                        "them, marked outdated (default), continue the bake to its end, or clear them")
    p.add_argument("--output", metavar="OUT.blend", help="where to save (default: in place)")
    p.add_argument("--make-folders", action="store_true",
                   help="create the folders of --output, --part and --export where missing (a farm job's "
                        "parts folder); without it a missing folder is refused before baking")
    p.add_argument("--compress", action="store_true", help="save a compressed .blend")
    p.add_argument("--strands", metavar="START:END", type=strand_range,
                   help="bake only these strands of the one object named (a part: needs --part)")
    p.add_argument("--part", metavar="PART.npz", help="write this part of the bake to a part file, not the .blend")
    p.add_argument("--merge", nargs="+", metavar="PART.npz", help="merge these part files into the .blend's bakes")
    p.add_argument("--disk", action="store_true",
                   help="bake into Alembic caches on disk (each wig's Disk Cache path, by default "
                        "hair_wig/<object>.abc beside the .blend), streamed: memory stays small")
    p.add_argument("--export", metavar="HAIR.abc|HAIR.usdc",
                   help="also export the baked hair, every baked frame, as it renders (children at their "
                        "render density), to Alembic or USD (by the suffix)")
    args = p.parse_args(argv)
    if args.strands is not None and args.part is None:
        raise BakeFailed("--strands bakes a part: give --part PART.npz")
    if args.part is not None and (not args.objects or len(args.objects) != 1):
        raise BakeFailed("--part bakes one object: name it with --objects NAME")
    if args.merge and (args.part or args.strands or args.objects):
        raise BakeFailed("--merge takes the part files only (and --output, --export)")
    if args.disk and (args.part or args.merge):
        raise BakeFailed("--disk bakes whole wigs into their caches: not with --part or --merge")
    if args.export and args.part:
        raise BakeFailed("--export writes the whole bake: not with --part (export after the merge)")
    for what, path in (("--part", args.part), ("--export", args.export), ("--output", args.output)):
        if path is not None and args.make_folders:
            Path(path).resolve().parent.mkdir(parents=True, exist_ok=True)
        if path is not None and not Path(path).resolve().parent.is_dir():      # before any baking
            raise BakeFailed(f"{what}: output folder does not exist: {Path(path).resolve().parent} "
                             f"(create it first)")
    return args


def strand_range(text: str) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"strands must be START:END, got {text!r}") from None
    if not 0 <= a < b:
        raise argparse.ArgumentTypeError(f"strands {text}: START must be >= 0 and below END")
    return a, b


def open_file(bpy, path: str | None) -> Path:
    if path is None:
        if not bpy.data.filepath:
            raise BakeFailed("no .blend file is open (Blender could not read it, or none was given)")
        return Path(bpy.data.filepath)
    p = Path(path)
    if not p.is_file():
        raise BakeFailed(f"file not found: {p}")
    if bpy.data.filepath and Path(bpy.data.filepath).resolve() == p.resolve():
        return p
    try:
        bpy.ops.wm.open_mainfile(filepath=str(p.resolve()))
    except RuntimeError as err:
        raise BakeFailed(f"cannot read {p}: {str(err).strip().splitlines()[-1]}") from None
    return p


def pick_objects(bpy, scene_reader, names: list[str] | None) -> list:
    scene = bpy.context.scene
    if not names:
        obs = scene_reader.wigs_in(scene)
        if not obs:
            raise BakeFailed(f"nothing to bake: no hair object in scene '{scene.name}' has hair_wig enabled")
        return obs
    obs = []
    for name in names:
        ob = bpy.data.objects.get(name)
        if ob is None:
            raise BakeFailed(f"no object named '{name}' in the file")
        if scene.objects.get(name) is None:
            raise BakeFailed(f"object '{name}' is not in scene '{scene.name}'")
        if not scene_reader.is_wig(ob):
            raise BakeFailed(f"object '{name}' has no hair_wig settings to bake")
        obs.append(ob)
    return obs


def _c_stdio():
    """The C library, whose stdio buffers hold Blender's own output; None where it cannot be
    reached (Windows)."""
    try:
        return ctypes.CDLL(None)
    except (OSError, TypeError):
        return None


@contextlib.contextmanager
def blender_quiet():
    """Blender's own report of a save names the temporary file (``Saved copy as
    ".shot.blend.123.tmp.blend"``): keep Blender's standard output off the user's screen
    meanwhile (our own line says where the file went). Where C's stdio cannot be reached
    (Windows), Blender's line stays."""
    libc = _c_stdio()
    if libc is None:
        yield
        return
    sys.stdout.flush()
    libc.fflush(None)
    kept = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        libc.fflush(None)
        os.dup2(kept, 1)
        os.close(kept)
        os.close(null)


def save_atomically(bpy, out: Path, compress: bool) -> None:
    # Not straight onto ``out``: Blender would keep the old file as ``out.blend1``.
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp.blend")
    try:
        with blender_quiet():
            bpy.ops.wm.save_as_mainfile(filepath=str(tmp), copy=True, compress=compress,
                                        check_existing=False)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def run(argv: list[str], file_is_open: bool) -> int:
    args = parse_args(argv, file_is_open)
    if args.frames is not None and args.frames[1] < args.frames[0]:
        raise BakeFailed(f"bad frame range {args.frames[0]}..{args.frames[1]}: END is before START")
    try:
        import bpy
    except ImportError:
        raise BakeFailed("this Python has no bpy (Blender as a module); run ./run python scripts/bake.py "
                         "FILE.blend ... (the project's environment), or Blender itself: blender --background "
                         "FILE.blend --python scripts/bake.py -- ...") from None

    if not hasattr(bpy.types.Object, "hair_wig"):
        raise BakeFailed("hair_wig is not enabled in this Blender: install the extension and enable it "
                         "(Preferences > Get Extensions), or run the repository's scripts/bake.py")
    from importlib import import_module

    baking = import_module(f"{PACKAGE}.operators.baking")
    scene_reader = import_module(f"{PACKAGE}.operators.scene_reader")
    blender_io = import_module(f"{PACKAGE}.operators.blender_io")
    errors = import_module(f"{PACKAGE}.hair_wig.errors")

    src = open_file(bpy, args.file)
    out = Path(args.output) if args.output else src
    if not out.parent.is_dir():
        raise BakeFailed(f"output folder does not exist: {out.parent}")
    cache_module = import_module(f"{PACKAGE}.hair_wig.cache")
    if args.merge:
        try:
            merged = merge(bpy, blender_io, cache_module, args.merge)
        except errors.HairWigError as err:
            raise BakeFailed(str(err)) from None
        save_atomically(bpy, out, args.compress)
        print(f"merged {', '.join(f'{ob.name} ({n} parts)' for ob, n in merged)}; saved {out}", flush=True)
        export(bpy, args.export, [ob for ob, _ in merged])
        return 0
    obs = pick_objects(bpy, scene_reader, args.objects)
    first, last = args.frames if args.frames else (None, None)
    # where the kernels are being prepared (no prebuilt ones for this platform), their workers
    # compile them in parallel: wait for the ones these wigs need rather than compile them here too
    preparation = import_module(f"{PACKAGE}.operators.preparation")
    preparation.wait(preparation.needed(obs))
    caches = []
    try:
        if not args.disk:                     # a disk bake holds one frame, whatever the shot
            baking.check_memory(bpy.context.scene, obs,
                                [scene_reader.frame_range(bpy.context.scene, ob, first, last) for ob in obs])
        for ob in obs:
            rate = baking.Rate()
            f0, f1 = scene_reader.frame_range(bpy.context.scene, ob, first, last)
            if args.disk:
                disk_bake = import_module(f"{PACKAGE}.operators.disk_bake")
                done = disk_bake.bake_to_disk(bpy.context, ob, f0, f1)
                print(f"{ob.name}: {done['last'] - done['first'] + 1} frames ({f0}..{f1}) to {done['path']}, "
                      f"{done['bytes'] / 2**20:.1f} MB, {rate.fps(done['last'] - done['first'] + 1):.1f} frames/s",
                      flush=True)
                continue
            rebake = (args.frames is not None and args.part is None
                      and blender_io.bake_range(ob) is not None and ob[blender_io.RECORD]["kind"] != "DISK")
            if rebake:
                # the wig's bake keeps its other frames (its dynamics run from its start)
                cache = baking.rebake_frames(bpy.context, ob, first, last, after=args.after.upper())
            else:
                cache = baking.compute(bpy.context, ob, f0, f1, others=obs, strands=args.strands)
                caches.append((ob, cache))
            for warning in cache.warnings:
                print(f"bake.py: warning: {warning}", file=sys.stderr, flush=True)
            collided = (f", collision with {', '.join(cache.colliders)}: deepest point left inside "
                        f"{cache.penetration:.2g}" if cache.colliders else "")
            if rebake:
                a, b = cache.rebaked
                kept = (f"; cleared its frames {cache.cleared[0]}..{cache.cleared[1]}" if cache.cleared else "")
                if cache.outdated:
                    kept += (f"; frames {baking.say_ranges(cache.outdated)} keep the motion of an earlier "
                             f"bake (outdated: --after continue bakes on to the end)")
                print(f"{ob.name}: re-baked frames {a}..{b} of its bake {cache.first}..{cache.last}, "
                      f"{rate.fps(b - a + 1):.1f} frames/s{collided}{kept}", flush=True)
                continue
            print(f"{ob.name}: {cache.num_frames}/{cache.num_frames} frames ({f0}..{f1}), "
                  f"{rate.fps(cache.num_frames):.1f} frames/s{collided}", flush=True)
        if args.part:
            (ob, cache), = caches
            part = Path(args.part)
            tmp = part.with_name(f".{part.name}.{os.getpid()}.tmp")
            try:
                cache_module.save_part(tmp, cache, args.strands)
                os.replace(tmp, part)
            finally:
                tmp.unlink(missing_ok=True)
            what = "all strands" if args.strands is None else f"strands {args.strands[0]}:{args.strands[1]}"
            print(f"wrote {part} ({ob.name}, {what})", flush=True)
            return 0
        for ob, cache in caches:
            blender_io.write_bake(ob, cache)
    except errors.HairWigError as err:
        raise BakeFailed(str(err)) from None
    save_atomically(bpy, out, args.compress)
    print(f"saved {out}", flush=True)
    export(bpy, args.export, obs if args.disk else [ob for ob, _ in caches])
    return 0


def export(bpy, path: str | None, obs) -> None:
    """``--export``: the baked objects to Alembic or USD, after the .blend is saved."""
    if not path:
        return
    from importlib import import_module

    export_ops = import_module(f"{PACKAGE}.operators.export_ops")
    errors = import_module(f"{PACKAGE}.hair_wig.errors")
    try:
        first, last = export_ops.export_baked(bpy.context, obs, path, "RENDER")
    except errors.HairWigError as err:
        raise BakeFailed(str(err)) from None
    print(f"exported {', '.join(o.name for o in obs)} (frames {first}..{last}) to {path}", flush=True)


def merge(bpy, blender_io, cache_module, paths: list[str]) -> list:
    """Merge part files into the open file's objects: every object's parts together, written as
    its bake (nothing is written unless every object's parts merge). The objects merged, with
    their part counts."""
    groups: dict[str, list] = {}
    for path in paths:
        if not Path(path).is_file():
            raise BakeFailed(f"part file not found: {path}")
        part = cache_module.load_part(path)
        groups.setdefault(part["meta"]["object"], []).append((path, part))
    caches = []
    for name, items in groups.items():
        ob = bpy.data.objects.get(name)
        if ob is None:
            raise BakeFailed(f"{items[0][0]}: the file has no object '{name}'")
        hair = blender_io.read_hair(ob)
        caches.append((ob, cache_module.merge_parts(hair, [p for _, p in items], [path for path, _ in items])))
    for ob, cache in caches:
        blender_io.write_bake(ob, cache)
    return [(ob, len(groups[ob.name])) for ob, _ in caches]


def main() -> int:
    # Blender's own command line runs this with --python/-P (the script) or --python-expr (the
    # installed extension's ``cli``); its arguments follow "--".
    cut = sys.argv.index("--") if "--" in sys.argv else len(sys.argv)
    in_blender = any(a in ("--python", "-P", "--python-expr") for a in sys.argv[:cut])
    argv = sys.argv[cut + 1:] if in_blender else sys.argv[1:]
    try:
        return run(argv, file_is_open=in_blender)
    except BakeFailed as err:
        print(f"bake.py: error: {err}", file=sys.stderr, flush=True)
        return 1


def end(status: int) -> None:
    """Leave at once with ``status``, everything written and flushed. Blender 4.5 can hang at exit
    after a file whose Python driver it blocked (auto-run off): a farm worker would wait for its
    timeout. The .blend is saved and renamed into place before this; nothing else is left to do."""
    sys.stdout.flush()
    sys.stderr.flush()
    libc = _c_stdio()
    if libc is not None:
        libc.fflush(None)                      # Blender's own lines, still in C's buffers
    os._exit(status)


def cli() -> None:
    """Bake as the command line says and leave with its status: what a farm node runs with only
    the extension installed (README, "Batch baking"):
    ``blender -b shot.blend --python-expr "<COMMAND>" -- [--objects …] …``, ``COMMAND`` below."""
    end(main())


# The --python-expr that runs ``cli`` from the installed extension, wherever it was installed
# (the repository's name is part of the module's): the farm job type and the README use it.
COMMAND = ("import importlib, sys; importlib.import_module(next(n for n in list(sys.modules) if n.startswith("
           "'bl_ext.') and n.count('.') == 2 and n.endswith('.hair_wig')) + '.operators.batch').cli()")
