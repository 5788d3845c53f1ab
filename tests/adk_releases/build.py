#!/usr/bin/env python
"""Run `scenario.py` under several google-adk releases, each in a throwaway venv.

    python tests/adk_releases/build.py                     # every release in RELEASES
    python tests/adk_releases/build.py 1.18.0 --out /tmp/r # one release, elsewhere
    python tests/adk_releases/build.py --venvs ~/.cache/adk-venvs   # reuse venvs

For each release: a fresh venv with `google-adk[db]==X` and greenlet (SQLAlchemy 2.1
no longer pulls it in; 2.x's async engine needs it), then the scenario, writing
`<out>/<X>/`. The committed folders next to this file are its output; the tests
read them (tests/test_adk_releases.py) and, with FORENSICS_ADK_RELEASES=1, rebuild
them into a temporary folder first. Needs the package index (pip) and about a
minute per release; nothing else goes over the network.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RELEASES = ("1.18.0", "2.0.0", "2.13.0")


def venv_for(release: str, root: Path) -> Path:
    """The python of a venv that has exactly `google-adk==release` installed."""
    venv = root / f"adk-{release}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                f"google-adk[db]=={release}",
                "greenlet",
            ],
            check=True,
        )
    return python


def build(release: str, out: Path, venvs: Path) -> None:
    started = time.monotonic()
    python = venv_for(release, venvs)
    # ADK 2.10+ emits OTel-semconv spans by default, without the request; `1` keeps
    # the legacy `call_llm` span with `gcp.vertex.agent.llm_request` (supported by
    # ADK until at least 2027-03-31); older releases ignore the variable.
    env = {**os.environ, "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1", "PYTHONWARNINGS": "ignore"}
    subprocess.run(
        [str(python), str(HERE / "scenario.py"), str(out / release)], check=True, env=env
    )
    print(f"{release}: {time.monotonic() - started:.0f} s", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="*", default=list(RELEASES))
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--venvs", type=Path, help="keep the venvs here (default: temporary)")
    args = parser.parse_args(argv)
    if args.venvs:
        args.venvs.mkdir(parents=True, exist_ok=True)
        for release in args.releases:
            build(release, args.out, args.venvs)
        return 0
    with tempfile.TemporaryDirectory(prefix="adk-venvs-") as tmp:
        for release in args.releases:
            build(release, args.out, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
