"""The entity graph of a corpus: passages, entities and three kinds of edges; build, save, load.

The graph keeps its edge kinds as separate sparse blocks, so how strongly each kind counts
is a setting of the walk (:meth:`EntityGraph.adjacency`), not baked into the file:

- ``mentions`` (passages x entities): passage ``i`` mentions entity ``j`` (HippoRAG style);
  every passage also "mentions" its own normalised title.
- ``title_links`` (passages x passages): passage ``i``'s text mentions passage ``j``'s title
  (the title without a trailing parenthesis, ``"Paris (band)"`` -> ``"paris"``), found by
  looking every word n-gram that starts with a capitalised word or a digit up in a dict of
  titles (no all-pairs comparison); no self links.
- ``synonyms`` (entities x entities, symmetric, value = cosine): entity names whose
  embeddings have cosine >= ``synonym_threshold``, found with a FAISS nearest-neighbour search
  (``synonym_k`` neighbours per name), never with all-pairs loops. Skipped when no encoder is
  given.

A saved graph is a folder with ``graph.json`` (format version, corpus fingerprint, passage
ids, entity names, settings, counts) and ``graph.npz`` (the three blocks as CSR arrays,
loaded with ``allow_pickle=False``). Loading it against another corpus raises ``ValueError``.

Example:
    >>> from rag_multihop import Corpus, Passage
    >>> corpus = Corpus([
    ...     Passage("a", "Polish Wedding is a film by Theresa Connelly.", "Polish Wedding"),
    ...     Passage("b", "Theresa Connelly is an American director.", "Theresa Connelly"),
    ... ])
    >>> graph = build_entity_graph(corpus)
    >>> graph.n_passages, graph.edge_counts["title_links"], float(graph.title_links[0, 1])
    (2, 1, 1.0)
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from rag_multihop._artifact_config import read_config, write_config
from rag_multihop._atomic import ArtifactError, artifact_path, atomic_directory, read_artifact
from rag_multihop.corpus import Corpus
from rag_multihop.encoders.base import Encoder
from rag_multihop.graph.extract import EntityExtractor, HeuristicExtractor
from rag_multihop.graph.push import PushGraph
from rag_multihop.text import normalize_entity, normalize_word, title_key, visible
from rag_multihop.validation import check_fraction, check_number, check_positive_int

logger = logging.getLogger(__name__)

KIND = "rag_multihop.entity_graph"
FORMAT_VERSION = 1
META_FILE = "graph.json"
DEFAULT_SYNONYM_THRESHOLD = 0.85
LINK_WORD = re.compile(r"[^\W_][\w'’\-.&]*", re.UNICODE)
"""A word of a passage text as the entity graph's title links read it."""


def corpus_fingerprint(corpus: Corpus) -> str:
    """sha256 over every passage's id, title and text, in corpus order.

    >>> from rag_multihop import Passage
    >>> corpus_fingerprint(Corpus([Passage("a", "x")]))[:12]
    '4989baa0a531'
    """
    digest = hashlib.sha256()
    for passage in corpus:
        for part in (passage.id, passage.title, passage.text):
            digest.update(part.encode("utf-8"))
            digest.update(b"\x00")
    return digest.hexdigest()


@dataclass(frozen=True)
class EdgeWeights:
    """How much each edge kind counts in the walk (0 switches a kind off).

    ``title_link`` is the weight of ``i -> j`` when ``i`` mentions ``j``'s title,
    ``title_backlink`` of the reverse step ``j -> i``.
    """

    mention: float = 1.0
    title_link: float = 1.0
    title_backlink: float = 1.0
    synonym: float = 1.0

    def __post_init__(self) -> None:
        for name in ("mention", "title_link", "title_backlink", "synonym"):
            check_number(getattr(self, name), f"EdgeWeights.{name}", low=0.0)
        if not any(getattr(self, n) for n in ("mention", "title_link", "title_backlink")):
            raise ValueError("EdgeWeights: mention, title_link and title_backlink are all 0")


