"""RocketMQ's own logs read into records: the layout, the record format, and the messages of the
snapshot's code the checks (logs.py) read.

Layout read (`validate --logs DIR`): one folder per node under DIR, holding that node's log
files as logback names them (`broker.log`, `store.log`, `storeerror.log`, `controller.log`, and
the rolled `broker.1.log` ...), and for a broker maybe its `epochFileCheckpoint`, which the store checks
read as they read any replica set:

    DIR/<broker>/broker.log  DIR/<broker>/store.log  DIR/<broker>/storeerror.log  DIR/<broker>/epochFileCheckpoint
    DIR/<controller>/controller.log

A record is one line in the snapshot's logback pattern, `%d{yyy-MM-dd HH:mm:ss,GMT+8} %p %t -
%m%n` (rmq.broker.logback.xml, rmq.controller.logback.xml), followed by the lines of a stack
trace it printed, if any. Timestamps have one-second resolution in a fixed zone and the nodes'
clocks differ: they order nothing across nodes. A node's records keep their order in its files
(rolled files oldest first); two of its files are ordered by its own clock, to the second (a
consume queue gone off after a ReputMessageService join); across nodes the only order is the
one epochs and offsets give.

Lines after a record that do not start one are its continuation (a stack trace, or a message of
several lines: RocketMQ's exceptions end with "For more information, please visit the url, ...").
Bad input, named by file and line: such a line before any record, one that starts like a date
but is no record (a damaged header), and one that says what a record this module reads says
(its header lost, its event would be).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Iterator, NamedTuple

from .schema import TraceError

LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR")
RECORD = re.compile(r"(\d{3,4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) ([A-Z]+) (\S+) - (.*)")
# A line that starts like a record's date but is not one: a damaged record, not a continuation.
DATED = re.compile(r"\d{1,4}-\d{1,2}-\d{1,2}[ T]")
FILES = re.compile(r"(broker|store|storeerror|controller)(\.\d+)?\.log")


class Record(NamedTuple):
    file: str
    line: int  # of its first line, from 1
    time: str  # as written: ordering nothing across nodes
    level: str
    thread: str
    message: str  # its first line; a stack trace's lines are not kept


def log_files(node: Path) -> list[Path]:
    """A node's log files in the order they were written: per kind, the rolled files oldest
    first (logback's FixedWindowRollingPolicy: the highest index is the oldest), then the
    live file."""
    found = [p for p in node.iterdir() if p.is_file() and FILES.fullmatch(p.name)]

    def order(p: Path) -> tuple[str, int]:
        kind, rolled = FILES.fullmatch(p.name).groups()
        return kind, -int(rolled[1:]) if rolled else 0

    return sorted(found, key=order)


def records(path: Path) -> Iterator[Record]:
    """The records of one log file; TraceError (file and line) for a line that is neither a
    record nor part of one's stack trace, a record with a date or time that cannot be, or a
    level logback does not write."""
    name = str(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise TraceError(name, f"line {line}", "not UTF-8 text") from None
    except OSError as exc:
        raise TraceError(name, "file", f"cannot be read: {exc.strerror}") from None
    started = False
    for number, line in enumerate(text.splitlines(), start=1):
        m = RECORD.fullmatch(line)
        if m is None:
            if not line:
                continue
            if not started or DATED.match(line):
                raise TraceError(name, f"line {number}", f"not a log record ('yyyy-MM-dd HH:mm:ss LEVEL thread - "
                                                         f"message'){'' if started else ', and no record before it'}: "
                                                         f"{line[:120]!r}")
            if any(p.search(line) for p in EVENTS):
                raise TraceError(name, f"line {number}", f"a record's message without its date, level and thread "
                                                         f"(a damaged line?): {line[:120]!r}")
            continue  # a stack trace's line, or a message's next line
        year, month, day, hour, minute, second, level, thread, message = m.groups()
        if not (1 <= int(month) <= 12 and 1 <= int(day) <= 31 and int(hour) < 24 and int(minute) < 60
                and int(second) < 61):
            raise TraceError(name, f"line {number}", f"no such date or time: {line[:19]!r}")
        if level not in LEVELS:
            raise TraceError(name, f"line {number}", f"{level!r} is not a log level ({', '.join(LEVELS)})")
        started = True
        yield Record(name, number, line[:19], level, thread, message)


# --- what the records say ---------------------------------------------------------------------
# Each pattern is a message of the snapshot's code, with where it is written (file:line at
# 8fc57f1468) and the log file logback routes it to.

# store.log, AutoSwitchHAService.changeToMaster (:160) and changeToMasterWhenLastRoleIsMaster (:212)
BECAME_MASTER = re.compile(r"Change ha to master success, (last role is master, )?newMasterEpoch:(\d+), "
                           r"startOffset:(-?\d+)")
# store.log, AutoSwitchHAService.changeToMaster (:157): after truncateInvalidMsg, before the new epoch serves
NEW_MASTER_TRUNCATED = re.compile(r"TruncateOffset is (-?\d+), confirmOffset is (-?\d+), maxPhyOffset is (-?\d+)")
# store.log, AutoSwitchHAClient.doTruncate (:450-451): both sides' epoch entries at a handshake
EPOCH_ENTRIES = re.compile(r"(master|local) epoch entries is \[(.*)\]")
ENTRY = re.compile(r"EpochEntry\{epoch=(-?\d+), startOffset=(-?\d+), endOffset=(-?\d+)\}")
# store.log, AutoSwitchHAClient.doTruncate (:455) then DefaultMessageStore.truncateFiles (:777): the
# consistent point a slave's handshake found, and the store's "nothing to cut" when it is at or
# beyond the log's end (its truncateDirtyFiles, :739, writes the same words after "truncate dirty
# files to", without the first line)
CONSISTENT_POINT = re.compile(r"truncateOffset is (-?\d+)")
# store.log, AutoSwitchHAClient.doTruncate (:438): a handshake of a slave whose epoch file is empty
EMPTY_LOCAL = "Slave local epochCache is empty, skip truncate log"
NOTHING_TO_CUT = re.compile(r"no need to truncate files, truncate offset is (-?\d+), max physical offset is (-?\d+)")
# DefaultMessageStore.truncateDirtyFiles (:735): kept among the records only so that a cut is the
# record after a handshake's point, and a later "nothing to cut" is not taken for its answer
CUTTING = re.compile(r"truncate dirty files to (-?\d+)")
# store.log, AutoSwitchHAConnection's WriteSocketService (:527, :602): a transfer under an epoch
# the master's epoch file no longer has a place for (#9689)
TRANSFER_EPOCH_LOST = re.compile(r"(Failed to find epochEntry with epoch (\d+) when build msg header|"
                                 r"Can't find a bigger epochEntry than epoch (\d+))")
# broker.log, ReplicasManager.changeToMaster (:240), changeToSlave (:284), and the SyncStateSet
# the broker acks with from then on (changeSyncStateSet, :340); the broker's own id, from
# changeToSlave or registerBrokerWhenRoleChange (:331).
BEGIN_MASTER = re.compile(r"Begin to change to master, brokerName:\S*, replicas:\S*, new Epoch:(\d+)")
BEGIN_SLAVE = re.compile(r"Begin to change to slave, brokerName=\S*, brokerId=(-?\d+), newMasterBrokerId=(-?\d+), "
                         r"newMasterAddress=\S*, newMasterEpoch=(\d+)")
OWN_ID = re.compile(r"Change broker \[id:(-?\d+)\]")
SSS_CHANGED = re.compile(r"SyncStateSet changed from \[([\d, ]*)\] to \[([\d, ]*)\]")
# broker.log, ReplicasManager.doReportSyncStateSetChanged (:766): an AlterSyncStateSet whose answer
# did not come back as a success (rejected, or lost: the controller may have applied it); the
# exception follows on continuation lines
SSS_ALTER_FAILED = re.compile(r"Error happen when change SyncStateSet, broker:(\S*), masterAddress:\S*, masterEpoch:"
                              r"(\d+), oldSyncStateSet:\[([\d, ]*)\], newSyncStateSet:\[([\d, ]*)\], "
                              r"syncStateSetEpoch:(\d+)")

# controller.log, DLedgerController's event scheduler (:450): each request's result, before it is
# appended (a failed append is logged after it, :493); the SyncStateSet a controller applies and
# the master it elects appear nowhere else.
CONTROLLER_SSS = re.compile(r"AlterSyncStateSetEvent\{brokerName='([^']*)', newSyncStateSet=\[([\d, ]*)\]\}")
CONTROLLER_ELECTED = re.compile(r"ElectMasterEvent\{newMasterElected=true, brokerName='([^']*)', "
                                r"newMasterBrokerId=(\d+)\}.*?masterEpoch=(\d+)")
# broker.log, BrokerStartup.createBrokerController (:233): MixAll.printObjectProperties writes each
# MessageStoreConfig field as "name=value" at every start.
LEARNER = re.compile(r"asyncLearner=(true|false)")
# The SyncStateSet epoch each result installs: an alter's response header, an election's.
ALTER_SSS_EPOCH = re.compile(r"newSyncStateSetEpoch=(\d+)")
ELECTED_SSS_EPOCH = re.compile(r"[ {]syncStateSetEpoch=(\d+)")
# controller.log, the same line for an admin's cleanBrokerData: members leave the SyncStateSet
# without a new SyncStateSet epoch (ReplicasInfoManager.handleCleanBrokerDataEvent :591)
CONTROLLER_CLEAN = re.compile(r"CleanBrokerDataEvent\{brokerName='([^']*)'")

# storeerror.log, ConsumeQueue.putMessagePositionInfo (:841): a message dispatched to a consume-queue
# position below its queue offset's (logged once a message, as long as the queue stays off; one
# above it is "Build consume queue repeatedly" and is not written): the queue lost entries, so a
# consumer reading by queue offset skips acked messages. Seen after a truncation went on beside a
# ReputMessageService still running (#9811).
CQ_ORDER_WRONG = re.compile(r"\[BUG\]logic queue order maybe wrong, expectLogicOffset: (\d+) currentLogicOffset: "
                            r"(\d+) Topic: (\S+) QID: (\d+)")
# broker.log, ServiceThread.shutdown (:79): a join that ran out its time, the thread left running
JOIN_RAN_OUT = re.compile(r"join thread\[\w*ReputMessageService\], elapsed time: (\d+)ms, join time:(\d+)ms")
CQ_UNIT = 20  # bytes a consume-queue entry (ConsumeQueue.CQ_STORE_UNIT_SIZE)

EVENTS = (BECAME_MASTER, NEW_MASTER_TRUNCATED, EPOCH_ENTRIES, CONSISTENT_POINT, NOTHING_TO_CUT, CUTTING,
          TRANSFER_EPOCH_LOST, BEGIN_MASTER, BEGIN_SLAVE, OWN_ID,
          SSS_CHANGED, SSS_ALTER_FAILED, CONTROLLER_SSS, CONTROLLER_ELECTED, CQ_ORDER_WRONG, JOIN_RAN_OUT)


def id_set(text: str) -> frozenset[int]:
    return frozenset(int(x) for x in text.split(",") if x.strip())


def epoch_entries(text: str) -> list[tuple[int, int, int]]:
    """(epoch, start, end) of each EpochEntry a handshake's line lists, in its order."""
    return [(int(e[1]), int(e[2]), int(e[3])) for e in ENTRY.finditer(text)]


def alter_result(message: str) -> tuple[str, int, frozenset[int]] | None:
    """(broker set, SyncStateSet epoch, set) a controller.log line says an AlterSyncStateSet applied."""
    if (m := CONTROLLER_SSS.search(message)) and (e := ALTER_SSS_EPOCH.search(message)):
        return m[1], int(e[1]), id_set(m[2])
    return None


class Node(NamedTuple):
    name: str
    records: tuple[Record, ...]  # broker.log's, store.log's and controller.log's, each file in order

    def of(self, kind: str) -> list[Record]:
        """The records of its `kind` files (broker, store, storeerror, controller)."""
        return [r for r in self.records if file_kind(r.file) == kind]


@lru_cache(maxsize=None)
def file_kind(file: str) -> str:
    """broker, store, storeerror or controller: once a file, not once a record (a soak's logs hold
    millions)."""
    return FILES.fullmatch(Path(file).name)[1]


def read_set(root: Path) -> list[Node]:
    """The nodes of a log set: each folder under `root` with log files."""
    nodes = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        files = log_files(folder)
        if files:
            nodes.append(Node(folder.name, tuple(r for f in files for r in records(f))))
    return nodes


def is_log_set(folder: Path) -> bool:
    return any(p.is_dir() and log_files(p) for p in folder.iterdir())


def at(node: str, r: Record) -> str:
    return f"{node}/{Path(r.file).name}:{r.line}"
