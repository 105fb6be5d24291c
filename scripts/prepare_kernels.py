"""Prepare the core's kernels for this Python, as the add-on does in the background when it is
enabled: every group of kernels compiled for any CPU of the platform by worker processes (one a
core) into the kernels' prepared folder, then kept. Nothing is done for groups already prepared
for any CPU.

    ./run python scripts/prepare_kernels.py [--workers N]

The test suite runs it once at its start, and ``./run package`` once for each Blender line's
Python, whose results the Linux package carries.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hair_wig import kernels, prepare  # noqa: E402


def run(workers: int | None = None, out=sys.stderr) -> bool:
    """Prepare what is missing, saying how far on ``out``; whether everything is prepared."""
    gone = prepare.prune()
    if gone:
        print(f"hair_wig: removed the compiled kernels of earlier sources: {', '.join(gone)}", file=out, flush=True)
    todo = prepare.missing(cpu=prepare.store.GENERIC)
    if not todo:
        return True
    t = time.perf_counter()
    print(f"hair_wig: preparing {len(todo)} groups of kernels for Python {sys.version_info[0]}.{sys.version_info[1]} "
          f"in {min(workers or prepare.worker_count(), len(todo))} processes into {kernels.PREPARED}", file=out, flush=True)
    job = prepare.Preparation(todo, workers)
    ok = job.wait(report=lambda done, total, now: print(f"hair_wig: {done}/{total} prepared"
                                                        + (f" ({', '.join(now)})" if now else ""), file=out, flush=True))
    print(f"hair_wig: kernels {'prepared' if ok else 'NOT prepared: ' + job.error} in {time.perf_counter() - t:.1f} s",
          file=out, flush=True)
    return ok


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, help="worker processes (default: one a core, at most four)")
    args = p.parse_args(argv)
    return 0 if run(args.workers) else 1


if __name__ == "__main__":
    sys.exit(main())
