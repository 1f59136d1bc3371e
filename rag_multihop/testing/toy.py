"""The toy two-hop corpus and what a model that reads it right replies to each kind of prompt
of BridgeRAG and CoopRAG."""

from __future__ import annotations

import json
from collections.abc import Mapping

from rag_multihop.testing.llm import Reply
from rag_multihop.types import Passage

POLISH_WEDDING_QUESTION = "Where was the director of the film Polish Wedding born?"
"""The toy corpus's two-hop question: the film's page names the director, whose page names
the city."""


def polish_wedding_passages() -> list[Passage]:
    """A toy two-hop corpus: the question's bridge, its answer passage and distractors."""
    return [
        Passage(
            "polish-wedding",
            "Polish Wedding is a 1998 film written and directed by Theresa Connelly.",
            title="Polish Wedding",
        ),
        Passage(
            "theresa-connelly",
            "Theresa Connelly is an American screenwriter born in Philadelphia.",
            title="Theresa Connelly",
        ),
        Passage("philadelphia", "Philadelphia is a city in Pennsylvania.", title="Philadelphia"),
        Passage("claire-danes", "Claire Danes is an American actress.", title="Claire Danes"),
        Passage("rope", "Rope is a 1948 film directed by Alfred Hitchcock.", title="Rope"),
    ]


PROMPT_MARKERS: Mapping[str, str] = {
    "repair": "could not be used",
    "unroll": "Plan how to answer",
    "complete": "Complete the reasoning chain",
    "key": "Can the question be answered",
    "entities": "Name the two entities",
    "queries": "subject-verb-object",
    "judge": "Candidate passage:",
}
"""Prompt kind -> a text that only that kind of prompt of :mod:`rag_multihop.llm.prompts`
holds (the repair prompt quotes the failed one, so it is tried first)."""

POLISH_WEDDING_UNROLLING = {
    "sub_questions": ["Who directed Polish Wedding?", "Where was that director born?"],
    "chain": [
        {"head": "Polish Wedding", "relation": "directed by", "tail": "<unknown>"},
        {"head": "<unknown>", "relation": "born in", "tail": "<answer>"},
    ],
}
POLISH_WEDDING_CHAIN = {
    "chain": [
        {"head": "Polish Wedding", "relation": "directed by", "tail": "Theresa Connelly"},
        {"head": "Theresa Connelly", "relation": "born in", "tail": "Philadelphia"},
    ]
}


def _judge(prompt: str) -> str:
    candidate = prompt.split(PROMPT_MARKERS["judge"], 1)[1]
    return '{"score": 9}' if "Theresa Connelly is" in candidate else '{"score": 2}'


def polish_wedding_replies(**overrides: Reply) -> dict[str, Reply]:
    """What a model that reads the toy corpus right replies, by :data:`PROMPT_MARKERS`: the
    plan of :data:`POLISH_WEDDING_QUESTION` and its completed chain, answerable passages, the
    bridge's entities, one search query, a judge scoring the director's page 9 and the rest
    2, and a repair that is still not JSON. ``overrides`` replace replies by prompt kind;
    pass the result to :class:`FakeTransport` with ``default='{"answer": "Philadelphia"}'``.

    >>> replies = polish_wedding_replies(key="no")
    >>> replies[PROMPT_MARKERS["key"]], replies[PROMPT_MARKERS["entities"]]
    ('no', '{"e1": "Theresa Connelly", "e2": "Polish Wedding"}')
    """
    replies: dict[str, Reply] = {
        "repair": "still not JSON",
        "unroll": json.dumps(POLISH_WEDDING_UNROLLING),
        "complete": json.dumps(POLISH_WEDDING_CHAIN),
        "key": '{"answerable": true, "key_sentence": ""}',
        "entities": '{"e1": "Theresa Connelly", "e2": "Polish Wedding"}',
        "queries": '{"queries": ["Theresa Connelly born in"]}',
        "judge": _judge,
    }
    unknown = set(overrides) - set(replies)
    if unknown:
        raise ValueError(
            f"unknown prompt kind {sorted(unknown)[0]!r}; choose from {', '.join(replies)}"
        )
    replies.update(overrides)
    return {PROMPT_MARKERS[kind]: reply for kind, reply in replies.items()}


POLISH_WEDDING_ANSWER = '{"answer": "Philadelphia"}'
"""The reply to a prompt of no other kind (CoopRAG's concise answer)."""


def polish_wedding_reply(prompt: str) -> str:
    """The text :func:`polish_wedding_replies` gives ``prompt`` (by the first
    :data:`PROMPT_MARKERS` kind it holds, else :data:`POLISH_WEDDING_ANSWER`): for fakes of a
    framework's LLM object, which see the prompt rather than a request.

    >>> polish_wedding_reply("Candidate passage: Theresa Connelly is a director.")
    '{"score": 9}'
    """
    for marker, reply in polish_wedding_replies().items():
        if marker in prompt:
            text = reply(prompt) if callable(reply) else reply
            if not isinstance(text, str):  # the defaults are texts; an override may not be
                raise TypeError(f"the reply to {marker!r} is not a text")
            return text
    return POLISH_WEDDING_ANSWER
