"""Invariants of DLedger mode (model/dledger.py): Raft's safety properties (I11 of
reference/known-bugs.md) and what the broker on top promises consumers (I3, I8).

`chosen` is a ghost of the state: every entry a leader committed, with that leader's term.
"""

from __future__ import annotations

from rmqcheck.model.dledger import LEADER, DLedgerConfig, DState, message_entries

from .catalogue import Invariant


def election_safety(s: DState, cfg: DLedgerConfig) -> list[str]:
    """At most one leader per term (Raft Figure 3)."""
    seen: dict[int, int] = {}
    out = []
    for m in s.members:
        if m.up and m.role == LEADER:
            if m.term in seen:
                out.append(f"members {seen[m.term]} and {m.id} both lead term {m.term}")
            seen[m.term] = m.id
    return out


def log_matching(s: DState, cfg: DLedgerConfig) -> list[str]:
    """Two logs with an entry of the same term at an index agree on every entry up to it."""
    out = []
    for a in s.members:
        for b in s.members[a.id + 1 :]:
            for i in range(min(len(a.log), len(b.log)) - 1, -1, -1):
                if a.log[i].term == b.log[i].term:
                    if a.log[: i + 1] != b.log[: i + 1]:
                        out.append(f"members {a.id} and {b.id} agree on index {i}'s term but differ below it")
                    break
    return out


def leader_completeness(s: DState, cfg: DLedgerConfig) -> list[str]:
    """A leader of a term later than an entry's commit holds that entry: the election
    restriction (A4 lets a shorter log win) and the commit rule (Figure 8) together."""
    out = []
    for m in s.members:
        if not (m.up and m.role == LEADER):
            continue
        for i, c in enumerate(s.chosen):
            if m.term > c.term and (i > m.end or m.log[i] != c.entry):
                out.append(f"leader {m.id} of term {m.term} lacks entry {i} committed in term {c.term}")
                break
    return out


def committed_agree(s: DState, cfg: DLedgerConfig) -> list[str]:
    """State machine safety: every member's committed prefix is the chosen log (no committed
    entry is ever truncated or replaced)."""
    out = []
    for m in s.members:
        for i in range(min(m.committed + 1, len(m.log), len(s.chosen))):
            if m.log[i] != s.chosen[i].entry:
                out.append(f"member {m.id} committed {m.log[i]} at index {i}, the group chose {s.chosen[i].entry}")
                break
    return out


def commit_within_log(s: DState, cfg: DLedgerConfig) -> list[str]:
    """committedIndex <= ledgerEndIndex (A10: a commit index beyond the verified log keeps the
    role change handler waiting for ledgerEnd == committed for ever)."""
    return [f"member {m.id} committedIndex {m.committed} > ledgerEndIndex {m.end}" for m in s.members if m.committed > m.end]


def read_committed(s: DState, cfg: DLedgerConfig) -> list[str]:
    """What the consume queue exposes is committed and stays: every dispatched entry is the
    chosen entry at its index (A15: dispatching the written position)."""
    out = []
    for m in s.members:
        for i in range(m.cq):
            if i >= len(s.chosen) or i >= len(m.log) or m.log[i] != s.chosen[i].entry:
                what = "not committed" if i >= len(s.chosen) else "not the committed entry"
                out.append(f"member {m.id} dispatched index {i} to the consume queue: {what}")
                break
    return out


def queue_offsets_unique(s: DState, cfg: DLedgerConfig) -> list[str]:
    """The committed messages of a queue have the queue offsets 0, 1, 2, ... (I8: a master that
    rebuilt its topic queue table too early hands an offset out twice)."""
    qoffs = [e.qoff for e in message_entries(tuple(c.entry for c in s.chosen))]
    if qoffs != list(range(len(qoffs))):
        return [f"committed queue offsets {qoffs}"]
    return []


def _always(cfg: DLedgerConfig) -> bool:
    return True


DLEDGER: tuple[Invariant, ...] = (
    Invariant("D1", "election_safety", "At most one leader per term.", _always, "always", check=election_safety),
    Invariant("D2", "log_matching", "Same term at an index means the same log up to it.", _always, "always",
              check=log_matching),
    Invariant("D3", "leader_completeness", "A later leader holds every committed entry (A4, Figure 8).", _always,
              "always", check=leader_completeness),
    Invariant("D4", "committed_agree", "No committed entry is truncated or replaced.", _always, "always",
              check=committed_agree),
    Invariant("D5", "commit_within_log", "committedIndex <= ledgerEndIndex (A10).", _always, "always",
              check=commit_within_log),
    Invariant("D6", "read_committed", "Consumers see only committed entries, which stay (A15).", _always,
              "always", check=read_committed),
    Invariant("D7", "queue_offsets_unique", "Committed queue offsets are 0, 1, 2, ... (A15, I8).", _always,
              "always", check=queue_offsets_unique),
)
DLEDGER_BY_ID = {inv.id: inv for inv in DLEDGER}

