"""CorpusIndex: format round trip, updates, snapshots, the writer lock, bad input, damage."""

from __future__ import annotations

import gc
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import numpy as np
import pytest

from rag_multihop import Passage, Query
from rag_multihop._atomic import ArtifactError
from rag_multihop.multihop import MultiHopRetriever
from rag_multihop.multihop.subjects import NAMES_VERSION
from rag_multihop.store import CorpusIndex, IndexLockedError, IndexSettings, graph_fusion_retriever
from rag_multihop.validation import l2_normalize
from tests.store.encoders import ShuffledEncoder


def _vectors(encoder, passages) -> np.ndarray:
    return encoder.encode([p.embedding_text for p in passages])


@pytest.fixture
def index(tmp_path, polish_wedding, hashing_encoder) -> CorpusIndex:
    return CorpusIndex.build(
        tmp_path / "idx", polish_wedding, _vectors(hashing_encoder, polish_wedding)
    )


def test_a_reopened_index_holds_what_was_written(
    tmp_path, index, polish_wedding, hashing_encoder
) -> None:
    reopened = CorpusIndex(tmp_path / "idx").snapshot()
    assert reopened.version == 1
    assert list(reopened.corpus) == polish_wedding
    raw = _vectors(hashing_encoder, polish_wedding)
    assert np.array_equal(reopened.vectors, l2_normalize(raw))
    # one segment, nothing deleted: the segment's own array (mapped, or read when small)
    assert any(reopened.vectors is s.arrays.get("vectors") for s in reopened.segments.segments)
    assert reopened.corpus["rope"].title == "Rope"
    assert reopened.link_graph.targets(0) == {1: 1.0}  # Polish Wedding names Theresa Connelly
    manifest = json.loads((tmp_path / "idx" / "manifests" / "v-000001.json").read_text())
    assert manifest["format_version"] == 6 and manifest["live"] == len(polish_wedding)
    assert manifest["settings"] == IndexSettings().to_dict()
    assert not list((tmp_path / "idx").rglob("*.pkl"))


def test_opening_and_querying_gathers_nothing(
    tmp_path, index, polish_wedding, hashing_encoder, monkeypatch
) -> None:
    # the links, entity graph and walk were written with the version: a reader maps them
    index.add(
        [Passage("extra", "Rope is a film.", "Extra")],
        _vectors(hashing_encoder, [Passage("extra", "Rope is a film.", "Extra")]),
    )
    index.delete(["rope"])
    from rag_multihop.store import snapshot as snapshot_module

    def refuse(*_args: object) -> None:
        raise AssertionError("a reader gathered the serving arrays")

    monkeypatch.setattr(snapshot_module, "serving_arrays", refuse)
    snapshot = CorpusIndex(tmp_path / "idx").snapshot()
    assert not snapshot.serving["walk.p"].flags.writeable  # read from its file, not gathered
    query = Query(
        "Who directed Polish Wedding?",
        embedding=_vectors(hashing_encoder, [Passage("q", "Who directed Polish Wedding?")])[0],
    )
    for ppr in ("push", "power"):
        retriever = MultiHopRetriever.from_index(snapshot, encoder=hashing_encoder, ppr=ppr)
        assert retriever.retrieve(query, k=3)
    assert graph_fusion_retriever(snapshot, encoder=hashing_encoder).retrieve(query, k=3)
    # one version's serving arrays on disk: the superseded ones are removed at commit
    assert len(list((tmp_path / "idx" / "segments").glob("w-*"))) == 1


