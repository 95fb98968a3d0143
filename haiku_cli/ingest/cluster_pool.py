"""The actors of one `add-src --engine ray` add and the calls in flight to them (see ingest/cluster.py)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from haiku_cli.errors import ModelError, exception_reason
from haiku_cli.ingest.cluster_tasks import Preparer, Written
from haiku_cli.ingest.items import Item

# How long a failed or interrupted add waits for its killed actors to end before it removes the
# fragments they wrote.
_CANCEL_WAIT_SECONDS = 30.0


@dataclass
class Call:
    """A call in flight to an actor: a batch to prepare, or one whose rows the actor's predecessor held
    and lost (`redo`: the document ids and content hashes each item's rows had), or the actor's finish
    (`batch` None). `tries`: the actors that died while it was theirs."""

    ref: Any
    slot: int
    batch: list[tuple[int, Item]] | None
    known: dict[str, str] = field(default_factory=dict)
    fetched: dict[Any, Any] = field(default_factory=dict)
    redo: Written | None = None
    tries: int = 0


@dataclass
class Held:
    """A batch taken from an actor whose rows it holds unwritten: what to prepare again if it dies."""

    batch: list[tuple[int, Item]]  # those of its items whose rows it holds
    fetched: dict[Any, Any]
    written: Written
    tries: int


class Pool:
    """An add's actors, one per cluster CPU (made when first sent a batch), the calls in flight to them in
    the order their results are taken, and the batches whose rows each actor holds unwritten.

    An actor runs its calls in the order sent, and writes every row it holds when it writes a fragment;
    so a call that returns fragments means every row sent to that actor before is written.
    """

    def __init__(self, job: Any, size: int, max_retries: int) -> None:
        import ray

        self._remote = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(Preparer)
        self._job = job
        self.size = size
        self.max_retries = max_retries
        self.actors: list[Any] = [None] * size
        self.held: list[list[Held]] = [[] for _ in range(size)]
        self.pending: deque[Call] = deque()
        self._gone: list[Any] = []  # actors replaced: killed again at the end, in case one lingers

    def _actor(self, slot: int) -> Any:
        if self.actors[slot] is None:
            self.actors[slot] = self._remote.remote(self._job)
        return self.actors[slot]

    def send(
        self, slot: int, batch: list[tuple[int, Item]], known: dict[str, str], fetched: dict[Any, Any]
    ) -> None:
        """Send a batch to the slot's actor, its result taken after those sent before."""
        ref = self._actor(slot).prepare.remote(batch, known, fetched)
        self.pending.append(Call(ref, slot, batch, known, fetched))

    def finish_all(self) -> None:
        """Have every actor write what it holds, after the calls sent to it."""
        for slot, actor in enumerate(self.actors):
            if actor is not None:
                self.pending.append(Call(actor.finish.remote(), slot, None))

    def took(self, call: Call, flushed: bool, written: Written) -> None:
        """Note a call's result: the rows its actor holds unwritten now (a redo's are checked)."""
        if call.redo is not None and written != call.redo:
            raise ModelError(
                "the Ray cluster lost chunks it had made and could not make the same again (a source "
                "changed while the add ran); run the add again"
            )
        if flushed or call.batch is None:
            self.held[call.slot] = []
        elif written:
            batch = [(p, item) for p, item in call.batch if p in written]
            self.held[call.slot].append(Held(batch, call.fetched, written, call.tries))

    def replace(self, slot: int, exc: BaseException) -> None:
        """The slot's actor died: a new one prepares again the rows the old one held, then the calls still
        in flight to it, in their order; past `max_retries` deaths of a call's actor the add fails."""
        import ray

        self._gone.append(self.actors[slot])
        ray.kill(self.actors[slot], no_restart=True)
        self.actors[slot] = None
        actor = self._actor(slot)
        again = [
            Call(None, slot, held.batch, fetched=held.fetched, redo=held.written) for held in self.held[slot]
        ]
        for call, held in zip(again, self.held[slot], strict=True):
            call.tries = held.tries + 1
        self.held[slot] = []
        in_flight = [call for call in self.pending if call.slot == slot]
        for call in in_flight:
            call.tries += 1
        for call in [*again, *in_flight]:  # sent in the order the new actor is to run them
            if call.tries > self.max_retries:
                reason = exception_reason(exc, upto="line")
                raise ModelError(f"the Ray cluster failed to prepare the items: {reason}")
            if call.batch is None:
                call.ref = actor.finish.remote()
            else:
                call.ref = actor.prepare.remote(call.batch, call.known, call.fetched, call.redo)
        self.pending.extendleft(reversed(again))  # taken first: they run first

    def stop(self) -> None:
        """Kill every actor (a finished add's too: it frees their CPUs) and wait until the ones with calls
        in flight have ended, so no fragment is being written once this returns."""
        import ray

        for actor in [*self.actors, *self._gone]:
            if actor is not None:
                ray.kill(actor, no_restart=True)
        refs = [call.ref for call in self.pending if call.ref is not None]
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=_CANCEL_WAIT_SECONDS)
        self.pending.clear()
