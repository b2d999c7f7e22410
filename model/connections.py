"""The master's HA connections (`AutoSwitchHAService.connectionList`): one record per
connection, and which of them the slave's client talks to (reference §2.4).

The master keeps its connections in a list: a slave's closed connection lingers there beside
its next one until the master notices, and whatever iterates the list (acks, confirmOffset,
removal) sees both (`acks_counted_per_connection`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .broker import Broker

# Java's timestamp 0 (1970): decades before any tick, whereas the model's time 0 is the start
# of the run. Timestamps the code starts at 0 (lastTransferTimeMs, a missing caught-up time)
# start here, so they look as old as they are (and the explorer's time view stays exact).
EPOCH_ZERO = -(10**9)


class Conn(NamedTuple):
    """`AutoSwitchHAConnection`, the master's end of one slave's HA connection (§2.4)."""

    slave: int
    learner: bool  # isAsyncLearner, from the slave's handshake
    lingering: bool = False  # the slave's end closed; the master has not noticed yet
    ack: int = -1  # slaveAckOffset
    request: int = -1  # slaveRequestOffset: set by the first ack only
    next: int = -1  # nextTransferFromWhere
    transfer_epoch: int = -1  # currentTransferEpoch
    transfer_end: int = 0  # currentTransferEpochEndOffset (starts at 0); -1 means unbounded (last epoch)
    last_master_max: int = -1  # lastMasterMaxOffset: master max at the last data send
    last_transfer_time: int = EPOCH_ZERO  # lastTransferTimeMs


def conn_of(b: "Broker", slave: int) -> Conn | None:
    """The connection the slave's client talks to (not a lingering one)."""
    for c in b.conns:
        if c.slave == slave and not c.lingering:
            return c
    return None


def replace_conn(b: "Broker", conn: Conn) -> "Broker":
    """Replace the slave's live connection (the one `conn_of` returns) by `conn`."""
    return b._replace(conns=tuple(conn if c.slave == conn.slave and not c.lingering else c for c in b.conns))