def test_live_vectors_are_read_where_asked_not_copied(index, polish_wedding, hashing_encoder):
    extra = [Passage("extra", "Rope is a film.", "Extra")]
    index.add(extra, _vectors(hashing_encoder, extra))
    index.delete(["rope"])
    snapshot = index.snapshot()
    live = [p for p in polish_wedding if p.id != "rope"] + extra
    expected = l2_normalize(_vectors(hashing_encoder, live))
    vectors = snapshot.vectors
    assert not isinstance(vectors, np.ndarray)  # two segments and a tombstone: no copy
    assert vectors.shape == expected.shape and len(vectors) == len(live)
    for key in (0, -1, [4, 0, 4], np.array([1, 2]), slice(1, None, 2), expected[:, 0] > 0):
        assert np.array_equal(vectors[key], expected[key])
    assert np.array_equal(np.asarray(vectors), expected)
    with pytest.raises(IndexError):
        vectors[len(live)]


def test_the_fusion_searches_the_index_once_per_query(index, hashing_encoder) -> None:
    snapshot = index.snapshot()
    dense = snapshot.dense_index
    calls: list[int] = []
    search = dense.search

    def counted(queries, k):
        calls.append(k)
        return search(queries, k)

    dense.search = counted  # type: ignore[method-assign]
    fusion = graph_fusion_retriever(snapshot, encoder=hashing_encoder)
    text = "Who directed Polish Wedding?"
    query = Query(text, embedding=hashing_encoder.encode([text])[0])
    found = fusion.retrieve(query, k=3)
    assert calls == [50]  # the graph's two seeds are the dense child's first two
    seeds = fusion.retrievers["graph"].seed_retriever.retrieve(query, k=2)
    assert calls == [50] and [c.id for c in seeds] == [
        c.id for c in fusion.retrievers["dense"].dense.retrieve(query, k=2)
    ]
    assert found and calls == [50, 2]


def test_the_encoder_fingerprint_is_recorded_and_checked(tmp_path, hashing_encoder) -> None:
    index = CorpusIndex.create(tmp_path / "idx", dim=64, encoder=hashing_encoder)
    assert index.info()["encoder"] == "hashing-test"
    assert index.encoder_matches(hashing_encoder)
    assert not index.encoder_matches(ShuffledEncoder(hashing_encoder))
    with pytest.raises(ValueError, match="dimension 64, not 8"):
        CorpusIndex.create(tmp_path / "other", dim=8, encoder=hashing_encoder)


def test_upsert_replaces_and_delete_removes(index, polish_wedding, hashing_encoder) -> None:
    changed = Passage("rope", "Rope is a 1948 thriller by Alfred Hitchcock.", "Rope")
    new = Passage("ah", "Alfred Hitchcock was an English director.", "Alfred Hitchcock")
    version = index.upsert([changed, new], _vectors(hashing_encoder, [changed, new]))
    snapshot = index.snapshot()
    assert version == 2 and snapshot.corpus["rope"].text == changed.text
    assert snapshot.corpus.ids[-2:] == ["rope", "ah"] and len(snapshot.corpus) == 6
    rope = snapshot.corpus.index_of("rope")
    assert snapshot.link_graph.targets(rope) == {snapshot.corpus.index_of("ah"): 1.0}
    index.delete(["ah"])
    assert index.snapshot().link_graph.targets(index.snapshot().corpus.index_of("rope")) == {}
    assert index.info()["deleted"] == 2


@pytest.mark.parametrize("ann", ["flat", "HNSW16"])  # HNSW: the vectors live in its file
def test_an_upsert_of_unchanged_passages_writes_only_the_changed_ones(
    tmp_path, polish_wedding, hashing_encoder, ann
) -> None:
    vectors = _vectors(hashing_encoder, polish_wedding)
    index = CorpusIndex.build(
        tmp_path / "idx", polish_wedding, vectors, settings=IndexSettings(ann=ann)
    )
    # re-ingesting the same documents (re-embedded: rounding may move a vector a little)
    jitter = vectors * np.float32(1 + 1e-7)
    assert index.upsert(polish_wedding, jitter) == 1 and index.info()["deleted"] == 0
    first = polish_wedding[0]
    edited = [Passage(first.id, first.text + " It was released in 1998.", first.title)]
    moved = vectors[1:2] + np.float32(0.5)  # the same text under a new embedding model
    batch = [*polish_wedding[2:], *edited, polish_wedding[1]]
    given = np.vstack([vectors[2:], _vectors(hashing_encoder, edited), moved])
    assert index.upsert(batch, given) == 2
    ids = index.snapshot().corpus.ids
    # the unchanged ones keep their places; the changed ones are rewritten at the end
    assert ids == [p.id for p in polish_wedding[2:]] + [first.id, polish_wedding[1].id]
    assert index.snapshot().corpus[first.id].text == edited[0].text
    assert index.info()["deleted"] == 2


