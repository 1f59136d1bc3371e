"""Translation between LlamaIndex and rag-multihop, used by every component of this package.

One rule for all of them:

- **Node → passage.** Passage id = ``node.node_id``; text = ``node.get_content(MetadataMode.NONE)``
  (the node's own text, no metadata); title = ``node.metadata["title"]`` when present. When a
  component embeds a node itself it embeds ``title + "\\n" + text``
  (:attr:`~rag_multihop.types.Passage.embedding_text`), the text rag-multihop's models are
  trained on. The node rides along in the passage metadata under :data:`NODE_KEY`.
- **Node → candidate.** Score = ``node.score`` (``None`` counts as 0.0); the signals a previous
  rag-multihop component wrote under :data:`SIGNALS_KEY` come back as the candidate's signals,
  so chained components add to them.
- **Candidate → node.** A copy of the source node (never the node itself) with the candidate's
  score and every signal under ``metadata[SIGNALS_KEY]``, a key hidden from the LLM and the
  embedder.
- **Embed model → encoder.** :func:`as_encoder` turns any ``BaseEmbedding`` into a rag-multihop
  :class:`~rag_multihop.encoders.Encoder` (texts embedded in one batched call, rows unit
  length); a :class:`~llama_index.embeddings.rag_multihop.RagMultihopEmbedding` gives back its
  own encoder. Every component that embeds takes ``embed_model``, else LlamaIndex's
  ``Settings.embed_model`` (:func:`settings_embed_model`).
- **Retriever → searcher.** :class:`NodeSearcher` runs any LlamaIndex retriever as a core
  :class:`~rag_multihop.protocols.Searcher` (several texts, their embeddings batched) and
  :class:`~rag_multihop.protocols.Retriever`; the bridge and CoopRAG retrievers search with it.
- **Filters.** ``MetadataFilters`` are matched on node metadata by LlamaIndex's own in-memory
  rule (the one ``SimpleVectorStore`` applies); :func:`check_metadata_filters` refuses, when
  they are given, what that rule cannot match.

Example:
    >>> from llama_index.core.schema import TextNode
    >>> node = TextNode(id_="p1", text="Paris is in France.", metadata={"title": "Paris"})
    >>> candidate = node_to_candidate(NodeWithScore(node=node, score=0.5))
    >>> candidate.passage.embedding_text, candidate.score
    ('Paris\\nParis is in France.', 0.5)
    >>> out = candidate_to_node(candidate.with_score(0.7, judge=0.7))
    >>> out.score, out.node.metadata[SIGNALS_KEY], node.metadata
    (0.7, {'judge': 0.7}, {'title': 'Paris'})
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store.retrievers.retriever import VectorIndexRetriever
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilters

from rag_multihop.corpus import Corpus
from rag_multihop.encoders.base import Encoder
from rag_multihop.types import Candidate, Passage, Query
from rag_multihop.validation import check_positive_int, l2_normalize, metadata_title

SIGNALS_KEY = "rag_multihop_signals"
"""Node metadata key holding every rag-multihop signal of a returned node (hidden from the LLM
and the embedder)."""

TITLE_KEY = "title"
"""Node metadata key read as the passage title."""

NODE_KEY = "llama_index_node"
"""Passage metadata key under which the source node travels through the core."""

TEXT_MODE = MetadataMode.NONE
"""How a node's text is read: its own text, without metadata (the title comes separately)."""


def node_to_passage(node: BaseNode, *, id_key: str | None = None) -> Passage:
    """The passage of ``node`` (see the module docstring); the node rides in its metadata.

    The passage id is the node id, or ``node.metadata[id_key]`` when ``id_key`` is given and
    the node has it (e.g. a document id a model was trained on, behind a vector store that
    assigns its own node ids).
    """
    passage_id = node.node_id
    if id_key is not None and node.metadata.get(id_key) not in (None, ""):
        passage_id = str(node.metadata[id_key])
    return Passage(
        passage_id,
        node.get_content(metadata_mode=TEXT_MODE),
        title=node_title(node),
        metadata={NODE_KEY: node},
    )


