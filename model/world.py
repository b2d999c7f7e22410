"""The whole modelled system: brokers, the controller, the network, the clients and the clock."""

from __future__ import annotations

from typing import NamedTuple

from .broker import Broker
from .commitlog import Message
from .config import FaultBudget
from .controller import Controller

# Put results the client sees (PutMessageStatus), plus two the model needs.
PUT_OK = "PUT_OK"
FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
IN_SYNC_REPLICAS_NOT_ENOUGH = "IN_SYNC_REPLICAS_NOT_ENOUGH"
PENDING = "PENDING"  # appended, waiting for replica acks
NO_RESPONSE = "NO_RESPONSE"  # the broker crashed before answering: outcome unknown to the client

# The consumer holds no offset for a queue in memory (it restarted, or rebalancing handed it the
# queue): its next pull first asks the master for the committed offset.
UNLOADED = -1


class SendRecord(NamedTuple):
    msg: int | None  # None when nothing was written
    broker: int
    status: str


class ReadRecord(NamedTuple):
    queue: int
    queue_offset: int
    msg: int
    broker: int


class State(NamedTuple):
    now: int
    brokers: tuple[Broker, ...]  # index = broker id - 1
    ctrl: Controller
    cut: frozenset[int]  # brokers partitioned away from the controller and the other brokers
    off_controller: frozenset[int]  # brokers whose controller path alone is cut (their HA links work)
    msgs: tuple[Message, ...]  # every message ever written, index = id - 1
    sends: tuple[SendRecord, ...]
    reads: tuple[ReadRecord, ...]
    used: FaultBudget  # perturbations used so far
    # Periodic tasks that already ran in the current tick (a 5 s period is one tick), so a
    # sequence of periodic steps takes the time it takes; `tick` clears it.
    ran: frozenset[str] = frozenset()
    # One consumer group's client, per queue (RemoteBrokerOffsetStore.offsetTable): the next
    # queue offset to read, or UNLOADED. Each pull commits it to the broker it pulls from.
    consumer: tuple[int, ...] = ()
    # Ghost state, never read by a rule: per broker, the last heartbeat that in fact reached the
    # controller (time, lastEpoch, maxPhyOffset, confirmOffset, priority), whatever the
    # controller then made of it. Invariant I7 judges elections against it, not against the
    # controller's own table, so a controller that keeps a stale view cannot hide behind it.
    reports: tuple = ()

    def broker(self, broker_id: int) -> Broker:
        return self.brokers[broker_id - 1]

    def with_broker(self, b: Broker) -> "State":
        i = b.id - 1
        return self._replace(brokers=self.brokers[:i] + (b,) + self.brokers[i + 1 :])

    def acked(self) -> list[Message]:
        return [self.msgs[r.msg - 1] for r in self.sends if r.status == PUT_OK]


def reachable(s: State, a: int, b: int) -> bool:
    """Brokers on the same side of the partition can talk."""
    return (a in s.cut) == (b in s.cut)


def reaches_controller(s: State, b: int) -> bool:
    return b not in s.cut and b not in s.off_controller


def heartbeats(s: State, b_id: int) -> bool:
    """BrokerController's scheduled sendHeartbeat reaches the controller with an id: the process
    is up and its ReplicasManager runs, or has read the id from its metadata file while it still
    starts (ReplicasManager.confirmNowRegisteringState, BrokerController.scheduleSendHeartbeat)."""
    b = s.broker(b_id)
    return b.up and (b.running or b.metadata_file) and reaches_controller(s, b_id)
