"""EpochFile operations (reference §1.2-1.4), quirks Q1/Q2 with their switches, and the
`find_consistent_point` API contract (SPEC: API contract)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from rmqcheck.model import epochfile as ef
from rmqcheck.model.epochfile import INF, EpochFile, find_consistent_point


def build(*pairs, faithful_q2=True):
    f = ef.EMPTY
    for e, s in pairs:
        f, ok = ef.append_entry(f, e, s, faithful_q2)
        assert ok
    return f


THREE = ((1, 100), (2, 300), (3, 500))


# --- append and ends ---------------------------------------------------------------------------


def test_append_chains_ends_and_rejects_non_increasing_keys():
    f = build(*THREE)
    assert ef.with_ends(f) == ((1, 100, 300), (2, 300, 500), (3, 500, INF))
    for epoch, start in ((3, 600), (2, 600), (4, 500), (4, 400)):
        g, ok = ef.append_entry(f, epoch, start)
        assert not ok and g == f  # equal or smaller epoch / start: rejected, unchanged


def test_intended_append_supersedes_an_empty_last_epoch():
    f = build((1, 100))
    same, ok = ef.append_entry(f, 2, 100)
    assert not ok and same.entries == ((1, 100),)  # snapshot: the new epoch goes unrecorded
    g, ok = ef.append_entry(f, 2, 100, replace_empty=True)
    assert ok and g.entries == ((2, 100),)


def test_set_last_end_only_when_start_not_beyond():
    f = build((1, 1000))
    assert ef.set_last_end(f, 999) == f  # verified in the reference: start 1000, x 999: no change
    assert ef.with_ends(ef.set_last_end(f, 1000)) == ((1, 1000, 1000),)
    assert ef.set_last_end(ef.EMPTY, 5) == ef.EMPTY


def test_find_by_offset_is_half_open():
    f = build(*THREE)
    assert ef.find_by_offset(f, 350)[0] == 2
    assert ef.find_by_offset(f, 500)[0] == 3
    assert ef.find_by_offset(f, 99) is None
    assert ef.find_by_offset(f, 300)[0] == 2


def test_next_entry_is_a_ceiling_on_epoch_plus_one():
    f = build((1, 0), (4, 10), (7, 20))
    assert ef.next_entry(f, 1)[0] == 4
    assert ef.next_entry(f, 2)[0] == 4
    assert ef.next_entry(f, 7) is None
    assert ef.next_entry(f, -1)[0] == 1


def test_last_epoch_is_minus_one_when_empty():
    assert ef.last_epoch(ef.EMPTY) == -1
    assert ef.last_epoch(build(*THREE)) == 3


# --- truncations and Q1 ------------------------------------------------------------------------


def test_q1_suffix_truncation_keeps_a_stale_end():
    # Reference §1.3, verified: truncateSuffixByOffset(300) leaves [(1,100,end=300)].
    f = ef.truncate_suffix_by_offset(build(*THREE), 300)
    assert ef.with_ends(f) == ((1, 100, 300),)
    assert ef.find_by_offset(f, 350) is None
    assert ef.with_ends(ef.truncate_suffix_by_offset(build(*THREE), 150)) == ((1, 100, 300),)
    # (b): a prefix truncation beyond the stale end deletes the current epoch.
    assert ef.truncate_prefix_by_offset(f, 1000).entries == ()


def test_q1_intended_resets_the_end():
    f = ef.truncate_suffix_by_offset(build(*THREE), 300, faithful_q1=False)
    assert ef.with_ends(f) == ((1, 100, INF),)
    assert ef.find_by_offset(f, 350)[0] == 1


def test_suffix_truncation_by_offset_is_inclusive_and_by_epoch():
    assert ef.truncate_suffix_by_offset(build(*THREE), 500).entries == ((1, 100), (2, 300))
    assert ef.truncate_suffix_by_offset(build(*THREE), 501).entries == THREE
    assert ef.truncate_suffix_by_epoch(build(*THREE), 2).entries == ((1, 100),)


def test_prefix_truncation_drops_entries_ending_at_or_before():
    assert ef.truncate_prefix_by_offset(build(*THREE), 300).entries == ((2, 300), (3, 500))
    assert ef.truncate_prefix_by_offset(build(*THREE), 299).entries == THREE


def test_a_stale_end_is_repaired_by_the_next_append():
    f = ef.truncate_suffix_by_offset(build(*THREE), 300)
    g, ok = ef.append_entry(f, 4, 800)
    assert ok and ef.with_ends(g) == ((1, 100, 800), (4, 800, INF))


# --- persistence and Q2 ------------------------------------------------------------------------


def test_q2_an_empty_list_is_never_written():
    f = ef.truncate_suffix_by_epoch(build(*THREE), 1)
    assert f.entries == () and f.disk == THREE
    assert ef.reload(f).entries == THREE  # a restart resurrects the old list


def test_q2_intended_writes_the_empty_list():
    f = ef.truncate_suffix_by_epoch(build(*THREE, faithful_q2=False), 1, faithful_q2=False)
    assert f.disk == () and ef.reload(f).entries == ()


def test_reload_recomputes_ends_and_loss_empties_the_file():
    f = ef.set_last_end(build(*THREE), 700)
    assert ef.reload(f).last_end == INF
    assert ef.reload(ef.lose_file(f)).entries == ()


def test_a_revert_takes_the_file_back_to_the_version_written_back_and_every_write_keeps_that_version():
    f = ef.write_back(build(*THREE[:2]))
    f, _ = ef.append_entry(f, 3, 500)
    f = ef.truncate_prefix_by_offset(ef.truncate_suffix_by_offset(f, 600), 50)
    assert f.disk == THREE and f.synced == THREE[:2]
    assert ef.reload(ef.revert(f)).entries == THREE[:2]
    assert ef.revert(build(*THREE)).disk == ()  # never written back: the file reads empty


# --- consistent point (§1.4) and the API contract ----------------------------------------------


def test_highest_common_epoch_with_same_start_wins():
    local = [(1, 100), (2, 300), (3, 500)]
    master = [(1, 100), (2, 300), (4, 450)]
    # epoch 3 is local only; epoch 2 matches: min(local end 500, master end 450)
    assert find_consistent_point(local, 600, master, 700) == 450


def test_epochs_only_the_master_has_are_ignored_and_start_must_match():
    assert find_consistent_point([(1, 0), (3, 50)], 80, [(1, 0), (2, 40), (3, 60)], 90) == 40
    assert find_consistent_point([(5, 10)], 20, [(5, 11)], 20) == -1


def test_minus_one_when_nothing_matches_or_local_is_empty():
    assert find_consistent_point([], 10, [(1, 0)], 10) == -1
    assert find_consistent_point([(1, 0)], 10, [], 10) == -1


def test_not_symmetric():
    a, b = [(1, 0), (2, 10)], [(1, 0), (3, 5)]
    assert find_consistent_point(a, 20, b, 20) == 5
    assert find_consistent_point(b, 20, a, 20) == 5
    c, d = [(1, 0), (2, 10)], [(1, 0), (2, 10), (3, 15)]
    assert find_consistent_point(c, 12, d, 30) == 12
    assert find_consistent_point(d, 30, c, 12) == 12


def test_result_is_inf_when_neither_last_end_could_be_set():
    # start beyond max on both sides: setLastEpochEntryEndOffset is a no-op, ends stay INF.
    assert find_consistent_point([(1, 50)], 10, [(1, 50)], 20) == INF


@pytest.mark.parametrize(
    "entries,message",
    [
        ([(1, 0), (1, 10)], "local[1] = (1, 10): epoch 1 is not greater than the previous epoch 1"),
        ([(1, 0), (2, 0)], "local[1] = (2, 0): start offset 0 is not greater than the previous start offset 0"),
        ([(2, 0), (1, 10)], "local[1] = (1, 10): epoch 1"),
        ([(1, 0, 5)], "local[0]"),
        ([("a", 0)], "local[0]"),
        ([(True, 0)], "local[0]"),
    ],
)
def test_malformed_input_names_the_entry(entries, message):
    with pytest.raises(
        ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")
    ):
        find_consistent_point(entries, 10, [(1, 0)], 10)


def test_malformed_master_is_named_too():
    with pytest.raises(ValueError, match=r"master\[2\]"):
        find_consistent_point([(1, 0)], 10, [(1, 0), (2, 5), (2, 9)], 10)


# --- differential: an independent transliteration of the Java --------------------------------


def java_find_consistent_point(local, local_max, master, master_max):
    """Written from EpochFileCache/doTruncate independently of the model: TreeMaps of mutable
    entries, initEntries chaining, setLastEpochEntryEndOffset, descending iteration with break."""

    def cache(pairs, top):
        m = {}
        prev = None
        for e, s in pairs:
            entry = [e, s, INF]
            m[e] = entry
            if prev is not None:
                prev[2] = s
            prev = entry
        if m:
            last = m[max(m)]
            if last[1] <= top:
                last[2] = top
        return m

    mas, loc = cache(master, master_max), cache(local, local_max)
    for epoch in sorted(loc, reverse=True):
        other = mas.get(epoch)
        if other is not None and other[1] == loc[epoch][1]:
            return min(loc[epoch][2], other[2])
    return -1


@st.composite
def epoch_lists(draw, share=None):
    out = []
    if share and draw(st.booleans()):
        out = list(share[: draw(st.integers(0, len(share)))])
    e, s = out[-1] if out else (draw(st.integers(-2, 3)), draw(st.integers(-5, 10)))
    for _ in range(draw(st.integers(0, 8 - len(out)))):
        e += draw(st.integers(1, 3))
        s += draw(st.integers(1, 20))
        out.append((e, s))
    return out


@st.composite
def consistent_point_inputs(draw):
    master = draw(epoch_lists())
    local = draw(epoch_lists(share=master))
    return local, draw(st.integers(-1, 150)), master, draw(st.integers(-1, 150))


@pytest.mark.heavy
@settings(max_examples=3000, deadline=None, database=None, derandomize=True)
@given(consistent_point_inputs())
def test_matches_an_independent_transliteration_of_the_java(args):
    assert find_consistent_point(*args) == java_find_consistent_point(*args)


@settings(max_examples=500, deadline=None, database=None, derandomize=True)
@given(consistent_point_inputs())
def test_the_point_never_exceeds_what_both_sides_hold_when_both_ends_are_set(args):
    local, lmax, master, mmax = args
    point = find_consistent_point(*args)
    if point != -1 and local and master and local[-1][1] <= lmax and master[-1][1] <= mmax:
        assert point <= max(lmax, mmax)


def test_core_walks_descending_and_the_pitfall_ascending():
    local = ef.with_ends(ef.set_last_end(build((1, 0), (2, 10), (3, 20)), 30))
    master = ef.with_ends(ef.set_last_end(build((1, 0), (2, 10), (3, 20)), 40))
    assert ef.consistent_point(local, master) == 30
    assert ef.consistent_point(local, master, search=ef.Search(highest_first=False)) == 10


def test_epochfile_is_a_value():
    f = build(*THREE)
    g = ef.truncate_suffix_by_epoch(f, 2)
    assert f.entries == THREE and g is not f
    assert isinstance(f, EpochFile)


SEARCHES = [ef.Search(h, m, e) for h in (True, False) for m in ("both", "epoch", "start")
            for e in ("min", "max", "local", "master")]


@pytest.mark.heavy
@settings(max_examples=2000, deadline=None, database=None, derandomize=True)
@given(consistent_point_inputs(), st.sampled_from(SEARCHES))
def test_the_linear_search_validation_uses_is_the_proofs_fold(args, search):
    """traces/stores.py validates long epoch files with `consistent_point_indexed`; the model and
    the proofs keep the fold (`consistent_point`). Equal on every input and every variant."""
    local, lmax, master, mmax = args
    views = ef.truncation_view(local, INF, lmax), ef.truncation_view(master, INF, mmax)
    assert ef.consistent_point_indexed(*views, search) == ef.consistent_point(*views, search=search)
    assert find_consistent_point(*args, search=search, indexed=True) == find_consistent_point(*args, search=search)


def test_the_linear_search_can_fail():
    """The equivalence above can fail: a linear search that walks up instead of down (a mutant)
    answers differently on an input the strategy draws."""
    local = master = [(1, 0), (2, 10)]
    views = ef.truncation_view(local, INF, 20), ef.truncation_view(master, INF, 30)
    assert ef.consistent_point(*views) == ef.consistent_point_indexed(*views) == 20
    assert ef.consistent_point_indexed(*views, ef.Search(highest_first=False)) == 10
