"""BM25 over Chinese, Japanese and Korean text: overlapping character bigrams of every CJK run;
a text without CJK characters is tokenised exactly as before (plain bm25s)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import bm25s
import numpy as np
import pytest

from rag_multihop import Corpus, Passage, Query
from rag_multihop.index import BM25Retriever
from rag_multihop.text import visible


def top_ids(corpus: list[Passage], query: str, k: int = 3) -> list[str]:
    return [c.id for c in BM25Retriever(corpus).retrieve(Query(query), k=k)]


def tokens(text: str, stemmer: str | None = "english") -> list[str]:
    return BM25Retriever([Passage("p", "any words")], stemmer=stemmer)._tokenize([text])[0]


CHINESE = [
    Passage("tower", "东京塔是位于日本东京的电波塔。"),
    Passage("capital", "北京是中华人民共和国的首都。"),
    Passage("river", "长江是亚洲最长的河流，流经上海。"),
]
JAPANESE = [
    Passage("fuji", "富士山は日本で最も高い山です。"),
    Passage("tower", "東京タワーは東京都港区にある電波塔です。"),
    Passage("coffee", "コーヒーは世界中で飲まれている。"),
]
KOREAN = [
    Passage("seoul", "서울은 대한민국의 수도이다."),
    Passage("busan", "부산은 대한민국 제2의 도시이다."),
    Passage("kimchi", "김치는 한국의 전통 음식이다."),
]
MIXED = [
    Passage("tokyo", "Tokyo Tower 东京塔 was built in 1958."),
    Passage("golden", "The Golden Gate Bridge 金门大桥 opened in 1937."),
    Passage("eiffel", "The Eiffel Tower was built in 1889 for the World's Fair."),
]


@pytest.mark.parametrize(
    ("corpus", "query", "first"),
    [
        (CHINESE, "东京塔", "tower"),
        (CHINESE, "中国的首都是北京", "capital"),
        (CHINESE, "长江", "river"),
        (JAPANESE, "東京タワー", "tower"),
        (JAPANESE, "富士山の高さ", "fuji"),
        (JAPANESE, "ｺｰﾋｰ", "coffee"),  # half-width katakana read as full width
        (KOREAN, "서울에서", "seoul"),  # the particle differs, the bigram 서울 matches
        (KOREAN, "김치", "kimchi"),
        (MIXED, "东京塔", "tokyo"),
        (MIXED, "金门大桥", "golden"),
        (MIXED, "Eiffel Tower 1889", "eiffel"),
    ],
)
def test_the_passage_that_shares_the_cjk_words_ranks_first(
    corpus: list[Passage], query: str, first: str
) -> None:
    assert top_ids(corpus, query)[0] == first


def test_cjk_words_match_only_passages_that_contain_them() -> None:
    assert top_ids(CHINESE, "东京塔") == ["tower"]
    assert top_ids(MIXED, "东京塔") == ["tokyo"]
    assert top_ids(KOREAN, "부산") == ["busan"]


def test_a_query_without_shared_words_finds_nothing_and_latin_queries_work_as_before() -> None:
    assert top_ids(CHINESE, "埃菲尔铁塔") == []  # bigrams 埃菲 菲尔 尔铁 铁塔: none indexed
    assert top_ids(CHINESE, "Tokyo tower") == []
    assert top_ids(JAPANESE, "ロンドン") == []
    assert top_ids(KOREAN, "Seoul") == []
    assert top_ids(MIXED, "Golden Gate") == ["golden"]


def test_mixed_text_keeps_the_latin_tokens_and_adds_the_bigrams_in_text_order() -> None:
    text = "Tokyo Tower 东京塔 was built in 1958"
    assert tokens(text) == ["tokyo", "tower", "东京", "京塔", "built", "1958"]
    assert tokens("東京Tower2020", stemmer=None) == ["東京", "tower2020"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("东京塔是位于日本", ["东京", "京塔", "塔是", "是位", "位于", "于日", "日本"]),
        ("富士山は高い", ["富士", "士山", "山は", "は高", "高い"]),  # kana and kanji: one run
        ("トム・ハンクス", ["トム", "ハン", "ンク", "クス"]),  # the middle dot separates
        ("ｺｰﾋｰ", ["コー", "ーヒ", "ヒー"]),
        ("서울은 수도", ["서울", "울은", "수도"]),
        ("A 猫 B", ["猫"]),  # a run of one character is that character
        ("佐々木", ["佐々", "々木"]),
    ],
)
def test_cjk_runs_become_overlapping_bigrams(text: str, expected: list[str]) -> None:
    assert tokens(text) == tokens(text, stemmer=None) == expected


def test_punctuation_only_cjk_text_behaves_like_any_empty_text() -> None:
    retriever = BM25Retriever(CHINESE)
    for empty in ["。、！", "「」（）？", "...!?", "the of"]:
        assert retriever.retrieve(Query(empty), k=3) == []
    for empty in ["。、！", "\u3000\u3000", "...!?", "  ", ""]:
        assert not retriever.scores(empty).any()
    for blank in ["\u3000\u3000", "  "]:  # a blank query, ideographic space or not, is refused
        with pytest.raises(ValueError, match="non-empty"):
            Query(blank)
    with pytest.raises(ValueError, match="all 2 passages are empty, punctuation or stopwords"):
        BM25Retriever(Corpus([Passage("a", "。、！"), Passage("b", "\u3000")]))
    with_empty = [*CHINESE, Passage("punct", "。、！")]
    assert "punct" not in top_ids(with_empty, "东京塔 北京 长江", k=4)


# Tokens of texts without CJK characters, captured before CJK handling was added.
BEFORE = [
    (
        "The Beatles' Abbey Road (1969) was recorded in London, England.",
        ["beatl", "abbey", "road", "1969", "record", "london", "england"],
        ["beatles", "abbey", "road", "1969", "recorded", "london", "england"],
    ),
    (
        "Jean-Luc Godard's films: naïve café Zürich Ångström façade.",
        ["jean", "luc", "godard", "film", "naïv", "café", "zürich", "ångström", "façad"],
        ["jean", "luc", "godard", "films", "naïve", "café", "zürich", "ångström", "façade"],
    ),
    (
        "Фёдор Михайлович Достоевский родился в Москве в 1821 году.",
        ["фёдор", "михайлович", "достоевский", "родился", "москве", "1821", "году"],
        ["фёдор", "михайлович", "достоевский", "родился", "москве", "1821", "году"],
    ),
    (
        "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας· Σωκράτης.",
        ["αθήνα", "είναι", "πρωτεύουσα", "της", "ελλάδας", "σωκράτης"],
        ["αθήνα", "είναι", "πρωτεύουσα", "της", "ελλάδας", "σωκράτης"],
    ),
    (
        "e-mail: john_doe@example.com, 3.14 and x2 I a of ½ ² ３ ＴＯＫＹＯ Ｔｏｗｅｒ",
        ["mail", "john_do", "exampl", "com", "14", "x2", "ｔｏｋｙｏ", "ｔｏｗｅｒ"],
        ["mail", "john_doe", "example", "com", "14", "x2", "ｔｏｋｙｏ", "ｔｏｗｅｒ"],
    ),
    (
        "Of\u00adfice Sta\u200bff  running runners ran",
        ["offic", "staff", "run", "runner", "ran"],
        ["office", "staff", "running", "runners", "ran"],
    ),
    ("", [], []),
    ("  ...!?  ", [], []),
]


@pytest.mark.parametrize(("text", "stemmed", "unstemmed"), BEFORE)
def test_texts_without_cjk_keep_their_tokens(
    text: str, stemmed: list[str], unstemmed: list[str]
) -> None:
    assert tokens(text) == stemmed
    assert tokens(text, stemmer=None) == unstemmed


def plain_bm25s(texts: list[str], stemmer: str | None) -> list[list[str]]:
    """The tokens before CJK handling: bm25s's defaults over the visible text."""
    retriever = BM25Retriever([Passage("p", "any words")], stemmer=stemmer)
    return bm25s.tokenize(
        [visible(text) for text in texts],
        stopwords="en",
        stemmer=retriever._stemmer,
        return_ids=False,
        show_progress=False,
    )


