"""UAR's rankings pinned on the bundled demo corpus (HashingEncoder, a scripted unroller): the
values in ``data/uar_golden.json`` were written by the code before the refactor that moved
UAR's fusion onto ``fuse_candidates`` (issue 21); every ranking must stay the same, and every
score to float32 precision (the cosines are float32 sums whose last bit depends on the FAISS
and numpy build: faiss-cpu 1.15.1 with numpy 2.4.6 moves two of them by 6e-8).

Regenerate (only when a change of ranking is intended) with
``python -m tests.coop.test_uar_golden``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_multihop import Query
from rag_multihop.coop.uar import UARRetriever
from rag_multihop.coop.unroll import Unrolling
from rag_multihop.demo import load_demo_dataset
from rag_multihop.index.dense import DenseRetriever
from rag_multihop.testing import HashingEncoder

GOLDEN = Path(__file__).parent / "data" / "uar_golden.json"
QUESTIONS = 8
K = 10


class HalvesUnroller:
    """Deterministic stand-in for the LLM: the two halves of the question as sub-questions."""

    def _unrolling(self, question: str) -> Unrolling:
        words = question.split()
        half = len(words) // 2
        return Unrolling(question, (" ".join(words[:half]), " ".join(words[half:])))

    def unroll(self, question: str) -> tuple[Unrolling, None]:
        return self._unrolling(question), None

    async def aunroll(self, question: str) -> tuple[Unrolling, None]:
        return self._unrolling(question), None


def rankings() -> dict[str, Any]:
    data = load_demo_dataset()
    dense = DenseRetriever.from_corpus(data.corpus, HashingEncoder())
    out: dict[str, Any] = {}
    for mode in ("concatenate", "sub-questions"):
        uar = UARRetriever(dense, HalvesUnroller(), uar_mode=mode)
        out[mode] = {
            q.id: [[c.id, round(c.score, 9)] for c in uar.retrieve(Query(q.question, id=q.id), K)]
            for q in data.questions[:QUESTIONS]
        }
    return out


@pytest.mark.parametrize("mode", ["concatenate", "sub-questions"])
def test_uar_rankings_match_the_golden_file(mode: str) -> None:
    expected = json.loads(GOLDEN.read_text())[mode]
    got = rankings()[mode]
    assert got.keys() == expected.keys()
    for qid, ranked in got.items():
        assert [i for i, _ in ranked] == [i for i, _ in expected[qid]], qid
        assert [s for _, s in ranked] == pytest.approx([s for _, s in expected[qid]], rel=1e-6)


if __name__ == "__main__":
    modes = rankings()
    GOLDEN.write_text(
        "{\n"
        + ",\n".join(
            f"{json.dumps(mode)}: {{\n"
            + ",\n".join(f" {json.dumps(q)}: {json.dumps(r)}" for q, r in ranked.items())
            + "\n}"
            for mode, ranked in modes.items()
        )
        + "\n}\n"
    )
