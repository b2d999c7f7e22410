"""DLedger mode (seed 000): a Raft group per broker name, with the RocketMQ broker on top.

DLedger (openmessaging/dledger, the version the snapshot's pom pins: dledger-all-0.3.1.2,
7001be4) replicates the commit log: leader election in `DLedgerLeaderElector`, replication in
`DLedgerEntryPusher` (EntryDispatcher on the leader: COMPARE, TRUNCATE, APPEND, COMMIT;
EntryHandler on the follower; QuorumAckChecker for the commit index) and the store's
`updateCommittedIndex`. The broker (snapshot 8fc57f1468) reads the commit log only up to the
committed position (`DLedgerCommitLog.getMaxOffset`), dispatches it to the consume queue, and
`DLedgerRoleChangeHandler` makes a DLedger leader the broker master once its ledger end equals
its committed index and dispatch has caught up.

Abstractions (each keeps every safety-relevant outcome of the code):
- an RPC and its response are one step; the leader's compare loop and the truncate it ends in
  are one step (the loop only reads the follower);
- "sees a higher term" (`changeRoleToCandidate(term)`, then `nextTerm` in the next
  maintainAsCandidate round because `needIncreaseTermImmediately`) is one step;
- a leader's watermarks are those of its current term (QuorumAckChecker drops the others);
- one queue; an entry is (term, message id, queue offset), message 0 being DLedger's no-op;
- the log, currTerm and voteFor survive a crash (DLedger persists them); a restart recomputes
  ledgerEndTerm from the last entry; the consume queue and committed index (checkpoint) survive.

A pure state machine like model/step.py: `step(state, action, cfg)` returns the next state or
raises NotEnabled; `successors` lists what is enabled.

One module on purpose (just over 500 lines): the Raft rules and the broker on top are one rule
set over one state; the offset mapping at the end is what the broker's dispatch reads.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from . import table
from .epochfile import IntOps
from .step import NotEnabled
from .table import Rule, Toggle, check_toggles

FOLLOWER, CANDIDATE, LEADER = "FOLLOWER", "CANDIDATE", "LEADER"
NONE = -1  # no vote, no leader
COMPARE = -2  # EntryDispatcher state COMPARE: the match with this follower is not known


TOGGLES: tuple[Toggle, ...] = (
    Toggle(
        "replica_counted_in_leader_term",
        "dledger-all-0.3.1.2 DLedgerEntryPusher: changeState(APPEND) and the APPEND response call "
        "updatePeerWaterMark(leader term, ...); changed by dledger 93d6ff1 (PR #298) to the entry's term",
        "A follower's match counts in the leader's current-term watermarks whatever the term of the "
        "matched entry, so a new leader commits entries of earlier terms by counting replicas (Raft "
        "section 5.4.2, Figure 8): a node with a later last term can still win and overwrite them.",
        True,
    ),
    Toggle(
        "follower_last_log_term_is_currTerm",
        "A4: DLedger #52 / PR #53 (fix b584267), apache/rocketmq #2178",
        "appendAsFollower records memberState.currTerm() as ledgerEndTerm, not the entry's term: a "
        "lagging follower whose term rose looks up to date and wins votes against longer logs.",
        False,
    ),
    Toggle(
        "follower_commit_unclamped",
        "A10: DLedger #278 (fix b33b41f) and #316 (fix 93d6ff1)",
        "The follower sets committedIndex to the leader's commit index even beyond its own verified "
        "ledger end.",
        False,
    ),
    Toggle(
        "dispatch_uncommitted",
        "A15: apache/rocketmq 5ce20e8a37 (DLedgerCommitLog.getMaxOffset returned maxWrotePosition)",
        "The reput service dispatches written but uncommitted entries to the consume queue, so "
        "consumers read entries a new leader may truncate.",
        False,
    ),
    Toggle(
        "master_before_caught_up",
        "A15: apache/rocketmq 5ce20e8a37 (DLedgerRoleChangeHandler waits for ledgerEnd == committed "
        "and dispatchBehindBytes() == 0); #3747 asked to drop the wait",
        "A new DLedger leader becomes the broker master at once and rebuilds the topic queue table "
        "from a consume queue that lacks its uncommitted entries: queue offsets are handed out twice.",
        False,
    ),
)
# Harness mutants, not known bugs: no known toggle breaks these Raft properties, so each gets
# one to show its invariant can fail (D1, D2).
MUTANTS: tuple[Toggle, ...] = (
    Toggle(
        "vote_ignores_voted_for",
        "harness mutant (no known bug): handleVote without the currVoteFor check",
        "A member grants every candidate of its term, so two candidates can both win it.",
        False,
    ),
    Toggle(
        "compare_trusts_follower_end",
        "harness mutant (no known bug): doCompare takes the shorter end as the match without comparing",
        "The leader appends after entries the follower holds from another leader.",
        False,
    ),
)
TOGGLE_NAMES = frozenset(t.name for t in TOGGLES + MUTANTS)
SNAPSHOT = frozenset(t.name for t in TOGGLES if t.in_snapshot)


class DLedgerConfig(NamedTuple):
    nodes: int = 3
    max_term: int = 3  # elections bound: no node's currTerm goes beyond this
    max_messages: int = 1
    crashes: int = 1  # crash then restart (healing, unbounded)
    noop_on_election: bool = True  # enableFastAdvanceCommitIndex (DLedger f0ad185, after 0.3.1.2)
    bugs: frozenset[str] = SNAPSHOT

    def has(self, bug: str) -> bool:
        return bug in self.bugs

    @property
    def quorum(self) -> int:
        return self.nodes // 2 + 1


def validate(cfg: DLedgerConfig) -> DLedgerConfig:
    if not 2 <= cfg.nodes <= 5:
        raise ValueError(f"nodes must be between 2 and 5, got {cfg.nodes}")
    if cfg.max_term < 1:
        raise ValueError(f"max_term must be at least 1, got {cfg.max_term}")
    check_toggles(cfg.bugs, TOGGLE_NAMES, "DLedger")
    return cfg


class Entry(NamedTuple):
    term: int
    msg: int  # 0: DLedger's no-op entry (not a message)
    qoff: int  # the queue offset the master assigned; -1 for a no-op

    def __repr__(self) -> str:  # t<term>:m<msg>@q<queue offset>, or t<term>:noop
        return f"t{self.term}:m{self.msg}@q{self.qoff}" if self.msg else f"t{self.term}:noop"


class Member(NamedTuple):
    id: int
    up: bool = True
    # DLedger MemberState (term and vote persisted) and store
    term: int = 0
    voted: int = NONE
    role: str = CANDIDATE  # DLedger starts every member as a candidate
    leader: int = NONE
    log: tuple[Entry, ...] = ()
    end_term: int = -1  # ledgerEndTerm, a field of the store (A4 is about how it is set)
    committed: int = -1  # committedIndex
    votes: int = 0  # candidate: bitmask of members that granted in this term
    # leader: one EntryDispatcher per peer, and the current-term watermarks
    match: tuple[int, ...] = ()  # per member: COMPARE, or the index the follower matches up to
    marks: tuple[int, ...] = ()  # peerWaterMarksByTerm[currTerm]
    # the broker on top
    master: bool = False  # brokerRole != SLAVE
    cq: int = 0  # entries dispatched to the consume queue (reputFromOffset, in entries)
    qnext: int = 0  # topicQueueTable: the next queue offset, as the master knows it

    @property
    def end(self) -> int:  # ledgerEndIndex
        return len(self.log) - 1


class Chosen(NamedTuple):
    """Ghost: an entry a leader committed, and the leader's term at the time."""

    entry: Entry
    term: int


