"""Translation between rag-multihop's types and LlamaIndex nodes.

A :class:`~rag_multihop.types.Passage` becomes a ``TextNode`` whose ``id_`` is the passage id,
whose ``text`` is the passage text and whose metadata holds the passage metadata, its ``title``
(when it has one) and its id under :data:`PASSAGE_ID_KEY`. The id in the metadata makes
``node.hash`` (sha256 of text + metadata, the key ``QueryFusionRetriever`` deduplicates on)
equal for the same passage and different for two passages that share text and title. The id key
is hidden from what the LLM and the embedder see; the title is shown to both.

Going back, a node is looked up in the corpus by its id, so the returned candidate carries the
original passage object, not a reconstruction.

Example:
    >>> from rag_multihop import Corpus, Passage
    >>> p = Passage("p1", "Paris is the capital of France.", title="Paris")
    >>> node = passage_to_node(p)
    >>> node.node_id, node.text, node.metadata["title"]
    ('p1', 'Paris is the capital of France.', 'Paris')
    >>> node.hash == passage_to_node(p).hash
    True
    >>> c = node_to_candidate(NodeWithScore(node=node, score=0.5), Corpus([p]), rank=1)
    >>> (c.passage is p, c.score, c.rank)
    (True, 0.5, 1)
"""

from __future__ import annotations

from collections.abc import Mapping

from llama_index.core.schema import NodeWithScore, TextNode

from rag_multihop.corpus import Corpus
from rag_multihop.types import Candidate, Passage

PASSAGE_ID_KEY = "passage_id"
"""Metadata key holding the passage id (hidden from the LLM and the embedder)."""

TITLE_KEY = "title"
"""Metadata key holding the passage title (shown to the LLM and the embedder)."""


def passage_to_node(passage: Passage) -> TextNode:
    """A new ``TextNode`` for ``passage``: same id and text, title and metadata in ``metadata``.

    The passage's own metadata comes first; ``title`` (when non-empty) and
    :data:`PASSAGE_ID_KEY` are set last and win over same-named passage metadata keys.
    """
    metadata: dict[str, object] = dict(passage.metadata)
    if passage.title:
        metadata[TITLE_KEY] = passage.title
    metadata[PASSAGE_ID_KEY] = passage.id
    return TextNode(
        id_=passage.id,
        text=passage.text,
        metadata=metadata,
        excluded_llm_metadata_keys=[PASSAGE_ID_KEY],
        excluded_embed_metadata_keys=[PASSAGE_ID_KEY],
    )


def candidate_to_node_with_score(candidate: Candidate) -> NodeWithScore:
    """A new ``NodeWithScore`` for ``candidate`` (its passage as a node, its score)."""
    return NodeWithScore(node=passage_to_node(candidate.passage), score=float(candidate.score))


def node_to_candidate(
    node_with_score: NodeWithScore,
    corpus: Corpus,
    *,
    rank: int = 0,
    signals: Mapping[str, float] | None = None,
) -> Candidate:
    """The :class:`Candidate` for a scored node, its passage looked up in ``corpus`` by node id.

    A node without a score gets score 0.0 (LlamaIndex's ``get_score`` convention).

    Raises:
        KeyError: the node id is not a passage id of ``corpus``.
    """
    node_id = node_with_score.node.node_id
    if node_id not in corpus:
        raise KeyError(
            f"node id {node_id!r} is not a passage id of the corpus; nodes given to rag-multihop "
            "must come from passage_to_node (node id = passage id)"
        )
    return Candidate(
        passage=corpus[node_id],
        score=float(node_with_score.get_score()),
        rank=rank,
        signals=dict(signals or {}),
    )
