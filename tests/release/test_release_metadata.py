"""What a package index shows: licence, metadata, links that work off the repository."""

from __future__ import annotations

import importlib.util
import re
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = [ROOT, ROOT / "integrations" / "llama-index", ROOT / "integrations" / "haystack"]
REPOSITORY = "https://github.com/rag-multihop/rag-multihop"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _script():
    spec = importlib.util.spec_from_file_location(
        "release_metadata", ROOT / "scripts" / "release_metadata.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_each_distribution_declares_its_licence_and_metadata(project):
    config = tomllib.loads((project / "pyproject.toml").read_text())
    meta = config["project"]
    assert meta["license"] == "Apache-2.0" and meta["license-files"] == ["LICENSE"]
    assert "Apache License" in (project / "LICENSE").read_text()
    assert meta["authors"] and meta["classifiers"] and meta["description"]
    assert {"Homepage", "Source", "Issues", "Changelog"} <= set(meta["urls"])
    changelog = meta["urls"]["Changelog"].removeprefix(f"{REPOSITORY}/blob/main/")
    assert (ROOT / changelog).is_file()
    # the SPDX licence field needs setuptools 77 (70.3 rejects it)
    assert "setuptools>=77" in config["build-system"]["requires"]


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_readme_links_are_absolute_and_reach_files_of_the_repository(project):
    readme = (project / "README.md").read_text()
    for target in LINK.findall(readme):
        assert re.match(r"https?://|#", target), f"{project.name}/README.md links to {target}"
        if target.startswith(f"{REPOSITORY}/blob/main/"):
            path = target.removeprefix(f"{REPOSITORY}/blob/main/").partition("#")[0]
            assert (ROOT / path).exists(), f"{project.name}/README.md links to missing {path}"


def test_the_dev_extra_can_build_without_isolation():
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][
        "dev"
    ]
    assert "build>=1.0" in dev and "setuptools>=77" in dev


def _wheel(tmp_path, metadata: str, licence: str | None) -> Path:
    wheel = tmp_path / "pkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg-0.1.dist-info/METADATA", metadata)
        if licence is not None:
            archive.writestr("pkg-0.1.dist-info/licenses/LICENSE", licence)
    return wheel


def test_the_wheel_check_names_every_missing_piece(tmp_path):
    bare = "Metadata-Version: 2.4\nName: pkg\nVersion: 0.1\n\nSee [docs](docs/x.md).\n"
    problems = _script().wheel_problems(_wheel(tmp_path, bare, None))
    text = "\n".join(problems)
    for expected in (
        "License-Expression is None",
        "no Apache-2.0 LICENSE file",
        "no Homepage project URL",
        "no summary",
        "no classifiers",
        "relative link in the description: docs/x.md",
    ):
        assert expected in text


def test_the_wheel_check_passes_complete_metadata(tmp_path):
    complete = (
        "Metadata-Version: 2.4\nName: pkg\nVersion: 0.1\nSummary: s\n"
        "License-Expression: Apache-2.0\nClassifier: Typing :: Typed\n"
        f"Project-URL: Homepage, {REPOSITORY}\nProject-URL: Source, {REPOSITORY}\n"
        f"Project-URL: Issues, {REPOSITORY}/issues\n\nSee [docs]({REPOSITORY}/x).\n"
    )
    assert _script().wheel_problems(_wheel(tmp_path, complete, "Apache License ...")) == []


def test_the_release_check_runs_the_readme_quickstart():
    code = _script().quickstart(ROOT / "README.md")
    compile(code, "quickstart", "exec")
    assert "DenseRetriever" in code and "retrieve(" in code
