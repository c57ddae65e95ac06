from collections import Counter

import pytest

from gateway.tournaments import seat_501, table_sizes_501


def ranked(n: int) -> list[str]:
    return [f"p{i:02d}" for i in range(n)]


@pytest.mark.parametrize(
    ("n", "sizes"),
    [
        (9, (3, 3, 3)),
        (10, (3, 3, 4)),
        (11, (3, 4, 4)),
        (12, (3, 3, 3, 3)),
        (3, (3,)),
        (4, (4,)),
        (5, (4,)),
        (6, (3, 3)),
        (7, (3, 4)),
        (8, (4, 4)),
        (2, ()),
        (1, ()),
        (0, ()),
    ],
)
def test_table_sizes(n: int, sizes: tuple[int, ...]) -> None:
    assert sorted(table_sizes_501(n)) == list(sizes)


@pytest.mark.parametrize("n", range(0, 31))
def test_sizes_seat_everyone_from_six_on(n: int) -> None:
    sizes = table_sizes_501(n)
    assert all(s in (3, 4) for s in sizes)
    assert n - sum(sizes) == {0: 0, 1: 1, 2: 2, 5: 1}.get(n, 0)


@pytest.mark.parametrize("n", [9, 10, 11, 12])
def test_seating_everyone_once_balanced(n: int) -> None:
    players = ranked(n)
    seating = seat_501(players)
    assert seating.byes == ()
    seated = [p for t in seating.tables for p in t.seats]
    assert sorted(seated) == players
    assert Counter(seated).most_common(1)[0][1] == 1
    assert sorted(len(t.seats) for t in seating.tables) == sorted(table_sizes_501(n))
    t = len(seating.tables)
    rank = {p: i for i, p in enumerate(players)}
    # Each band of t consecutive ranks is spread over t different tables.
    for table in seating.tables:
        bands = [rank[p] // t for p in table.seats]
        assert bands == list(range(len(table.seats)))
    # Over the first three seats (which every table has) rank sums differ by at most the table count.
    sums = [sum(rank[p] for p in table.seats[:3]) for table in seating.tables]
    assert max(sums) - min(sums) <= t


def test_seating_explicit_eleven() -> None:
    seating = seat_501(ranked(11))
    assert [t.seats for t in seating.tables] == [
        ("p00", "p05", "p06", "p10"),
        ("p01", "p04", "p07", "p09"),
        ("p02", "p03", "p08"),
    ]


def test_byes_to_lowest_without_previous_bye() -> None:
    players = ranked(5)
    seating = seat_501(players)
    assert [b.player for b in seating.byes] == ["p04"]
    seating = seat_501(players, {"p04": 1})
    assert [b.player for b in seating.byes] == ["p03"]
    assert sorted(p for t in seating.tables for p in t.seats) == ["p00", "p01", "p02", "p04"]
    two = seat_501(["a", "b"])
    assert two.tables == ()
    assert [b.player for b in two.byes] == ["a", "b"]
