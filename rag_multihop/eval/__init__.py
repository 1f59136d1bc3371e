"""Benchmark datasets and metrics (numpy only; no model or framework imports)."""

from rag_multihop.eval.datasets import (
    DATASETS,
    FORMATS,
    Dataset,
    DatasetSpec,
    QAExample,
    load_dataset,
    load_named,
)
from rag_multihop.eval.metrics import (
    BootstrapResult,
    WinLoss,
    all_recall_at_k,
    exact_match,
    f1_score,
    last_hop_recall_at_k,
    normalize_answer,
    paired_bootstrap,
    recall_at_k,
    recall_curve,
    wins_losses,
)

__all__ = [
    "DATASETS",
    "FORMATS",
    "BootstrapResult",
    "Dataset",
    "DatasetSpec",
    "QAExample",
    "WinLoss",
    "all_recall_at_k",
    "exact_match",
    "f1_score",
    "last_hop_recall_at_k",
    "load_dataset",
    "load_named",
    "normalize_answer",
    "paired_bootstrap",
    "recall_at_k",
    "recall_curve",
    "wins_losses",
]
