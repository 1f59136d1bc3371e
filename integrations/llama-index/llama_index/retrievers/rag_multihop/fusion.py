"""``PITFusionRetriever``: calibrated fusion of any LlamaIndex retrievers.

A drop-in for ``QueryFusionRetriever``: it takes the same constructor arguments, in the same
order, and fuses with rag-multihop's :func:`~rag_multihop.fusion.fuse_candidates` (PIT
calibration + Boltzmann fusion by default, :class:`~rag_multihop.fusion.FusionSettings`)
instead of RRF / relative score. Of ``QueryFusionRetriever``'s arguments it honours
``retrievers``, ``similarity_top_k``, ``retriever_weights``, ``verbose``, ``callback_manager``,
``objects``, ``object_map``, ``use_async`` (children queried concurrently) and
``num_queries``: above 1, ``llm`` (else ``Settings.llm``) writes ``num_queries - 1`` more
queries with ``query_gen_prompt`` (LlamaIndex's own prompt by default) and every retriever
answers every query. ``mode`` selects one of ``QueryFusionRetriever``'s own formulas, which
this retriever does not run: any value is refused with a message naming what to pass instead.

What the adapter does, and only that:

- asks every child for its nodes (``aretrieve`` concurrently in async code, so it is as
  async as its children);
- translates each child's nodes to candidates (the id is ``node.node_id``: graph and vector
  retrievers over the same nodes then merge, unlike ``QueryFusionRetriever``'s content hash;
  a node without a score is an error);
- calls the core (a node repeated in one list keeps its best score) and returns new
  ``NodeWithScore`` objects (a child's node, copied, with the fused score); each node's
  ``metadata["rag_multihop_signals"]`` holds every system's raw and calibrated score (hidden
  from the LLM and the embedder). Children's nodes are not mutated.

Example:
    >>> from llama_index.core.schema import TextNode
    >>> class Fixed(BaseRetriever):
    ...     def __init__(self, scored):
    ...         self.scored = scored
    ...         super().__init__()
    ...     def _retrieve(self, query_bundle):
    ...         return [NodeWithScore(node=TextNode(id_=i), score=s) for i, s in self.scored]
    >>> fusion = PITFusionRetriever(
    ...     [Fixed([("a", 0.9), ("b", 0.2)]), Fixed([("b", 7.0), ("c", 1.0)])],
    ...     similarity_top_k=2, fusion="linear",
    ... )
    >>> [(n.node.node_id, round(n.score, 3)) for n in fusion.retrieve("q")]
    [('b', 0.75), ('a', 0.5)]
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.constants import DEFAULT_SIMILARITY_TOP_K
from llama_index.core.schema import IndexNode, NodeWithScore, QueryBundle
from llama_index.retrievers.rag_multihop._convert import candidate_to_node, node_to_candidate

from rag_multihop.fusion import FusionSettings, fuse_candidates
from rag_multihop.types import Candidate
from rag_multihop.validation import check_positive_int

logger = logging.getLogger(__name__)


class PITFusionRetriever(BaseRetriever):
    """Fuse any ``BaseRetriever``s with calibrated fusion (see the module docstring).

    Args:
        retrievers: two or more LlamaIndex retrievers.
        llm: writes the extra queries when ``num_queries > 1`` (default ``Settings.llm``).
        query_gen_prompt: the prompt for them (``{num_queries}``, ``{query}``).
        mode: refused (``QueryFusionRetriever``'s formula); use ``fusion``/``calibration``.
        similarity_top_k: fused nodes returned.
        num_queries: queries per retrieval, the user's included (1: no LLM).
        use_async: query the children concurrently (also in sync code).
        verbose, callback_manager, objects, object_map: as for any ``BaseRetriever``.
        retriever_weights: one non-negative weight per retriever (normalised); uniform when
            ``None``.
        names: system names used in the signals (default ``retriever_0``, ``retriever_1``, ...).
        settings: a :class:`~rag_multihop.fusion.FusionSettings`; ``calibration``,
            ``fusion``, ``pool_cap`` (one int, or one per retriever), ``consensus_beta`` and
            ``params`` override its fields when given.
    """

    def __init__(
        self,
        retrievers: Sequence[BaseRetriever],
        llm: Any = None,
        query_gen_prompt: str | None = None,
        mode: Any = None,
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        num_queries: int = 1,
        use_async: bool = False,
        verbose: bool = False,
        callback_manager: CallbackManager | None = None,
        objects: list[IndexNode] | None = None,
        object_map: dict | None = None,
        retriever_weights: Sequence[float] | None = None,
        *,
        names: Sequence[str] | None = None,
        settings: FusionSettings | None = None,
        calibration: str | None = None,
        fusion: str | None = None,
        pool_cap: int | Sequence[int | None] | None = None,
        consensus_beta: float | None = None,
        params: Mapping[str, float] | None = None,
    ) -> None:
        if isinstance(llm, int) and not isinstance(llm, bool):
            raise TypeError(
                f"the second positional argument is llm, as in QueryFusionRetriever; got {llm!r}"
                " - pass similarity_top_k=... by keyword"
            )
        if mode is not None:
            raise ValueError(
                f"PITFusionRetriever does not run QueryFusionRetriever's mode={str(mode)!r}: it "
                "fuses by calibration (settings.calibration, settings.fusion; default PIT + "
                "Boltzmann). Leave mode unset, or pass fusion='rrf' for reciprocal rank fusion"
            )
        self._retrievers = list(retrievers)
        if len(self._retrievers) < 2:
            raise ValueError(
                f"PITFusionRetriever needs at least 2 retrievers, got {len(self._retrievers)}"
            )
        self._names = (
            [f"retriever_{i}" for i in range(len(self._retrievers))]
            if names is None
            else list(names)
        )
        if len(self._names) != len(self._retrievers) or len(set(self._names)) != len(self._names):
            raise ValueError(
                f"names must be {len(self._retrievers)} distinct strings, one per retriever, "
                f"got {self._names}"
            )
        self.similarity_top_k = check_positive_int(similarity_top_k, "similarity_top_k")
        self.num_queries = check_positive_int(num_queries, "num_queries")
        self.use_async = use_async
        overrides = {
            "calibration": calibration,
            "fusion": fusion,
            "pool_cap": pool_cap,
            "consensus_beta": consensus_beta,
            "params": params,
            "weights": None if retriever_weights is None else list(retriever_weights),
        }
        self.settings = dataclasses.replace(
            settings or FusionSettings(), **{k: v for k, v in overrides.items() if v is not None}
        )
        self.settings.per_system(self._names)  # weights and caps fit the retrievers
        self._llm = None
        self.query_gen_prompt = query_gen_prompt
        if self.num_queries > 1:
            from llama_index.core import Settings
            from llama_index.core.llms.utils import resolve_llm
            from llama_index.core.retrievers.fusion_retriever import QUERY_GEN_PROMPT

            self._llm = resolve_llm(llm) if llm is not None else Settings.llm
            self.query_gen_prompt = query_gen_prompt or QUERY_GEN_PROMPT
        super().__init__(
            callback_manager=callback_manager,
            objects=objects,
            object_map=object_map,
            verbose=verbose,
        )

    # --- queries ------------------------------------------------------------------------------

    def _prompt(self, query: str) -> str:
        assert self.query_gen_prompt is not None  # set whenever num_queries > 1
        return self.query_gen_prompt.format(num_queries=self.num_queries - 1, query=query)

    def _parsed(self, text: str) -> list[QueryBundle]:
        queries = [q.strip() for q in text.strip("`").split("\n") if q.strip()]
        if self._verbose:
            logger.info("generated queries: %s", queries)
        return [QueryBundle(q) for q in queries[: self.num_queries - 1]]

    def _queries(self, query_bundle: QueryBundle) -> list[QueryBundle]:
        if self._llm is None:
            return [query_bundle]
        return [
            query_bundle,
            *self._parsed(self._llm.complete(self._prompt(query_bundle.query_str)).text),
        ]

    async def _aqueries(self, query_bundle: QueryBundle) -> list[QueryBundle]:
        if self._llm is None:
            return [query_bundle]
        reply = await self._llm.acomplete(self._prompt(query_bundle.query_str))
        return [query_bundle, *self._parsed(reply.text)]

    # --- fusion -------------------------------------------------------------------------------

    @staticmethod
    def _bundle(query_bundle: QueryBundle) -> QueryBundle:
        # children may write an embedding into the bundle: give each its own copy
        return QueryBundle(
            query_str=query_bundle.query_str,
            image_path=query_bundle.image_path,
            custom_embedding_strs=query_bundle.custom_embedding_strs,
            embedding=query_bundle.embedding,
        )

    def _jobs(self, queries: Sequence[QueryBundle]) -> list[tuple[str, BaseRetriever, QueryBundle]]:
        """One (system name, retriever, query) per list; the user's query keeps the plain
        names, generated query ``j`` adds ``@q<j>``."""
        return [
            (name if j == 0 else f"{name}@q{j}", retriever, self._bundle(query))
            for j, query in enumerate(queries)
            for name, retriever in zip(self._names, self._retrievers, strict=True)
        ]

    def _candidates(self, name: str, found: Sequence[NodeWithScore]) -> list[Candidate]:
        for item in found:
            if item.score is None:
                raise ValueError(
                    f"retriever {name!r} returned node {item.node.node_id!r} without a score; "
                    "calibrated fusion needs every child to score its nodes"
                )
        return [node_to_candidate(item) for item in found]

    def _settings_for(self, systems: Sequence[str]) -> FusionSettings:
        if len(systems) == len(self._names):
            return self.settings
        weights, caps = self.settings.per_system(self._names)
        per_list = {
            "weights": None
            if weights is None
            else [weights[i % len(self._names)] for i in range(len(systems))],
            "pool_cap": [caps[i % len(self._names)] for i in range(len(systems))],
        }
        return dataclasses.replace(self.settings, **per_list)

    def _fuse(
        self, systems: Sequence[str], results: Sequence[Sequence[NodeWithScore]]
    ) -> list[NodeWithScore]:
        lists = {
            name: self._candidates(name, found)
            for name, found in zip(systems, results, strict=True)
        }
        fused = fuse_candidates(lists, self._settings_for(systems), top_n=self.similarity_top_k)
        return [candidate_to_node(c) for c in fused]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        jobs = self._jobs(self._queries(query_bundle))
        if self.use_async:
            from llama_index.core.async_utils import run_async_tasks

            results = run_async_tasks([retriever.aretrieve(q) for _, retriever, q in jobs])
        else:
            results = [retriever.retrieve(q) for _, retriever, q in jobs]
        return self._fuse([name for name, _, _ in jobs], results)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        jobs = self._jobs(await self._aqueries(query_bundle))
        results = await asyncio.gather(*(retriever.aretrieve(q) for _, retriever, q in jobs))
        return self._fuse([name for name, _, _ in jobs], results)