class DState(NamedTuple):
    members: tuple[Member, ...]
    msgs: int = 0  # messages put so far
    chosen: tuple[Chosen, ...] = ()  # ghost: the committed log, as leaders committed it
    crashes: int = 0

    def with_member(self, m: Member) -> "DState":
        return self._replace(members=self.members[: m.id] + (m,) + self.members[m.id + 1 :])


Action = tuple  # (kind, *args)


def initial_state(cfg: DLedgerConfig) -> DState:
    return DState(tuple(Member(i) for i in range(cfg.nodes)))


# --- helpers --------------------------------------------------------------------------------


def _step_down(m: Member, term: int) -> Member:
    """`changeRoleToCandidate(term)` then `nextTerm()`: a member that saw a higher term (or a
    leader that lost its followers) becomes a candidate in that term with no vote, and the
    broker changes to slave (`DLedgerRoleChangeHandler` CANDIDATE/FOLLOWER -> changeToSlave)."""
    return m._replace(role=CANDIDATE, term=term, voted=NONE if term > m.term else m.voted, leader=NONE,
                      votes=0, match=(), marks=(), master=False)


def update_committed(m: Member, commit: int, cfg: DLedgerConfig) -> Member:
    """`DLedgerMmapFileStore.updateCommittedIndex` (0.3.1.2): ignore -1, an empty ledger and a
    lower value; clamp to the ledger end ("if the node fell behind too much")."""
    if commit == -1 or m.end == -1 or commit <= m.committed:
        return m
    if commit > m.end and not cfg.has("follower_commit_unclamped"):
        commit = m.end
    return m._replace(committed=commit)


