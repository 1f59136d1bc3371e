"""The shared chat logic: corpus folders, the method registry, questions, evidence, account."""

from __future__ import annotations

from pathlib import Path

import chatkit
import folders
import numpy as np
import pytest
from chatkit import ChatInputError, Source, TurnAccount

from rag_multihop.llm import LLMAccount, LLMSettings

LOCAL = LLMSettings("local")


def test_folder_passages_titles_and_ids(tmp_path: Path, llama_index_reader) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "marit.md").write_text("# Marit Hallendor\n\nBorn in Kelmsby.\n")
    (tmp_path / "rope_works.txt").write_text("Veldmark Ropeworks.\n\n" + "word " * 200)
    passages = folders.read_folder(tmp_path, llama_index_reader)
    assert [p.id for p in passages][:2] == ["notes/marit.md#0", "rope_works.txt#0"]
    assert passages[0].title == "marit › Marit Hallendor"
    assert passages[1].title == "rope works"
    assert all(len(p.text) <= folders.CHUNK_CHARS for p in passages)


def test_binary_files_are_skipped_and_named(
    tmp_path: Path, llama_index_reader, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "good.txt").write_text("Zelnov is a town.")
    (tmp_path / "blob.txt").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    passages = folders.read_folder(tmp_path, llama_index_reader)
    assert [p.id for p in passages] == ["good.txt#0"]
    assert "blob.txt" in caplog.text and "latin1.md" in caplog.text


def test_folder_without_readable_text_is_a_clear_error(tmp_path: Path, llama_index_reader) -> None:
    with pytest.raises(ChatInputError, match="the folder is empty"):
        folders.read_folder(tmp_path, llama_index_reader)
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    (tmp_path / "blob.txt").write_bytes(b"\x00\x00")
    with pytest.raises(
        ChatInputError,
        match=r"skipped: blob.txt \(binary or not UTF-8\), image.png \(not PDF, HTML, Markdown",
    ):
        folders.read_folder(tmp_path, llama_index_reader)
    with pytest.raises(ChatInputError, match="does not exist"):
        folders.read_folder(tmp_path / "missing", llama_index_reader)


def test_the_demo_corpus_is_embedded_once_then_loaded(tmp_path: Path, hashing_encoder) -> None:
    class Counting:
        name, dim, calls = hashing_encoder.name, hashing_encoder.dim, 0

        def encode(self, texts, *, show_progress=False):
            Counting.calls += 1
            return hashing_encoder.encode(texts)

    first = chatkit.load_chat_corpus(encoder=Counting(), cache=tmp_path / "c")
    again = chatkit.load_chat_corpus(encoder=Counting(), cache=tmp_path / "c")
    assert Counting.calls == 1 and first.folder == again.folder
    np.testing.assert_array_equal(first.vectors, again.vectors)


def test_the_corpus_index_is_built_once_then_reopened(
    tmp_path: Path, hashing_encoder, llama_index_reader
) -> None:
    from rag_multihop.store import CorpusIndex

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Alpha founded Beta.\n\nBeta is in Gamma.")
    load = lambda: chatkit.load_chat_corpus(  # noqa: E731
        tmp_path / "docs", reader=llama_index_reader, encoder=hashing_encoder, cache=tmp_path
    )
    corpus = load()
    path = corpus.corpus_index()
    pointer = (path / "CURRENT").stat().st_mtime_ns
    again = load()
    assert again.corpus_index() == path and (path / "CURRENT").stat().st_mtime_ns == pointer
    index = CorpusIndex(path)
    assert index.snapshot().corpus.ids == corpus.corpus.ids
    assert index.encoder_matches(hashing_encoder)
    demo = chatkit.load_chat_corpus(encoder=hashing_encoder, cache=tmp_path)
    assert demo.corpus_index() == demo.corpus_index()  # built once in the demo's own folder
    assert CorpusIndex(demo.corpus_index()).snapshot().corpus.ids == demo.corpus.ids


