"""LLM-free hop-2 plans: entity selection, templates and validation."""

from __future__ import annotations

import asyncio

import pytest

from rag_multihop.bridge.queries import (
    QUERY_TEMPLATES,
    TemplateQueryWriter,
    key_sentence,
    select_entities,
)
from rag_multihop.types import Passage, Query

BRIDGE = Passage(
    "pw",
    "Polish Wedding is a 1998 American film written and directed by Theresa Connelly. "
    "It stars Claire Danes and Gabriel Byrne.",
    title="Polish Wedding",
)
QUESTION = Query("Who is the mother of the director of Polish Wedding?")


def test_entities_skip_title_question_names_and_numbers() -> None:
    plan = TemplateQueryWriter(n_entities=4).plan(QUESTION, BRIDGE)
    assert plan.entities == ("theresa connelly", "claire danes", "gabriel byrne", "american")
    assert plan.account is None and plan.fallbacks == 0


def test_entities_already_in_the_question_are_dropped() -> None:
    question = "Is Claire Danes older than the director of Polish Wedding?"
    names = ["polish wedding", "claire danes", "theresa connelly", "1998"]
    assert select_entities(question, BRIDGE, names, 3) == ("theresa connelly",)


def test_templates_build_distinct_queries_in_order() -> None:
    plan = TemplateQueryWriter().plan(QUESTION, BRIDGE)
    assert plan.queries == (
        "Who is the mother of the director of Polish Wedding?",
        "Who is the mother of the director of?",
        "Polish Wedding is a 1998 American film written and directed by Theresa Connelly.",
    )
    residual = TemplateQueryWriter(templates=("residual+entities",), n_entities=1)
    assert residual.plan(QUESTION, BRIDGE).queries == (
        "Who is the mother of the director of? theresa connelly",
    )


def test_key_sentence_prefers_the_sentence_sharing_question_words() -> None:
    assert key_sentence("Which actors star in it?", BRIDGE).startswith("It stars")


def test_bridge_without_entities_gives_an_empty_entity_list() -> None:
    bare = Passage("x", "a short text with no names at all.", title="")
    plan = TemplateQueryWriter().plan(Query("what is this about?"), bare)
    assert plan.entities == ()
    assert plan.queries[0] == "what is this about?"  # the question still searches


def test_async_plan_is_the_sync_plan() -> None:
    writer = TemplateQueryWriter()
    assert asyncio.run(writer.aplan(QUESTION, BRIDGE)) == writer.plan(QUESTION, BRIDGE)


def test_writer_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="n_entities must be an integer >= 0, got -1"):
        TemplateQueryWriter(n_entities=-1)
    with pytest.raises(ValueError, match="templates must name at least one of"):
        TemplateQueryWriter(templates=("nope",))
    with pytest.raises(ValueError, match="templates must name at least one of"):
        TemplateQueryWriter(templates=())
    assert set(QUERY_TEMPLATES) >= {"question", "residual", "key-sentence"}
