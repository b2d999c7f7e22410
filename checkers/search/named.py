"""The explorer's named configurations: the standard controller-mode ones (with the bounds they
are explored to, their state counts in docs/exploration.md) and those of the other modes."""

from __future__ import annotations

from typing import Any, NamedTuple

from rmqcheck.model.classic import ClassicConfig
from rmqcheck.model.config import NO_FAULTS, SYNC_FLUSH, Config
from rmqcheck.model.dledger import DLedgerConfig
from rmqcheck.model.recovery import RecoveryConfig

from rmqcheck.checkers.search.explore import Bounds


class Standard(NamedTuple):
    cfg: Config
    bounds: Bounds
    description: str


_SAFE = dict(all_ack=True, flush=SYNC_FLUSH, bugs=frozenset(), message_sizes=(1,))

# Standard configurations: the safe settings (allAckInSyncStateSet, SYNC_FLUSH, no unclean
# election) on the intended baseline. Their state counts are in docs/exploration.md.
STANDARD: dict[str, Standard] = {
    "std2": Standard(
        Config(brokers=2, max_messages=1, faults=NO_FAULTS._replace(crashes=1), **_SAFE),
        Bounds(max_epoch=2, max_sss_epoch=3, max_depth=24),
        "2 brokers, 1 one-byte message, 1 crash, masterEpoch <= 2, syncStateSetEpoch <= 3, depth <= 24",
    ),
    "std3": Standard(
        Config(brokers=3, max_messages=1, faults=NO_FAULTS._replace(crashes=1), **_SAFE),
        Bounds(max_epoch=2, max_sss_epoch=3, max_depth=15, symmetry=True),
        "3 brokers, 1 one-byte message, 1 crash, masterEpoch <= 2, syncStateSetEpoch <= 3, depth <= 15, "
        "symmetry over broker renaming",
    ),
}


# Classic master/slave HA (model/classic.py), the snapshot's form: SYNC_MASTER, inSyncReplicas 2.
CLASSIC: dict[str, tuple[ClassicConfig, str]] = {
    "classic": (
        ClassicConfig(slaves=2, sync_flush=True, max_messages=2, file_size=8, resets=1),
        "classic HA: SYNC_MASTER + 2 slaves, inSyncReplicas 2, SYNC_FLUSH, 2 one-byte messages in one file, "
        "1 crash, 1 connection reset",
    ),
    "classic-async-flush": (
        ClassicConfig(max_messages=2, file_size=8),
        "classic HA: SYNC_MASTER + 1 slave, inSyncReplicas 2, ASYNC_FLUSH (a crash loses the unflushed tail), "
        "2 one-byte messages, 1 crash",
    ),
}

# DLedger mode (model/dledger.py): the snapshot's DLedger 0.3.1.2 unless a name says otherwise.
DLEDGER: dict[str, tuple[DLedgerConfig, str]] = {
    "dledger": (
        DLedgerConfig(max_term=1, crashes=0, bugs=frozenset()),
        "DLedger mode, intended (dledger 93d6ff1 commit rule, a no-op on election): 3 members, one election "
        "round (terms up to 1), 1 message, no crash",
    ),
    "dledger-snapshot": (
        DLedgerConfig(max_term=3, crashes=0, noop_on_election=False),
        "DLedger mode as the snapshot pins it (dledger-all-0.3.1.2, no no-op): 3 members, terms up to 3, "
        "1 message, no crash",
    ),
}

# Store crash recovery (model/recovery.py): 2-byte commit-log files, messages of 1 and 2 bytes
# (so a file can end in a BLANK), 1 crash (any page-cache loss), 1 clean shutdown.
RECOVERY: dict[str, tuple[RecoveryConfig, str]] = {
    "recovery": (
        RecoveryConfig(message_sizes=(1, 2), max_time=3, bugs=frozenset()),
        "store recovery, intended (logicsMsgTimestamp of flushed entries, #10073; no dispatch in normal "
        "recovery): ASYNC_FLUSH, 3 messages of 1-2 bytes in 2-byte files, 3 ticks, 1 crash, 1 clean shutdown",
    ),
    "recovery-snapshot": (
        RecoveryConfig(message_sizes=(1, 2), max_time=3),
        "store recovery as the snapshot writes it: ASYNC_FLUSH, 3 messages of 1-2 bytes in 2-byte files, "
        "3 ticks, 1 crash, 1 clean shutdown",
    ),
    "recovery-controller": (
        RecoveryConfig(controller_mode=True, max_time=0),
        "a controller-mode slave's store as the snapshot writes it: dispatch up to confirmOffset, "
        "3 one-byte messages in 2-byte files, 1 crash, 1 clean shutdown",
    ),
}

# Every named configuration of the other modes.
MODE_CONFIGS: dict[str, tuple[Any, str]] = {**CLASSIC, **DLEDGER, **RECOVERY}
