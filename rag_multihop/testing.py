"""Test helpers for rag-multihop and for code built on it: no model, no network, no LLM.

What the core suite and both integrations' suites share, written once (like Haystack's
``haystack.testing``):

- :class:`HashingEncoder` (and :func:`hashing_vectors`): a deterministic bag-of-words
  encoder; words hashed into ``dim`` buckets, rows L2-normalised;
- the toy two-hop corpus: :data:`POLISH_WEDDING_QUESTION` and
  :func:`polish_wedding_passages` (the question's bridge, its answer passage, distractors);
- :class:`FakeTransport`: a plain-object LLM transport (the
  :class:`~rag_multihop.llm.transport.StreamingTransport` protocol an
  :class:`~rag_multihop.llm.LLMClient` calls instead of litellm) that answers by the prompt's
  content or plays a script, and records what it was asked;
- :func:`polish_wedding_replies`: what a model that reads the toy corpus right replies to each
  kind of prompt of BridgeRAG and CoopRAG (keyed by the :data:`PROMPT_MARKERS`);
- :func:`chroma_server`: a real Chroma server on 127.0.0.1 for the adapters' vector-store
  tests (needs ``chromadb``).

Importing this module imports numpy and the core types only (no torch, litellm, chromadb or
framework).

Example:
    >>> from rag_multihop.llm import LLMClient, LLMSettings
    >>> encoder = HashingEncoder(dim=8)
    >>> encoder.encode(["Polish Wedding", "polish wedding!"]).shape
    (2, 8)
    >>> transport = FakeTransport({"capital": "Paris"}, default="I do not know")
    >>> client = LLMClient(LLMSettings("openai/gpt-4o-mini"), transport=transport)
    >>> client.complete("What is the capital of France?").text
    'Paris'
    >>> transport.prompts()
    ['What is the capital of France?']
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np

from rag_multihop.llm.transport import RawReply, StreamDelta
from rag_multihop.types import Passage

__all__ = [
    "POLISH_WEDDING_QUESTION",
    "PROMPT_MARKERS",
    "FakeTransport",
    "HashingEncoder",
    "Reply",
    "chroma_server",
    "hashing_vectors",
    "polish_wedding_passages",
    "polish_wedding_replies",
]


def hashing_vectors(texts: Sequence[str], dim: int = 64) -> np.ndarray:
    """Bag of words hashed into ``dim`` buckets, rows L2-normalised (zero rows stay zero).

    >>> vectors = hashing_vectors(["Paris, France", "france paris", ""], dim=4)
    >>> bool((vectors[0] == vectors[1]).all()), vectors[2].tolist()
    (True, [0.0, 0.0, 0.0, 0.0])
    """
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in text.lower().split():
            word = word.strip(".,?!;:'\"()")
            if word:
                out[row, sum(map(ord, word)) * 2654435761 % dim] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


class HashingEncoder:
    """:func:`hashing_vectors` as a rag-multihop encoder; counts its ``encode`` calls.

    Args:
        dim: the number of buckets (the vectors' dimension).
        name: the encoder's name (caches and saved models record it).
    """

    def __init__(self, dim: int = 64, name: str = "hashing-test") -> None:
        self._dim, self._name = dim, name
        self.calls = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        self.calls += 1
        return hashing_vectors(texts, self._dim)


POLISH_WEDDING_QUESTION = "Where was the director of the film Polish Wedding born?"
"""The toy corpus's two-hop question: the film's page names the director, whose page names
the city."""


def polish_wedding_passages() -> list[Passage]:
    """A toy two-hop corpus: the question's bridge, its answer passage and distractors."""
    return [
        Passage(
            "polish-wedding",
            "Polish Wedding is a 1998 film written and directed by Theresa Connelly.",
            title="Polish Wedding",
        ),
        Passage(
            "theresa-connelly",
            "Theresa Connelly is an American screenwriter born in Philadelphia.",
            title="Theresa Connelly",
        ),
        Passage("philadelphia", "Philadelphia is a city in Pennsylvania.", title="Philadelphia"),
        Passage("claire-danes", "Claire Danes is an American actress.", title="Claire Danes"),
        Passage("rope", "Rope is a 1948 film directed by Alfred Hitchcock.", title="Rope"),
    ]


Reply: TypeAlias = str | RawReply | BaseException | Callable[[str], str | RawReply]
"""What :class:`FakeTransport` answers: a text, a whole :class:`RawReply`, an exception to
raise (a provider error: give it a ``status_code``), or a function of the prompt."""


class FakeTransport:
    """A plain-object LLM transport for tests: no network, no litellm.

    A request is answered by its prompt (the last message's content): the first key of
    ``replies`` found in the prompt picks the reply, else ``default``. With ``script`` the
    replies are played in order instead, one per attempt, the last one repeating (for retry
    tests). A text reply becomes a :class:`RawReply` with ``model`` and the usage given;
    streaming sends it word by word, then the finish reason and the usage.

    Args:
        replies: prompt marker -> :data:`Reply`, tried in order.
        default: the reply when no marker is in the prompt.
        script: replies played in order, regardless of the prompt.
        model, prompt_tokens, completion_tokens, cost: the usage a text reply reports.
        delay: seconds each request waits (to see concurrency).
        missing: credential variables :meth:`missing_credentials` reports as unset.

    Attributes:
        requests: every request, in order; ``api_keys``: the key each was sent with.
        in_flight, peak: requests running now, and the most at once.
    """

    def __init__(
        self,
        replies: Mapping[str, Reply] | None = None,
        *,
        default: Reply = "",
        script: Sequence[Reply] = (),
        model: str = "fake",
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost: float | None = None,
        delay: float = 0.0,
        missing: Sequence[str] = (),
    ) -> None:
        self.replies = dict(replies or {})
        self.default = default
        self.script = list(script)
        self.model = model
        self.usage = (prompt_tokens, completion_tokens, cost)
        self.delay = delay
        self.missing = list(missing)
        self.requests: list[dict[str, Any]] = []
        self.api_keys: list[str | None] = []
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ the protocol

    def check_model(self, model: str) -> None:
        return None

    def missing_credentials(self, model: str, api_base: str | None) -> list[str]:
        return list(self.missing)

    def supports_response_schema(self, model: str) -> bool:
        return False

    def complete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        self._enter()
        try:
            time.sleep(self.delay)
            return self._answer(request, api_key)
        finally:
            self._leave()

    async def acomplete(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> RawReply:
        self._enter()
        try:
            await asyncio.sleep(self.delay)
            return self._answer(request, api_key)
        finally:
            self._leave()

    def stream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> Iterator[StreamDelta]:
        reply = self.complete(request, api_key=api_key, timeout=timeout)
        for i, word in enumerate((reply.text or "").split(" ")):
            yield StreamDelta((" " if i else "") + word, model=reply.model)
        yield StreamDelta(
            "", reply.finish_reason, reply.model, reply.prompt_tokens, reply.completion_tokens
        )

    async def astream(
        self, request: Mapping[str, Any], *, api_key: str | None, timeout: float
    ) -> AsyncIterator[StreamDelta]:
        for delta in self.stream(request, api_key=api_key, timeout=timeout):
            yield delta

    # ------------------------------------------------------------------ for assertions

    def prompts(self) -> list[str]:
        """The prompt (last message's content) of every request, in order."""
        return [_prompt(request) for request in self.requests]

    # ------------------------------------------------------------------ inside

    def _reply_for(self, prompt: str) -> Reply:
        if self.script:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]
        return next((r for marker, r in self.replies.items() if marker in prompt), self.default)

    def _answer(self, request: Mapping[str, Any], api_key: str | None) -> RawReply:
        prompt = _prompt(request)
        with self._lock:
            self.requests.append(dict(request))
            self.api_keys.append(api_key)
            reply = self._reply_for(prompt)
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(prompt)
        if isinstance(reply, RawReply):
            return reply
        prompt_tokens, completion_tokens, cost = self.usage
        return RawReply(reply, "stop", None, self.model, prompt_tokens, completion_tokens, cost)

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _prompt(request: Mapping[str, Any]) -> str:
    messages = request.get("messages") or [{}]
    return str(messages[-1].get("content") or "")


# ------------------------------------------------------------------ the toy corpus's LLM

PROMPT_MARKERS: Mapping[str, str] = {
    "repair": "could not be used",
    "unroll": "Plan how to answer",
    "complete": "Complete the reasoning chain",
    "key": "Can the question be answered",
    "entities": "Name the two entities",
    "queries": "subject-verb-object",
    "judge": "Candidate passage:",
}
"""Prompt kind -> a text that only that kind of prompt of :mod:`rag_multihop.llm.prompts`
holds (the repair prompt quotes the failed one, so it is tried first)."""

POLISH_WEDDING_UNROLLING = {
    "sub_questions": ["Who directed Polish Wedding?", "Where was that director born?"],
    "chain": [
        {"head": "Polish Wedding", "relation": "directed by", "tail": "<unknown>"},
        {"head": "<unknown>", "relation": "born in", "tail": "<answer>"},
    ],
}
POLISH_WEDDING_CHAIN = {
    "chain": [
        {"head": "Polish Wedding", "relation": "directed by", "tail": "Theresa Connelly"},
        {"head": "Theresa Connelly", "relation": "born in", "tail": "Philadelphia"},
    ]
}


def _judge(prompt: str) -> str:
    candidate = prompt.split(PROMPT_MARKERS["judge"], 1)[1]
    return '{"score": 9}' if "Theresa Connelly is" in candidate else '{"score": 2}'


def polish_wedding_replies(**overrides: Reply) -> dict[str, Reply]:
    """What a model that reads the toy corpus right replies, by :data:`PROMPT_MARKERS`: the
    plan of :data:`POLISH_WEDDING_QUESTION` and its completed chain, answerable passages, the
    bridge's entities, one search query, a judge scoring the director's page 9 and the rest
    2, and a repair that is still not JSON. ``overrides`` replace replies by prompt kind;
    pass the result to :class:`FakeTransport` with ``default='{"answer": "Philadelphia"}'``.

    >>> replies = polish_wedding_replies(key="no")
    >>> replies[PROMPT_MARKERS["key"]], replies[PROMPT_MARKERS["entities"]]
    ('no', '{"e1": "Theresa Connelly", "e2": "Polish Wedding"}')
    """
    replies: dict[str, Reply] = {
        "repair": "still not JSON",
        "unroll": json.dumps(POLISH_WEDDING_UNROLLING),
        "complete": json.dumps(POLISH_WEDDING_CHAIN),
        "key": '{"answerable": true, "key_sentence": ""}',
        "entities": '{"e1": "Theresa Connelly", "e2": "Polish Wedding"}',
        "queries": '{"queries": ["Theresa Connelly born in"]}',
        "judge": _judge,
    }
    unknown = set(overrides) - set(replies)
    if unknown:
        raise ValueError(
            f"unknown prompt kind {sorted(unknown)[0]!r}; choose from {', '.join(replies)}"
        )
    replies.update(overrides)
    return {PROMPT_MARKERS[kind]: reply for kind, reply in replies.items()}


# ------------------------------------------------------------------ a real vector store


@contextmanager
def chroma_server(folder: str | Path, *, timeout: float = 60.0) -> Iterator[tuple[str, int]]:
    """A Chroma server (``chroma run``, from the chromadb package) on 127.0.0.1 and a free
    port, its data and log in ``folder``; yields ``(host, port)`` once it answers, and stops
    it on exit.

    Raises:
        ImportError: chromadb is not installed.
        FileNotFoundError: the ``chroma`` command is not on PATH.
        RuntimeError: the server did not answer within ``timeout`` seconds (its log is quoted).
    """
    import chromadb

    chroma = shutil.which("chroma")
    if chroma is None:
        raise FileNotFoundError("the chroma command (from the chromadb package) is not on PATH")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder = Path(folder)
    log_path = folder / "server.log"
    command = [chroma, "run", "--path", str(folder / "data"), "--host", "127.0.0.1"]
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [*command, "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
                    break
                except Exception:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"chroma server did not start: {log_path.read_text()}"
                        ) from None
                    time.sleep(0.2)
            yield "127.0.0.1", port
        finally:
            server.terminate()
            server.wait(timeout=30)
