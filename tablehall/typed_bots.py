"""The random policy of `tablehall.bots` read straight from a typed view (views.proto): what a client in
any language does, with no dict built per update.

Spectacular Bid's legal entries are ready-to-send `Action`s, so a choice is one of them as it stands. 501♠
summarizes its bids and declarations as ranges; its choice goes through the dict policy (`choose`), which
knows them.
"""

from __future__ import annotations

import random
from typing import Any

from protos.tablehall.v1 import actions_pb2, views_pb2
from workers.bots.policy import NEVER, choose
from workers.typed_views import as_dict

IN_PROGRESS = "in_progress"


def choose_typed(view: Any, rng: random.Random) -> actions_pb2.Action | dict[str, Any] | None:
    """What a random bot does now from this seat's typed view, or None when there is nothing to do:
    a ready-to-send Action, or for 501♠ the record-style action the dict policy chose."""
    if view.status != IN_PROGRESS:
        return None
    if not isinstance(view, views_pb2.SpectacularBidView):
        return choose(as_dict(view), rng, greedy=False)
    options = [entry.action for entry in view.legal if entry.action.WhichOneof("kind") not in NEVER]
    by_kind = {action.WhichOneof("kind"): action for action in options}
    if "ready" in by_kind:
        return by_kind["ready"]
    if "reveal" in by_kind:  # a bot only takes the device when the clock waits for it (shared device)
        return by_kind["reveal"] if view.hand_over else None
    return rng.choice(options) if options else None
