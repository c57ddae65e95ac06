"""`built_fast` and `evolve`: frozen values built through a twin are the values the dataclass builds."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import random
from dataclasses import dataclass, field

import pytest

from workers.games.catalog import games
from workers.games.engine import CHANCE, Event, Millis, Seat
from workers.games.values import built_fast, evolve


@built_fast
@dataclass(frozen=True, slots=True)
class Fast:
    name: str
    count: int = 3
    tags: tuple[str, ...] = ()
    notes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Plain:
    name: str
    count: int = 3
    tags: tuple[str, ...] = ()
    notes: dict[str, int] = field(default_factory=dict)


def as_plain(value: Fast) -> Plain:
    return Plain(value.name, value.count, value.tags, value.notes)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [(("a",), {}), (("a", 5), {}), (("a",), {"tags": ("x",)}), ((), {"name": "b", "notes": {"k": 1}, "count": 0})],
)
def test_arguments_and_defaults_give_the_dataclass_value(args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    fast = Fast(*args, **kwargs)  # type: ignore[arg-type]
    plain = Plain(*args, **kwargs)  # type: ignore[arg-type]
    assert type(fast) is Fast
    assert as_plain(fast) == plain
    assert repr(fast) == repr(plain).replace("Plain", "Fast")
    assert fast == Fast(*args, **kwargs)  # type: ignore[arg-type]


def test_a_default_factory_makes_a_new_value_each_time() -> None:
    assert Fast("a").notes == {}
    assert Fast("a").notes is not Fast("a").notes


@built_fast
@dataclass(frozen=True, slots=True)
class Pair:
    high: int
    low: int


def test_equal_values_hash_alike_and_other_values_differ() -> None:
    assert hash(Pair(6, 4)) == hash(Pair(6, 4)) == hash(dataclasses.astuple(Pair(6, 4)))
    assert Pair(6, 4) != Pair(6, 3)
    assert Fast("a", 1) != Fast("a", 2)
    assert {Pair(6, 4), Pair(6, 4)} == {Pair(6, 4)}


def test_wrong_arguments_are_refused_as_the_dataclass_refuses_them() -> None:
    with pytest.raises(TypeError):
        Fast()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Fast("a", unknown=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Fast("a", 1, (), {}, "too many")  # type: ignore[call-arg]


def test_values_stay_frozen_as_the_dataclass_does() -> None:
    """Every store or delete is refused as the plain dataclass refuses it: a field with FrozenInstanceError,
    another name or `__class__` with a TypeError under slots (CPython #90562)."""
    value: object = Fast("a")
    for frozen in (value, Plain("a")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(frozen, "name")
        for name, new in (("count", 4), ("extra", 1), ("__class__", Pair)):
            with pytest.raises((AttributeError, TypeError)):
                setattr(frozen, name, new)
    assert value == Fast("a")


def test_copies_pickles_replace_and_evolve_rebuild_the_value() -> None:
    value = Fast("a", 2, ("t",), {"k": 1})
    for again in (
        copy.copy(value),
        copy.deepcopy(value),
        pickle.loads(pickle.dumps(value)),
        dataclasses.replace(value),
        evolve(value),
    ):
        assert type(again) is Fast
        assert again == value
    assert evolve(value, count=7) == Fast("a", 7, ("t",), {"k": 1})
    assert dataclasses.replace(value, name="b") == Fast("b", 2, ("t",), {"k": 1})
    with pytest.raises(TypeError):
        evolve(value, unknown=1)


def test_only_a_slots_class_of_its_own_is_built_fast() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        name: str

    with pytest.raises(TypeError):
        built_fast(NoSlots)


def test_an_event_without_facts_has_its_own_empty_facts() -> None:
    assert Event("ready", Seat(0)).to_json() == {"kind": "ready", "seat": 0}
    assert Event("ready").facts is not Event("ready").facts


@pytest.mark.parametrize("name", sorted(games()))
def test_states_of_a_played_match_pickle_and_copy_to_equal_states(name: str) -> None:
    """Snapshots pickle whole states, deals and actions: each along a random legal match comes back equal."""
    game = games()[name]
    rng = random.Random(7)
    state = game.start(game.min_seats, {}, Seat(0))
    now = Millis(0)
    for _ in range(300):
        assert pickle.loads(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)) == state
        assert copy.deepcopy(state) == state
        if game.is_over(state):
            break
        if game.needs_deal(state):
            order = list(range(game.deck_size(state)))
            rng.shuffle(order)
            deal = game.deal_from(state, order)
            assert pickle.loads(pickle.dumps(deal)) == deal
            state, _ = game.apply(state, CHANCE, deal, now)
            continue
        now = Millis(now + 100)
        for seat in map(Seat, range(game.min_seats)):
            legal = [a for a in game.legal_actions(state, seat)[:50] if a.to_json()["do"] not in ("resign", "abandon")]
            if legal:
                action = rng.choice(legal)
                assert pickle.loads(pickle.dumps(action)) == action
                state, _ = game.apply(state, seat, action, now)
                break