def node_title(node: BaseNode) -> str:
    """``node.metadata["title"]`` as the passage title: a string, a number or date as its
    text, ``""`` when absent; a collection (a list, a numpy array) is a ``ValueError`` naming
    the node."""
    return metadata_title(
        node.metadata.get(TITLE_KEY), f"node {node.node_id!r}: metadata[{TITLE_KEY!r}]"
    )


def node_signals(node: BaseNode) -> dict[str, float]:
    """The signals an earlier rag-multihop component wrote into ``node``'s metadata;
    ``ValueError`` naming the node and the signal for a value that is no finite number."""
    found = node.metadata.get(SIGNALS_KEY)
    if not isinstance(found, Mapping):
        return {}
    signals = {}
    for name, value in found.items():
        number = isinstance(value, int | float | np.number) and not isinstance(value, bool)
        if not number or not math.isfinite(value):
            raise ValueError(
                f"node {node.node_id!r}: metadata[{SIGNALS_KEY!r}][{name!r}] must be a finite "
                f"number, got {value!r}"
            )
        signals[str(name)] = float(value)
    return signals


def check_one_node_per_id(candidates: Sequence[Candidate], id_key: str) -> None:
    """``ValueError`` when nodes share the passage id ``metadata[id_key]`` gives them (chunks
    of one document): a model scores one passage per id."""
    nodes: dict[str, list[str]] = {}
    for candidate in candidates:
        nodes.setdefault(candidate.id, []).append(candidate.passage.metadata[NODE_KEY].node_id)
    shared = {pid: ids for pid, ids in nodes.items() if len(ids) > 1}
    if shared:
        pid, ids = next(iter(shared.items()))
        raise ValueError(
            f"{len(shared)} passage id(s) from metadata[{id_key!r}] are shared by several "
            f"nodes, e.g. {pid!r} by {ids[:3]}: the model scores one passage per id; give "
            "each chunk its own id (id_key=None, or a key unique per node), or rerank one "
            "node per id"
        )


def node_to_candidate(
    item: NodeWithScore,
    *,
    signals: Mapping[str, float] | None = None,
    id_key: str | None = None,
) -> Candidate:
    """The candidate of a scored node: its passage (see :func:`node_to_passage`), its score,
    its earlier signals (plus ``signals``)."""
    return Candidate(
        node_to_passage(item.node, id_key=id_key),
        float(item.get_score()),
        signals={**node_signals(item.node), **(signals or {})},
    )


def with_signals(node: BaseNode, signals: Mapping[str, float]) -> BaseNode:
    """A copy of ``node`` whose metadata holds ``signals`` under :data:`SIGNALS_KEY`."""
    hidden = [SIGNALS_KEY]
    return node.model_copy(
        update={
            "metadata": {**node.metadata, SIGNALS_KEY: {k: float(v) for k, v in signals.items()}},
            "excluded_llm_metadata_keys": _union(node.excluded_llm_metadata_keys, hidden),
            "excluded_embed_metadata_keys": _union(node.excluded_embed_metadata_keys, hidden),
        }
    )


def candidate_to_node(candidate: Candidate) -> NodeWithScore:
    """A copy of the candidate's source node with its score and signals."""
    node: BaseNode = candidate.passage.metadata[NODE_KEY]
    return NodeWithScore(node=with_signals(node, candidate.signals), score=float(candidate.score))


def nodes_to_corpus(nodes: Sequence[BaseNode]) -> Corpus:
    """The rag-multihop corpus of ``nodes`` (one passage per node, by the rule above), e.g. to
    train an association model or build an entity graph over an index's nodes.

    >>> from llama_index.core.schema import TextNode
    >>> nodes_to_corpus([TextNode(id_="a", text="Alpha.", metadata={"title": "A"})]).ids
    ['a']
    """
    return Corpus(node_to_passage(node) for node in nodes)