def dispatch_limit(m: Member, cfg: DLedgerConfig) -> int:
    """`DLedgerCommitLog.getMaxOffset`: the committed position (5ce20e8a37); before it, the
    written position (A15)."""
    if cfg.has("dispatch_uncommitted"):
        return len(m.log)
    return min(m.committed + 1, len(m.log))


def caught_up(m: Member, cfg: DLedgerConfig) -> bool:
    """`DLedgerRoleChangeHandler` LEADER: an empty ledger, or ledgerEnd == committed and
    dispatchBehindBytes() == 0."""
    if cfg.has("master_before_caught_up"):
        return True
    return m.end == -1 or (m.end == m.committed and m.cq == dispatch_limit(m, cfg))


def _watermark_counts(leader: Member, index: int, cfg: DLedgerConfig) -> bool:
    """Does the follower's match at `index` count in the current term's watermarks? 0.3.1.2:
    always (the leader's term is the key). dledger 93d6ff1: only for an entry of this term."""
    return cfg.has("replica_counted_in_leader_term") or leader.log[index].term == leader.term


def _mark(leader: Member, peer: int, index: int, cfg: DLedgerConfig) -> Member:
    match = leader.match[:peer] + (index,) + leader.match[peer + 1 :]
    marks = leader.marks
    if _watermark_counts(leader, index, cfg) and index > marks[peer]:
        marks = marks[:peer] + (index,) + marks[peer + 1 :]
    return leader._replace(match=match, marks=marks)


