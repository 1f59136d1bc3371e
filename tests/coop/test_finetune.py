"""Difficulty-aware fine-tuning: the weighted InfoNCE loss against a hand computation, the
weights, the batching, bad input, and one training step of the bundled MiniLM."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rag_multihop.coop.finetune import (  # noqa: E402
    Triple,
    batches,
    difficulty_weights,
    fine_tune,
    weighted_info_nce,
)
from rag_multihop.coop.settings import FineTuneSettings  # noqa: E402
from rag_multihop.testing import polish_wedding_passages  # noqa: E402


def _hand_loss(q, p, n, w, tau):
    """Eq. 5 by hand: per question, -log softmax over the batch's positives and negatives."""
    docs = [[x / math.hypot(*d) for x in d] for d in p + n]
    total = 0.0
    for i, row in enumerate(q):
        row = [x / math.hypot(*row) for x in row]
        logits = [sum(a * b for a, b in zip(row, d, strict=True)) / tau for d in docs]
        total += w[i] * -(logits[i] - math.log(sum(math.exp(x) for x in logits)))
    return total / len(q)


def test_loss_matches_a_hand_computation() -> None:
    q = [[1.0, 0.0], [0.6, 0.8]]
    p = [[2.0, 0.1], [0.0, 1.0]]
    n = [[1.0, 1.0], [-1.0, 0.2]]
    w = [0.5, 1.5]
    got = weighted_info_nce(
        torch.tensor(q), torch.tensor(p), torch.tensor(n), torch.tensor(w), temperature=0.5
    )
    assert float(got) == pytest.approx(_hand_loss(q, p, n, w, 0.5), rel=1e-5)


def test_weights_scale_each_questions_share() -> None:
    q = torch.tensor([[1.0, 0.0], [0.6, 0.8]])
    p = torch.tensor([[1.0, 0.1], [0.1, 1.0]])
    n = torch.tensor([[0.9, 0.3], [0.5, 0.5]])
    first = weighted_info_nce(q, p, n, torch.tensor([1.0, 0.0]), 0.05)
    second = weighted_info_nce(q, p, n, torch.tensor([0.0, 1.0]), 0.05)
    both = weighted_info_nce(q, p, n, torch.tensor([1.0, 1.0]), 0.05)
    assert float(both) == pytest.approx(float(first) + float(second), rel=1e-6)


def test_loss_has_gradients() -> None:
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    loss = weighted_info_nce(q, q.detach(), -q.detach(), torch.ones(2), 0.05)
    loss.backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


@pytest.mark.parametrize(
    ("q", "p", "n", "w", "tau", "message"),
    [
        (torch.zeros(0, 2), torch.zeros(0, 2), torch.zeros(0, 2), torch.zeros(0), 1.0, "non-empty"),
        (torch.ones(2, 2), torch.ones(3, 2), torch.ones(2, 2), torch.ones(2), 1.0, "positive_vecs"),
        (torch.ones(2, 2), torch.ones(2, 2), torch.ones(2, 3), torch.ones(2), 1.0, "hard_negative"),
        (torch.ones(2, 2), torch.ones(2, 2), torch.ones(2, 2), torch.ones(3), 1.0, "one value per"),
        (
            torch.ones(2, 2),
            torch.ones(2, 2),
            torch.ones(2, 2),
            torch.tensor([1.0, float("nan")]),
            1.0,
            "finite",
        ),
        (torch.ones(2, 2), torch.ones(2, 2), torch.ones(2, 2), torch.zeros(2), 1.0, "not all 0"),
        (torch.ones(2, 2), torch.ones(2, 2), torch.ones(2, 2), torch.ones(2), 0.0, "temperature"),
    ],
)
def test_loss_refuses_bad_input(q, p, n, w, tau, message) -> None:
    with pytest.raises(ValueError, match=message):
        weighted_info_nce(q, p, n, w, tau)


def test_difficulty_weights() -> None:
    assert difficulty_weights([2, 2, 4]).tolist() == [0.75, 0.75, 1.5]
    assert difficulty_weights([2, 4], "uniform").tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="non-empty"):
        difficulty_weights([])
    with pytest.raises(ValueError, match="finite and >= 1"):
        difficulty_weights([2, float("nan")])
    with pytest.raises(ValueError, match="weighting must be one of"):
        difficulty_weights([2], "hardness")


def test_batches_hold_each_question_once() -> None:
    triples = [Triple(q, q, f"{q}{i}", "neg") for q in "abcdefg" for i in range(1 + ord(q) % 3)]
    found = batches(triples, 3, np.random.default_rng(1))
    assert sorted(i for batch in found for i in batch) == list(range(len(triples)))
    for batch in found:
        ids = [triples[i].question_id for i in batch]
        assert len(ids) == len(set(ids)) and len(batch) <= 3


