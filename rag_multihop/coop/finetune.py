"""Difficulty-aware retriever fine-tuning (CoopRAG §3.6), on CPU.

A copy of a sentence-transformers encoder is trained on ``(question, gold passage, hard
negative)`` triples with a weighted InfoNCE loss: each question's positive competes with
every other positive and hard negative of the batch, and its loss is weighted by its
difficulty, the number of sub-questions (Eq. 6). Without an LLM the number of gold passages
(one per hop) stands for the sub-question count. The hard negative is the highest-ranked
non-gold passage of the base encoder's dense search.

:func:`weighted_info_nce` is the loss (torch tensors in, a scalar tensor out);
:func:`difficulty_weights` the weights; :func:`fine_tune` the training loop, which saves the
trained model to a folder and names it by a fingerprint of its weights, so embeddings of
different models never share a cache. The folder is written atomically
(:mod:`rag_multihop._atomic`): a save killed midway leaves the previous model loadable.
Load it with :class:`~rag_multihop.encoders.sentence_transformer.SentenceTransformerEncoder`
(``SentenceTransformerEncoder(result.path)``), which follows the folder's ``CURRENT`` pointer.
torch is imported when these functions run.

Example (the loss on two questions, hand-checkable):
    >>> import torch
    >>> q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> loss = weighted_info_nce(q, q, -q, torch.tensor([1.0, 1.0]), temperature=1.0)
    >>> round(float(loss), 4)  # each row: -log(e / (e + 1 + 1/e + 1))
    0.6265
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_multihop._atomic import atomic_directory
from rag_multihop._optional import require
from rag_multihop.coop.settings import FineTuneSettings

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Triple:
    """One training example: a question, one of its gold passages and a hard negative
    (texts), and the question's id (a batch holds each question at most once)."""

    question_id: str
    question: str
    positive: str
    hard_negative: str


@dataclass(frozen=True)
class FineTuneResult:
    """A trained model's folder, its name (base name plus weight fingerprint) and how
    training went."""

    path: Path
    name: str
    seconds: float
    steps: int
    epochs: int
    triples: int
    first_loss: float
    last_loss: float

    def report(self) -> dict[str, Any]:
        """The result as ``bench_extras`` shows it."""
        return {**asdict(self), "path": str(self.path)}


def weighted_info_nce(
    query_vecs: torch.Tensor,
    positive_vecs: torch.Tensor,
    hard_negative_vecs: torch.Tensor,
    weights: torch.Tensor,
    temperature: float,
) -> torch.Tensor:
    """The weighted InfoNCE loss of a batch of ``B`` questions (CoopRAG Eq. 5).

    Row ``i`` of ``query_vecs`` is scored by cosine against all ``2B`` documents (the
    positives then the hard negatives), divided by ``temperature``; its loss is the cross
    entropy of its own positive ``i``. The batch loss is ``mean_i(weights[i] * loss_i)``.

    Raises ``ValueError`` for an empty batch, shapes that disagree, a non-positive
    temperature or weights that are negative, not finite or all zero.
    """
    torch = require("torch", extra="encoders")
    if query_vecs.ndim != 2 or query_vecs.shape[0] == 0:
        raise ValueError(
            "query_vecs must be a non-empty (batch, dim) matrix, "
            f"got shape {tuple(query_vecs.shape)}"
        )
    for name, tensor in (
        ("positive_vecs", positive_vecs),
        ("hard_negative_vecs", hard_negative_vecs),
    ):
        if tuple(tensor.shape) != tuple(query_vecs.shape):
            raise ValueError(
                f"{name} must have the shape of query_vecs {tuple(query_vecs.shape)}, "
                f"got {tuple(tensor.shape)}"
            )
    if tuple(weights.shape) != (query_vecs.shape[0],):
        raise ValueError(
            f"weights must hold one value per question ({query_vecs.shape[0]}), "
            f"got shape {tuple(weights.shape)}"
        )
    if (
        not bool(torch.isfinite(weights).all())
        or bool((weights < 0).any())
        or not float(weights.sum())
    ):
        raise ValueError(f"weights must be finite, >= 0 and not all 0, got {weights.tolist()}")
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    functional = torch.nn.functional
    queries = functional.normalize(query_vecs, dim=-1)
    documents = functional.normalize(torch.cat([positive_vecs, hard_negative_vecs]), dim=-1)
    logits = queries @ documents.T / temperature
    targets = torch.arange(queries.shape[0], device=queries.device)
    losses = functional.cross_entropy(logits, targets, reduction="none")
    return (weights.to(losses.dtype) * losses).mean()


def difficulty_weights(sub_question_counts: Sequence[int], weighting: str = "hops") -> np.ndarray:
    """Per-question loss weights, proportional to the sub-question counts and scaled to a
    mean of 1 (``"hops"``), or all 1 (``"uniform"``).

    >>> difficulty_weights([2, 2, 4]).tolist()
    [0.75, 0.75, 1.5]
    >>> difficulty_weights([2, 4], "uniform").tolist()
    [1.0, 1.0]
    """
    counts = np.asarray(sub_question_counts, dtype=np.float64)
    if counts.ndim != 1 or counts.size == 0:
        raise ValueError("sub_question_counts must be a non-empty list of counts")
    if not np.isfinite(counts).all() or (counts < 1).any():
        raise ValueError(f"sub-question counts must be finite and >= 1, got {counts.tolist()}")
    if weighting == "uniform":
        return np.ones_like(counts)
    if weighting != "hops":
        raise ValueError(f"weighting must be one of ['hops', 'uniform'], got {weighting!r}")
    return counts / counts.mean()


