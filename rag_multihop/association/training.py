"""Contrastive training of the association function f with torch (the ``train`` extra).

The recipe of the paper's reference code (github.com/EridosAI/AAR, ``src/train.py``):
CLIP-style symmetric cross-entropy with in-batch negatives over ``logits = f(anchors) ·
positivesᵀ / τ``: **the anchor goes through f, the positive stays a raw embedding**, and every
pair is used in both directions. AdamW, cosine annealing per epoch, gradient clipping, shuffled
batches with the last incomplete batch dropped. Transforming both sides instead (as the paper's
formula reads) makes AAR worse than dense retrieval, so the one-sided form is not a knob.

Training is reproducible on CPU for a given ``seed``: initialisation and batch order use
torch generators seeded from it, inside ``torch.random.fork_rng`` so the caller's global
random state is left as it was.

Example (needs torch):
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> vectors = rng.normal(size=(8, 4)).astype("float32")
    >>> pairs = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])
    >>> weights, stats = train_association(vectors, pairs, TrainingConfig(epochs=2, batch_size=4))
    >>> weights.dim, stats.directed_pairs, stats.steps
    (4, 8, 4)
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rag_multihop._optional import require
from rag_multihop.association.model import LAYER_NORM_EPS, N_LINEAR, AssociationWeights
from rag_multihop.validation import (
    as_embedding_matrix,
    check_int,
    check_number,
    check_positive_int,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingConfig:
    """Hyperparameters of :func:`train_association` (defaults: the paper's).

    ``batch_size`` is an upper bound: with fewer directed pairs than that, one batch holds
    them all (a warning says so). ``threads`` sets torch's intra-op threads for the duration
    of training (restored afterwards; ``None`` keeps torch's setting). The default is one
    thread: a step's matrices (512 × 384) are too small to split well, and on a machine whose
    cores other processes also use, torch's threads wait on each other at every operation
    (measured on the 2-core project machine: 265 ms per step with 1 thread, 1,160 ms with
    2; ``docs/association.md``).
    """

    epochs: int = 100
    batch_size: int = 512
    learning_rate: float = 3e-4
    weight_decay: float = 0.01
    temperature: float = 0.05
    grad_clip: float = 1.0
    residual_init: float = 0.5
    seed: int = 0
    threads: int | None = 1

    def __post_init__(self) -> None:
        check_positive_int(self.epochs, "epochs")
        check_positive_int(self.batch_size, "batch_size")
        for name in ("learning_rate", "temperature", "grad_clip"):
            check_number(getattr(self, name), name, low=0.0, low_open=True)
        check_number(self.weight_decay, "weight_decay", low=0.0, high=1.0, high_open=True)
        check_number(self.residual_init, "residual_init")
        check_int(self.seed, "seed", low=0)
        if self.threads is not None:
            check_positive_int(self.threads, "threads")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error naming them."""
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"unknown training settings {unknown}; known: {sorted(asdict(cls()))}")
        return cls(**data)


@dataclass(frozen=True)
class TrainingStats:
    """What one training run did: sizes, the final epoch's loss and in-batch accuracy, time."""

    pairs: int
    directed_pairs: int
    passages: int
    epochs: int
    batch_size: int
    steps: int
    final_loss: float
    final_accuracy: float
    alpha: float
    seconds: float
    torch_version: str
    threads: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def train_association(
    vectors: np.ndarray,
    pairs: np.ndarray,
    config: TrainingConfig | None = None,
    *,
    show_progress: bool = False,
) -> tuple[AssociationWeights, TrainingStats]:
    """Fit f on association ``pairs`` (an ``(m, 2)`` array of rows of ``vectors``).

    ``pairs`` are unordered; each is trained in both directions (duplicates after that are
    dropped). ``vectors`` should be the L2-normalised passage embeddings the reranker will see.

    Raises:
        ValueError: no pairs, rows out of range, or bad vectors.
        ImportError: torch is not installed (names the ``train`` extra).
    """
    config = config or TrainingConfig()
    matrix = as_embedding_matrix(vectors, name="passage vectors")
    directed = _directed_pairs(pairs, len(matrix))
    batch_size = config.batch_size
    if len(directed) < batch_size:
        logger.warning(
            "only %d directed pairs, fewer than batch_size=%d: training with one batch of %d "
            "(fewer in-batch negatives than the paper's setting)",
            len(directed),
            batch_size,
            len(directed),
        )
        batch_size = len(directed)
    torch = require("torch", extra="train")
    start = time.perf_counter()
    previous_threads = torch.get_num_threads()
    try:
        if config.threads is not None:
            torch.set_num_threads(config.threads)
        threads = torch.get_num_threads()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            module = build_module(matrix.shape[1], config.residual_init)
            loss, accuracy, steps = _fit(
                torch, module, matrix, directed, batch_size, config, show_progress
            )
    finally:
        torch.set_num_threads(previous_threads)
    weights = weights_from_module(module)
    stats = TrainingStats(
        pairs=len(directed) // 2,
        directed_pairs=len(directed),
        passages=len(np.unique(directed)),
        epochs=config.epochs,
        batch_size=batch_size,
        steps=steps,
        final_loss=round(loss, 6),
        final_accuracy=round(accuracy, 6),
        alpha=round(weights.alpha, 6),
        seconds=round(time.perf_counter() - start, 3),
        torch_version=str(torch.__version__),
        threads=threads,
    )
    logger.info(
        "trained association model: %d directed pairs, %d steps, loss %.4f, in-batch accuracy "
        "%.3f, alpha %.3f, %.1f s",
        stats.directed_pairs,
        steps,
        loss,
        accuracy,
        stats.alpha,
        stats.seconds,
    )
    return weights, stats


def _directed_pairs(pairs: np.ndarray, n_rows: int) -> np.ndarray:
    array = np.asarray(pairs)
    if array.size == 0:
        raise ValueError("no association pairs to train on; give at least one pair")
    if array.ndim != 2 or array.shape[1] != 2 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"pairs must be an (m, 2) integer array of rows, got {array.shape}")
    if array.min() < 0 or array.max() >= n_rows:
        raise ValueError(
            f"pair rows must be in [0, {n_rows - 1}], got {array.min()}..{array.max()}"
        )
    array = array[array[:, 0] != array[:, 1]]
    if not len(array):
        raise ValueError("every pair joins a passage to itself; give pairs of distinct passages")
    both = np.concatenate([array, array[:, ::-1]])
    return np.unique(both, axis=0).astype(np.int64)


