"""The web chat in a real headless Chromium (Debian's package, driven by Playwright).

The server is ``examples/chatbots/web_chat.py`` started as a user would, answering through the
scripted OpenAI-compatible server of ``fake_openai.py`` (so answers and citations are fixed).
Screenshots go to ``$RAG_MULTIHOP_SCREENSHOTS`` when set (``docs/img`` refreshes the
README's pictures), else to pytest's temporary folder, so a test run leaves the tree clean.
Marked ``e2e``: ``-m "not e2e"`` skips them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fake_openai
import pytest
from chat_fakes import EXAMPLES

pytestmark = pytest.mark.e2e

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
pytest.importorskip("gradio", reason="pip install -r examples/chatbots/requirements.txt")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).is_file():
    pytest.skip("Chromium not installed (apt-get install chromium)", allow_module_level=True)

ROOT = EXAMPLES.parents[1]
QUESTION = "Where was the founder of Veldmark Ropeworks born?"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def web_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server, api_base = fake_openai.start()
    port = _free_port()
    log = tmp_path_factory.mktemp("web") / "web_chat.log"
    env = {**os.environ, "RAG_MULTIHOP_CACHE": str(tmp_path_factory.mktemp("cache"))}
    command = [
        sys.executable,
        "web_chat.py",
        "--llm",
        "openai/fake",
        "--api-base",
        api_base,
        "--port",
        str(port),
    ]
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=EXAMPLES, env=env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 240
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"web chat did not start:\n{log.read_text()[-3000:]}")
            time.sleep(1)
    yield url
    process.terminate()
    process.wait(timeout=30)
    server.shutdown()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("RAG_MULTIHOP_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(browser: Any, web_url: str) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    outside: list[str] = []
    tab = context.new_page()
    tab.on(
        "request",
        lambda r: (
            outside.append(r.url)
            if not r.url.startswith(("http://127.0.0.1", "data:", "blob:"))
            else None
        ),
    )
    tab.goto(web_url, wait_until="load")
    tab.locator("#question textarea").wait_for()
    yield tab
    context.close()
    assert outside == [], f"the page fetched from outside 127.0.0.1: {outside}"


def ask(page: Any, question: str) -> None:
    """Ask and wait until the turn is over (the account names the next turn number)."""
    turn = int(page.evaluate("window.__turns = (window.__turns || 0) + 1"))
    page.locator("#question textarea").fill(question)
    page.locator("#send").click()
    page.wait_for_function(
        "n => document.querySelector('#account').innerText.includes('Turn ' + n + ' ·')",
        arg=turn,
        timeout=120_000,
    )


def passage_ids(page: Any) -> list[str]:
    return page.locator("#panel .passage").evaluate_all("els => els.map(e => e.dataset.id)")


def test_answer_streams_with_citations_and_reasoning_chain(page: Any, screenshots: Path) -> None:
    assert "tiny" not in page.locator("#model-note").inner_text()  # a named model, not local
    assert "openai/fake" in page.locator("#model-note").inner_text()
    ask(page, QUESTION)
    chat = page.locator("#chat")
    assert fake_openai.ANSWER in chat.inner_text() and "Sources:" in chat.inner_text()
    assert page.locator("#panel .hop").first.inner_text().startswith("Hop 1")
    assert page.locator("#panel .passage").count() == 5
    assert page.locator("#panel .passage .cited").count() == 2
    assert page.locator("#panel .signal").count() >= 5
    assert "1 LLM call" in page.locator("#account").inner_text()
    page.screenshot(path=str(screenshots / "web_chat.png"))


def test_switching_the_method_changes_the_sources(page: Any, screenshots: Path) -> None:
    ask(page, QUESTION)
    fused = passage_ids(page)
    page.locator("#method input").click()
    page.get_by_role("option", name="BridgeRAG").click()
    ask(page, QUESTION)
    assert page.locator("#panel .evidence").get_attribute("data-method") == "bridge"
    assert "bridge: best match" in page.locator("#panel").inner_text()
    assert passage_ids(page) != fused
    page.screenshot(path=str(screenshots / "web_chat_bridge.png"))


def test_empty_and_overlong_questions_are_refused_with_a_message(page: Any) -> None:
    page.locator("#send").click()
    page.get_by_text("Type a question first.").wait_for(timeout=30_000)
    page.locator("#question textarea").fill("why " * 2000)
    page.locator("#send").click()
    page.get_by_text("fit the model's context window").wait_for(timeout=30_000)
    assert page.locator("#chat .message").count() == 0


def test_a_model_failing_mid_stream_shows_an_error_and_the_chat_goes_on(page: Any) -> None:
    ask(page, f"{fake_openai.FAIL} what now?")
    assert "The model failed" in page.locator("#chat").inner_text()
    ask(page, QUESTION)
    assert "1 LLM call" in page.locator("#account").inner_text()
    assert fake_openai.ANSWER in page.locator("#chat").inner_text()


def test_two_tabs_are_two_conversations(page: Any, browser: Any, web_url: str) -> None:
    other = browser.new_context().new_page()
    other.goto(web_url, wait_until="load")
    other.locator("#question textarea").wait_for()
    ask(page, QUESTION)
    ask(other, "Who was Anton Brezak?")
    ask(page, "When did she die?")  # a follow-up: condensed with this tab's history only
    assert "condense: 1 call" in page.locator("#account").inner_text()
    assert "Veldmark" not in other.locator("#chat").inner_text()
    assert "searched for: Standalone: When did she die?" in page.locator("#panel").inner_text()
    other.context.close()
