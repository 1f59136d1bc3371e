"""The shared chat logic: corpus folders, the method registry, questions, evidence, account."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
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


def test_the_aar_model_is_trained_once_by_sessions_at_once_then_reused(
    tmp_path: Path, hashing_encoder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="chatkit")
    corpus = chatkit.load_chat_corpus(encoder=hashing_encoder, cache=tmp_path)
    with ThreadPoolExecutor(2) as pool:  # two sessions choosing AAR together
        [path, same] = pool.map(lambda _: corpus.aar_model(), range(2))
    assert same == path and caplog.text.count("training the association model") == 1
    version = (path / "CURRENT").read_text()
    later = chatkit.load_chat_corpus(encoder=hashing_encoder, cache=tmp_path)  # a new start
    assert later.aar_model() == path and (path / "CURRENT").read_text() == version
    assert caplog.text.count("training the association model") == 1


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
        _source("fill", backfill=1.0, dense=0.4),
        _source("pooled", judge=0.2, retrieval=0.5),
        _source("second", judge=0.9, judge_cal=0.8, search_e1=0.7),
    ]
    trace = {"bridge_id": "bridge", "pool_ids": ["second", "pooled"], "entities": ["Bo Lind"]}
    chain = chatkit.evidence_chain(sources, "bridge", "Because [2], see [9].", trace)
    assert [(e.number, e.source.id, e.step, e.cited) for e in chain] == [
        (1, "bridge", "hop 1", False),
        (2, "second", "hop 2", True),
        (3, "fill", "related", False),
        (4, "pooled", "related", False),
    ]  # numbered in display order; a pool passage no search from hop 1 found is related
    assert [e.role for e in chain] == [
        "the bridge: best match for the question",
        "reached from hop 1 via Bo Lind",
        "a hop-1 match kept to fill the list",
        "found by the search for the question",
    ]
    # the signals alone say nothing about hops: without the trace the chain has none
    assert {e.step for e in chatkit.evidence_chain(sources, "bridge")} == {"ranked"}
    shown = chatkit.signal_items(dict(sources[3].signals), "bridge", trace)
    assert ("search_e1", "score in the search for “Bo Lind”, a name in hop 1", 0.7) in shown


def test_evidence_chain_reads_the_multihop_trace() -> None:
    sources = [
        Source("b", "Bo Lind", "Bo Lind was born in Arle.", 0.5, {"link": 0.9, "pair": 2.1}),
        Source("a", "Film A", "Film A was directed by Bo Lind.", 0.5, {"named": 1.0}),
        _source("tail", fill=3.0, fill_cal=0.5, graph=0.01, graph_cal=0.9),
        _source("near", dense=0.4),
    ]
    trace = {"pair": ["a", "b"], "mentions": [["Film A", ["a"]]]}
    chain = chatkit.evidence_chain(sources, "multihop", trace=trace)
    assert [(e.number, e.source.id, e.step) for e in chain] == [
        (1, "a", "hop 1"),
        (2, "b", "hop 2"),
        (3, "tail", "related"),
        (4, "near", "related"),
    ]
    assert chain[0].role == "first passage of the best pair (its title is named in the question)"
    assert chain[1].role == "reached from hop 1 via Bo Lind"
    assert chain[2].role == "reached through the entity graph from the pair"
    assert chain[3].role == "similar to the question"  # not "reached from hop 1"
    unlinked = [Source("x", "X", "x", 0, {}), Source("y", "Y", "y", 0, {})]
    assert chatkit.evidence_chain(unlinked, "multihop", trace={"pair": ["x", "y"]})[1].role == (
        "second passage of the best pair"
    )


def test_the_answer_cites_cards_by_their_display_number() -> None:
    sources = [
        Source("b", "Bo Lind", "Bo Lind was born in Arle.", 0.5, {}),
        Source("a", "Film A", "Film A was directed by Bo Lind.", 0.5, {}),
    ]
    condensed = chatkit.condense("Where was the director of Film A born?", [])
    retrieval = chatkit.make_retrieval(condensed, sources, "multihop", {"pair": ["a", "b"]})
    assert [s.id for s in retrieval.sources] == ["a", "b"]
    assert (
        retrieval.answer.text == "Film A was directed by Bo Lind [1]. Bo Lind was born in Arle [2]."
    )
    assert [(e.number, e.cited) for e in retrieval.evidence] == [(1, True), (2, True)]
    nothing = chatkit.make_retrieval(condensed, [], "dense")
    assert nothing.answer.text == "" and nothing.evidence == ()


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


def test_a_small_model_never_rewrites_and_a_capable_ones_rewrite_is_checked() -> None:
    asked: list[str] = []

    def statement(prompt: str) -> str:
        asked.append(prompt)
        return "Condensed question: Marit Hallendor was born in Brennick."

    first = chatkit.Turn(
        "Who founded Veldmark Ropeworks?", (chatkit.Subject("Marit Hallendor", True),)
    )
    small = chatkit.Conversation(llm_condense=False)
    small.turns.append(first)
    assert (
        small.condense("When did she die?", statement).standalone == "When did Marit Hallendor die?"
    )
    assert asked == []
    capable = chatkit.Conversation(llm_condense=True)
    capable.turns.append(first)
    refused = capable.condense("When did she die?", statement)
    assert refused.standalone == "When did Marit Hallendor die?" and len(asked) == 1
    assert refused.how.startswith("model rewrite refused: not a question")

    def timeout(prompt: str) -> str:
        raise TimeoutError("no reply in 96 s")

    failed = capable.condense("When did she die?", timeout)
    assert failed.standalone == "When did Marit Hallendor die?"
    assert failed.how == "model rewrite failed (TimeoutError: no reply in 96 s); refers back: she"
    assert chatkit.uses_llm_condense(LOCAL, None) is False
    assert chatkit.uses_llm_condense(LLMSettings("openai/gpt-4o-mini"), True) is False


def _events(answer_pieces: list[str], fail: bool = False) -> chatkit.TurnEvents:
    source = Source("a", "Film A", "Film A was directed by Bo Lind.", 0.5, {"dense": 0.5})
    condensed = chatkit.Condensed("Who directed it?", "Who directed Film A?", ("Film A",), "x")
    retrieval = chatkit.make_retrieval(condensed, [source], "dense")
    yield retrieval

    def pieces():
        yield from answer_pieces
        if fail:
            raise TimeoutError("the model took longer than 96 s")

    generated, error = yield from chatkit.generate(pieces())
    return chatkit.finish_turn(retrieval, generated, TurnAccount(), error)


def test_a_terminal_turn_prints_the_passage_answer_then_the_model_and_survives_a_timeout() -> None:
    out: list[str] = []
    result = chatkit.print_turn(
        chatkit.TurnStream(_events(["It ", "was ", "Bo."], fail=True)), "m", out.append
    )
    text = "".join(out)
    assert text.startswith(
        "Film A was directed by Bo Lind [1].\n  (searched for: Who directed Film A?)"
    )
    assert "  m (generated)> It was Bo.\n" in text
    assert "! the model failed: TimeoutError: the model took longer than 96 s" in text
    assert (
        result.answer == "Film A was directed by Bo Lind [1]." and result.generated == "It was Bo."
    )
    assert [e.cited for e in result.evidence] == [True]


class Failing:
    method, settings = "dense", LOCAL

    def __init__(self) -> None:
        self.asked = 0

    def stream(self, message: str) -> chatkit.TurnStream:
        self.asked += 1
        if self.asked == 1:
            raise TimeoutError("condense call timed out\nTraceback (most recent call last): ...")
        return chatkit.TurnStream(_events(["ok"]))

    def reset(self) -> None:
        pass


def test_the_repl_prints_one_line_for_a_failed_turn_and_goes_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    chat = Failing()
    assert chatkit.repl(chat, ["first?", "second?"]) == 0
    out = capsys.readouterr().out
    assert "! the turn failed: TimeoutError: condense call timed out. Ask again." in out
    assert "Traceback" not in out and chat.asked == 2 and "Bo Lind [1]" in out


class FailingInTheBackground(Failing):
    def stream(self, message: str) -> chatkit.TurnStream:
        def helper() -> None:  # as LlamaIndex's memory writer thread fails with the model
            raise ConnectionError("the model is down")

        worker = threading.Thread(target=helper)
        worker.start()
        worker.join()
        return super().stream(message)


def test_a_background_thread_failing_prints_no_traceback(
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    printed: list[BaseException | None] = []  # what the default hook would print
    monkeypatch.setattr(threading, "excepthook", lambda args: printed.append(args.exc_value))
    with caplog.at_level(logging.DEBUG, logger=chatkit.logger.name):
        assert chatkit.repl(FailingInTheBackground(), ["first?", "second?"]) == 0
    assert printed == [] and "a background thread failed: ConnectionError" in caplog.text
    assert "! the turn failed: TimeoutError" in capsys.readouterr().out
    after = threading.Thread(target=lambda: 1 / 0)  # the app's hook is back after the loop
    after.start()
    after.join()
    assert len(printed) == 1 and isinstance(printed[0], ZeroDivisionError)


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


def test_aar_and_rala_values_are_stored_in_the_corpus_index_once(
    tmp_path: Path, minilm, llama_index_reader
) -> None:
    from rag_multihop.store import CorpusIndex

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "# Alpha\n\nAlpha founded Beta in Gamma.\n\n# Beta\n\nBeta is a company in Gamma.\n"
    )
    corpus = chatkit.load_chat_corpus(
        tmp_path / "docs", reader=llama_index_reader, encoder=minilm, cache=tmp_path
    )
    path = corpus.rala_index()
    version = CorpusIndex(path).version
    assert corpus.rala_index() == path and CorpusIndex(path).version == version  # not redone
    info = CorpusIndex(path).info()
    assert info["sidecars"]["rala"]["rows"] == len(corpus.corpus) == info["passages"]