def test_an_old_passage_links_to_a_title_added_later(tmp_path, hashing_encoder) -> None:
    rope = Passage("rope", "Rope is a 1948 film directed by Alfred Hitchcock.", "Rope")
    index = CorpusIndex.build(tmp_path / "idx", [rope], _vectors(hashing_encoder, [rope]))
    assert index.snapshot().link_graph.n_links == 0
    ah = Passage("ah", "Alfred Hitchcock was a director.", "Alfred Hitchcock")
    index.add([ah], _vectors(hashing_encoder, [ah]))
    snapshot = index.snapshot()
    assert snapshot.link_graph.targets(0) == {1: 1.0}
    assert snapshot.link_graph.context(0, 1) >= {"direc"}
    assert snapshot.entity_graph.title_links[0, 1] == 1.0


def test_an_old_passage_links_to_a_subject_added_later_until_it_goes(
    tmp_path, hashing_encoder
) -> None:
    rope = Passage("rope", "Rope is a 1948 film directed by Alfred Hitchcock.", "doc-1")
    index = CorpusIndex.build(tmp_path / "idx", [rope], _vectors(hashing_encoder, [rope]))
    assert index.snapshot().link_graph.n_links == 0
    ah = Passage("ah", "Alfred Hitchcock was a director.", "doc-2")
    index.add([ah], _vectors(hashing_encoder, [ah]))
    snapshot = index.snapshot()
    assert snapshot.subject_rows == {0, 1}  # "Rope" and "Alfred Hitchcock", read from the text
    assert snapshot.segments.string("names", 1).split("\x1f") == ["doc-2", "Alfred Hitchcock"]
    assert snapshot.link_graph.targets(0) == {1: 1.0}
    retriever = MultiHopRetriever.from_index(snapshot, encoder=hashing_encoder)
    query = Query("Who directed Rope?", embedding=hashing_encoder.encode(["Who directed Rope?"])[0])
    assert retriever.run(query, k=2).candidates[0].signals["subject"] == 1.0
    index.delete(["ah"])
    assert index.snapshot().link_graph.n_links == 0


def test_empty_writes_make_no_version(index) -> None:
    assert index.add([], np.zeros((0, 64))) == 1
    assert index.delete([]) == 1
    assert index.version == 1


def test_bad_input_is_refused_with_the_reason(index, polish_wedding, hashing_encoder) -> None:
    extra = [Passage("new", "A new passage.", "New")]
    with pytest.raises(ValueError, match="dimension 3, expected 64"):
        index.add(extra, np.ones((1, 3)))
    nan = np.full((1, 64), np.nan)
    with pytest.raises(ValueError, match="NaN or inf"):
        index.add(extra, nan)
    with pytest.raises(ValueError, match="2 vectors for 1 passages"):
        index.add(extra, np.ones((2, 64)))
    with pytest.raises(ValueError, match="already in the index.*'rope'.*upsert"):
        index.add([polish_wedding[4]], _vectors(hashing_encoder, polish_wedding[4:5]))
    with pytest.raises(ValueError, match="repeat id"):
        index.add(extra * 2, np.ones((2, 64)))
    with pytest.raises(KeyError, match="'nope'.*missing_ok"):
        index.delete(["rope", "nope"])
    with pytest.raises(TypeError, match="not one string"):
        index.delete("rope")
    assert index.version == 1 and len(index.snapshot().corpus) == 5
    assert index.delete(["nope"], missing_ok=True) == 1
    assert index.delete(["rope", "nope"], missing_ok=True) == 2


