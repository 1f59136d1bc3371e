"""Translation between Haystack and rag-multihop, used by every component of this package.

One rule for all of them:

- **Document → passage.** Passage id = ``Document.id``; text = ``content`` (``None`` is "");
  title = ``meta["title"]`` when present. When a component embeds a document itself it embeds
  ``title + "\\n" + text`` (:attr:`~rag_multihop.types.Passage.embedding_text`), the text
  rag-multihop's models are trained on. The document rides along in the passage metadata
  under :data:`DOCUMENT_KEY`.
- **Document → candidate.** Score = ``Document.score`` (``None`` counts as 0.0); the signals a
  previous rag-multihop component wrote under ``meta[SIGNALS_KEY]`` come back as the
  candidate's signals, so chained components add to them.
- **Candidate → document.** ``dataclasses.replace`` of the source document (never mutated)
  with the candidate's score and every signal under ``meta[SIGNALS_KEY]``.
- **Embedder → encoder.** :func:`as_encoder` turns a Haystack text or document embedder
  component (``SentenceTransformersTextEmbedder``, ``OpenAIDocumentEmbedder``, ...), a
  sentence-transformers model name, or ``None`` (the bundled all-MiniLM-L6-v2) into a
  rag-multihop :class:`~rag_multihop.encoders.Encoder`; a rag-multihop embedder gives back its
  own encoder, so a pipeline's embedder is reused and its model loads once.
- **Filters.** Haystack filter dicts (``{"field": "meta.lang", "operator": "==", "value":
  "en"}``, nested under ``AND``/``OR``/``NOT``) are checked whole when given
  (:func:`check_filters`), so a malformed one fails at once, not on the first document it
  meets.
- **Retriever component → searcher.** :class:`DocumentSearcher` runs a Haystack embedding
  retriever component (``run(query_embedding=..., top_k=...)``) as a core
  :class:`~rag_multihop.protocols.Searcher` (texts embedded in one batch) and
  :class:`~rag_multihop.protocols.Retriever`; every search of a component's run gets that
  run's filters (:func:`run_filters`). A component whose ``run`` takes no
  ``query_embedding`` (a BM25 retriever) is refused at construction
  (:func:`check_embedding_retriever`).
- **Secret → key variable.** An LLM key is an environment-variable ``Secret`` whose name the
  core's LLM client reads at call time (:func:`check_api_key`, :func:`key_variable`).
- **No key in a name field.** ``llm``, model names and the ``Secret``'s variable names are
  checked at construction (:func:`check_llm`, :func:`check_encoder_name`,
  :func:`check_api_key`): one that looks like a key is refused without being shown, so it
  never reaches ``to_dict`` (the pipeline's YAML), a repr or a log.

Example:
    >>> from haystack import Document
    >>> doc = Document(id="p1", content="Paris is in France.", meta={"title": "Paris"})
    >>> candidate = document_to_candidate(replace(doc, score=0.5))
    >>> candidate.passage.embedding_text, candidate.score
    ('Paris\\nParis is in France.', 0.5)
    >>> out = candidate_to_document(candidate.with_score(0.7, judge=0.7))
    >>> out.score, out.meta[SIGNALS_KEY], doc.meta
    (0.7, {'judge': 0.7}, {'title': 'Paris'})
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document
from haystack.document_stores.types import FilterPolicy
from haystack.errors import FilterError
from haystack.utils import Secret
from haystack.utils.auth import SecretType
from haystack.utils.filters import COMPARISON_OPERATORS, LOGICAL_OPERATORS

from rag_multihop.corpus import Corpus
from rag_multihop.encoders.base import Encoder
from rag_multihop.protocols import Reranker
from rag_multihop.secrets import check_env_var_name, check_model_name
from rag_multihop.types import Candidate, Passage, Query
from rag_multihop.validation import check_positive_int, l2_normalize, metadata_title

SIGNALS_KEY = "rag_multihop_signals"
"""``Document.meta`` key holding every rag-multihop signal of a returned document."""

TITLE_KEY = "title"
"""``Document.meta`` key read as the passage title."""

DOCUMENT_KEY = "haystack_document"
"""Passage metadata key under which the source document travels through the core."""


def document_to_passage(document: Document, *, id_key: str | None = None) -> Passage:
    """The passage of ``document`` (see the module docstring); the document rides in its
    metadata.

    The passage id is ``Document.id``, or ``document.meta[id_key]`` when ``id_key`` is given
    and the document has it (e.g. a document id a model was trained on, behind a store that
    assigns its own ids).
    """
    passage_id = document.id
    if id_key is not None and document.meta.get(id_key) not in (None, ""):
        passage_id = str(document.meta[id_key])
    return Passage(
        passage_id,
        document.content or "",
        title=document_title(document),
        metadata={DOCUMENT_KEY: document},
    )


def document_title(document: Document) -> str:
    """``document.meta["title"]`` as the passage title: a string, a number or date as its
    text, ``""`` when absent; a collection (a list, a numpy array) is a ``ValueError`` naming
    the document.

    >>> document_title(Document(id="d1", content="x", meta={"title": ["A", "B"]}))
    Traceback (most recent call last):
    ...
    ValueError: document 'd1': meta['title'] must be a string, got list ['A', 'B']
    """
    where = f"document {document.id!r}: meta[{TITLE_KEY!r}]"
    return metadata_title(document.meta.get(TITLE_KEY), where)


def document_signals(document: Document) -> dict[str, float]:
    """The signals an earlier rag-multihop component wrote into ``document.meta``; a value
    that is no number is a ``ValueError`` naming the document, the signal and the value.

    >>> document_signals(Document(id="x", content="", meta={SIGNALS_KEY: {"y": "high"}}))
    Traceback (most recent call last):
    ...
    ValueError: document 'x': meta['rag_multihop_signals']['y'] must be a number, got 'high'
    """
    found = document.meta.get(SIGNALS_KEY)
    if not isinstance(found, Mapping):
        return {}
    signals = {}
    for name, value in found.items():
        try:
            signals[str(name)] = float(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"document {document.id!r}: meta[{SIGNALS_KEY!r}][{name!r}] must be a number, "
                f"got {value!r}"
            ) from None
    return signals


def document_to_candidate(
    document: Document,
    *,
    signals: Mapping[str, float] | None = None,
    id_key: str | None = None,
) -> Candidate:
    """The candidate of ``document``: its passage (``id_key`` as for
    :func:`document_to_passage`), its score, its earlier signals (plus ``signals``)."""
    return Candidate(
        document_to_passage(document, id_key=id_key),
        0.0 if document.score is None else float(document.score),
        signals={**document_signals(document), **(signals or {})},
    )


def with_signals(document: Document, score: float, signals: Mapping[str, float]) -> Document:
    """A new document: ``document`` with ``score`` and ``signals`` under :data:`SIGNALS_KEY`."""
    values = {name: float(value) for name, value in signals.items()}
    return replace(document, score=float(score), meta={**document.meta, SIGNALS_KEY: values})


def candidate_to_document(candidate: Candidate) -> Document:
    """A new document: the candidate's source document with its score and signals."""
    document: Document = candidate.passage.metadata[DOCUMENT_KEY]
    return with_signals(document, candidate.score, candidate.signals)


