"""LLMEntityExtractor against the graph's EntityExtractor protocol, with a plain-object fake."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from rag_multihop.graph.extract import EntityExtractor
from rag_multihop.graph.llm_extract import LLMEntityExtractor
from rag_multihop.llm import LLMClient, LLMOutputError, LLMSettings, RawReply


class EntityTransport:
    """Answers every request with ``reply(passage_text)``; counts requests."""

    def __init__(self, reply: Callable[[str], str]) -> None:
        self.reply = reply
        self.requests = 0
        self._lock = threading.Lock()

    def check_model(self, model: str) -> None:
        pass

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        return []

    def complete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        with self._lock:
            self.requests += 1
        user = request["messages"][1]["content"]
        text = user.split("\n", 1)[1].split("\n</passage>", 1)[0]
        return RawReply(self.reply(text), prompt_tokens=50, completion_tokens=10, cost=1e-5)

    async def acomplete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        return self.complete(request, api_key=api_key, timeout=timeout)


def capitalised(text: str) -> str:
    words = [w.strip(".,") for w in text.split() if w[:1].isupper()]
    return json.dumps({"entities": words})


def make(
    reply: Callable[[str], str] = capitalised, **kwargs: Any
) -> tuple[LLMEntityExtractor, EntityTransport]:
    transport = EntityTransport(reply)
    client = LLMClient(LLMSettings("openai/gpt-4o-mini", max_concurrency=4), transport=transport)
    return LLMEntityExtractor(client, **kwargs), transport


def test_satisfies_the_graph_protocol() -> None:
    extractor, _ = make()
    assert isinstance(extractor, EntityExtractor)
    assert extractor.name == "llm(model=openai/gpt-4o-mini,max_entities=20,max_chars=2000)"


def test_names_are_normalised_deduplicated_and_capped() -> None:
    reply = json.dumps(
        {"entities": ["The Beatles", "beatles", " Liverpool ", "", "Jean-Luc Godard"]}
    )
    extractor, _ = make(lambda text: reply, max_entities=2)
    assert extractor.extract(["any text"]) == [["beatles", "liverpool"]]


def test_batch_keeps_order_and_skips_empty_texts() -> None:
    extractor, transport = make()
    texts = ["Paris is in France.", "", "   ", "Rome is in Italy."]
    with extractor.client:
        assert extractor.extract(texts) == [["paris", "france"], [], [], ["rome", "italy"]]
    assert transport.requests == 2
    assert extractor.account.calls == 2 and extractor.account.cost == pytest.approx(2e-5)


@pytest.mark.anyio
async def test_async_extraction() -> None:
    extractor, _ = make()
    assert await extractor.aextract(["Ada Lovelace met Babbage."]) == [
        ["ada", "lovelace", "babbage"]
    ]


def test_unusable_reply_raises_by_default() -> None:
    extractor, transport = make(lambda text: "I found no entities, sorry.")
    with pytest.raises(LLMOutputError, match="no JSON object"):
        extractor.extract(["Paris is in France."])
    assert transport.requests == 2  # the one repair attempt
    assert extractor.account.calls == 2


def test_unusable_reply_can_give_no_entities(caplog: pytest.LogCaptureFixture) -> None:
    extractor, _ = make(lambda text: "not json", on_error="empty")
    assert extractor.extract(["Paris is in France.", "Rome."]) == [[], []]
    assert extractor.failures == 2
    assert "no entities for a text" in caplog.text


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_entities": 0}, "max_entities must be a positive integer, got 0"),
        ({"max_chars": -5}, "max_chars must be a positive integer, got -5"),
        ({"on_error": "ignore"}, r"on_error must be one of \['raise', 'empty'\], got 'ignore'"),
    ],
)
def test_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make(**kwargs)
