"""Dense recall when passages and questions are embedded by different encoders.

An index built in bulk with ``minilm-int8`` may be queried with the fp32 default (the two
pass the fingerprint check as one model). This measures that mixed case beside both pure
ones, over a named dataset's whole question set: exact cosine ranking of every passage
(the bench's ``dense`` method, FAISS flat inner product, ranks the same way), R@k as in
``rag-multihop bench``. Vectors come from (and go to) the shared embedding cache. Example::

    python scripts/encoder_mix_recall.py --dataset 2wiki

prints one markdown row per (passage encoder, query encoder) pair.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from rag_multihop.encoders import CachedEncoder, default_cache_dir, make_encoder
from rag_multihop.eval.datasets import load_named
from rag_multihop.eval.metrics import recall_at_k
from rag_multihop.paths import data_dir

PAIRS = (("minilm", "minilm"), ("minilm-int8", "minilm-int8"), ("minilm-int8", "minilm"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="2wiki")
    parser.add_argument("--ks", default="2,5")
    args = parser.parse_args()
    dataset = load_named(args.dataset, data_dir())
    ks = [int(k) for k in args.ks.split(",")]
    ids = list(dataset.corpus.ids)
    passages: dict[str, np.ndarray] = {}
    questions: dict[str, np.ndarray] = {}
    for name in sorted({n for pair in PAIRS for n in pair}):
        encoder = CachedEncoder(make_encoder(name), default_cache_dir())
        passages[name] = encoder.encode(dataset.corpus.texts())
        questions[name] = encoder.encode([q.question for q in dataset.questions])
    print(f"| passages | queries | {' | '.join(f'R@{k}' for k in ks)} |")
    print(f"|---|---|{'---:|' * len(ks)}")
    for passage_encoder, query_encoder in PAIRS:
        scores = questions[query_encoder] @ passages[passage_encoder].T
        top = np.argsort(-scores, axis=1, kind="stable")[:, : max(ks)]
        recalls = [
            100
            * float(
                np.mean(
                    [
                        recall_at_k([ids[j] for j in top[i]], q.gold, k)
                        for i, q in enumerate(dataset.questions)
                    ]
                )
            )
            for k in ks
        ]
        print(
            f"| {passage_encoder} | {query_encoder} | "
            + " | ".join(f"{r:.1f}" for r in recalls)
            + " |"
        )


if __name__ == "__main__":
    main()