def rerank_documents(
    reranker: Reranker, query: str, documents: Sequence[Document], top_k: int
) -> list[Document]:
    """The ``top_k`` best of ``documents`` by a core reranker, as new ``Document`` objects."""
    if not documents:
        return []
    ranked = reranker.rerank(Query(query), [document_to_candidate(d) for d in documents], top_k)
    return [candidate_to_document(c) for c in ranked]


def documents_to_corpus(documents: Sequence[Document]) -> Corpus:
    """The rag-multihop corpus of ``documents`` (one passage per document, by the rule above).

    >>> documents_to_corpus([Document(id="a", content="Alpha.", meta={"title": "A"})]).ids
    ['a']
    """
    return Corpus(document_to_passage(document) for document in documents)


def changed_document(corpus: Corpus, documents: Sequence[Document]) -> str | None:
    """The id of the first of ``documents`` (a store's) that is not the one ``corpus`` was
    built from: an id the corpus lacks, other content, other meta or another embedding;
    ``None`` when all match.

    With as many documents as passages this tells an unchanged store from an overwrite or a
    delete + add that kept the document count. Content is compared with the passage text (the
    same string object when the store returns the stored document: no character compared),
    meta and embedding with the source document's unless the store returned that very object.

    >>> corpus = documents_to_corpus([Document(id="a", content="Alpha.")])
    >>> changed_document(corpus, [Document(id="a", content="Alpha.")]) is None
    True
    >>> changed_document(corpus, [Document(id="a", content="Alpha, rewritten.")])
    'a'
    """
    for document in documents:
        if document.id not in corpus:
            return document.id
        passage = corpus[document.id]
        source = passage.metadata[DOCUMENT_KEY]
        if passage.text != (document.content or ""):
            return document.id
        if source is not document and (
            not _same_value(source.meta, document.meta)
            or not _same_vector(source.embedding, document.embedding)
        ):
            return document.id
    return None


