"""``PITDocumentJoiner``: calibrated fusion of retriever outputs, a drop-in ``DocumentJoiner``.

It takes the same inputs as ``DocumentJoiner`` (``documents: Variadic[list[Document]]``,
``top_k``) and the same init parameters in the same order (``join_mode``, ``weights``,
``top_k``, ``sort_by_score``), and fuses the lists with rag-multihop's
:func:`~rag_multihop.fusion.fuse_candidates` (PIT calibration + Boltzmann fusion by default;
every registered calibration and fusion by name). ``weights`` and ``top_k`` are honoured;
``join_mode`` (one of ``DocumentJoiner``'s own formulas) and ``sort_by_score=False`` are
refused with a message naming what to pass instead.

What the component does, and only that:

- translates each list to candidates (``Document.id``; a document without a score is an
  error);
- calls the core (a document repeated inside one list keeps its best score) and returns new
  documents (``dataclasses.replace`` of a listed document) with the fused ``score`` and
  ``meta["rag_multihop_signals"]`` = every system's raw and calibrated score. Input documents
  are never mutated.

``weights`` and ``names`` follow the order in which Haystack delivers the variadic lists,
as ``DocumentJoiner``'s weights do (in Haystack 3.4 a ``Pipeline`` delivers them in
alphabetical order of the sender components' names). Fewer than two lists is an error
(a joiner with one input has nothing to fuse); empty lists are fine.

Example:
    >>> from haystack import Document
    >>> joiner = PITDocumentJoiner(fusion="linear", top_k=2)
    >>> dense = [Document(id="a", content="A", score=0.9), Document(id="b", content="B", score=0.2)]
    >>> bm25 = [Document(id="b", content="B", score=7.0), Document(id="c", content="C", score=1.0)]
    >>> [(d.id, round(d.score, 3)) for d in joiner.run(documents=[dense, bm25])["documents"]]
    [('b', 0.75), ('a', 0.5)]
"""

# No `from __future__ import annotations` here: Haystack reads the run() annotations at class
# creation, and a postponed `Variadic[...]` loses the marker that makes the input variadic.
import logging
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.component.types import Variadic
from haystack_integrations.common.rag_multihop.convert import (
    candidate_to_document,
    document_to_candidate,
)

from rag_multihop.fusion import FusionSettings, fuse_candidates
from rag_multihop.types import Candidate

logger = logging.getLogger(__name__)


def _candidates(name: str, documents: list[Document]) -> list[Candidate]:
    for document in documents:
        if document.score is None:
            raise ValueError(
                f"documents list {name!r} has document {document.id!r} without a score; "
                "calibrated fusion needs every retriever to score its documents"
            )
    return [document_to_candidate(document) for document in documents]


@component
class PITDocumentJoiner:
    """Joins lists of documents by calibrated fusion (see the module docstring).

    Args:
        join_mode: refused (``DocumentJoiner``'s formula); use ``fusion``/``calibration``.
        weights: one non-negative weight per input list (normalised); uniform when ``None``.
        top_k: documents returned; ``None`` returns all. Must be ``None`` or ``> 0``.
        sort_by_score: ``True`` (the fused ranking); ``False`` is refused.
        calibration, fusion: rag-multihop registry names (``pit`` / ``boltzmann`` default).
        pool_cap: keep only each list's best ``cap`` documents (one int or one per list).
        consensus_beta: boost for documents found in several lists.
        params: fusion parameters (``epsilon``, ``c`` for boltzmann; ``k`` for rrf).
        names: system names for the signals (default ``list_0``, ``list_1``, ...).
    """

    def __init__(
        self,
        join_mode: Any = None,
        weights: list[float] | None = None,
        top_k: int | None = None,
        sort_by_score: bool = True,
        *,
        calibration: str = FusionSettings.calibration,
        fusion: str = FusionSettings.fusion,
        pool_cap: int | list[int | None] | None = None,
        consensus_beta: float = FusionSettings.consensus_beta,
        params: dict[str, float] | None = None,
        names: list[str] | None = None,
    ) -> None:
        if join_mode is not None:
            raise ValueError(
                f"PITDocumentJoiner does not run DocumentJoiner's join_mode={str(join_mode)!r}: "
                "it fuses by calibration (calibration=, fusion=; default PIT + Boltzmann). "
                "Leave join_mode unset, or pass fusion='rrf' for reciprocal rank fusion"
            )
        if sort_by_score is not True:
            raise ValueError(
                "PITDocumentJoiner always returns the fused ranking, best first; "
                f"sort_by_score={sort_by_score!r} has no meaning for it (leave it True)"
            )
        if top_k is not None and (
            isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0
        ):
            raise ValueError(f"top_k must be None or a positive integer, got {top_k!r}")
        if names is not None and len(set(names)) != len(names):
            raise ValueError(f"names must be distinct, got {names}")
        self.settings = FusionSettings(
            calibration=calibration,
            fusion=fusion,
            weights=None if weights is None else list(weights),
            pool_cap=pool_cap if not isinstance(pool_cap, list) else list(pool_cap),
            consensus_beta=consensus_beta,
            params=dict(params or {}),
        )
        self.calibration = calibration
        self.fusion = fusion
        self.weights = None if weights is None else list(weights)
        self.top_k = top_k
        self.pool_cap = pool_cap
        self.consensus_beta = consensus_beta
        self.params = None if params is None else dict(params)
        self.names = None if names is None else list(names)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            calibration=self.calibration,
            fusion=self.fusion,
            weights=self.weights,
            top_k=self.top_k,
            pool_cap=self.pool_cap,
            consensus_beta=self.consensus_beta,
            params=self.params,
            names=self.names,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PITDocumentJoiner":
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, documents: Variadic[list[Document]], top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """Fuse the input lists; ``top_k`` overrides the init value (0 returns nothing)."""
        lists = list(documents)
        if top_k is not None and top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {top_k}")
        limit = self.top_k if top_k is None else top_k
        if len(lists) < 2:
            raise ValueError(
                f"PITDocumentJoiner received {len(lists)} list(s) of documents; connect at "
                "least 2 retrievers to its documents input"
            )
        names = self.names or [f"list_{i}" for i in range(len(lists))]
        if len(names) != len(lists):
            raise ValueError(f"names has {len(names)} entries but {len(lists)} lists arrived")
        candidates = {
            name: _candidates(name, found) for name, found in zip(names, lists, strict=True)
        }
        fused = fuse_candidates(candidates, self.settings, top_n=limit or None)
        return {"documents": [] if limit == 0 else [candidate_to_document(c) for c in fused]}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, documents: Variadic[list[Document]], top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """The same as :meth:`run` (fusion does no I/O)."""
        return self.run(documents=documents, top_k=top_k)