def test_create_refuses_an_existing_index_and_open_a_missing_one(tmp_path, index) -> None:
    with pytest.raises(FileExistsError, match="already holds an index"):
        CorpusIndex.create(tmp_path / "idx", dim=64)
    with pytest.raises(FileNotFoundError, match="is not a CorpusIndex"):
        CorpusIndex(tmp_path / "elsewhere")


@pytest.mark.parametrize("folder", ["made by the build", "the user's"])
def test_a_build_that_fails_leaves_no_index_and_can_be_run_again(tmp_path, folder) -> None:
    """Bad input to a first build undoes its create (the folder it made, or only its own
    files in the user's folder), so the same call with good input then succeeds."""
    passages = [Passage("a", "Rope is a film.", "Rope"), Passage("a", "Again.", "Again")]
    path = tmp_path / "idx"
    if folder == "the user's":
        path.mkdir()
        (path / "notes.txt").write_text("mine")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(ValueError, match="repeat id"):
        CorpusIndex.build(path, passages, np.ones((2, 4)))
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    batches = iter([(passages[:1], np.ones((1, 4))), (passages[1:], np.full((1, 4), np.nan))])
    with pytest.raises(ValueError, match="NaN"):
        CorpusIndex.build_batches(path, batches)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert CorpusIndex.build(path, passages[:1], np.ones((1, 4))).info()["passages"] == 1
    assert folder == "made by the build" or (path / "notes.txt").read_text() == "mine"


def _refused_when_truncated(index: CorpusIndex, path: Path, cut: int) -> None:
    """Opening refuses ``path`` cut short by ``cut`` bytes, naming it; then it is restored."""
    whole = path.read_bytes()
    path.write_bytes(whole[:-cut])
    with pytest.raises(ArtifactError, match=rf"{re.escape(path.name)} is truncated"):
        index.snapshot()
    path.write_bytes(whole)


def test_a_missing_or_corrupt_segment_is_a_clear_error(tmp_path, index) -> None:
    segment = next((tmp_path / "idx" / "segments").glob("s-*"))
    serving = next((tmp_path / "idx" / "segments").glob("w-*"))
    _refused_when_truncated(index, serving / "arrays.bin", 8)
    vectors = segment / "vectors.npy"
    np.save(vectors, np.zeros((2, 64), dtype=np.float32))
    with pytest.raises(
        ArtifactError, match=r"vectors\.npy holds an array other than .* the segment is corrupt"
    ):
        index.snapshot()
    _refused_when_truncated(index, segment / "texts.blob.npy", 5)
    os.remove(vectors)
    with pytest.raises(ArtifactError, match=r"vectors\.npy is missing"):
        index.snapshot()
    segment.rename(segment.with_name("gone"))
    with pytest.raises(ArtifactError, match=f"segment .*{segment.name} named by the manifest"):
        index.snapshot()
    (tmp_path / "idx" / "CURRENT").write_text("manifests/v-000009.json")
    with pytest.raises(ArtifactError, match="not a manifest here"):
        index.snapshot()


def test_a_dropped_snapshot_closes_its_file_maps_at_once(tmp_path, index) -> None:
    """A reader that opens a snapshot per request must not pile up open files until the
    garbage collector runs: the snapshot (and its maps) go with its last reference."""
    gc.disable()
    try:
        snapshot = CorpusIndex(tmp_path / "idx").snapshot()
        assert len(snapshot.corpus.ids) == 5 and snapshot.corpus[0].id
        dropped = weakref.ref(snapshot)
        del snapshot
        assert dropped() is None
    finally:
        gc.enable()


