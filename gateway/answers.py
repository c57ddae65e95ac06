"""A `Play` stream's outgoing events in order: updates in the order of their changes, each command's result
after the results of the commands sent before it, and, when the stream asked `answer_on_update`, an accepted
command's result riding on the update of the change it made (one gRPC message instead of two: each costs
both sides ~65 µs of CPU).

The update of a command's change usually reaches the gateway a moment before the command's result (the
worker wakes its watchers, then answers), so while a command of this stream is at the worker its updates
wait here for that result, and a result waits for its update. Neither waits long: the result follows its
commit at once, and every change's update comes, in order. Once the watch has ended nothing waits any more.

Events go out serialized (`workers.wire`): an update's bytes, built once for every watcher of its seat,
behind a `PlayEvent` tag, never copied into a message.
"""

from __future__ import annotations

from collections import deque

from protos.tablehall.v1 import matches_pb2
from workers.wire import Posted, play_result, play_update


class Answers:
    """What to send, as commands go to the worker and updates and results come in."""

    __slots__ = ("at_worker", "on_update", "results", "shown_seq", "unanswered", "updates")

    def __init__(self, on_update: bool) -> None:
        self.on_update = on_update
        self.at_worker = 0
        """Commands sent to the worker whose results have not come back."""
        self.unanswered = 0
        """Commands read from the stream whose result has not been sent."""
        self.shown_seq = 0
        """The newest change whose update this stream has sent."""
        self.results: deque[matches_pb2.CommandResult] = deque()
        """Results waiting for their update (and those of later commands, waiting behind them)."""
        self.updates: deque[Posted] = deque()
        """Updates waiting while a command is at the worker (one of them may be its change)."""

    def asked(self) -> None:
        """A command of this stream went to the worker."""
        self.at_worker += 1
        self.unanswered += 1

    def result(self, result: matches_pb2.CommandResult) -> list[bytes]:
        """A command was answered (`seq` 0: refused)."""
        self.at_worker -= 1
        if not self.on_update:
            return [self._alone(result)]
        self.results.append(result)
        return self._due()

    def update(self, update: Posted) -> list[bytes]:
        """The watch delivered a change."""
        if not self.on_update or not (self.at_worker or self.results or self.updates):
            return [self._shown(update)]  # nothing of this stream's at the worker: it goes at once
        self.updates.append(update)
        return self._due()

    def ended(self) -> list[bytes]:
        """The watch is over: what waits goes out now (an update still unanswered alone), later results at once."""
        out = self._due()
        out += [self._shown(update) for update in self.updates]
        self.updates.clear()
        self.on_update = False
        out += [self._alone(result) for result in self.results]
        self.results.clear()
        return out

    def _shown(self, update: Posted, answered: matches_pb2.CommandResult | None = None) -> bytes:
        self.shown_seq = max(self.shown_seq, update.seq)
        if answered is not None:
            self.unanswered -= 1
        return play_update(update, answered)

    def _alone(self, result: matches_pb2.CommandResult) -> bytes:
        self.unanswered -= 1
        return play_result(result)

    def _due(self) -> list[bytes]:
        """Everything that waits for nothing any more, in order."""
        out = []
        while self.results:
            head = self.results[0]
            if head.seq == 0 or head.seq <= self.shown_seq:  # refused, or its update went out before it came
                out.append(self._alone(self.results.popleft()))
                continue
            while self.updates and self.updates[0].seq < head.seq:
                out.append(self._shown(self.updates.popleft()))
            if not self.updates:
                break  # its update is still to come
            if self.updates[0].seq != head.seq:  # past its change already (never, updates come in order)
                out.append(self._alone(self.results.popleft()))
                continue
            out.append(self._shown(self.updates.popleft(), self.results.popleft()))
        if self.at_worker == 0 and not self.results:
            out += [self._shown(update) for update in self.updates]
            self.updates.clear()
        return out
