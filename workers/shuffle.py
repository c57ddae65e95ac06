"""Deal orders from the OS CSPRNG, one system call per deal.

`secrets.SystemRandom().shuffle` asks the OS for random bits once per card (28 or 32 `urandom` calls a
deal), which made dealing the largest cost of creating many tables at once. Here one `os.urandom` buffer
serves the whole Fisher–Yates shuffle; each index is drawn without modulo bias by rejection sampling of
32-bit words (a word at or above the largest multiple of the range is drawn again).
"""

from __future__ import annotations

import os
import sys

WORD = 4


class _Words:
    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.words = memoryview(b"").cast("I")
        self.next = 0

    def below(self, bound: int) -> int:
        """A uniform integer in [0, bound), bound ≤ 2**32."""
        limit = (1 << 32) // bound * bound
        while True:
            if self.next == len(self.words):
                self.words = memoryview(os.urandom(WORD * (self.expected + 8))).cast("I")
                self.next = 0
            word = self.words[self.next]
            self.next += 1
            if word < limit:
                return word % bound


def shuffled(n: int) -> list[int]:
    """A uniformly random permutation of range(n)."""
    order = list(range(n))
    words = _Words(n)
    for i in range(n - 1, 0, -1):
        j = words.below(i + 1)
        order[i], order[j] = order[j], order[i]
    return order


assert memoryview(b"\0" * WORD).cast("I").itemsize == WORD, f"unsigned int is not 32 bits on {sys.platform}"
