"""A question's ``answer`` may be a list of acceptable answers; any other non-string type
is an error naming the question and the field (never its Python text form)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rag_multihop.eval.datasets import load_dataset

PASSAGES = [{"id": "a", "title": "Alpha", "text": "Alpha was founded in Paris."}]


def _native(tmp_path: Path, **question: Any) -> Path:
    record = {"id": "q1", "question": "Where?", "gold_ids": ["a"], **question}
    path = tmp_path / "native.json"
    path.write_text(json.dumps({"name": "n", "passages": PASSAGES, "questions": [record]}))
    return path


def test_an_answer_list_holds_the_answer_and_its_aliases(tmp_path: Path) -> None:
    path = _native(
        tmp_path, answer=["Paris", "paris", "", "Paris"], answer_aliases=["City of Light"]
    )
    assert load_dataset(path).questions[0].answers == ("Paris", "paris", "City of Light")
    assert load_dataset(_native(tmp_path, answer=[])).questions[0].answers == ()
    assert load_dataset(_native(tmp_path)).questions[0].answers == ()  # no answer field


def test_an_answer_list_in_a_record_format(tmp_path: Path) -> None:
    record = {
        "_id": "hp1",
        "question": "Where?",
        "answer": ["Paris", "Paris, France"],
        "supporting_facts": [["Alpha", 0]],
        "context": [["Alpha", ["Alpha was founded in Paris."]]],
    }
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps([record]))
    assert load_dataset(path).questions[0].answers == ("Paris", "Paris, France")


def test_numbers_are_answers_and_null_is_none(tmp_path: Path) -> None:
    """Read as before the list form: a number as its text, ``null`` as no answer."""
    assert load_dataset(_native(tmp_path, answer=1889)).questions[0].answers == ("1889",)
    assert load_dataset(_native(tmp_path, answer=None)).questions[0].answers == ()
    found = load_dataset(_native(tmp_path, answer=["Paris", 75, None], answer_aliases=[None]))
    assert found.questions[0].answers == ("Paris", "75")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"answer": {"text": "Paris"}}, "question q1: field 'answer' must be a string or a list"),
        ({"answer": True}, "question q1: field 'answer' must be a string or a list of strings"),
        ({"answer": ["Paris", True]}, "question q1: field 'answer[1]' must be a string, got True"),
        ({"answer": [["Paris"]]}, "question q1: field 'answer[0]' must be a string"),
        (
            {"answer": "Paris", "answer_aliases": ["Lutetia", {"x": 1}]},
            "question q1: field 'answer_aliases[1]' must be a string",
        ),
    ],
)
def test_other_answer_types_name_the_question_and_field(
    tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        load_dataset(_native(tmp_path, **fields))