def _same_value(a: Any, b: Any) -> bool:
    """``a == b`` for meta values, numpy arrays among them (whose ``==`` is elementwise)
    compared whole.

    >>> _same_value({"v": np.arange(3)}, {"v": np.arange(3)}), _same_value([np.ones(2)], [[1, 2]])
    (True, False)
    """
    try:
        return bool(a == b)
    except ValueError:  # a numpy array (of more than one value) somewhere in a or b
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return bool(np.array_equal(a, b))
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
        if isinstance(a, Sequence) and isinstance(b, Sequence):
            return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
        raise


def _same_vector(a: Sequence[float] | None, b: Sequence[float] | None) -> bool:
    if a is None or b is None:
        return a is b
    return a is b or list(a) == list(b)


def store_change(
    document_store: Any, corpus: Corpus | None, *, compare_documents: bool = True
) -> tuple[str | None, list[Document] | None]:
    """Whether ``corpus`` (built from ``document_store``'s documents; ``None``: the store held
    none) is stale: the one rule every component of this package that caches a store's
    documents decides it by.

    Returns ``(reason, documents)``: ``reason`` says what changed (``None``: nothing did);
    ``documents`` are the store's documents when they were read to decide (rebuild from
    them), else ``None``. Another document count is a change; with the same count the store's
    documents are read and compared (:func:`changed_document`), so an overwrite, a meta edit
    or a delete + add that keeps the count is one too. ``compare_documents=False`` compares
    the count only (for remote stores, where reading every document per run costs too much:
    the caller then warns and offers a ``refresh()``).

    >>> from haystack.document_stores.in_memory import InMemoryDocumentStore
    >>> store = InMemoryDocumentStore()
    >>> _ = store.write_documents([Document(id="a", content="Alpha.")])
    >>> corpus = documents_to_corpus(store.filter_documents())
    >>> store_change(store, corpus)[0] is None
    True
    >>> _ = store.delete_documents(["a"])
    >>> _ = store.write_documents([Document(id="b", content="Beta.")])
    >>> store_change(store, corpus)[0]
    "document 'b' changed in the store"
    """
    count = document_store.count_documents()
    size = 0 if corpus is None else len(corpus)
    if count != size:
        return f"the store holds {count} documents, the index was built from {size}", None
    if corpus is None or not compare_documents:
        return None, None
    documents = document_store.filter_documents()
    changed = changed_document(corpus, documents)
    if changed is None:
        return None, documents
    return f"document {changed!r} changed in the store", documents


class TextEmbedderEncoder:
    """A Haystack text embedder component (``run(text=...) -> {"embedding": ...}``) as a
    rag-multihop encoder: one ``run`` per text, rows unit length."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self._dim: int | None = None

    @property
    def name(self) -> str:
        return embedder_name(self.embedder)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.encode(["dimension probe"]).shape[1])
        return self._dim

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        rows = [self.embedder.run(text=text)["embedding"] for text in texts]
        return _unit_rows(rows, len(texts), self)


class DocumentEmbedderEncoder:
    """A Haystack document embedder component (``run(documents=...)``) as a rag-multihop
    encoder: all texts in one ``run`` (the embedder batches them), rows unit length."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self._dim: int | None = None

    @property
    def name(self) -> str:
        return embedder_name(self.embedder)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.encode(["dimension probe"]).shape[1])
        return self._dim

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        wrapped = [Document(id=str(i), content=text) for i, text in enumerate(texts)]
        embedded = self.embedder.run(documents=wrapped)["documents"]
        return _unit_rows([d.embedding for d in embedded], len(texts), self)


def _unit_rows(rows: list[Any], count: int, encoder: Any) -> np.ndarray:
    if count == 0:
        return np.zeros((0, encoder.dim), dtype=np.float32)
    if any(row is None for row in rows):
        raise ValueError(f"the embedder {encoder.name!r} returned no embedding for some texts")
    vectors = np.asarray(rows, dtype=np.float32).reshape(count, -1)
    encoder._dim = int(vectors.shape[1])
    return l2_normalize(vectors)


_FILTERS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "rag_multihop_search_filters", default=None
)
"""The Haystack filters of the run in progress (a context variable: safe across threads and
concurrent async runs, and copied into the worker threads and tasks a run starts)."""


@contextlib.contextmanager
def run_filters(filters: dict[str, Any] | None) -> Iterator[None]:
    """Every :class:`DocumentSearcher` search inside the block gets ``filters``."""
    token = _FILTERS.set(filters)
    try:
        yield
    finally:
        _FILTERS.reset(token)


