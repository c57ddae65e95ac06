"""A process that runs match clocks is set up so that nothing of its own holds the event loop for long:

- threads hand over the interpreter every millisecond, not every 5 ms: the heartbeat thread, the log's
  writer and a pool's result reader wait that long at most for a busy loop, and the loop for them (at 5 ms,
  heartbeats came 100-300 ms late under load, and a heartbeat later than its lease loses the leases);
- the cyclic collector's young passes go on (shorter than by default), but it never starts a pass over the
  oldest generation by itself: with 10,000 matches in memory one such pass held the loop 87-124 ms (CPU),
  860 ms with bots playing, and it comes back as long as the matches live (`tablehall bench clocks`,
  "full GC max").

What this gives up: a reference cycle that outlived two young passes is freed only by an explicit
`gc.collect()`. A match's states, log and snapshots are immutable values (no cycles), an actor's timer
handle lets go of it when cancelled, and `tablehall bench clocks` prints what a full pass still finds
after its phases ("cyclic garbage"): a few objects, not a growing heap.
"""

from __future__ import annotations

import gc
import sys

SWITCH_S = 0.001
"""The interpreter's thread hand-off interval (`sys.setswitchinterval`; CPython's default is 5 ms)."""
YOUNG = (2000, 2)
"""The young generations' thresholds: a pass over the youngest every 2,000 new objects (CPython's default: 700),
over the middle one every 2 of those instead of 10, so it holds fewer objects (measured with passes every 700:
with 10,000 clocks the middle ones took 4.6 ms at most instead of 12.8 ms, the same total CPU). They free the
cyclic garbage a request leaves behind (an exception and its frames). Every young pass also walks what is in
flight (each stream's coroutines, futures, gRPC operations: ~1,000 objects at 50 matches in flight), whatever
the threshold, so 2,000 rather than 700 makes a third of the passes: the serving loop's CPU a command −3 % in
memory and on SQLite (the two settings alternated inside one `tablehall serve` under `bench service`), the
middle pass at most 5 ms there, `tablehall bench clocks` unchanged (README, "The interpreter and the
collector, 12-06")."""
NEVER = 2**31 - 1
"""The oldest generation's threshold: so many young passes never come, so no full pass starts by itself."""


def clocks_first() -> None:
    """Set this process up for match clocks (idempotent): every worker process, the embedded worker, benches."""
    sys.setswitchinterval(SWITCH_S)
    gc.set_threshold(*YOUNG, NEVER)