# Latin, accented, Cyrillic, Greek, Arabic, Devanagari, Thai, full-width Latin, digits,
# combining marks, punctuation (CJK punctuation too, which is no CJK character), spaces and
# the invisible characters visible() drops.
NO_CJK = (
    "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789_ \n\t.,;:!?'\"()-&/"
    "àáâäçèéêëïñóöøüßÀÉÖÅæœŁłŞğı"
    "абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВЖЯ"
    "αβγδεζηθικλμνξοπρστυφχψωΑΒΓΔΩάέή"
    "مرحباकखगघनमสวัสดีＡＢＣａｂｃ１２３½²\u0301\u0308"
    "。、！？「」（）\u3000・\u00ad\u200b\u200c\u200d\u2060\ufeff"
)


@pytest.mark.parametrize("stemmer", ["english", None])
def test_random_texts_without_cjk_tokenise_as_plain_bm25s(stemmer: str | None) -> None:
    rng = random.Random(7)
    texts = ["".join(rng.choices(NO_CJK, k=rng.randint(0, 80))) for _ in range(500)]
    retriever = BM25Retriever([Passage("p", "any words")], stemmer=stemmer)
    assert retriever._tokenize(texts) == plain_bm25s(texts, stemmer)


def test_2wiki_passages_tokenise_as_plain_bm25s(shared_datasets: Path) -> None:
    path = shared_datasets / "2wikimultihopqa" / "corpus.json.gz"
    if not path.is_file():
        pytest.skip(f"no {path}")
    with gzip.open(path, "rt", encoding="utf-8") as file:
        texts = [f"{p['title']}\n{p['text']}" for p in json.load(file)[:300]]
    retriever = BM25Retriever([Passage("p", "any words")])
    assert retriever._tokenize(texts) == plain_bm25s(texts, "english")


def test_scores_of_an_english_corpus_are_those_of_plain_bm25s() -> None:
    corpus = [p for p in MIXED if p.id == "eiffel"] + [
        Passage("rope", "Halvorsen Ropeworks makes mooring ropes in Brekke."),
        Passage("river", "The Lumme river flows through the Brekke valley."),
    ]
    retriever = BM25Retriever(corpus)
    plain = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    plain.index(plain_bm25s(Corpus(corpus).texts(), "english"), show_progress=False)
    query = plain_bm25s(["ropes in the Brekke valley"], "english")[0]
    np.testing.assert_allclose(
        retriever.scores("ropes in the Brekke valley"), plain.get_scores(query), rtol=1e-6
    )