def check_embedding_retriever(retriever: Any) -> Any:
    """``retriever`` if its ``run`` takes ``query_embedding`` (or ``**kwargs``), else
    ``TypeError`` naming its class: :class:`DocumentSearcher` searches by embedding."""
    run = getattr(retriever, "run", None)
    parameters = inspect.signature(run).parameters.values() if callable(run) else ()
    if not any(
        p.name == "query_embedding" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters
    ):
        raise TypeError(
            "retriever must be a Haystack embedding retriever component with "
            f"run(query_embedding=..., top_k=...), got {type(retriever).__name__}, which has no "
            "run(query_embedding=...): wrap the store's embedding retriever instead (e.g. "
            "InMemoryEmbeddingRetriever, ChromaEmbeddingRetriever)"
        )
    return retriever


class DocumentSearcher:
    """An embedding retriever component as a core searcher and retriever: the query texts are
    embedded in one batch by ``encoder``, then one ``run(query_embedding=..., top_k=...)`` per
    text, with the current run's filters (:func:`run_filters`); ``retrieve`` is one search."""

    def __init__(self, retriever: Any, encoder: Encoder) -> None:
        self.retriever = retriever
        self.encoder = encoder

    def _kwargs(self, vector: list[float], k: int) -> dict[str, Any]:
        filters = _FILTERS.get()
        extra = {} if filters is None else {"filters": filters}
        return {"query_embedding": vector, "top_k": k, **extra}

    def _embeddings(self, queries: Sequence[Query]) -> list[list[float]]:
        return [[float(v) for v in row] for row in self.encoder.encode([q.text for q in queries])]

    def search(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        check_positive_int(k, "k")
        if not queries:
            return []
        found = [
            self.retriever.run(**self._kwargs(vector, k))["documents"]
            for vector in self._embeddings(queries)
        ]
        return [[document_to_candidate(d) for d in documents] for documents in found]

    async def asearch(self, queries: Sequence[Query], k: int) -> list[list[Candidate]]:
        check_positive_int(k, "k")
        if not queries:
            return []
        vectors = await asyncio.to_thread(self._embeddings, queries)
        if hasattr(self.retriever, "run_async"):
            calls = [self.retriever.run_async(**self._kwargs(v, k)) for v in vectors]
        else:
            run = self.retriever.run
            calls = [asyncio.to_thread(run, **self._kwargs(v, k)) for v in vectors]
        found = await asyncio.gather(*calls)
        return [[document_to_candidate(d) for d in out["documents"]] for out in found]

    def retrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return self.search([query], k)[0]

    async def aretrieve(self, query: Query, k: int = 10) -> list[Candidate]:
        return (await self.asearch([query], k))[0]


def embedder_name(embedder: Any) -> str:
    """The model an embedder component runs (its ``model`` attribute), else its class name."""
    model = getattr(embedder, "model", None) or getattr(embedder, "model_name", None)
    return str(model) if model else type(embedder).__name__


def as_encoder(embedder: Any) -> Encoder:
    """A rag-multihop encoder for ``embedder``: ``None`` (the bundled all-MiniLM-L6-v2), a
    sentence-transformers model name or path, or a Haystack text or document embedder
    component (warmed up here; a rag-multihop embedder gives back its own encoder).

    Raises:
        TypeError: ``embedder`` is none of these.
    """
    if embedder is None or isinstance(embedder, str):
        from rag_multihop.encoders import load_encoder

        return load_encoder(embedder)
    own = getattr(check_embedder(embedder), "encoder", None)
    if isinstance(own, Encoder):
        return own
    inputs = set(inspect.signature(embedder.run).parameters)
    if callable(getattr(embedder, "warm_up", None)):
        embedder.warm_up()
    return (
        DocumentEmbedderEncoder(embedder)
        if "documents" in inputs
        else TextEmbedderEncoder(embedder)
    )


def check_embedder(embedder: Any) -> Any:
    """``embedder`` if :func:`as_encoder` accepts it (checked without loading a model), else
    ``TypeError`` naming what is accepted."""
    if embedder is None:
        return embedder
    if isinstance(embedder, str):
        return check_encoder_name(embedder, "embedder")
    run = getattr(embedder, "run", None)
    inputs = set(inspect.signature(run).parameters) if callable(run) else set()
    if not inputs & {"text", "documents"}:
        raise TypeError(
            "embedder must be None (the bundled all-MiniLM-L6-v2), a sentence-transformers "
            "model name, or a Haystack text or document embedder component (run(text=...) or "
            f"run(documents=...)), got {type(embedder).__name__}"
        )
    return embedder


def embedder_to_dict(embedder: Any) -> Any:
    """``embedder`` for ``to_dict``: a model name as is, a component as its own dict (which
    ``default_from_dict`` turns back into the component)."""
    if embedder is None or isinstance(embedder, str):
        return embedder
    from haystack.core.serialization import component_to_dict

    return component_to_dict(embedder, "embedder")


def check_filters(filters: dict[str, Any] | None) -> dict[str, Any] | None:
    """``filters`` if ``None``, empty, or valid Haystack filter syntax; else ``FilterError``
    naming the faulty condition (Haystack itself only notices when a document is matched).

    Example:
        >>> check_filters({"field": "meta.lang", "operator": "==", "value": "en"})
        {'field': 'meta.lang', 'operator': '==', 'value': 'en'}
        >>> check_filters({"field": "meta.lang", "operator": "equals", "value": "en"})
        Traceback (most recent call last):
        ...
        haystack.errors.FilterError: filters: unknown comparison operator 'equals' in {'field': \
'meta.lang', 'operator': 'equals', 'value': 'en'}; valid: !=, <, <=, ==, >, >=, in, not in
    """
    if filters:
        _check_condition(filters)
    return filters


def as_filter_policy(policy: FilterPolicy | str) -> FilterPolicy:
    """``policy`` as Haystack's ``FilterPolicy`` (its name, ``"replace"`` or ``"merge"``, as
    ``from_dict`` gives it, or the enum itself)."""
    return FilterPolicy.from_str(policy) if isinstance(policy, str) else policy


def _check_condition(condition: Any) -> None:
    if not isinstance(condition, dict):
        raise FilterError(f"filters: a condition must be a dict, got {condition!r}")
    if "field" in condition:
        operator = condition.get("operator")
        if operator not in COMPARISON_OPERATORS:
            raise FilterError(
                f"filters: unknown comparison operator {operator!r} in {condition}; valid: "
                + ", ".join(sorted(COMPARISON_OPERATORS))
            )
        if "value" not in condition:
            raise FilterError(f"filters: 'value' missing in {condition}")
        if operator in ("in", "not in") and not isinstance(condition["value"], list):
            raise FilterError(f"filters: operator {operator!r} needs a list value in {condition}")
        return
    operator = condition.get("operator")
    if operator not in LOGICAL_OPERATORS:
        raise FilterError(
            f"filters: {condition} is neither a comparison (with 'field') nor a logical "
            f"condition (operator {', '.join(sorted(LOGICAL_OPERATORS))} with 'conditions')"
        )
    conditions = condition.get("conditions")
    if not isinstance(conditions, list):
        raise FilterError(f"filters: 'conditions' of {condition} must be a list of conditions")
    for inner in conditions:
        _check_condition(inner)


def check_api_key(api_key: Secret | None) -> Secret | None:
    """``api_key`` if it is ``None`` or an environment-variable secret naming variables, else
    ``ValueError``; a key given as a variable's name (``Secret.from_env_var("sk-...")``) is
    refused without being shown, so it never reaches ``to_dict`` (the pipeline's YAML).

    >>> check_api_key(Secret.from_env_var("OPENAI_API_KEY", strict=False)).type.value
    'env_var'
    >>> check_api_key(Secret.from_env_var("sk-proj-" + "AbC1" * 12))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rag_multihop.secrets.SecretInFieldError: api_key: Secret.from_env_var(...) must be the NAME...
    """
    if api_key is None:
        return None
    if api_key.type is not SecretType.ENV_VAR:
        raise ValueError(
            "api_key must be Secret.from_env_var('NAME', strict=False) or None: the LLM client "
            "reads the key from the environment at call time and never stores it"
        )
    for name in api_key.to_dict()["env_vars"]:
        check_env_var_name(name, "api_key: Secret.from_env_var(...)")
    return api_key


def check_llm(llm: object) -> str:
    """``llm``, a litellm model string; a key given there is refused without being shown
    (:func:`rag_multihop.secrets.check_model_name`), so it never reaches ``to_dict``, a repr
    or a log."""
    return check_model_name(llm, "llm")


def check_encoder_name(model: object, field: str = "model") -> str | None:
    """``model``, a sentence-transformers model name or path, or ``None``; a key given there
    is refused without being shown."""
    if model is None:
        return None
    return check_model_name(model, field, kind="sentence-transformers model")


def key_variable(api_key: Secret | None) -> str | None:
    """The name of the first set variable of ``api_key`` (else its first name), or None."""
    if api_key is None:
        return None
    names: list[str] = api_key.to_dict()["env_vars"]
    return next((name for name in names if os.environ.get(name)), names[0])
