"""`settings_from_options`: CLI strings to a validated settings object, by field type."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pytest

from rag_multihop.eval.methods import check_options
from rag_multihop.eval.options import FLATTEN, OPTION, option_fields, settings_from_options
from rag_multihop.eval.registry import declare_settings
from rag_multihop.validation import check_int


@dataclass(frozen=True)
class Inner:
    a: float = 1.0
    b: float = 2.0

    def __post_init__(self) -> None:
        if self.a + self.b == 0:
            raise ValueError("Inner must not sum to 0")


@dataclass(frozen=True)
class Core:
    lambda_: float = 0.5
    count: int = 3
    on: bool = False
    name: str = "x"
    kind: Literal["p", "q"] = "p"
    cap: int | None = 10
    names: tuple[str, ...] = ("a",)
    params: Mapping[str, float] = field(default_factory=dict)
    inner: Inner = field(default_factory=Inner)

    def __post_init__(self) -> None:
        check_int(self.count, "count", low=0)


@dataclass(frozen=True)
class Bench:
    protocol: str = field(default="t", metadata={OPTION: "protocol"})
    core: Core = field(default_factory=Core, metadata={FLATTEN: True})
    toy_extra: int = 1


def test_every_field_type_converts_from_text():
    got = settings_from_options(
        Core,
        {
            "toy_lambda": "0.25",
            "toy_count": "7",
            "toy_on": "yes",
            "toy_name": "y",
            "toy_kind": "q",
            "toy_cap": "none",
            "toy_names": "a, b,",
            "toy_params": "c=2, epsilon=0.5",
            "toy_inner": "3,4",
            "other_key": "ignored",
        },
        prefix="toy_",
    )
    assert got == Core(
        0.25, 7, True, "y", "q", None, ("a", "b"), {"c": 2.0, "epsilon": 0.5}, Inner(3, 4)
    )


def test_typed_values_pass_through_and_validation_is_the_dataclass_own():
    assert settings_from_options(Core, {"toy_count": 4}, prefix="toy_").count == 4
    with pytest.raises(
        ValueError, match=r"invalid --option toy_count='-1': count must be an integer >= 0"
    ):
        settings_from_options(Core, {"toy_count": "-1"}, prefix="toy_")
    with pytest.raises(
        ValueError, match="invalid --option toy_inner='0,0': Inner must not sum to 0"
    ):
        settings_from_options(Core, {"toy_inner": "0,0"}, prefix="toy_")


@pytest.mark.parametrize(
    ("key", "text", "message"),
    [
        ("toy_count", "2.5", "option toy_count must be an integer, got '2.5'"),
        ("toy_on", "maybe", r"option toy_on must be true or false \(1/0, yes/no\), got 'maybe'"),
        ("toy_kind", "r", r"option toy_kind must be one of \['p', 'q'\], got 'r'"),
        ("toy_cap", "ten", "option toy_cap must be an integer or none, got 'ten'"),
        ("toy_params", "c:2", "option toy_params must be comma-separated NAME=VALUE pairs"),
        ("toy_inner", "1", r"option toy_inner must be 2 comma-separated values \(a, b\)"),
    ],
)
def test_text_the_type_cannot_read_names_the_key_and_the_form(key, text, message):
    with pytest.raises(ValueError, match=message):
        settings_from_options(Core, {key: text}, prefix="toy_")


def test_unknown_prefixed_keys_are_refused_listing_the_valid_ones():
    with pytest.raises(
        ValueError,
        match=r"unknown --option 'toy_lamda' \(did you mean 'toy_lambda'\?\); valid toy_\* "
        r"options: toy_cap, toy_count",
    ):
        settings_from_options(Core, {"toy_lamda": "0.3"}, prefix="toy_")


def test_flattened_settings_metadata_names_exclusions_and_bench_defaults():
    keys = option_fields(Bench, "toy_", exclude={"kind"})
    assert "protocol" in keys and "toy_extra" in keys and "toy_lambda" in keys
    assert "toy_kind" not in keys and "toy_core" not in keys
    assert keys["toy_lambda"].path == ("core", "lambda_")
    base = Bench(core=Core(count=9))
    got = settings_from_options(
        Bench, {"protocol": "h", "toy_lambda": "0.1"}, prefix="toy_", exclude={"kind"}, base=base
    )
    assert (got.protocol, got.core.lambda_, got.core.count) == ("h", 0.1, 9)
    with pytest.raises(ValueError, match="unknown --option 'toy_kind'"):
        settings_from_options(Bench, {"toy_kind": "q"}, prefix="toy_", exclude={"kind"})


def test_a_field_type_without_conversion_fails_when_declared():
    @dataclass(frozen=True)
    class Odd:
        weird: set[int] = field(default_factory=set)

    with pytest.raises(TypeError, match="no --option conversion for the type"):
        option_fields(Odd, "odd_")


def test_declared_settings_are_checked_before_a_run(monkeypatch):
    import rag_multihop.eval.registry as registry

    monkeypatch.setattr(registry, "_OPTIONS", dict(registry._OPTIONS))
    monkeypatch.setattr(registry, "_GROUPS", list(registry._GROUPS))
    group = declare_settings("test", Core, prefix="toy_")
    assert "toy_lambda" in group.option_keys()
    assert group.read({"toy_lambda": "0.2"}).lambda_ == 0.2
    with pytest.raises(ValueError, match="invalid --option toy_count='-2'"):
        check_options({"toy_count": "-2"})