def _toy_triples(polish_wedding) -> list[Triple]:
    texts = {p.id: p.embedding_text for p in polish_wedding}
    question = "Where was the director of the film Polish Wedding born?"
    others = [pid for pid in texts if pid not in ("polish-wedding", "theresa-connelly")]
    return [
        Triple("q1", question, texts["polish-wedding"], texts[others[0]]),
        Triple("q2", "Who directed Polish Wedding?", texts["theresa-connelly"], texts[others[-1]]),
    ]


@pytest.mark.parametrize(
    ("triples", "weights", "message"),
    [
        ([], [], "no training triples"),
        (None, [1.0], "got 1 weights for 2 triples"),
        (None, [1.0, float("nan")], "finite"),
    ],
)
def test_fine_tune_refuses_bad_input(tmp_path, polish_wedding, triples, weights, message) -> None:
    triples = _toy_triples(polish_wedding) if triples is None else triples
    with pytest.raises(ValueError, match=message):
        fine_tune("unused", triples, weights, tmp_path)


@pytest.fixture(scope="module")
def one_step(tmp_path_factory, minilm):
    """One step of fine-tuning the bundled MiniLM, saved to a fresh folder."""
    settings = FineTuneSettings(batch_size=2, max_length=32, learning_rate=1e-3)
    return fine_tune(
        minilm.model_name_or_path,
        _toy_triples(polish_wedding_passages()),
        [1.0, 2.0],
        tmp_path_factory.mktemp("finetune") / "ft",
        settings=settings,
        base_name="minilm",
        max_steps=1,
    )


def test_one_step_of_minilm_saves_a_new_model(one_step, minilm) -> None:
    from rag_multihop.coop.finetune import weights_fingerprint
    from rag_multihop.encoders.sentence_transformer import SentenceTransformerEncoder

    result = one_step
    assert result.steps == 1 and result.triples == 2 and math.isfinite(result.first_loss)
    assert result.name.startswith("minilm-ft-") and result.name != "minilm"
    assert not result.name.endswith(weights_fingerprint(minilm.model))
    tuned = SentenceTransformerEncoder(str(result.path), name=result.name)
    assert tuned.model.max_seq_length == minilm.model.max_seq_length  # not max_length=32
    texts = ["Who directed Polish Wedding?"]
    assert tuned.encode(texts).shape == minilm.encode(texts).shape
    assert not np.allclose(tuned.encode(texts), minilm.encode(texts), atol=1e-4)


def test_settings_refuse_bad_values() -> None:
    with pytest.raises(ValueError, match="temperature must be"):
        FineTuneSettings(temperature=0.0)
    with pytest.raises(ValueError, match="weighting must be one of"):
        FineTuneSettings(weighting="loss")
    with pytest.raises(ValueError, match="batch_size"):
        FineTuneSettings(batch_size=1)


KILLED_SAVE = """
import json, sys, time
from sentence_transformers.sentence_transformer.modules import Pooling
from rag_multihop.coop.finetune import Triple, fine_tune
from rag_multihop.coop.settings import FineTuneSettings

def paused(self, *args, **kwargs):  # the transformer's weights are written by now
    print("saving", flush=True)
    time.sleep(120)

Pooling.save = paused
base, out, triples = sys.argv[1], sys.argv[2], [Triple(*t) for t in json.loads(sys.argv[3])]
settings = FineTuneSettings(batch_size=2, max_length=32, learning_rate=1e-2, seed=7)
fine_tune(base, triples, [1.0, 1.0], out, settings=settings, max_steps=1)
"""


def test_a_fine_tune_killed_while_saving_keeps_the_previous_model(
    one_step, minilm, polish_wedding
) -> None:
    import json
    import os
    import signal
    import subprocess
    import sys
    from dataclasses import astuple

    from rag_multihop.coop.finetune import weights_fingerprint
    from rag_multihop.encoders.sentence_transformer import SentenceTransformerEncoder

    first, out = one_step, one_step.path
    triples = _toy_triples(polish_wedding)
    texts = ["Who directed Polish Wedding?"]
    before = SentenceTransformerEncoder(str(first.path)).encode(texts)
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            KILLED_SAVE,
            minilm.model_name_or_path,
            str(out),
            json.dumps([astuple(t) for t in triples]),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        line = writer.stdout.readline().strip()
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        _, errors = writer.communicate(timeout=60)
    assert line == "saving", errors[-2000:]
    kept = SentenceTransformerEncoder(str(out))
    assert first.name.endswith(weights_fingerprint(kept.model))  # the first model, whole
    assert np.allclose(kept.encode(texts), before, atol=1e-6)
