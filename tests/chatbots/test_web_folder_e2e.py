"""The web chat started on a folder, in headless Chromium: the page shows the folder's
indexing line, then answers from the folder's passages (titles "<file> › <heading>")."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from folder_files import write_folder
from web_server import serve_web_chat

pytestmark = pytest.mark.e2e

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
pytest.importorskip("gradio", reason="pip install -r examples/chatbots/requirements.txt")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).is_file():
    pytest.skip("Chromium not installed (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def folder_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    docs = write_folder(tmp_path_factory.mktemp("folder") / "rope docs")
    yield from serve_web_chat(tmp_path_factory.mktemp("web"), "--corpus", str(docs))


def test_the_folder_is_indexed_in_the_background_then_answers(folder_url: str) -> None:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(folder_url, wait_until="load")
        status = page.locator("#corpus-status")
        status.wait_for()
        page.wait_for_function(
            "() => document.querySelector('#corpus-status').innerText.includes('indexed')",
            timeout=180_000,
        )
        assert "rope docs (8 passages)" in status.inner_text()
        assert "rope docs" in page.locator("#model-note").inner_text()
        page.locator("#question textarea").fill("Where was Marit Hallendor born?")
        page.locator("#send").click()
        page.wait_for_function(
            "() => document.querySelector('#account').innerText.includes('Turn 1 ·')",
            timeout=120_000,
        )
        titles = page.locator("#panel .passage-head").all_inner_texts()
        ids = page.locator("#panel .passage").evaluate_all("els => els.map(e => e.dataset.id)")
        browser.close()
    assert "notes.md#1" in ids
    assert any("notes › Marit Hallendor" in t for t in titles)
