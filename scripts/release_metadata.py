"""Checks of the built wheels' metadata, and the README's Python quickstart as a script.

``python scripts/release_metadata.py dist/*.whl`` fails (exit 1, one line per problem) when a
wheel lacks the licence expression, the licence file, the project URLs or a summary, or when
its long description links to a relative path (broken on a package index page).
``python scripts/release_metadata.py --quickstart README.md`` prints the code block under the
README's "Use it from Python" heading, so the release check runs what the README shows.
"""

from __future__ import annotations

import argparse
import re
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

QUICKSTART_HEADING = "## Use it from Python"
RELATIVE_LINK = re.compile(r"\]\((?![a-z]+://|#|mailto:)([^)\s]+)\)")


def wheel_problems(wheel: Path) -> list[str]:
    """What a wheel's metadata lacks, as readable lines (empty: nothing)."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(archive.read(meta_name).decode())
        licences = [n for n in names if "/licenses/" in n and n.endswith("LICENSE")]
        licence_text = archive.read(licences[0]).decode() if licences else ""
    problems = []
    if meta.get("License-Expression") != "Apache-2.0":
        problems.append(f"License-Expression is {meta.get('License-Expression')!r}")
    if "Apache License" not in licence_text:
        problems.append("no Apache-2.0 LICENSE file in the wheel")
    urls = {value.split(",")[0].strip() for value in meta.get_all("Project-URL") or []}
    for label in ("Homepage", "Source", "Issues"):
        if label not in urls:
            problems.append(f"no {label} project URL")
    if not meta.get("Summary"):
        problems.append("no summary")
    if not meta.get_all("Classifier"):
        problems.append("no classifiers")
    for target in RELATIVE_LINK.findall(meta.get_payload() or ""):
        problems.append(f"relative link in the description: {target}")
    return [f"{wheel.name}: {problem}" for problem in problems]


def quickstart(readme: Path) -> str:
    """The first ```python block after the quickstart heading."""
    text = readme.read_text(encoding="utf-8")
    start = text.index(QUICKSTART_HEADING)
    match = re.search(r"```python\n(.*?)```", text[start:], re.DOTALL)
    if match is None:
        raise ValueError(f"no python block under {QUICKSTART_HEADING!r} in {readme}")
    return match.group(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--quickstart", action="store_true", help="print the README's quickstart")
    args = parser.parse_args(argv)
    if args.quickstart:
        print(quickstart(args.paths[0]))
        return 0
    problems = [line for wheel in args.paths for line in wheel_problems(wheel)]
    print("\n".join(problems) if problems else f"metadata complete in {len(args.paths)} wheels")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