def test_a_snapshot_is_unchanged_while_a_writer_works(
    tmp_path, index, polish_wedding, hashing_encoder
) -> None:
    pinned = index.snapshot()
    query = Query("Where was the director of Polish Wedding born?")
    before = [
        c.id
        for c in MultiHopRetriever.from_index(pinned, encoder=hashing_encoder)
        .run(query, k=5)
        .candidates
    ]
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for i in range(5):
                extra = [Passage(f"x{i}", f"Polish Wedding {i} was praised.", f"Review {i}")]
                index.add(extra, _vectors(hashing_encoder, extra))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    seen = []
    while writer.is_alive():
        snapshot = CorpusIndex(tmp_path / "idx").snapshot()
        seen.append((snapshot.version, len(snapshot.corpus.ids)))
    writer.join()
    assert not errors
    assert all(count == 5 + version - 1 for version, count in seen)  # only whole versions
    assert pinned.corpus.ids == [p.id for p in polish_wedding] and pinned.n_live == 5
    after = MultiHopRetriever.from_index(pinned, encoder=hashing_encoder).run(query, k=5)
    assert [c.id for c in after.candidates] == before
    assert not pinned.is_current() and index.snapshot().is_current()
    assert len(index.snapshot().corpus) == 10


CHILD = """
import sys, time
from pathlib import Path
from rag_multihop.store.segment import writer_lock
with writer_lock(Path(sys.argv[1]), timeout=5):
    (Path(sys.argv[1]) / "segments" / ".tmp-deadbeef").mkdir(parents=True)
    Path(sys.argv[2]).write_text("locked")
    time.sleep(60)
"""


def test_a_killed_writer_leaves_no_lock_and_no_leftovers(tmp_path, index, hashing_encoder) -> None:
    marker = tmp_path / "marker"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "idx"), str(marker)])
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        extra = [Passage("late", "Late text.", "Late")]
        blocked = CorpusIndex(tmp_path / "idx", lock_timeout=0.2)
        with pytest.raises(IndexLockedError, match="another writer holds"):
            blocked.add(extra, _vectors(hashing_encoder, extra))
        assert index.snapshot().version == 1  # readers never wait for the lock
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert index.add(extra, _vectors(hashing_encoder, extra)) == 2
    assert not list((tmp_path / "idx" / "segments").glob(".rag-multihop-tmp-*"))


def test_a_write_whose_disk_fails_keeps_the_version_and_no_staging(
    tmp_path, index, monkeypatch
) -> None:
    """The serving arrays are packed on a writer thread; a failed write is raised by the
    index's write, which publishes nothing and leaves no staging folder behind."""
    from rag_multihop.store import segment

    write_at, calls = segment._write_at, []

    def full_disk(descriptor: int, value: np.ndarray, at: int) -> None:
        calls.append(at)
        if len(calls) == 5:
            raise OSError(28, "No space left on device")
        write_at(descriptor, value, at)

    monkeypatch.setattr(segment, "_write_at", full_disk)
    with pytest.raises(OSError, match="No space left"):
        index.delete(["rope"])
    assert len(calls) >= 5
    assert index.version == 1 and "rope" in index.snapshot().passage_ids
    assert not list((tmp_path / "idx" / "segments").glob(f"{segment.TEMP_PREFIX}*"))
    monkeypatch.setattr(segment, "_write_at", write_at)
    assert index.delete(["rope"]) == 2
    assert "rope" not in index.snapshot().passage_ids


