from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

from rag_multihop import Corpus, Passage
from rag_multihop._atomic import artifact_path
from rag_multihop.graph import (
    EdgeWeights,
    EntityGraph,
    HeuristicExtractor,
    build_entity_graph,
    normalize_entity,
)
from rag_multihop.graph.build import corpus_fingerprint, title_key

CORPUS = Corpus(
    [
        Passage(
            "wedding",
            "Polish Wedding is a 1998 film directed by Theresa Connelly.",
            "Polish Wedding",
        ),
        Passage(
            "connelly",
            "Theresa Connelly is an American director born in Philadelphia.",
            "Theresa Connelly",
        ),
        Passage("philly", "Philadelphia is a city in Pennsylvania.", "Philadelphia (city)"),
        Passage("rope", "Rope is a 1948 film by Alfred Hitchcock.", "Rope"),
    ]
)


class TableEncoder:
    """Unit vectors from a fixed table (unknown names get their own orthogonal-ish vector)."""

    def __init__(self, table: dict[str, list[float]], dim: int = 8) -> None:
        self.table, self._dim = table, dim

    @property
    def name(self) -> str:
        return "table"

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        rng = np.random.default_rng(0)
        rows = []
        for text in texts:
            vector = np.array(self.table.get(text, rng.normal(size=self._dim)), dtype=np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.array(rows, dtype=np.float32)


def test_title_links_mentions_and_titles_as_entities():
    graph = build_entity_graph(CORPUS)
    links = {
        (graph.passage_ids[i], graph.passage_ids[j])
        for i, j in zip(*graph.title_links.nonzero(), strict=True)
    }
    # "(city)" is dropped from the title when matching; no self links
    assert links == {("wedding", "connelly"), ("connelly", "philly")}
    entities_of_wedding = {
        graph.entity_names[j] for j in graph.mentions[graph.passage_index["wedding"]].indices
    }
    assert {"polish wedding", "theresa connelly", "1998"} <= entities_of_wedding
    assert graph.entity_frequency[graph.entity_index["theresa connelly"]] == 2
    assert graph.edge_counts == {
        "mentions": graph.mentions.nnz,
        "title_links": 2,
        "synonyms": 0,
    }


def test_adjacency_blocks_follow_edge_weights():
    graph = build_entity_graph(CORPUS)
    w, c = graph.passage_index["wedding"], graph.passage_index["connelly"]
    adjacency = graph.adjacency(EdgeWeights(mention=0.0, title_link=2.0, title_backlink=0.5))
    assert adjacency[w, c] == 2.0 and adjacency[c, w] == 0.5
    assert adjacency[: graph.n_passages, graph.n_passages :].nnz == 0  # mentions switched off
    full = graph.adjacency()
    assert full.shape == (graph.n_nodes, graph.n_nodes)
    assert full[w, graph.n_passages + graph.entity_index["1998"]] == 1.0


def test_synonym_edges_by_faiss_match_brute_force():
    names = ["nyc", "new york city", "big apple", "boston", "bean town"]
    rng = np.random.default_rng(3)
    base = rng.normal(size=(3, 8))
    table = {
        "nyc": base[0],
        "new york city": base[0] + 0.05 * rng.normal(size=8),
        "big apple": base[0] + 0.2 * rng.normal(size=8),
        "boston": base[1],
        "bean town": base[1] + 0.3 * rng.normal(size=8),
    }
    corpus = Corpus([Passage(f"p{i}", "", title=name) for i, name in enumerate(names)])
    encoder = TableEncoder(table)
    graph = build_entity_graph(corpus, encoder=encoder, synonym_threshold=0.9)
    vectors = encoder.encode(list(graph.entity_names))
    cosine = vectors @ vectors.T
    expected = {
        (a, b) for a in range(len(names)) for b in range(a + 1, len(names)) if cosine[a, b] >= 0.9
    }
    found = {(int(a), int(b)) for a, b in zip(*graph.synonyms.nonzero(), strict=True) if a < b}
    assert found == expected and expected  # at least one pair, and exactly the brute-force set
    a, b = next(iter(expected))
    assert graph.synonyms[a, b] == pytest.approx(cosine[a, b], abs=1e-5)
    assert graph.synonyms[b, a] == graph.synonyms[a, b]


def test_save_load_round_trip_is_exact(tmp_path):
    graph = build_entity_graph(CORPUS, encoder=TableEncoder({}), synonym_threshold=0.0)
    graph.save(tmp_path / "g")
    loaded = EntityGraph.load(tmp_path / "g", CORPUS)
    assert loaded.passage_ids == graph.passage_ids and loaded.entity_names == graph.entity_names
    for name in ("mentions", "title_links", "synonyms"):
        diff = getattr(loaded, name) - getattr(graph, name)
        assert abs(diff).max() < 1e-6 if diff.nnz else True
    assert dict(loaded.settings) == dict(graph.settings)
    meta = json.loads((artifact_path(tmp_path / "g") / "graph.json").read_text())
    assert meta["format_version"] == 1 and meta["fingerprint"] == corpus_fingerprint(CORPUS)


def test_loading_a_graph_of_another_corpus_is_a_clear_error(tmp_path):
    build_entity_graph(CORPUS).save(tmp_path / "g")
    other = Corpus([*CORPUS[:3], Passage("rope", "Rope is a 1948 thriller.", "Rope")])
    with pytest.raises(ValueError, match="built from another corpus"):
        EntityGraph.load(tmp_path / "g", other)


def test_loading_bad_folders_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a saved EntityGraph"):
        EntityGraph.load(tmp_path, CORPUS)
    build_entity_graph(CORPUS).save(tmp_path / "g")
    meta_path = artifact_path(tmp_path / "g") / "graph.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "format_version": 99}))
    with pytest.raises(ValueError, match="unsupported EntityGraph format_version 99"):
        EntityGraph.load(tmp_path / "g", CORPUS)


def test_build_validates_its_knobs():
    with pytest.raises(ValueError, match=r"synonym_threshold must be in \[0, 1\], got 1.5"):
        build_entity_graph(CORPUS, synonym_threshold=1.5)
    with pytest.raises(ValueError, match="max_title_words must be a positive integer"):
        build_entity_graph(CORPUS, max_title_words=0)
    with pytest.raises(ValueError, match=r"EdgeWeights.mention must be a finite number >= 0"):
        EdgeWeights(mention=-1)


def test_an_extractor_returning_the_wrong_number_of_lists_is_an_error():
    class Broken:
        name = "broken"

        def extract(self, texts: Sequence[str]) -> list[list[str]]:
            return []

    with pytest.raises(ValueError, match="returned 0 lists for 4 texts"):
        build_entity_graph(CORPUS, Broken())


def test_progress_bar_can_be_switched_on_and_off(capsys):
    build_entity_graph(CORPUS, show_progress=False)
    assert capsys.readouterr().err == ""
    build_entity_graph(CORPUS, show_progress=True)
    assert "extracting entities" in capsys.readouterr().err


# --- extraction -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Lord of the Rings was filmed in New Zealand.", ["lord of the rings", "new zealand"]),
        ("Born on 4 July 1804 in Salem.", ["1804-07-04", "1804", "salem"]),
        ("He died on March 3, 1991 in Paris, France.", ["1991-03-03", "1991", "paris", "france"]),
        ("Are Tito Gobbi and Kevin Costner from one country?", ["tito gobbi", "kevin costner"]),
        ("It sold 12,000 copies in 7 days.", ["12000"]),
        ("who directed rope?", []),
    ],
)
def test_heuristic_extractor(text, expected):
    assert HeuristicExtractor().extract([text]) == [expected]


