"""501♠ (RULES.md F-1..F-10): a Russian trick-taking game for three, or four with a sitting-out dealer."""

from workers.games.five_oh_one.game import FiveOhOne

__all__ = ["FiveOhOne"]