def test_questions_empty_and_too_long_are_refused() -> None:
    with pytest.raises(ChatInputError, match="Type a question first"):
        chatkit.check_question("   ", LOCAL)
    limit = chatkit.question_limit(LOCAL)
    assert chatkit.check_question(" x" * (limit // 2), LOCAL)
    with pytest.raises(ChatInputError, match=rf"{limit + 1:,} characters; at most {limit:,}"):
        chatkit.check_question("y" * (limit + 1), LOCAL)


def test_unknown_method_and_incomplete_builders() -> None:
    with pytest.raises(
        ChatInputError, match="choose from: dense, multihop, graph-fusion, bridge, aar, coop"
    ):
        chatkit.get_method("coop-typo")
    with pytest.raises(RuntimeError, match=r"missing \['aar', 'coop', 'multihop'\]"):
        chatkit.check_builders({"dense": 1, "graph-fusion": 1, "bridge": 1}, "x")


def _source(i: str, **signals: float) -> Source:
    return Source(i, i.title(), f"text {i}", 0.5, signals)


def test_evidence_chain_reads_the_bridge_trace() -> None:
    sources = [
        _source("bridge", bridge=1.0, dense=0.8),
        _source("second", judge=0.9, judge_cal=0.8),
        _source("fill", backfill=1.0, dense=0.4),
    ]
    trace = {"bridge_id": "bridge", "pool_ids": ["second", "other"]}
    chain = chatkit.evidence_chain(sources, "bridge", "Because [2], see [9].", trace)
    assert [(e.number, e.step, e.cited) for e in chain] == [
        (1, "hop 1", False),
        (3, "hop 1", False),
        (2, "hop 2", True),
    ]
    assert chain[0].role.startswith("the bridge") and "fill" in chain[1].role
    # the signals alone say nothing about hops: without the trace the chain has none
    assert {e.step for e in chatkit.evidence_chain(sources, "bridge")} == {"ranked"}


def test_evidence_chain_reads_the_multihop_trace() -> None:
    sources = [
        _source("b", named=0.0, link=0.9, pair=2.1),
        _source("a", named=1.0, pair=2.1),
        _source("tail", fill=3.0, fill_cal=0.5, graph=0.01, graph_cal=0.9),
    ]
    trace = {"pair": ["a", "b"], "mentions": [["Film A", ["a"]]]}
    chain = chatkit.evidence_chain(sources, "multihop", trace=trace)
    assert [(e.number, e.step) for e in chain] == [(2, "hop 1"), (1, "hop 2"), (3, "related")]
    assert "named in the question" in chain[0].role and "named" not in chain[1].role
    assert chain[2].role == "listed by fill and graph"


def test_methods_without_hops_rank_and_name_their_fused_systems() -> None:
    fused = [_source("a", dense_cal=0.9, graph_cal=0.2), _source("b", graph=0.1, graph_cal=0.7)]
    chain = chatkit.evidence_chain(fused, "graph-fusion")
    assert [(e.step, e.role) for e in chain] == [
        ("ranked", "listed by dense and graph"),
        ("ranked", "listed by graph"),
    ]
    assert chatkit.evidence_chain([_source("c", rala=0.5)], "coop")[0].role == (
        "ranked by CoopRAG RaLa rerank"
    )


@pytest.mark.parametrize("method", list(chatkit.METHODS))
def test_every_signal_shown_is_labelled_from_the_vocabulary(method: str) -> None:
    vocabulary = {n: m for v in chatkit.METHODS[method].signals for n, m in v.items()}
    names = [n.replace("<i>", "1").replace("<system>", "dense") for n in vocabulary]
    shown = chatkit.signal_items(dict.fromkeys(names, 0.5), method)
    assert shown and all(meaning != name for name, meaning, _ in shown)
    assert {n for n, _, _ in shown}.isdisjoint(chatkit.HIDDEN_SIGNALS)


def test_the_default_method_has_the_best_recall_in_the_methods_table() -> None:
    """``DEFAULT_METHOD``'s reason (docs/benchmarks.md's methods table) still holds."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md").read_text()
    table = text.split("## Methods at a glance")[1].split("\n\n")[1]
    recall: dict[str, list[float]] = {}
    for row in table.splitlines()[2:]:
        cells = [c.strip() for c in row.split("|")[1:4]]
        if all(c.replace(".", "").split(" ")[0].isdigit() for c in cells[1:]):
            recall[cells[0]] = [float(c.split(" ")[0]) for c in cells[1:]]
    best = [max(values[i] for values in recall.values()) for i in range(2)]
    mine = next(v for name, v in recall.items() if name.startswith(f"`{chatkit.DEFAULT_METHOD}`"))
    assert mine == best


def test_account_adds_up() -> None:
    condense = LLMAccount(calls=1, prompt_tokens=30, completion_tokens=5, cost=0.0)
    answer = LLMAccount(calls=1, prompt_tokens=300, completion_tokens=40, cost=0.0)
    account = TurnAccount(condense=condense, answer=answer, latency_s=2.0)
    assert account.total.calls == 2 and account.total.total_tokens == 375
    assert account.summary().startswith("2 LLM calls · 375 tokens (330 in, 45 out) · cost $0")
    unknown = TurnAccount(answer=LLMAccount(calls=1, cost=None))
    assert "cost unknown" in unknown.summary()
    assert chatkit.spent(condense, condense + answer) == answer


def test_model_note_says_the_local_model_is_tiny() -> None:
    assert "tiny" in chatkit.model_note(LOCAL)
    assert "anthropic/claude" in chatkit.model_note(
        LLMSettings("anthropic/claude-3-5-haiku-latest")
    )


def test_llm_choice_from_flag_then_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(chatkit.LLM_ENV, raising=False)
    assert chatkit.llm_settings().model == "local"
    monkeypatch.setenv(chatkit.LLM_ENV, "ollama/llama3.1")
    assert chatkit.llm_settings().model == "ollama/llama3.1"
    assert chatkit.llm_settings("openai/gpt-4o-mini").model == "openai/gpt-4o-mini"


def test_docstring_examples_run() -> None:
    import doctest

    assert doctest.testmod(chatkit).failed == 0