def test_extractor_switches():
    text = "In 1990 Paris met Jean-Luc Godard."
    assert HeuristicExtractor(include_numbers=False).extract([text]) == [
        ["paris", "jean luc godard"]
    ]
    assert HeuristicExtractor(include_single_words=False).extract([text]) == [
        ["1990", "jean luc godard"]
    ]


def test_normalisation():
    assert normalize_entity("  The Beatles' ") == "beatles"
    assert normalize_entity("Anhalt-Zerbst's") == "anhalt zerbst"
    assert normalize_entity("Café Müller") == "cafe muller"
    assert title_key("John Smith (footballer, born 1950)") == "john smith"


def test_a_month_name_written_with_a_look_alike_letter_is_no_date() -> None:
    """The case-blind month patterns match ``ſ``, ``ı`` and ``İ`` as ``s`` and ``i``: such a
    name is read as no date (it raised ``KeyError`` and stopped the graph build)."""
    extractor = HeuristicExtractor()
    for text in ("Signed Auguſt 12, 1790.", "Opened in Aprıl 2001.", "Born APRİL 5, 2001."):
        names = extractor.extract([text])[0]
        assert not any(name.count("-") for name in names if name[:1].isdigit()), names
    assert "2001-04-05" in extractor.extract(["Born April 5, 2001."])[0]