def build_module(dim: int, residual_init: float = 0.5) -> Any:
    """The torch module of f: ``net`` (an ``nn.Sequential``) and ``residual_weight``.

    Its ``state_dict`` names match :meth:`AssociationWeights.to_state_dict`.
    """
    torch = require("torch", extra="train")
    nn = torch.nn
    layers: list[Any] = []
    for i in range(N_LINEAR):
        layers.append(nn.Linear(dim, dim))
        if i < N_LINEAR - 1:
            layers += [nn.LayerNorm(dim, eps=LAYER_NORM_EPS), nn.GELU()]
    module = nn.Module()
    module.net = nn.Sequential(*layers)
    module.residual_weight = nn.Parameter(torch.tensor(float(residual_init)))
    return module


def module_forward(module: Any, x: Any) -> Any:
    """f on a torch batch: ``normalize(α·x + (1 − α)·net(x))`` with ``α = sigmoid(w)``."""
    torch = require("torch", extra="train")
    alpha = torch.sigmoid(module.residual_weight)
    return torch.nn.functional.normalize(alpha * x + (1 - alpha) * module.net(x), dim=-1)


def module_from_weights(weights: AssociationWeights) -> Any:
    """A torch module holding ``weights`` (for checks against the numpy forward pass)."""
    torch = require("torch", extra="train")
    module = build_module(weights.dim)
    state = {k: torch.from_numpy(v.copy()) for k, v in weights.to_state_dict().items()}
    module.load_state_dict(state)
    return module


def weights_from_module(module: Any) -> AssociationWeights:
    state = {k: v.detach().cpu().numpy().astype(np.float32) for k, v in module.state_dict().items()}
    return AssociationWeights.from_state_dict(state)


def _fit(
    torch: Any,
    module: Any,
    matrix: np.ndarray,
    directed: np.ndarray,
    batch_size: int,
    config: TrainingConfig,
    show_progress: bool,
) -> tuple[float, float, int]:
    """The training loop; returns the last epoch's mean loss, in-batch accuracy and all steps."""
    from tqdm.auto import tqdm

    functional = torch.nn.functional
    embeddings = torch.from_numpy(matrix)
    anchors_all = torch.from_numpy(directed[:, 0])
    positives_all = torch.from_numpy(directed[:, 1])
    generator = torch.Generator().manual_seed(config.seed)
    parameters = list(module.parameters())
    optimizer = torch.optim.AdamW(
        parameters, lr=config.learning_rate, weight_decay=config.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=config.epochs)
    labels = torch.arange(batch_size)
    per_epoch = len(directed) // batch_size
    module.train()
    loss_sum = correct = 0.0
    for _ in tqdm(range(config.epochs), desc="training f", unit="epoch", disable=not show_progress):
        order = torch.randperm(len(directed), generator=generator)
        loss_sum = correct = 0.0
        for step in range(per_epoch):
            batch = order[step * batch_size : (step + 1) * batch_size]
            anchors = module_forward(module, embeddings[anchors_all[batch]])
            positives = embeddings[positives_all[batch]]
            logits = anchors @ positives.T / config.temperature
            loss = (
                functional.cross_entropy(logits, labels)
                + functional.cross_entropy(logits.T, labels)
            ) / 2
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, config.grad_clip)
            optimizer.step()
            loss_sum += float(loss.detach())
            correct += float((logits.detach().argmax(dim=1) == labels).sum())
        scheduler.step()
    module.eval()
    return loss_sum / per_epoch, correct / (per_epoch * batch_size), per_epoch * config.epochs
