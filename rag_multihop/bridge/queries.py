"""Hop-2 plans: the bridge entities and the queries that search for the missing hop.

A :class:`QueryWriter` turns the question and the bridge passage into a :class:`HopPlan`.

- :class:`LLMQueryWriter` (BridgeRAG): the LLM names two entities of the bridge
  (:data:`~rag_multihop.llm.prompts.ENTITY_EXTRACTION`) and writes three short
  subject-verb-object queries conditioned on question and bridge
  (:data:`~rag_multihop.llm.prompts.SVO_QUERIES`); the two calls run concurrently.
  An unusable reply (after the client's one repair attempt) falls back to a neutral plan
  part: no entities, or the question itself as the only query; the plan counts the
  fallbacks. ``on_error="raise"`` raises :class:`~rag_multihop.llm.errors.LLMOutputError`
  instead.
- :class:`TemplateQueryWriter` (LLM-free): entities from the bridge by the graph's heuristic
  extractor (:func:`select_entities` keeps those the question does not already name), and
  queries from named templates (:data:`QUERY_TEMPLATES`).

Example (LLM-free):
    >>> from rag_multihop import Passage, Query
    >>> bridge = Passage("pw", "Polish Wedding is a 1998 film directed by Theresa Connelly.",
    ...                  title="Polish Wedding")
    >>> question = Query("Who is the mother of the director of Polish Wedding?")
    >>> plan = TemplateQueryWriter().plan(question, bridge)
    >>> plan.entities
    ('theresa connelly',)
    >>> plan.queries[1]
    'Who is the mother of the director of?'
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from rag_multihop.graph.extract import EntityExtractor, HeuristicExtractor
from rag_multihop.text import normalize_entity, visible
from rag_multihop.types import Passage, Query
from rag_multihop.validation import check_choice, check_int, check_positive_int

if TYPE_CHECKING:
    from rag_multihop.llm.accounting import LLMAccount
    from rag_multihop.llm.chat import ChatModel
    from rag_multihop.llm.client import LLMClient, LLMSettings

logger = logging.getLogger(__name__)

ON_ERROR = ("neutral", "raise")
"""What an LLM stage does with a reply still unusable after the repair attempt."""


@dataclass(frozen=True)
class HopPlan:
    """What to search for the missing hop.

    Attributes:
        entities: bridge entities, each searched on its own (may be empty).
        queries: query texts, each searched on its own (may be empty).
        account: the LLM usage of making the plan (``None`` when no LLM was used).
        fallbacks: plan parts replaced by their neutral value after an unusable reply.
    """

    entities: tuple[str, ...]
    queries: tuple[str, ...]
    account: LLMAccount | None = None
    fallbacks: int = 0


@runtime_checkable
class QueryWriter(Protocol):
    """Makes the :class:`HopPlan` of a question given its bridge passage."""

    def plan(self, query: Query, bridge: Passage) -> HopPlan: ...

    async def aplan(self, query: Query, bridge: Passage) -> HopPlan: ...


# ---------------------------------------------------------------------------- LLM-free

_NUMERIC = re.compile(r"[\d\s\-]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+")
_STOPWORD_TEXT = (
    "a an the of in on at to for from by with and or is was were are be been who whom whose "
    "what which when where why how did does do that this as it its his her their than then"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _without_title(question: str, title: str) -> str:
    """``question`` with the bridge title (case-insensitive) cut out, spaces tidied."""
    if not title.strip():
        return question
    cut = re.sub(re.escape(title.strip()), " ", question, flags=re.IGNORECASE)
    cut = re.sub(r"\s+([?.,!])", r"\1", re.sub(r"\s+", " ", cut)).strip()
    return cut or question


def key_sentence(question: str, bridge: Passage) -> str:
    """The bridge sentence sharing most content words with the question (the first on ties).

    >>> bridge = Passage("p", "It is a film. It was directed by Ann.")
    >>> key_sentence("Where was the director born?", bridge)
    'It was directed by Ann.'
    """
    words = {w for w in _WORD.findall(visible(question).lower()) if w not in _STOPWORDS}

    def overlap(sentence: str) -> int:
        found = {w for w in _WORD.findall(visible(sentence).lower()) if w not in _STOPWORDS}
        return sum(1 for w in words if any(f.startswith(w[:5]) for f in found))

    return max(sentences(bridge), key=overlap)


def sentences(passage: Passage) -> list[str]:
    """The sentences of ``passage``'s text (split after ``.``, ``!`` or ``?``), or the
    whole text when it has none."""
    return [s for s in _SENTENCE.split(passage.text.strip()) if s] or [passage.text]


QueryTemplate = Callable[[str, Passage, Sequence[str]], str]
"""``(question, bridge, entities) -> query text`` (an empty text is skipped)."""

QUERY_TEMPLATES: Mapping[str, QueryTemplate] = MappingProxyType(
    {
        "question": lambda q, b, e: q,
        "residual": lambda q, b, e: _without_title(q, b.title),
        "key-sentence": lambda q, b, e: key_sentence(q, b),
        "residual+entities": lambda q, b, e: " ".join([_without_title(q, b.title), *e]),
    }
)
"""LLM-free query templates by name: the question; the question without the bridge title
(what is still unknown once the bridge is found); the bridge sentence that best matches the
question; the residual question followed by the selected entities."""

DEFAULT_TEMPLATES = ("question", "residual", "key-sentence")

NAMES_MEMO_SIZE = 10_000
"""Bridge passages whose extracted entity names :class:`TemplateQueryWriter` remembers."""

LLM_FREE_ENTITIES = 4
"""Entities the LLM-free writer searches: heuristic entities are noisier than an LLM's two,
so more are searched (the pool cap still holds). Measured in ``docs/bridge.md``: 4 beats 2
by 1.7-1.8 R@5 on both benchmark sets; 6 changes R@5 by -0.1 (HotpotQA) and +0.9 (2Wiki)."""


def check_templates(templates: Sequence[str]) -> tuple[str, ...]:
    """``templates`` as a tuple when it names at least one template and only registered
    ones (:data:`QUERY_TEMPLATES`), else ``ValueError`` listing them.

    >>> check_templates(["question", "nope"])
    Traceback (most recent call last):
    ...
    ValueError: templates must name at least one of ['key-sentence', 'question', 'residual', \
'residual+entities'], got ['question', 'nope']
    """
    names = (templates,) if isinstance(templates, str) else tuple(templates)
    if not names or any(t not in QUERY_TEMPLATES for t in names):
        raise ValueError(
            f"templates must name at least one of {sorted(QUERY_TEMPLATES)}, got {list(names)!r}"
        )
    return names


def select_entities(
    question: str, bridge: Passage, names: Sequence[str], n: int
) -> tuple[str, ...]:
    """At most ``n`` of the bridge's normalised entity ``names`` worth a search of their own.

    Dropped: the bridge title, names the question already contains (the question's own
    search covers them) and bare numbers or dates. Multi-word names come first (people,
    works and organisations rather than nationalities), then order of appearance.

    >>> bridge = Passage("p", "", title="Polish Wedding")
    >>> names = ["polish wedding", "1998", "american", "theresa connelly"]
    >>> select_entities("When was Polish Wedding released?", bridge, names, 2)
    ('theresa connelly', 'american')
    """
    asked = f" {normalize_entity(question)} "
    title = normalize_entity(bridge.title)
    kept = [
        name
        for name in dict.fromkeys(names)
        if name and name != title and not _NUMERIC.fullmatch(name) and f" {name} " not in asked
    ]
    kept.sort(key=lambda name: " " not in name)  # stable: multi-word first
    return tuple(kept[:n])


class TemplateQueryWriter:
    """The LLM-free plan: heuristic bridge entities and template queries.

    Args:
        n_entities: the most entities searched (:data:`LLM_FREE_ENTITIES`; BridgeRAG's LLM
            names 2).
        templates: names of :data:`QUERY_TEMPLATES`, one query each (duplicates dropped).
        extractor: an :class:`~rag_multihop.graph.extract.EntityExtractor` run on the bridge
            text (default: the graph's ``HeuristicExtractor``).
    """

    def __init__(
        self,
        *,
        n_entities: int = LLM_FREE_ENTITIES,
        templates: Sequence[str] = DEFAULT_TEMPLATES,
        extractor: EntityExtractor | None = None,
    ) -> None:
        self.n_entities = check_int(n_entities, "n_entities", low=0)
        self.templates = check_templates(templates)
        self.extractor = extractor if extractor is not None else HeuristicExtractor()
        self._names: dict[str, list[str]] = {}

    def _entity_names(self, bridge: Passage) -> list[str]:
        """The extractor's names of ``bridge``, remembered by text (a passage is often the
        bridge of several questions; extraction is linear in its length)."""
        names = self._names.get(bridge.text)
        if names is None:
            names = self.extractor.extract([bridge.text])[0]
            if len(self._names) >= NAMES_MEMO_SIZE:
                del self._names[next(iter(self._names))]
            self._names[bridge.text] = names
        return names

    def passage_texts(self, bridge: Passage) -> list[str]:
        """The texts a plan for ``bridge`` may search whatever the question: every entity
        name :func:`select_entities` could keep and, with the ``key-sentence`` template,
        every sentence. Precompute their vectors with
        :meth:`~rag_multihop.bridge.pipeline.BridgeRetriever.prepare`.

        >>> writer = TemplateQueryWriter()
        >>> writer.passage_texts(Passage("p", "Rope is a 1948 film. It stars James Stewart.",
        ...                              title="Rope"))
        ['james stewart', 'Rope is a 1948 film.', 'It stars James Stewart.']
        """
        texts: list[str] = []
        if self.n_entities:
            names = self._entity_names(bridge)
            texts += list(select_entities("", bridge, names, len(names)))
        if "key-sentence" in self.templates:
            texts += [s.strip() for s in sentences(bridge)]
        return list(dict.fromkeys(t for t in texts if t))

    def plan(self, query: Query, bridge: Passage) -> HopPlan:
        names = self._entity_names(bridge) if self.n_entities else []
        entities = select_entities(query.text, bridge, names, self.n_entities)
        if self.n_entities and not entities:
            logger.debug("bridge %r gave no entities to search", bridge.id)
        texts = (QUERY_TEMPLATES[name](query.text, bridge, entities) for name in self.templates)
        queries = tuple(dict.fromkeys(t.strip() for t in texts if t.strip()))
        return HopPlan(entities=entities, queries=queries)

    async def aplan(self, query: Query, bridge: Passage) -> HopPlan:
        return self.plan(query, bridge)


# ---------------------------------------------------------------------------- LLM


def check_on_error(on_error: str) -> str:
    return check_choice(on_error, "on_error", ON_ERROR)


def make_client(
    llm: str | LLMSettings | LLMClient | ChatModel,
    *,
    api_base: str | None = None,
    api_key_env: str | None = None,
) -> LLMClient:
    """An LLM client from a model string (with ``api_base`` / ``api_key_env``), settings, a
    ready client or a :class:`~rag_multihop.llm.chat.ChatModel`
    (:func:`rag_multihop.llm.resolve.make_client`). The key is never taken here: the client
    reads it at call time."""
    from rag_multihop.llm.resolve import make_client as resolve

    return resolve(llm, api_base=api_base, api_key_env=api_key_env)


class LLMQueryWriter:
    """BridgeRAG's plan: two LLM-extracted entities and ``n_queries`` SVO queries.

    Args:
        client: the :class:`~rag_multihop.llm.client.LLMClient` to call.
        n_queries: SVO queries asked for (1-10; the paper uses 3).
        max_chars: the bridge is truncated to this many characters in the prompts.
        on_error: ``"neutral"`` (no entities / the question as the query, counted in
            ``HopPlan.fallbacks``) or ``"raise"``.
    """

    def __init__(
        self,
        client: LLMClient,
        *,
        n_queries: int = 3,
        max_chars: int = 1500,
        on_error: Literal["neutral", "raise"] = "neutral",
    ) -> None:
        self.client = client
        self.n_queries = check_int(n_queries, "n_queries", low=1, high=10)
        self.max_chars = check_positive_int(max_chars, "max_chars")
        self.on_error = check_on_error(on_error)

    async def aplan(self, query: Query, bridge: Passage) -> HopPlan:
        from rag_multihop.llm.client import MISSING
        from rag_multihop.llm.prompts import (
            BridgeEntities,
            SVOQueries,
            format_entity_extraction,
            format_svo_queries,
        )

        neutral = self.on_error == "neutral"
        entities, svo = await asyncio.gather(
            self.client.acomplete_json(
                format_entity_extraction(query.text, bridge, max_chars=self.max_chars),
                BridgeEntities,
                default=BridgeEntities(e1="", e2="") if neutral else MISSING,
            ),
            self.client.acomplete_json(
                format_svo_queries(query.text, bridge, n=self.n_queries, max_chars=self.max_chars),
                SVOQueries,
                default=SVOQueries(queries=[query.text]) if neutral else MISSING,
            ),
        )
        names = (entities.value.e1, entities.value.e2)
        return HopPlan(
            entities=tuple(dict.fromkeys(n for n in names if n)),
            queries=tuple(dict.fromkeys(svo.value.queries[: self.n_queries])),
            account=entities.account + svo.account,
            fallbacks=int(entities.fallback) + int(svo.fallback),
        )

    def plan(self, query: Query, bridge: Passage) -> HopPlan:
        """:meth:`aplan` on the client's event loop (not from inside a running loop)."""
        return self.client.run(self.aplan(query, bridge))
