"""Large inputs stay linear and short in the logs; judges and settings fail clearly."""

from __future__ import annotations

import logging
import time

import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.bridge.judges import check_judgement
from rag_multihop.graph import GraphRetriever, HeuristicExtractor, build_entity_graph
from rag_multihop.llm import LLMSettings

SENTENCE = (
    "On 12 March 1921 the Veldmark Ropeworks of Ostby, founded by Marit Hallendor, shipped "
    "4,500 coils to Merrin Valley; in May 1930 its rival, the North Sea Cordage Company, "
    "answered with 12,000 coils. "
)


def _cpu_seconds(read, text: str) -> float:
    """CPU seconds of ``read(text)`` in this process, best of three (not wall time: other
    processes on a shared machine preempt it, which made a wall-clock ratio flaky)."""
    times = []
    for _ in range(3):
        start = time.process_time()
        read(text)
        times.append(time.process_time() - start)
    return min(times)


def _best_of_three(text: str) -> float:
    """CPU seconds of entity extraction over ``text`` (:func:`_cpu_seconds`)."""
    extractor = HeuristicExtractor()
    return _cpu_seconds(lambda t: extractor.extract([t]), text)


def test_entity_extraction_is_linear_in_passage_length() -> None:
    short, long = SENTENCE * 150, SENTENCE * 1200  # about 30 KB and 240 KB
    ratio = _best_of_three(long) / _best_of_three(short)
    assert ratio < 20, f"8x the text took {ratio:.1f}x the time (linear is ~8, quadratic ~64)"


def test_a_huge_query_is_not_logged_whole(caplog: pytest.LogCaptureFixture) -> None:
    corpus = Corpus([Passage("a", "Ostby is a town.", title="Ostby")])
    retriever = GraphRetriever(build_entity_graph(corpus), corpus)
    query = Query("x " * 150_000)  # 300 KB, no entity of the graph, no seed retriever
    with caplog.at_level(logging.WARNING):
        assert retriever.retrieve(query) == []
    assert caplog.records and all(len(r.getMessage()) < 1_000 for r in caplog.records)
    assert "characters)" in caplog.text


@pytest.mark.parametrize(
    ("scores", "shown"),
    [
        (["high", 0.5], "0: 'high'"),
        ([0.5, None], "1: None"),
        ([True, 0.5], "0: True"),
        (np.array(["0.5", "0.7"]), "0: '0.5'"),
    ],
)
def test_non_numeric_judge_scores_name_the_judge_and_the_value(scores, shown) -> None:
    with pytest.raises(ValueError, match=rf"judge my-judge returned non-numeric scores .*{shown}"):
        check_judgement(scores, 2, "my-judge")
    with pytest.raises(ValueError, match=r"judge my-judge returned 'bad', not a list of scores"):
        check_judgement("bad", 2, "my-judge")


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-AbCdEf123456",
        "sk_live_51HxYzAbCdEf",
        "AKIAIOSFODNN7EXAMPLE",
        "aB3dE5fG7hJ9kL1mN3pQ5rS7",
    ],
)
def test_a_key_given_as_the_variable_name_is_refused_without_echo(secret: str) -> None:
    with pytest.raises(ValueError, match="not the key itself") as caught:
        LLMSettings("openai/gpt-4o-mini", api_key_env=secret)
    assert secret not in str(caught.value)
    assert LLMSettings("openai/gpt-4o-mini", api_key_env="MY_PROVIDER_KEY").api_key_env


def test_the_llama_index_judge_refuses_a_key_and_never_serialises_it() -> None:
    postprocessor = pytest.importorskip("llama_index.postprocessor.rag_multihop")
    secret = "sk-proj-AbCdEf123456"
    with pytest.raises(ValueError, match="not the key itself") as caught:
        postprocessor.BridgeJudgeRerank(llm="openai/gpt-4o-mini", api_key_env=secret)
    assert secret not in str(caught.value)
    judge = postprocessor.BridgeJudgeRerank(llm="openai/gpt-4o-mini", api_key_env="OPENAI_API_KEY")
    assert judge.to_dict()["api_key_env"] == "OPENAI_API_KEY"


@pytest.mark.parametrize(
    "unit",
    [
        "Ab or Cd ",  # an opening's 'X or Y' read over a text without a sentence end
        "Ab known as ",  # the names after each 'known as'
        "((Ab) ",  # parentheses, nested deeper at each repeat
        'Ab "Cd" (German: Ef) ',  # quoted names and translations
        "Who (Ab) is Cd, Ef or ",  # a question's parentheses and appositions
        "David Elliot (Abc), ",  # a name found at every repeat, qualified
    ],
)
def test_reading_names_is_linear_in_text_length(unit: str) -> None:
    from rag_multihop.multihop.qualifiers import narrowed
    from rag_multihop.multihop.subjects import text_subjects
    from rag_multihop.multihop.titles import TitleIndex

    index = TitleIndex([["a", "David Elliot"], ["b", "David Elliot"]])

    def read(text: str) -> None:
        text_subjects(text)
        narrowed(index.mentions(text), text, lambda row: text)

    short, long = unit * 1_000, unit * 8_000
    ratio = _cpu_seconds(read, long) / max(_cpu_seconds(read, short), 1e-4)
    assert ratio < 20, f"8x the text took {ratio:.1f}x the time (linear is ~8, quadratic ~64)"