def walk_adjacency(
    mentions: sparse.csr_matrix,
    title_links: sparse.csr_matrix,
    synonyms: sparse.csr_matrix,
    weights: EdgeWeights | None = None,
    *,
    mentioned_by: sparse.csr_matrix | None = None,
) -> sparse.csr_matrix:
    """The weighted, directed adjacency of :meth:`EntityGraph.adjacency` from its blocks
    (``mentioned_by``: ``mentions.T`` as CSR, when the caller has it already)."""
    w = weights or EdgeWeights()
    if mentioned_by is None:
        mentioned_by = mentions.T.tocsr()
    passages = sparse.csr_matrix(w.title_link * title_links + w.title_backlink * title_links.T)
    # rows side by side, then stacked: both CSR fast paths (``bmat`` goes through COO,
    # about twice the time at a million passages)
    block = sparse.vstack(
        [
            sparse.hstack([passages, w.mention * mentions], format="csr"),
            sparse.hstack([w.mention * mentioned_by, w.synonym * synonyms], format="csr"),
        ],
        format="csr",
    )
    block.eliminate_zeros()
    return block


@dataclass(frozen=True, eq=False)
class EntityGraph:
    """Passages (nodes ``0 .. n_passages-1``) and entities (the nodes after them).

    Build with :func:`build_entity_graph`, load with :meth:`load`.
    """

    passage_ids: Sequence[str]
    entity_names: Sequence[str]
    mentions: sparse.csr_matrix
    title_links: sparse.csr_matrix
    synonyms: sparse.csr_matrix
    fingerprint: str
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n_p, n_e = len(self.passage_ids), len(self.entity_names)
        shapes = {
            "mentions": (self.mentions.shape, (n_p, n_e)),
            "title_links": (self.title_links.shape, (n_p, n_p)),
            "synonyms": (self.synonyms.shape, (n_e, n_e)),
        }
        for name, (got, expected) in shapes.items():
            if tuple(got) != expected:
                raise ValueError(f"EntityGraph.{name} has shape {got}, expected {expected}")

    @property
    def n_passages(self) -> int:
        return len(self.passage_ids)

    @property
    def n_entities(self) -> int:
        return len(self.entity_names)

    @property
    def n_nodes(self) -> int:
        return self.n_passages + self.n_entities

    @property
    def edge_counts(self) -> dict[str, int]:
        """Stored (directed) edges per kind; synonyms count each pair once."""
        return {
            "mentions": int(self.mentions.nnz),
            "title_links": int(self.title_links.nnz),
            "synonyms": int(self.synonyms.nnz // 2),
        }

    @cached_property
    def entity_index(self) -> Mapping[str, int]:
        """Normalised entity name -> entity number (add ``n_passages`` for its node)."""
        return {name: i for i, name in enumerate(self.entity_names)}

    @cached_property
    def passage_index(self) -> Mapping[str, int]:
        return {pid: i for i, pid in enumerate(self.passage_ids)}

    @cached_property
    def entity_frequency(self) -> np.ndarray:
        """Number of passages mentioning each entity."""
        return np.asarray((self.mentions > 0).sum(axis=0)).ravel()

    @cached_property
    def passages_of(self) -> sparse.csr_matrix:
        """Entity → the passages mentioning it: the binary mentions transposed, ``(n_entities,
        n_passages)`` CSR with float64 ones."""
        return (self.mentions > 0).astype(np.float64).T.tocsr()

    def push_walk(self, weights: EdgeWeights | None = None) -> PushGraph:
        """The forward walk of :meth:`adjacency` for :func:`~rag_multihop.graph.push.push_pagerank`
        (made here; a stored graph may serve it from its files)."""
        return PushGraph.from_adjacency(self.adjacency(weights))

    def adjacency(self, weights: EdgeWeights | None = None) -> sparse.csr_matrix:
        """The weighted, directed ``(n_nodes, n_nodes)`` adjacency the walk runs on.

        Blocks: ``[[title_link * T + title_backlink * T^T, mention * M],
        [mention * M^T, synonym * S]]`` (T title links, M mentions, S synonyms).
        """
        return walk_adjacency(self.mentions, self.title_links, self.synonyms, weights)

    def check_corpus(self, corpus: Corpus) -> None:
        """``ValueError`` unless this graph was built from exactly ``corpus``."""
        actual = corpus_fingerprint(corpus)
        if actual != self.fingerprint:
            raise ValueError(
                f"this entity graph was built from another corpus (fingerprint "
                f"{self.fingerprint[:12]}, {self.n_passages} passages) than the one given "
                f"(fingerprint {actual[:12]}, {len(corpus)} passages); rebuild it with "
                "build_entity_graph(corpus)"
            )

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write ``graph.json`` and ``graph.npz`` atomically into ``directory``."""
        with atomic_directory(directory) as staging:
            arrays: dict[str, np.ndarray] = {}
            for name in ("mentions", "title_links", "synonyms"):
                matrix = getattr(self, name).tocsr()
                arrays[f"{name}_data"] = matrix.data.astype(np.float32)
                arrays[f"{name}_indices"] = matrix.indices.astype(np.int64)
                arrays[f"{name}_indptr"] = matrix.indptr.astype(np.int64)
            np.savez_compressed(staging / "graph.npz", **arrays)  # type: ignore[arg-type]
            meta = {
                "fingerprint": self.fingerprint,
                "passage_ids": list(self.passage_ids),
                "entity_names": list(self.entity_names),
                "edge_counts": self.edge_counts,
                "settings": dict(self.settings),
            }
            write_config(staging, KIND, FORMAT_VERSION, meta, filename=META_FILE, indent=None)

    @staticmethod
    def is_saved(directory: str | os.PathLike[str]) -> bool:
        """Whether ``directory`` holds a graph written by :meth:`save`."""
        return Path(directory).is_dir() and (artifact_path(directory) / META_FILE).is_file()

    @classmethod
    def load(cls, directory: str | os.PathLike[str], corpus: Corpus) -> EntityGraph:
        """Read a graph saved by :meth:`save`; ``ValueError`` if it belongs to another corpus."""
        with read_artifact(directory) as source:
            graph = cls._read(source)
        graph.check_corpus(corpus)
        return graph

    @classmethod
    def _read(cls, source: Path) -> EntityGraph:
        meta_path = source / META_FILE
        meta = read_config(
            source, KIND, (FORMAT_VERSION,), filename=META_FILE, label="EntityGraph", kindless=True
        )  # kindless: graphs saved before kinds were recorded
        for key in ("passage_ids", "entity_names"):
            names = meta.get(key)
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ArtifactError(f"{meta_path}: {key!r} must be a list of strings")
        if not isinstance(meta.get("fingerprint"), str):
            raise ArtifactError(f"{meta_path}: 'fingerprint' must be a string")
        n_p, n_e = len(meta["passage_ids"]), len(meta["entity_names"])
        shapes = {"mentions": (n_p, n_e), "title_links": (n_p, n_p), "synonyms": (n_e, n_e)}
        blocks: dict[str, sparse.csr_matrix] = {}
        arrays_path = source / "graph.npz"
        try:
            with np.load(arrays_path, allow_pickle=False) as data:
                for name, shape in shapes.items():
                    block = sparse.csr_matrix(
                        (
                            data[f"{name}_data"].astype(np.float64),
                            data[f"{name}_indices"],
                            data[f"{name}_indptr"],
                        ),
                        shape=shape,
                    )
                    block.check_format(full_check=True)
                    if block.nnz and not np.isfinite(block.data).all():
                        raise ValueError(f"{name} holds NaN or infinite weights")
                    blocks[name] = block
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise ArtifactError(
                f"{arrays_path} does not hold the graph that {meta_path.name} describes: {exc}"
            ) from None
        return cls(
            tuple(meta["passage_ids"]),
            tuple(meta["entity_names"]),
            blocks["mentions"],
            blocks["title_links"],
            blocks["synonyms"],
            meta["fingerprint"],
            meta.get("settings", {}),
        )


def _title_links(
    corpus: Corpus, keys: Sequence[str], max_title_words: int
) -> tuple[list[int], list[int]]:
    by_title: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        if key:
            by_title.setdefault(key, []).append(i)
    rows: list[int] = []
    cols: list[int] = []
    for i, passage in enumerate(corpus):
        targets = passage_title_links(
            i, passage.text, lambda key: by_title.get(key, ()), max_title_words
        )
        rows.extend([i] * len(targets))
        cols.extend(targets)
    return rows, cols


def passage_title_links(
    row: int, text: str, rows_of: Callable[[str], Iterable[int]], max_title_words: int = 8
) -> list[int]:
    """The passages whose title key (:func:`~rag_multihop.text.title_key`) passage ``row``'s
    ``text`` names, ascending, no self link; ``rows_of(key)`` gives the passages with that
    key. A pure function of the text and the title dictionary (the entity graph's title links;
    :mod:`rag_multihop.store` recomputes them for the passages a new title touches).

    >>> titles = {"hitchcock": [1]}
    >>> passage_title_links(0, "Rope is a Hitchcock film.", lambda key: titles.get(key, []))
    [1]
    """
    return title_link_targets(row, title_link_keys(text, max_title_words), rows_of)


def title_link_targets(
    row: int, keys: Iterable[str], rows_of: Callable[[str], Iterable[int]]
) -> list[int]:
    """The passages ``rows_of`` gives for any of ``keys``, ascending, without ``row``: the
    targets of passage ``row`` whose text holds those keys (:func:`title_link_keys`).

    >>> title_link_targets(0, ["rope", "hitchcock"], lambda key: {"hitchcock": [0, 1]}.get(key, []))
    [1]
    """
    return sorted({j for key in keys for j in rows_of(key) if j != row})


def title_link_keys(text: str, max_title_words: int = 8) -> list[str]:
    """Every key :func:`passage_title_links` looks up for ``text``: the normalised spans of
    up to ``max_title_words`` words that start with a capitalised word or a digit, once
    each, in text order.

    >>> title_link_keys("Rope is a Hitchcock film.", 2)
    ['rope', 'rope is', 'hitchcock', 'hitchcock film']
    """
    words = LINK_WORD.findall(visible(text))
    normalised = [normalize_word(word) for word in words]
    keys: dict[str, None] = {}
    for start, word in enumerate(words):
        if not (word[0].isupper() or word[0].isdigit()):
            continue
        key = ""
        for end in range(start + 1, min(start + max_title_words, len(words)) + 1):
            token = normalised[end - 1]  # the key grows by one word: the non-empty tokens joined
            if token:
                key = f"{key} {token}" if key else token
            keys[key] = None
    return list(keys)


def passage_entities(title: str, extracted: Sequence[str]) -> list[str]:
    """The entity names a passage mentions in the graph: its own title key first, then the
    extractor's names, normalised, deduplicated in order.

    >>> passage_entities("Rope (film)", ["Alfred Hitchcock", "rope"])
    ['rope', 'alfred hitchcock']
    """
    own = [title_key(title)] if title_key(title) else []
    return [n for n in dict.fromkeys([*own, *(normalize_entity(n) for n in extracted)]) if n]


def _synonym_pairs(
    names: Sequence[str], encoder: Encoder, threshold: float, k: int, factory: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import faiss  # deferred: importing FAISS costs ~0.3 s

    vectors = np.ascontiguousarray(encoder.encode(list(names)), dtype=np.float32)
    faiss.normalize_L2(vectors)
    index = faiss.index_factory(vectors.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    if not index.is_trained:
        index.train(vectors)
    index.add(vectors)
    scores, neighbours = index.search(vectors, min(k + 1, len(names)))
    rows = np.repeat(np.arange(len(names)), neighbours.shape[1])
    cols, sims = neighbours.ravel(), scores.ravel()
    keep = (cols > rows) & (sims >= threshold)
    return rows[keep], cols[keep], np.clip(sims[keep], 0.0, 1.0)


def build_entity_graph(
    corpus: Corpus,
    extractor: EntityExtractor | None = None,
    *,
    encoder: Encoder | None = None,
    synonym_threshold: float = DEFAULT_SYNONYM_THRESHOLD,
    synonym_k: int = 10,
    synonym_index: str = "Flat",
    max_title_words: int = 8,
    batch_size: int = 256,
    show_progress: bool = False,
) -> EntityGraph:
    """Extract entities from every passage and build the :class:`EntityGraph`.

    Args:
        corpus: the passages.
        extractor: an :class:`EntityExtractor`; :class:`HeuristicExtractor` by default.
        encoder: embeds entity names for synonym edges; ``None`` builds no synonym edges.
        synonym_threshold: cosine in ``[0, 1]`` at or above which two names are synonyms.
        synonym_k: nearest neighbours searched per entity name.
        synonym_index: FAISS factory string of the name index (``"Flat"`` is exact;
            ``"HNSW32"`` scales to millions of names).
        max_title_words: the longest title (in words) looked for in passage texts.
        batch_size: passages per extractor call.
        show_progress: a progress bar over the extraction batches.
    """
    extractor = extractor or HeuristicExtractor()
    synonym_threshold = check_fraction(synonym_threshold, "synonym_threshold")
    synonym_k = check_positive_int(synonym_k, "synonym_k")
    max_title_words = check_positive_int(max_title_words, "max_title_words")
    batch_size = check_positive_int(batch_size, "batch_size")

    texts = [p.text for p in corpus]
    batches = range(0, len(texts), batch_size)
    iterator: Any = batches
    if show_progress:
        from tqdm.auto import tqdm

        iterator = tqdm(batches, desc="extracting entities", unit="batch")
    extracted: list[list[str]] = []
    for start in iterator:
        extracted.extend(extractor.extract(texts[start : start + batch_size]))
    if len(extracted) != len(texts):
        raise ValueError(
            f"extractor {extractor.name!r} returned {len(extracted)} lists for {len(texts)} texts"
        )

    keys = [title_key(p.title) for p in corpus]
    entity_of: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    for i, names in enumerate(extracted):
        for name in passage_entities(corpus[i].title, names):
            rows.append(i)
            cols.append(entity_of.setdefault(name, len(entity_of)))
    names_list = list(entity_of)
    n_p, n_e = len(corpus), len(names_list)
    mentions = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_p, n_e))

    link_rows, link_cols = _title_links(corpus, keys, max_title_words)
    title_links = sparse.csr_matrix(
        (np.ones(len(link_rows)), (link_rows, link_cols)), shape=(n_p, n_p)
    )

    synonyms = sparse.csr_matrix((n_e, n_e))
    if encoder is not None and n_e > 1:
        a, b, sims = _synonym_pairs(
            names_list, encoder, synonym_threshold, synonym_k, synonym_index
        )
        synonyms = sparse.csr_matrix(
            (np.concatenate([sims, sims]), (np.concatenate([a, b]), np.concatenate([b, a]))),
            shape=(n_e, n_e),
        )
    settings = {
        "extractor": extractor.name,
        "encoder": None if encoder is None else encoder.name,
        "synonym_threshold": synonym_threshold,
        "synonym_k": synonym_k,
        "synonym_index": synonym_index,
        "max_title_words": max_title_words,
    }
    graph = EntityGraph(
        tuple(corpus.ids),
        tuple(names_list),
        mentions,
        title_links,
        synonyms,
        corpus_fingerprint(corpus),
        settings,
    )
    logger.info("entity graph: %d passages, %d entities, edges %s", n_p, n_e, graph.edge_counts)
    return graph
