"""Which worker owns a match: the same map in the gateway and in every worker (DESIGN.md)."""

from __future__ import annotations

import functools
import hashlib

PARTITIONS = 256


@functools.lru_cache(maxsize=1 << 16)  # asked for every command: a lookup, not a hash, for the matches in play
def partition_of(match_id: str, partitions: int = PARTITIONS) -> int:
    """A stable hash of the match id (not Python's salted `hash`), modulo the partition count."""
    digest = hashlib.blake2b(match_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % partitions


def owner_of(match_id: str, workers: int, partitions: int = PARTITIONS) -> int:
    """Worker k of N owns the partitions p with p mod N = k."""
    return partition_of(match_id, partitions) % workers
