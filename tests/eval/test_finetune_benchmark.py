"""``dense-ft`` / ``rala-ft``: trained on the tune half, evaluated on the test half only."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag_multihop import Corpus
from rag_multihop.demo import load_demo_dataset
from rag_multihop.eval.harness import run_benchmark
from rag_multihop.eval.methods.finetune import FT_OPTIONS
from rag_multihop.eval.splits import split_dataset
from rag_multihop.testing import HashingEncoder


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_MULTIHOP_CACHE", str(tmp_path / "cache"))


def small():
    """Eight demo questions over their gold passages and 16 others."""
    data = load_demo_dataset()
    questions = data.questions[:8]
    gold = {pid for q in questions for pid in q.gold_ids}
    others = [p for p in data.corpus if p.id not in gold][:16]
    passages = [p for p in data.corpus if p.id in gold] + others
    return replace(data, corpus=Corpus(passages), questions=questions)


@pytest.mark.parametrize("split", ["all", "tune"])
@pytest.mark.parametrize("method", ["dense-ft", "rala-ft"])
def test_refuses_to_evaluate_the_training_questions(split, method) -> None:
    data = split_dataset(small(), split)
    with pytest.raises(ValueError, match=f"{method} fine-tunes .* run it with --split test"):
        run_benchmark(data, [method], encoder=HashingEncoder(), ks=(2,))


def test_needs_a_sentence_transformers_encoder() -> None:
    data = split_dataset(small(), "test")
    with pytest.raises(ValueError, match="sentence-transformers encoder, got 'hashing-test'"):
        run_benchmark(data, ["dense-ft"], encoder=HashingEncoder(), ks=(2,))


def test_trains_on_tune_and_evaluates_test(minilm, tmp_path) -> None:
    from rag_multihop.encoders.cache import CachedEncoder

    data = split_dataset(small(), "test")
    options = {"ft_epochs": "1", "ft_batch_size": "2", "ft_max_length": "32"}
    encoder = CachedEncoder(minilm, tmp_path / "embeddings")
    result = run_benchmark(data, ["dense", "dense-ft"], encoder=encoder, ks=(2,), options=options)
    extras = result.methods["dense-ft"].extras
    assert extras["train_questions"] == len(data.held_out) == 4
    assert extras["training"]["name"].startswith(f"{minilm.name}-ft-")
    assert extras["training"]["triples"] == sum(len(q.gold_ids) for q in data.held_out)
    assert 0.0 <= result.methods["dense-ft"].recall[2] <= 1.0
    folders = {p.name for p in (tmp_path / "embeddings").iterdir()}
    assert len(folders) == 2  # the fine-tuned encoder's vectors never share the base's cache
    again = run_benchmark(data, ["dense-ft"], encoder=encoder, ks=(2,), options=options)
    assert again.methods["dense-ft"].extras["training"] == extras["training"]  # reused


def test_options() -> None:
    assert FT_OPTIONS.read({"ft_weighting": "uniform"}).weighting == "uniform"
    with pytest.raises(ValueError, match="ft_temperature"):
        FT_OPTIONS.read({"ft_temperature": "0"})
