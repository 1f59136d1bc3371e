"""``rag-multihop index``: build, add, delete, compact, info; bad input exits 2."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from rag_multihop.cli import main
from rag_multihop.store import CorpusIndex


def _write(tmp_path, name, passages):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(p) for p in passages))
    return path


def _npy(tmp_path, name, rows, dim=8):
    path = tmp_path / name
    np.save(path, np.random.default_rng(rows).normal(size=(rows, dim)).astype(np.float32))
    return path


PASSAGES = [
    {"id": "rope", "text": "Rope is a film by Alfred Hitchcock.", "title": "Rope"},
    {"id": "ah", "text": "Alfred Hitchcock was a director.", "title": "Alfred Hitchcock"},
]


def test_the_index_commands_build_update_and_report(tmp_path, capsys) -> None:
    idx = str(tmp_path / "idx")
    first = _write(tmp_path, "a.jsonl", PASSAGES)
    assert (
        main(
            [
                "index",
                "build",
                "--index",
                idx,
                "--passages",
                str(first),
                "--vectors",
                str(_npy(tmp_path, "a.npy", 2)),
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["passages"] == 2
    titles_only = str(tmp_path / "titles-only")
    vectors = str(_npy(tmp_path, "a.npy", 2))
    args = ["index", "build", "--index", titles_only, "--passages", str(first)]
    assert main([*args, "--vectors", vectors, "--no-subjects"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["subjects"] is False
    more = _write(tmp_path, "b.jsonl", [{"id": "psycho", "text": "Psycho is by Alfred Hitchcock."}])
    assert (
        main(
            [
                "index",
                "add",
                "--index",
                idx,
                "--passages",
                str(more),
                "--vectors",
                str(_npy(tmp_path, "b.npy", 1)),
            ]
        )
        == 0
    )
    assert main(["index", "delete", "--index", idx, "--ids", "rope"]) == 0
    assert main(["index", "compact", "--index", idx]) == 0
    capsys.readouterr()
    assert main(["index", "info", "--index", idx]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["passages"], info["deleted"], info["segments"], info["version"]) == (2, 0, 1, 4)
    assert CorpusIndex(idx).snapshot().corpus.ids == ["ah", "psycho"]


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([{"id": "a"}], "record 1 needs a non-empty string 'text'"),
        ([{"id": "a", "text": "x", "body": "y"}], r"unknown field\(s\) \['body'\]"),
        ([["a", "x"]], "record 1 is not a JSON object"),
        ([{"id": "a", "text": "x", "title": 3}], "record 1 field 'title' must be a string"),
    ],
)
def test_bad_passages_exit_2_naming_the_record(tmp_path, capsys, records, message) -> None:
    path = _write(tmp_path, "bad.jsonl", records)
    code = main(
        [
            "index",
            "build",
            "--index",
            str(tmp_path / "idx"),
            "--passages",
            str(path),
            "--vectors",
            str(_npy(tmp_path, "v.npy", 1)),
        ]
    )
    assert code == 2
    assert re.search(message, capsys.readouterr().err)


def test_a_null_title_is_read_as_none_as_a_missing_one_is(tmp_path, capsys) -> None:
    records = [
        {"id": "a", "text": "Rope is a film.", "title": None},
        {"id": "b", "text": "Psycho."},
    ]
    path = _write(tmp_path, "p.jsonl", records)
    idx = str(tmp_path / "idx")
    vectors = str(_npy(tmp_path, "v.npy", 2))
    assert (
        main(["index", "build", "--index", idx, "--passages", str(path), "--vectors", vectors]) == 0
    )
    assert [p.title for p in CorpusIndex(idx).snapshot().corpus] == ["", ""]


def test_bad_vectors_and_ids_exit_2(tmp_path, capsys) -> None:
    idx = str(tmp_path / "idx")
    passages = _write(tmp_path, "a.jsonl", PASSAGES)
    code = main(
        [
            "index",
            "build",
            "--index",
            idx,
            "--passages",
            str(passages),
            "--vectors",
            str(_npy(tmp_path, "v.npy", 3)),
        ]
    )
    assert code == 2 and "expected (2, dim)" in capsys.readouterr().err
    main(
        [
            "index",
            "build",
            "--index",
            idx,
            "--passages",
            str(passages),
            "--vectors",
            str(_npy(tmp_path, "w.npy", 2)),
        ]
    )
    capsys.readouterr()
    assert main(["index", "delete", "--index", idx, "--ids", "nope"]) == 2
    err = capsys.readouterr().err
    assert "'nope'" in err and "--missing-ok" in err
    again = ["index", "add", "--index", idx, "--passages", str(passages)]
    assert main([*again, "--vectors", str(_npy(tmp_path, "y.npy", 2))]) == 2
    assert "--upsert" in capsys.readouterr().err
    assert main(["index", "delete", "--index", idx]) == 2
    assert "--ids" in capsys.readouterr().err
    code = main(
        [
            "index",
            "add",
            "--index",
            idx,
            "--passages",
            str(passages),
            "--vectors",
            str(_npy(tmp_path, "x.npy", 2, dim=4)),
        ]
    )
    assert code == 2 and "dimension 4, expected 8" in capsys.readouterr().err
    assert main(["index", "info", "--index", str(tmp_path / "none")]) == 2
    assert "is not a CorpusIndex" in capsys.readouterr().err


@pytest.mark.slow
def test_without_vectors_the_bundled_encoder_embeds_and_is_recorded(tmp_path, capsys) -> None:
    idx = str(tmp_path / "idx")
    passages = _write(tmp_path, "a.jsonl", PASSAGES)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main(["index", "build", "--index", idx, "--passages", str(passages), *cache]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["dim"] == 384 and info["encoder"]
    more = _write(tmp_path, "b.jsonl", [{"id": "psycho", "text": "Psycho is a film."}])
    assert main(["index", "add", "--index", idx, "--passages", str(more), *cache]) == 0
    assert json.loads(capsys.readouterr().out)["passages"] == 3


def test_attach_stores_a_sidecar_once_and_refuses_another_model(tmp_path, capsys) -> None:
    from rag_multihop.association import AssociationReranker, TrainingConfig

    idx = str(tmp_path / "idx")
    vectors = _npy(tmp_path, "a.npy", 2)
    passages = _write(tmp_path, "a.jsonl", PASSAGES)
    build = ["index", "build", "--index", idx, "--passages", str(passages)]
    assert main([*build, "--vectors", str(vectors)]) == 0
    models = []
    for seed in (0, 1):
        model = AssociationReranker(training=TrainingConfig(epochs=2, batch_size=2, seed=seed))
        model.fit(["rope", "ah"], np.load(vectors), [("rope", "ah")], encoder_name="test")
        models.append(str(model.save(tmp_path / f"aar-{seed}")))
    capsys.readouterr()
    assert main(["index", "attach", "--index", idx, "--aar", models[0]]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["sidecars"]["aar"]["rows"] == 2 and info["version"] == 2
    assert main(["index", "attach", "--index", idx, "--aar", models[0]]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == 2  # nothing missing: unchanged
    assert main(["index", "attach", "--index", idx, "--aar", models[1]]) == 2
    assert "replace=True" in capsys.readouterr().err
    assert main(["index", "attach", "--index", idx, "--aar", models[1], "--replace"]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == 3
    assert main(["index", "attach", "--index", idx, "--aar", str(tmp_path / "nothing")]) == 2
    assert "nothing" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["index", "attach", "--index", idx])  # --aar or --rala is required


def test_attach_rala_stores_the_index_encoders_token_states(tmp_path, capsys) -> None:
    idx = str(tmp_path / "idx")
    passages = _write(tmp_path, "a.jsonl", PASSAGES)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main(["index", "build", "--index", idx, "--passages", str(passages), *cache]) == 0
    capsys.readouterr()
    assert main(["index", "attach", "--index", idx, "--rala", "--codec", "int8"]) == 0
    sidecar = json.loads(capsys.readouterr().out)["sidecars"]["rala"]
    assert sidecar["rows"] == 2 and sidecar["identity"]["codec"] == "int8"


def test_index_writes_merge_small_segments_unless_told_not_to(tmp_path, capsys) -> None:
    idx = str(tmp_path / "idx")
    first = _write(tmp_path, "a.jsonl", PASSAGES)
    build = ["index", "build", "--index", idx, "--passages", str(first)]
    assert main([*build, "--vectors", str(_npy(tmp_path, "a.npy", 2))]) == 0
    capsys.readouterr()
    for i, factor in enumerate(["0", "0", "0", "2"]):
        one = _write(tmp_path, f"p{i}.jsonl", [{"id": f"p{i}", "text": f"Page {i}."}])
        args = ["index", "add", "--index", idx, "--passages", str(one), "--merge-factor", factor]
        assert main([*args, "--vectors", str(_npy(tmp_path, f"p{i}.npy", 1))]) == 0
        segments = json.loads(capsys.readouterr().out)["segments"]
        assert segments == (i + 2 if factor == "0" else 2)  # the last folds the 1-row ones
    with pytest.raises(SystemExit) as exit_:
        main(["index", "delete", "--index", idx, "--ids", "p0", "--merge-factor", "1"])
    assert exit_.value.code == 2
    assert "--merge-factor must be 0 (never merge) or at least 2" in capsys.readouterr().err


def test_attach_refuses_an_aar_model_of_other_vectors_unless_told(tmp_path, capsys) -> None:
    from rag_multihop.association import AssociationReranker, TrainingConfig

    records = [{"id": f"p{i}", "text": f"Passage {i} of a film."} for i in range(4)]
    idx = str(tmp_path / "idx")
    vectors = _npy(tmp_path, "v.npy", 4)
    build = [
        "index",
        "build",
        "--index",
        idx,
        "--passages",
        str(_write(tmp_path, "p.jsonl", records)),
    ]
    assert main([*build, "--vectors", str(vectors)]) == 0
    model = AssociationReranker(training=TrainingConfig(epochs=2, batch_size=2, seed=0))
    ids = [r["id"] for r in records]
    model.fit(ids, -np.load(vectors), [("p0", "p1"), ("p2", "p3")], encoder_name="other")
    saved = str(model.save(tmp_path / "aar"))
    capsys.readouterr()
    attach = ["index", "attach", "--index", idx, "--aar", saved]
    assert main(attach) == 2
    err = capsys.readouterr().err
    assert "trained on other vectors" in err and "--no-vector-check" in err
    assert (
        "sidecars" not in CorpusIndex(idx).manifest() or not CorpusIndex(idx).manifest()["sidecars"]
    )
    assert main([*attach, "--no-vector-check"]) == 0
    assert "aar" in CorpusIndex(idx).manifest()["sidecars"]
