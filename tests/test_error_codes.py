"""Each refusal's stable code and gRPC status are carried by its class, once: the tables are derived from
the classes, a class cannot set a code without its status, and the README's table says the same."""

from __future__ import annotations

import re

import grpc
import pytest

from gateway.tournaments import errors as tournaments
from tests.conftest import REPO
from workers.errors import ERRORS, LOBBY_ERRORS, STATUS, ServiceError, error_for, status_of
from workers.games.errors import MalformedAction, RulesError, Status

ROW = re.compile(r"^\| ((?:`\w+`(?:, )?)+) \| ([A-Z_]+) \|", re.MULTILINE)


def documented() -> dict[str, str]:
    """The README's error table: each code with the status name it promises."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return {code: status for codes, status in ROW.findall(text) for code in re.findall(r"`(\w+)`", codes)}


def test_the_readme_table_is_what_the_classes_say() -> None:
    gateway_only = (
        tournaments.BatchRejected, tournaments.NoDatabase, tournaments.RoundNotOver, tournaments.TournamentOver,
        *LOBBY_ERRORS,
    )  # fmt: skip
    carried = {code: status.name for code, status in STATUS.items()}
    carried |= {kind.code: status_of(kind).name for kind in gateway_only}
    assert documented() == carried


def test_every_rules_status_is_a_grpc_status_and_errors_rebuilt_across_the_hop_keep_it() -> None:
    assert {member.name for member in Status} <= {code.name for code in grpc.StatusCode}
    for code, kind in ERRORS.items():
        rebuilt = error_for(code, "words")
        assert (type(rebuilt), rebuilt.code, status_of(type(rebuilt))) == (kind, code, STATUS[code])
    assert status_of(MalformedAction) is grpc.StatusCode.INVALID_ARGUMENT
    assert status_of(KeyError) is grpc.StatusCode.INTERNAL


@pytest.mark.parametrize("base", [ServiceError, RulesError])
def test_a_class_that_sets_a_code_without_its_status_is_refused(base: type[Exception]) -> None:
    with pytest.raises(TypeError, match="sets code 'forgotten' without its status"):
        type("Forgetful", (base,), {"code": "forgotten"})