def test_an_hnsw_index_searches_its_stored_graph(tmp_path, hashing_encoder) -> None:
    passages = [
        Passage(f"p{i}", f"Passage number {i} about topic {i % 7}.", f"T{i}") for i in range(60)
    ]
    vectors = _vectors(hashing_encoder, passages)
    index = CorpusIndex.build(
        tmp_path / "idx", passages, vectors, settings=IndexSettings(ann="HNSW16")
    )
    index.delete(["p3"])
    snapshot = index.snapshot()
    segment = snapshot.segments.segments[0]
    assert segment.ann is not None and not segment["vectors"].flags.owndata
    assert np.allclose(segment["vectors"], vectors / np.linalg.norm(vectors, axis=1)[:, None])
    folder = tmp_path / "idx" / "segments" / segment.name
    assert (folder / "ann.faiss").is_file() and not (folder / "vectors.npy").exists()
    scores, ids = snapshot.dense_index.search(vectors[3:5], k=3)
    assert ids[0][0] != "p3" and ids[1][0] == "p4"
    assert len(ids[0]) == 3 and scores[1][0] == pytest.approx(1.0, abs=1e-5)
    arrays = [a for s in snapshot.segments.segments for a in s.arrays.values()]
    expected_bytes = sum(a.nbytes for a in [*arrays, *snapshot.serving.values()])
    assert snapshot.preload() == expected_bytes  # the ANN's stored vectors are read too
    same, positions = snapshot.dense_index.search_positions(vectors[3:5], k=3)
    assert [[snapshot.passage_ids[p] for p in row.tolist()] for row in positions] == ids
    assert all(np.array_equal(a, b) for a, b in zip(same, scores, strict=True))
    with pytest.raises(ValueError, match="ann 'Nope' is not 'flat' or a FAISS factory string"):
        IndexSettings(ann="Nope")
    with pytest.raises(ValueError, match="ann must be 'flat' or a FAISS factory string"):
        IndexSettings(ann="auto")  # one kind per segment


def test_compact_removes_only_what_the_index_wrote(tmp_path, index, hashing_encoder) -> None:
    index.delete(["rope"])
    foreign = tmp_path / "idx" / "segments" / "notes.txt"
    foreign.write_text("mine")
    index.compact()
    root = tmp_path / "idx"
    assert len(list((root / "segments").glob("s-*"))) == 1
    assert [p.name for p in (root / "manifests").iterdir()] == ["v-000003.json"]
    assert foreign.read_text() == "mine"
    assert index.info()["deleted"] == 0 and index.info()["passages"] == 4


def test_a_mismatched_context_window_is_refused(index, hashing_encoder) -> None:
    with pytest.raises(ValueError, match="context_window 5 differs from the index's 12"):
        MultiHopRetriever.from_index(index.snapshot(), context_window=5)


