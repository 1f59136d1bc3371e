"""An entity extractor backed by an LLM, for the entity graph (needs the ``llm`` extra).

:class:`LLMEntityExtractor` implements :class:`rag_multihop.graph.extract.EntityExtractor`
(``name`` and ``extract(texts) -> list[list[str]]``) with the :data:`GRAPH_ENTITIES
<rag_multihop.llm.prompts.GRAPH_ENTITIES>` prompt. Names are normalised with
:func:`~rag_multihop.text.normalize_entity`, so LLM-extracted and heuristic entities
of queries and passages meet on the same keys. Texts of a batch are sent concurrently (at most
the client's ``max_concurrency`` at once); an empty text costs no call.

An unusable reply gets the client's one repair attempt; after that ``on_error="raise"`` (the
default) raises :class:`~rag_multihop.llm.errors.LLMOutputError`, and ``on_error="empty"``
gives that text no entities, logs a warning and counts it in :attr:`LLMEntityExtractor.failures`.

Example (a fake transport; real use passes ``LLMClient("openai/gpt-4o-mini")``):
    >>> from rag_multihop.llm.client import LLMClient
    >>> from rag_multihop.llm.transport import RawReply
    >>> class Fake:
    ...     def check_model(self, model): pass
    ...     def missing_credentials(self, model, api_base): return []
    ...     def complete(self, request, *, api_key, timeout):
    ...         return RawReply('{"entities": ["The Beatles", "Liverpool", "the beatles"]}')
    ...     async def acomplete(self, request, *, api_key, timeout):
    ...         return self.complete(request, api_key=api_key, timeout=timeout)
    >>> with LLMClient("openai/gpt-4o-mini", transport=Fake()) as client:
    ...     LLMEntityExtractor(client).extract(["The Beatles formed in Liverpool.", ""])
    [['beatles', 'liverpool'], []]
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Literal

from rag_multihop.llm.accounting import LLMAccount
from rag_multihop.llm.client import LLMClient
from rag_multihop.llm.errors import LLMOutputError
from rag_multihop.llm.prompts import EntityList, format_graph_entities
from rag_multihop.text import normalize_entity

logger = logging.getLogger(__name__)

ON_ERROR = ("raise", "empty")


class LLMEntityExtractor:
    """Texts in, normalised entity names out (one list per text, first-occurrence order).

    Args:
        client: the :class:`~rag_multihop.llm.client.LLMClient` to call.
        max_entities: the most names asked for and kept per text.
        max_chars: texts are truncated to this many characters before prompting.
        on_error: ``"raise"`` or ``"empty"`` for a reply still unusable after the repair.
    """

    def __init__(
        self,
        client: LLMClient,
        *,
        max_entities: int = 20,
        max_chars: int = 2000,
        on_error: Literal["raise", "empty"] = "raise",
    ) -> None:
        for name, value in (("max_entities", max_entities), ("max_chars", max_chars)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {list(ON_ERROR)}, got {on_error!r}")
        self.client = client
        self.max_entities = max_entities
        self.max_chars = max_chars
        self.on_error = on_error
        self.failures = 0
        self._account = LLMAccount()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """Identifies the extractor in saved graphs: model and limits, never a key."""
        return (
            f"llm(model={self.client.settings.model},max_entities={self.max_entities},"
            f"max_chars={self.max_chars})"
        )

    @property
    def account(self) -> LLMAccount:
        """What this extractor's calls have cost so far."""
        with self._lock:
            return self._account

    def extract(self, texts: Sequence[str]) -> list[list[str]]:
        """Entities of each text; texts are sent concurrently. Not for use inside an event
        loop (await :meth:`aextract` there)."""
        return self.client.run_batch(self._extract_one, list(texts))

    async def aextract(self, texts: Sequence[str]) -> list[list[str]]:
        """The async twin of :meth:`extract`."""
        return await self.client.map_async(self._extract_one, list(texts))

    async def _extract_one(self, text: str) -> list[str]:
        if not isinstance(text, str):
            raise TypeError(f"texts must be strings, got {type(text).__name__}")
        if not text.strip():
            return []
        messages = format_graph_entities(
            text, max_entities=self.max_entities, max_chars=self.max_chars
        )
        try:
            reply = await self.client.acomplete_json(messages, EntityList)
        except LLMOutputError as exc:
            self._add(exc.account)
            if self.on_error == "raise":
                raise
            with self._lock:
                self.failures += 1
            logger.warning("no entities for a text after an unusable LLM reply: %s", exc)
            return []
        self._add(reply.account)
        names = (normalize_entity(name) for name in reply.value.entities)
        return list(dict.fromkeys(name for name in names if name))[: self.max_entities]

    def _add(self, account: LLMAccount) -> None:
        with self._lock:
            self._account = self._account + account