def batches(
    triples: Sequence[Triple], batch_size: int, rng: np.random.Generator
) -> list[list[int]]:
    """Triple indices in batches where no question appears twice (so a question's other
    gold passage is never its in-batch negative): round ``r`` holds every question's
    ``r``-th triple, shuffled, and batches never cross rounds.

    >>> t = [Triple("a", "", "", ""), Triple("a", "", "", ""), Triple("b", "", "", "")]
    >>> sorted(map(sorted, batches(t, 2, np.random.default_rng(0))))
    [[0, 2], [1]]
    """
    rounds: list[list[int]] = []
    seen: dict[str, int] = {}
    for index, triple in enumerate(triples):
        position = seen.get(triple.question_id, 0)
        seen[triple.question_id] = position + 1
        if position == len(rounds):
            rounds.append([])
        rounds[position].append(index)
    out: list[list[int]] = []
    for members in rounds:
        order = [members[i] for i in rng.permutation(len(members))]
        out.extend(order[i : i + batch_size] for i in range(0, len(order), batch_size))
    return [out[i] for i in rng.permutation(len(out))]


def weights_fingerprint(model: Any) -> str:
    """A short hash of a sentence-transformers model's parameters and truncation length:
    equal only for models that embed every text alike."""
    digest = hashlib.sha256(f"max_seq_length={getattr(model, 'max_seq_length', None)}".encode())
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:12]


def fine_tune(
    base_model: str | Path,
    triples: Sequence[Triple],
    weights: Sequence[float],
    out_dir: str | Path,
    *,
    settings: FineTuneSettings | None = None,
    base_name: str = "encoder",
    max_steps: int | None = None,
) -> FineTuneResult:
    """Fine-tune a copy of the sentence-transformers model at ``base_model`` on ``triples``
    (``weights[i]`` weighs triple ``i``) with :func:`weighted_info_nce`; save it to
    ``out_dir`` atomically (a model saved there before stays loadable until the new one is
    complete). ``max_steps`` stops early (tests). The result's ``name`` is
    ``f"{base_name}-ft-{weights fingerprint}"``; its ``path`` is ``out_dir``.
    """
    settings = settings or FineTuneSettings()
    if not triples:
        raise ValueError("no training triples: give at least one (question, positive, negative)")
    if len(weights) != len(triples):
        raise ValueError(f"got {len(weights)} weights for {len(triples)} triples; give one each")
    weight_array = np.asarray(weights, dtype=np.float64)
    if not np.isfinite(weight_array).all() or (weight_array < 0).any():
        raise ValueError(f"weights must be finite and >= 0, got {weight_array.tolist()}")
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"max_steps must be >= 1 or None, got {max_steps!r}")
    torch = require("torch", extra="encoders")
    st = require("sentence_transformers", extra="encoders")
    from rag_multihop.encoders.sentence_transformer import torch_threads

    torch.manual_seed(settings.seed)
    model = st.SentenceTransformer(str(base_model), device="cpu")
    saved_length = model.max_seq_length  # the saved model truncates as the base model does
    model.max_seq_length = settings.max_length
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    rng = np.random.default_rng(settings.seed)

    prepare = getattr(model, "preprocess", None) or model.tokenize  # renamed in s-t 5

    def embed(texts: list[str]) -> Any:
        return model(prepare(texts))["sentence_embedding"]

    losses: list[float] = []
    start = time.perf_counter()
    epochs = 0
    with torch_threads(torch, settings.threads):
        for _ in range(settings.epochs):
            epochs += 1
            for batch in batches(triples, settings.batch_size, rng):
                if len(batch) < 2 or not weight_array[batch].sum():
                    continue  # one triple has no in-batch negative but its own hard one
                loss = weighted_info_nce(
                    embed([triples[i].question for i in batch]),
                    embed([triples[i].positive for i in batch]),
                    embed([triples[i].hard_negative for i in batch]),
                    torch.tensor(weight_array[batch], dtype=torch.float32),
                    settings.temperature,
                )
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(float(loss.detach()))
                if max_steps is not None and len(losses) >= max_steps:
                    break
            logger.info(
                "epoch %d: %d steps, mean loss of the last 10 %.4f, %.0f s",
                epochs,
                len(losses),
                float(np.mean(losses[-10:])) if losses else float("nan"),
                time.perf_counter() - start,
            )
            if max_steps is not None and len(losses) >= max_steps:
                break
    seconds = time.perf_counter() - start
    if not losses:
        raise ValueError("no batch of two or more triples with a positive weight to train on")
    model.eval()
    model.max_seq_length = saved_length
    out = Path(out_dir)
    with atomic_directory(out) as staging:
        model.save(str(staging))
    name = f"{base_name}-ft-{weights_fingerprint(model)}"
    logger.info("fine-tuned %s in %.1f s (%d steps): %s", base_name, seconds, len(losses), name)
    return FineTuneResult(
        path=out,
        name=name,
        seconds=round(seconds, 2),
        steps=len(losses),
        epochs=epochs,
        triples=len(triples),
        first_loss=round(losses[0], 4),
        last_loss=round(float(np.mean(losses[-10:])), 4),
    )