def quorum_index(leader: Member, cfg: DLedgerConfig) -> int:
    """QuorumAckChecker: the watermarks sorted descending, element size/2; the leader's own is
    its ledger end (`updatePeerWaterMark(currTerm, self, ledgerEndIndex)`)."""
    marks = sorted((leader.end if i == leader.id else w for i, w in enumerate(leader.marks)), reverse=True)
    return marks[len(marks) // 2]


def message_entries(log: tuple[Entry, ...]) -> list[Entry]:
    return [e for e in log if e.msg]


# --- rules ----------------------------------------------------------------------------------


def rule_timeout(s: DState, cfg: DLedgerConfig, n: int) -> DState:
    """`maintainAsFollower` (no heartbeat) / `maintainAsCandidate` (WAIT_TO_VOTE_NEXT):
    `nextTerm()`, then the member's own `handleVote(self=true)` grants its vote."""
    m = s.members[n]
    if not m.up or m.role == LEADER or m.term >= cfg.max_term:
        raise NotEnabled
    return s.with_member(_step_down(m, m.term + 1)._replace(voted=n, votes=1 << n))


def rule_vote(s: DState, cfg: DLedgerConfig, c: int, v: int) -> DState:
    """A VoteRequest from candidate c and `handleVote` on v, in its order: the ledger check
    (ledgerEndTerm, then ledgerEndIndex) first, then the term, then the vote. A higher request
    term makes v a candidate of that term and rejects (REJECT_TERM_NOT_READY); the candidate
    asks again. A rejection carrying a higher term makes the candidate adopt it."""
    cand, voter = s.members[c], s.members[v]
    if c == v or not (cand.up and voter.up) or cand.role != CANDIDATE or cand.votes >> v & 1:
        raise NotEnabled
    if cand.end_term < voter.end_term or (cand.end_term == voter.end_term and cand.end < voter.end):
        raise NotEnabled  # REJECT_EXPIRED_LEDGER_TERM / REJECT_SMALL_LEDGER_END_INDEX: nothing changes
    if cand.term < voter.term:  # REJECT_EXPIRED_VOTE_TERM
        return s.with_member(_step_down(cand, voter.term))
    if cand.term > voter.term:  # REJECT_TERM_NOT_READY
        return s.with_member(_step_down(voter, cand.term))
    if voter.voted not in (NONE, c) and not cfg.has("vote_ignores_voted_for"):
        raise NotEnabled  # REJECT_ALREADY_VOTED / REJECT_ALREADY_HAS_LEADER
    if cand.term < voter.end_term:  # REJECT_TERM_SMALL_THAN_LEDGER
        return s.with_member(_step_down(cand, voter.end_term))
    s = s.with_member(voter._replace(voted=c))
    return s.with_member(cand._replace(votes=cand.votes | 1 << v))


def rule_elected(s: DState, cfg: DLedgerConfig, c: int) -> DState:
    """`changeRoleToLeader`: a quorum accepted. Every EntryDispatcher starts in COMPARE and the
    term's watermarks at -1; with enableFastAdvanceCommitIndex the leader appends a no-op."""
    m = s.members[c]
    if not m.up or m.role != CANDIDATE or bin(m.votes).count("1") < cfg.quorum:
        raise NotEnabled
    m = m._replace(role=LEADER, leader=c, votes=0, match=(COMPARE,) * cfg.nodes, marks=(-1,) * cfg.nodes)
    if cfg.noop_on_election:
        m = m._replace(log=m.log + (Entry(m.term, 0, -1),), end_term=m.term)
    return s.with_member(m)


def rule_heartbeat(s: DState, cfg: DLedgerConfig, ld: int, f: int) -> DState:
    """`sendHeartbeats` and `handleHeartBeat`: an equal term with no known leader makes f a
    follower; a higher term makes f a candidate of that term first (TERM_NOT_READY); a lower
    one (EXPIRED_TERM) makes the leader a candidate of f's term."""
    lead, fol = s.members[ld], s.members[f]
    if ld == f or not (lead.up and fol.up) or lead.role != LEADER:
        raise NotEnabled
    if lead.term < fol.term:
        return s.with_member(_step_down(lead, fol.term))
    if lead.term > fol.term:
        return s.with_member(_step_down(fol, lead.term))
    if fol.leader != NONE:
        raise NotEnabled  # already following (it cannot be another leader of this term)
    return s.with_member(fol._replace(role=FOLLOWER, leader=ld, votes=0, master=False))


def rule_push(s: DState, cfg: DLedgerConfig, ld: int, f: int) -> DState:
    """One EntryDispatcher round for follower f and the EntryHandler's answer.

    COMPARE (`doCompare`, then `doTruncate`): walk down from the leader's end to the highest
    index whose entry the follower holds; with nothing in common the truncate index is the
    leader's begin index (0). If the follower has more, TRUNCATE sends the matched entry and the
    follower keeps its log up to it. `changeState(index, APPEND)` records the match.
    APPEND: the next entry; `appendAsFollower` sets ledgerEndTerm (A4), then the commit index
    piggybacked on the request. COMMIT (`doCommit`): the commit index alone."""
    lead, fol = s.members[ld], s.members[f]
    if ld == f or not (lead.up and fol.up) or lead.role != LEADER:
        raise NotEnabled
    if fol.role != FOLLOWER or fol.leader != ld or fol.term != lead.term:
        raise NotEnabled
    at = lead.match[f]
    if at == COMPARE:
        if lead.end == -1:
            raise NotEnabled  # doCompare: nothing in the leader's store
        k = max((i for i in range(min(lead.end, fol.end) + 1) if lead.log[i] == fol.log[i]), default=-1)
        k = max(k, 0)
        log = lead.log[: k + 1]
        if cfg.has("compare_trusts_follower_end") and fol.end >= 0:
            k = min(lead.end, fol.end)
            log = fol.log[: k + 1]
        if fol.log != log:  # TRUNCATE(k): store.truncate(entry k) rewrites it and drops the rest
            fol = fol._replace(log=log, end_term=log[-1].term)
            fol = update_committed(fol, lead.committed, cfg)
        return s.with_member(fol).with_member(_mark(lead, f, k, cfg))
    if fol.end != at:  # handleDoAppend: writeIndex != entry index -> INCONSISTENT_STATE
        lead = lead._replace(match=lead.match[:f] + (COMPARE,) + lead.match[f + 1 :])
        return s.with_member(lead)
    if at < lead.end:
        entry = lead.log[at + 1]
        end_term = fol.term if cfg.has("follower_last_log_term_is_currTerm") else entry.term
        fol = update_committed(fol._replace(log=fol.log + (entry,), end_term=end_term), lead.committed, cfg)
        return s.with_member(fol).with_member(_mark(lead, f, at + 1, cfg))
    nxt = update_committed(fol, lead.committed, cfg)
    if nxt == fol:
        raise NotEnabled
    return s.with_member(nxt)


def rule_commit(s: DState, cfg: DLedgerConfig, ld: int) -> DState:
    """QuorumAckChecker: `updateCommittedIndex(currTerm, quorumIndex)`. The ghost `chosen`
    records what each commit decided, with the leader's term."""
    lead = s.members[ld]
    if not lead.up or lead.role != LEADER:
        raise NotEnabled
    nxt = update_committed(lead, quorum_index(lead, cfg), cfg)
    if nxt == lead:
        raise NotEnabled
    chosen = s.chosen + tuple(Chosen(e, lead.term) for e in nxt.log[len(s.chosen) : nxt.committed + 1])
    return s.with_member(nxt)._replace(chosen=chosen)


def rule_put(s: DState, cfg: DLedgerConfig, ld: int) -> DState:
    """`DLedgerCommitLog.asyncPutMessage` on the broker master: the queue offset from the topic
    queue table, then `handleAppend` -> `appendAsLeader` (and the leader's own watermark)."""
    m = s.members[ld]
    if not m.up or m.role != LEADER or not m.master or s.msgs >= cfg.max_messages:
        raise NotEnabled
    m = m._replace(log=m.log + (Entry(m.term, s.msgs + 1, m.qnext),), end_term=m.term, qnext=m.qnext + 1)
    return s.with_member(m)._replace(msgs=s.msgs + 1)


def rule_dispatch(s: DState, cfg: DLedgerConfig, n: int) -> DState:
    """ReputMessageService: the next entry up to `getMaxOffset` goes to the consume queue."""
    m = s.members[n]
    if not m.up or m.cq >= dispatch_limit(m, cfg):
        raise NotEnabled
    return s.with_member(m._replace(cq=m.cq + 1))


def rule_become_master(s: DState, cfg: DLedgerConfig, n: int) -> DState:
    """`DLedgerRoleChangeHandler` LEADER: once caught up (5ce20e8a37), `recoverTopicQueueTable`
    (the next queue offset from the consume queue) and `changeToMaster`."""
    m = s.members[n]
    if not m.up or m.role != LEADER or m.master or not caught_up(m, cfg):
        raise NotEnabled
    qoffs = [e.qoff for e in message_entries(m.log[: m.cq])]
    return s.with_member(m._replace(master=True, qnext=max(qoffs, default=-1) + 1))


def rule_crash(s: DState, cfg: DLedgerConfig, n: int) -> DState:
    """Fault: the process dies; memory state (role, leader, dispatchers, broker role) is gone."""
    m = s.members[n]
    if s.crashes >= cfg.crashes or not m.up:
        raise NotEnabled
    m = m._replace(up=False, role=CANDIDATE, leader=NONE, votes=0, match=(), marks=(), master=False, qnext=0)
    return s.with_member(m)._replace(crashes=s.crashes + 1)


def rule_restart(s: DState, cfg: DLedgerConfig, n: int) -> DState:
    """Healing: DLedger recovers the store (ledgerEndTerm from the last entry) and the persisted
    term and vote, and starts as a candidate."""
    m = s.members[n]
    if m.up:
        raise NotEnabled
    return s.with_member(m._replace(up=True, end_term=m.log[-1].term if m.log else -1))


def _each(s: DState, cfg: DLedgerConfig) -> list[tuple]:
    return [(i,) for i in range(cfg.nodes)]


def _pairs(s: DState, cfg: DLedgerConfig) -> list[tuple]:
    return [(i, j) for i in range(cfg.nodes) for j in range(cfg.nodes) if i != j]


# The transition table: every action kind, the rule it runs and the arguments it can take.
RULES: dict[str, Rule] = {
    "timeout": Rule(rule_timeout, _each),
    "vote": Rule(rule_vote, _pairs),
    "elected": Rule(rule_elected, _each),
    "heartbeat": Rule(rule_heartbeat, _pairs),
    "push": Rule(rule_push, _pairs),
    "commit": Rule(rule_commit, _each),
    "put": Rule(rule_put, _each),
    "dispatch": Rule(rule_dispatch, _each),
    "become_master": Rule(rule_become_master, _each),
    "crash": Rule(rule_crash, _each, fault=True),
    "restart": Rule(rule_restart, _each),
}
ARGS = {"vote": ("candidate", "voter"), "heartbeat": ("leader", "follower"), "push": ("leader", "follower")}


def arg_names(kind: str) -> tuple[str, ...]:
    return ARGS.get(kind, ("node",))


def step(s: DState, action: Action, cfg: DLedgerConfig) -> DState:
    return table.step(RULES, s, action, cfg)


def successors(s: DState, cfg: DLedgerConfig) -> list[tuple[Action, DState]]:
    return table.successors(RULES, s, cfg)


# --- DLedgerCommitLog offset mapping (seed 000; proved in checkers/proofs/dledger_offsets.py) ----------

BODY_OFFSET = 48  # DLedgerEntry.BODY_OFFSET: HEADER_SIZE (44) + the body length (4)
MIN_BLANK_LEN = 8  # MmapFileList.MIN_BLANK_LEN: magic code + size of a blank filler


def entry_position(wrote: Any, size: Any, file_size: Any, blank: Any = MIN_BLANK_LEN, ops: Any = IntOps) -> Any:
    """`MmapFileList.preAppend(len, useBlank=true)`: an entry goes at the write position unless
    it and a blank filler's room do not fit in the rest of the file; then the rest of the file
    becomes one blank record and the entry starts the next file. `ops` gives `ite`: on integers
    here, on Z3 terms in checkers/proofs/dledger_offsets.py."""
    room = file_size - wrote % file_size
    return ops.ite(size + blank > room, wrote + room, wrote)


def physical_offsets(divided: int, sizes: list[int], file_size: int) -> list[int]:
    """The commit-log offset of each message DLedger stores from `dividedCommitlogOffset` on:
    entry position + BODY_OFFSET (the AppendHook writes it into the message as PHYSICALOFFSET)."""
    wrote, out = divided, []
    for size in sizes:
        pos = entry_position(wrote, BODY_OFFSET + size, file_size)
        out.append(pos + BODY_OFFSET)
        wrote = pos + BODY_OFFSET + size
    return out


# --- symmetry: members are interchangeable (no preferred leader is modelled) -----------------


def _bits(mask: int, p: tuple[int, ...]) -> int:
    return sum(1 << p[i] for i in range(len(p)) if mask >> i & 1)


def _permuted(t: tuple[int, ...], p: tuple[int, ...]) -> tuple[int, ...]:
    if not t:
        return t
    out = [0] * len(t)
    for old, new in enumerate(p):
        out[new] = t[old]
    return tuple(out)


def renamed(s: DState, p: tuple[int, ...]) -> DState:
    """The state with member i renamed p[i]."""
    members = [None] * len(p)
    for m in s.members:
        members[p[m.id]] = m._replace(
            id=p[m.id],
            voted=p[m.voted] if m.voted != NONE else NONE,
            leader=p[m.leader] if m.leader != NONE else NONE,
            votes=_bits(m.votes, p),
            match=_permuted(m.match, p),
            marks=_permuted(m.marks, p),
        )
    return s._replace(members=tuple(members))


def symmetric_key(s: DState, perms: list[tuple[int, ...]]) -> int:
    """A fingerprint equal for states that differ only in member names."""
    return hash(min(renamed(s, p) for p in perms))