def test_a_mismatched_subjects_setting_is_refused(index) -> None:
    with pytest.raises(ValueError, match=r"subjects=False differs from the index's subjects=True"):
        MultiHopRetriever.from_index(index.snapshot(), subjects=False)
    with pytest.raises(ValueError, match="subjects must be True or False, got 'yes'"):
        IndexSettings(subjects="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("old", [1, 2, 3, 7])
def test_an_index_of_another_format_is_refused_naming_the_fix(tmp_path, index, old) -> None:
    # 1 stored titles only; 2 stored each link's context stems as strings; 3 gathered the
    # serving arrays (links, entity graph, walk) when a reader opened it; 7: a later one
    manifest = tmp_path / "idx" / "manifests" / "v-000001.json"
    text = manifest.read_text().replace('"format_version": 6', f'"format_version": {old}')
    manifest.write_text(text)
    with pytest.raises(ArtifactError, match=f"version {old}; .* 4, 5, 6: rebuild the index"):
        CorpusIndex(tmp_path / "idx")


def _as_format_4(root: Path) -> None:
    """Rewrite the current version as format 4 wrote it: one ``.npy`` per array, no pack."""
    pointer = root / "CURRENT"
    manifest_path = root / pointer.read_text().strip()  # "manifests/v-….json"
    manifest = json.loads(manifest_path.read_text())
    for entry in [*manifest["segments"], manifest["serving"]]:
        folder = root / "segments" / entry["name"]
        pack = folder / "arrays.bin"
        for key, spec in entry["files"].items():
            if "at" in spec:
                count = int(np.prod(spec["shape"], dtype=np.int64))
                value = np.fromfile(pack, dtype=spec["dtype"], count=count, offset=spec["at"])
                np.save(folder / f"{key}.npy", value.reshape(spec["shape"]))
                del spec["at"]
        pack.unlink(missing_ok=True)
    manifest["format_version"] = 4
    manifest_path.write_text(json.dumps(manifest))


def test_an_index_of_format_4_is_read_and_its_next_write_makes_it_6(
    tmp_path, index, polish_wedding, hashing_encoder
) -> None:
    """Format 5 packs the arrays a write makes in one file; an index written as format 4
    (one file per array) reads the same and is extended in place."""
    extra = [Passage("extra", "Rope was remade by Theresa Connelly.", "Rope remake")]
    index.add(extra, _vectors(hashing_encoder, extra))
    index.delete(["rope"])
    packs = list((tmp_path / "idx" / "segments").rglob("arrays.bin"))
    assert len(packs) == 3  # the add's and the delete's segments, the serving arrays

    def served(snapshot):
        retriever = MultiHopRetriever.from_index(snapshot, encoder=hashing_encoder)
        query = Query("Who directed Polish Wedding?", embedding=hashing_encoder.encode(["x"])[0])
        return snapshot.corpus.ids, [(c.id, c.score) for c in retriever.retrieve(query, k=5)]

    before = served(index.snapshot())
    _as_format_4(tmp_path / "idx")
    assert not list((tmp_path / "idx" / "segments").rglob("arrays.bin"))
    old = CorpusIndex(tmp_path / "idx")
    assert old.manifest()["format_version"] == 4
    assert served(old.snapshot()) == before
    more = [Passage("more", "Theresa Connelly wrote Rope remake.", "More")]
    old.add(more, _vectors(hashing_encoder, more))
    assert old.manifest()["format_version"] == 6
    assert old.snapshot().corpus.ids == [*before[0], "more"]


def test_a_truncated_pack_is_named(tmp_path, index, polish_wedding, hashing_encoder) -> None:
    extra = [Passage("extra", "Rope was remade.", "Rope remake")]
    index.add(extra, _vectors(hashing_encoder, extra))
    [pack] = [p for p in (tmp_path / "idx" / "segments").rglob("arrays.bin") if "/s-" in str(p)]
    os.truncate(pack, pack.stat().st_size // 2)
    with pytest.raises(ArtifactError, match=r"arrays\.bin is truncated or foreign: array"):
        index.snapshot()


def test_names_of_an_older_reader_are_not_extended_until_compacted(
    tmp_path, index, polish_wedding, hashing_encoder
) -> None:
    # an index written before the name reader's version was recorded (version 1)
    manifest = tmp_path / "idx" / "manifests" / "v-000001.json"
    record = json.loads(manifest.read_text())
    del record["names_version"]
    manifest.write_text(json.dumps(record))
    assert index.info()["names_version"] == 1 and index.names_outdated()
    extra = [Passage("extra", "Marit Hallendor was born in Oslo.", "Marit Hallendor")]
    with pytest.raises(
        ValueError,
        match=rf"name reader version 1, this library reads version {NAMES_VERSION}.*compact",
    ):
        index.add(extra, _vectors(hashing_encoder, extra))
    index.delete([polish_wedding[0].id])  # a delete reads no new names
    index.compact()
    assert index.info()["names_version"] == NAMES_VERSION and not index.names_outdated()
    index.add(extra, _vectors(hashing_encoder, extra))
    assert "extra" in index.snapshot().corpus


def test_an_empty_index_refuses_a_retriever(tmp_path) -> None:
    index = CorpusIndex.create(tmp_path / "idx", dim=4)
    assert index.snapshot().n_live == 0
    with pytest.raises(ValueError, match="holds no passages"):
        MultiHopRetriever.from_index(index.snapshot())


def test_the_snapshot_corpus_behaves_like_a_corpus(index, polish_wedding) -> None:
    corpus = index.snapshot().corpus
    assert corpus[-1] == polish_wedding[-1] and corpus[1:3] == tuple(polish_wedding[1:3])
    assert "rope" in corpus and polish_wedding[0] in corpus and "nope" not in corpus
    with pytest.raises(KeyError, match="unknown passage id 'nope'"):
        corpus["nope"]
    with pytest.raises(IndexError):
        corpus[5]
    assert Path(index.path).is_dir()


def test_a_shared_name_splits_and_rejoins_as_pages_come_and_go(tmp_path, hashing_encoder) -> None:
    review = Passage("r", "A review of Ed Wood and its making.", "Review")
    person = Passage("p", "Ed Wood was a director.", "Ed Wood")
    film = Passage("f", "Ed Wood is a 1994 film.", "Ed Wood (film)")
    index = CorpusIndex.build(
        tmp_path / "idx", [review, person, film], _vectors(hashing_encoder, [review, person, film])
    )
    assert index.snapshot().link_graph.targets(0) == {1: 0.5, 2: 0.5}
    index.delete(["f"])
    assert index.snapshot().link_graph.targets(0) == {1: 1.0}
    index.add([film], _vectors(hashing_encoder, [film]))
    assert index.snapshot().link_graph.targets(0) == {1: 0.5, 2: 0.5}


TRICKY = [
    Passage("review", "A review of Ed Wood by Boston critics in Lincolnshire.", "Review"),
    Passage("tour", "Shelly Beach, New South Wales and Boston are on the tour of Ed Wood.", "Tour"),
    Passage("person", "Ed Wood was a director who loved New South Wales.", "Ed Wood"),
    Passage("film", "Ed Wood is a 1994 film about Ed Wood.", "Ed Wood (film)"),
    Passage("boston", "Boston is a city in the United States.", "Boston"),
    Passage("boston-l", "Boston is a town of Lincolnshire.", "Boston, Lincolnshire"),
    Passage("nsw", "New South Wales is a state.", "New South Wales"),
    Passage(
        "shelly", "Shelly Beach is a beach of New South Wales.", "Shelly Beach, New South Wales"
    ),
    Passage("wales", "Wales is a country.", "Wales"),
]


@pytest.mark.parametrize(
    "deleted",
    [["film"], ["person", "film"], ["boston-l"], ["boston"], ["nsw"], ["shelly"], ["wales"]],
)
def test_deletes_patch_links_like_a_fresh_build(tmp_path, hashing_encoder, deleted, caplog) -> None:
    # shared names, qualifiers, names inside longer names, a page naming itself: the links of
    # the passages that named a deleted page equal a fresh build's, patched without their text
    # where the stored spans allow it
    vectors = _vectors(hashing_encoder, TRICKY)
    index = CorpusIndex.create(tmp_path / "idx", dim=vectors.shape[1])
    index.add(TRICKY[:5], vectors[:5])  # two segments: sources' links defined in either
    index.add(TRICKY[5:], vectors[5:])
    with caplog.at_level("INFO", logger="rag_multihop.store.index"):
        index.delete(deleted)
    live = [p for p in TRICKY if p.id not in deleted]
    fresh = CorpusIndex.build(
        tmp_path / "fresh",
        live,
        np.stack([v for p, v in zip(TRICKY, vectors, strict=True) if p in live]),
    )
    stored, expected = index.snapshot().link_graph, fresh.snapshot().link_graph
    assert (stored.weights != expected.weights).nnz == 0
    assert dict(stored.contexts) == dict(expected.contexts)
    assert np.array_equal(stored.specificity, expected.specificity)
    assert "patched" in caplog.text


def test_a_delete_patches_a_clear_unique_name_without_reading_text(
    tmp_path, hashing_encoder, caplog
) -> None:
    passages = [
        Passage(f"s{i}", f"Source {i} was made by Rex Nolan.", f"Source {i}") for i in range(5)
    ]
    passages.append(Passage("rex", "Rex Nolan is a maker.", "Rex Nolan"))
    index = CorpusIndex.build(tmp_path / "idx", passages, _vectors(hashing_encoder, passages))
    with caplog.at_level("INFO", logger="rag_multihop.store.index"):
        index.delete(["rex"])
    assert "links of 0 recomputed, 5 patched" in caplog.text
    assert index.snapshot().link_graph.n_links == 0