class ThreadTrace:
    """A retriever attribute holding the core trace of the last query it ran **in the calling
    thread** (``None`` before that), so a retriever shared by threads (a web app's sessions)
    hands each its own trace.

    >>> class Traced:
    ...     last_trace = ThreadTrace()
    >>> traced = Traced()
    >>> traced.last_trace is None
    True
    >>> traced.last_trace = "trace of query 1"
    >>> seen = []
    >>> worker = threading.Thread(target=lambda: seen.append(traced.last_trace))
    >>> worker.start(); worker.join()
    >>> traced.last_trace, seen
    ('trace of query 1', [None])
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}_by_thread"

    def __get__(self, obj: object, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        local = obj.__dict__.get(self._slot)
        return None if local is None else getattr(local, "value", None)

    def __set__(self, obj: object, value: Any) -> None:
        obj.__dict__.setdefault(self._slot, threading.local()).value = value


def _union(keys: list[str], extra: list[str]) -> list[str]:
    return [*keys, *(k for k in extra if k not in keys)]


class EmbeddingEncoder:
    """A LlamaIndex ``BaseEmbedding`` as a rag-multihop encoder (unit-length float32 rows).

    ``name`` is the embed model's ``model_name``; ``dim`` is measured once, on first use.
    """

    def __init__(self, embed_model: BaseEmbedding) -> None:
        self.embed_model = embed_model
        self._dim: int | None = None

    @property
    def name(self) -> str:
        return str(self.embed_model.model_name)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = len(self.embed_model.get_text_embedding("dimension probe"))
        return self._dim

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = np.asarray(
            self.embed_model.get_text_embedding_batch(list(texts), show_progress=show_progress),
            dtype=np.float32,
        )
        self._dim = int(vectors.shape[1])
        return l2_normalize(vectors)


def as_encoder(embed_model: BaseEmbedding) -> Encoder:
    """``embed_model`` as a rag-multihop encoder (a ``RagMultihopEmbedding``'s own encoder)."""
    own: Any = getattr(embed_model, "encoder", None)
    if isinstance(own, Encoder):
        return own
    return EmbeddingEncoder(embed_model)


QUERY_TEXT_TOLERANCE = 1e-5
"""Largest ``1 − cosine`` between an embed model's query and text embedding of one string
for which its queries are embedded as texts, in batches."""


class NodeSearcher:
    """A LlamaIndex retriever as a core searcher and retriever: one (a)retrieve per text, a
    node listed twice kept once, cut to ``k``; ``retrieve`` is one search.

    With ``embed_model`` (the model the retriever embeds queries with), the texts of one
    search are embedded together first and each retrieve gets its ``QueryBundle.embedding``:
    one ``get_text_embedding_batch`` call when the model embeds a query as it embeds a text
    (checked once, on the first text), else one ``get_query_embedding`` per text.
    """

    def __init__(self, retriever: BaseRetriever, embed_model: BaseEmbedding | None = None) -> None:
        self.retriever = retriever
        self.embed_model = embed_model
        self._batches: bool | None = None

    @classmethod
    def of(cls, retriever: BaseRetriever) -> NodeSearcher:
        """The searcher of ``retriever``, batching with its embed model when it has one."""
        if isinstance(retriever, VectorIndexRetriever):
            return cls(retriever, retriever._embed_model)
        return cls(retriever)

    def _batches_queries(self, embed_model: BaseEmbedding, text: str) -> bool:
        if self._batches is None:
            query = np.asarray(embed_model.get_query_embedding(text), dtype=np.float64)
            as_text = np.asarray(embed_model.get_text_embedding(text), dtype=np.float64)
            norms = float(np.linalg.norm(query) * np.linalg.norm(as_text))
            cosine = float(query @ as_text) / norms if norms else 0.0
            self._batches = cosine >= 1.0 - QUERY_TEXT_TOLERANCE
        return self._batches

    def _bundles(self, queries: Sequence[Query]) -> list[QueryBundle]:
        texts = [q.text for q in queries]
        model = self.embed_model
        if model is None or not texts:
            return [QueryBundle(text) for text in texts]
        if self._batches_queries(model, texts[0]):
            vectors = model.get_text_embedding_batch(texts)
        else:
            vectors = [model.get_query_embedding(text) for text in texts]
        return [QueryBundle(t, embedding=v) for t, v in zip(texts, vectors, strict=True)]

    async def _abundles(self, queries: Sequence[Query]) -> list[QueryBundle]:
        texts = [q.text for q in queries]
        model = self.embed_model
        if model is None or not texts:
            return [QueryBundle(text) for text in texts]
        if await asyncio.to_thread(self._batches_queries, model, texts[0]):
            vectors = await model.aget_text_embedding_batch(texts)
        else:
            vectors = await asyncio.gather(*(model.aget_query_embedding(t) for t in texts))
        return [QueryBundle(t, embedding=v) for t, v in zip(texts, vectors, strict=True)]

    def search(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        check_positive_int(k, "k")
        return [
            _candidates(self.retriever.retrieve(bundle), k) for bundle in self._bundles(queries)
        ]

    async def asearch(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        check_positive_int(k, "k")
        bundles = await self._abundles(queries)
        found = await asyncio.gather(*(self.retriever.aretrieve(b) for b in bundles))
        return [_candidates(nodes, k) for nodes in found]

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return self.search([query], k)[0]

    async def aretrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return (await self.asearch([query], k))[0]


def _candidates(nodes: Sequence[NodeWithScore], k: int) -> list[Candidate]:
    """The first ``k`` distinct nodes as candidates (a node listed twice kept once)."""
    out: dict[str, Candidate] = {}
    for node in nodes:
        if len(out) == k:
            break
        candidate = node_to_candidate(node)
        out.setdefault(candidate.id, candidate)
    return list(out.values())


def settings_embed_model() -> BaseEmbedding | None:
    """LlamaIndex's ``Settings.embed_model``, or ``None`` when the app has not set one.

    Reading ``Settings.embed_model`` when nothing was set resolves LlamaIndex's default, an
    ``OpenAIEmbedding`` (an ImportError without ``llama-index-embeddings-openai``, an API key
    error or network calls with it), so the stored value (``Settings._embed_model``, ``None``
    until the app sets one) is checked first and the getter only reads a model the app set.
    """
    from llama_index.core import Settings

    if Settings._embed_model is None:
        return None
    return Settings.embed_model


_TEXT_OPERATORS = (FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE)


def check_metadata_filters(filters: Any) -> MetadataFilters | None:
    """``filters`` if ``None`` or ``MetadataFilters`` that LlamaIndex's in-memory rule can
    match; else ``TypeError`` (not ``MetadataFilters``) or ``ValueError`` (nested
    ``MetadataFilters``, or a text-match filter on a non-string value), naming the fix.

    Example:
        >>> from llama_index.core.vector_stores.types import MetadataFilter
        >>> english = MetadataFilters(filters=[MetadataFilter(key="lang", value="en")])
        >>> check_metadata_filters(english) is english
        True
        >>> check_metadata_filters({"lang": "en"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: filters must be LlamaIndex MetadataFilters, e.g. ... got dict
    """
    if filters is None:
        return None
    if not isinstance(filters, MetadataFilters):
        raise TypeError(
            "filters must be LlamaIndex MetadataFilters, e.g. MetadataFilters(filters=["
            f"MetadataFilter(key='lang', value='en')]), got {type(filters).__name__}"
        )
    for item in filters.filters:
        if isinstance(item, MetadataFilters):
            raise ValueError(
                "nested MetadataFilters are not supported: nodes are matched by LlamaIndex's "
                "in-memory rule (as in SimpleVectorStore), which has none; use one flat "
                "MetadataFilters with a condition (and, or, not)"
            )
        if item.operator in _TEXT_OPERATORS and not isinstance(item.value, str):
            raise ValueError(
                f"filter on {item.key!r} with operator {item.operator.value!r} needs a string "
                f"value, got {item.value!r}"
            )
    return filters
