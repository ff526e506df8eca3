"""The journal's batch writes, on a real state database: a batch is marked sent in one
statement that writes no item (a row per range of its seqs in ``sent_batches``), an answer
several items share is settled in one statement, and each touches exactly the items named."""

from __future__ import annotations

import itertools
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from random import Random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, event

from syncd import snapshot as store
from syncd.executor.pipeline import _json
from syncd.snapshot import sql as store_sql
from tests.support.examples import examples
from tests.support.snapshot_rows import planned_run


@pytest.fixture
def journal(tmp_path: Path, store_url: str | None) -> tuple[Engine, int]:
    engine = store.open_engine(tmp_path / "syncd.db", store_url)  # each engine in turn
    return engine, planned_run(engine, 10)


def outcomes(engine: Engine, run_id: int) -> dict[int, tuple[str, int, int | None, str | None]]:
    """Each item's outcome as the reports read it (``sent``: in flight), attempts, answer."""
    return {
        i["seq"]: (i["outcome"], i["attempts"], i["status"], i["error"])
        for i in store.load_items(engine, run_id)
    }


def in_flight(engine: Engine, run_id: int) -> set[int]:
    """The seqs crash recovery would look up (each once)."""
    seqs = [i["seq"] for i in store.unsettled_items(engine) if i["run_id"] == run_id]
    assert len(seqs) == len(set(seqs)), seqs
    return set(seqs)


@pytest.mark.parametrize("seqs", [[2, 3, 4, 5], [2, 4, 5], [5, 3, 4], [7]], ids=str)
def test_marked_sent_are_exactly_the_batch(journal: tuple[Engine, int], seqs: list[int]) -> None:
    engine, run_id = journal
    with store.write(engine) as conn:
        store.mark_sent(conn, run_id, seqs)
        store.mark_sent(conn, run_id, [])
    found = outcomes(engine, run_id)
    assert (
        {s for s, (o, *_) in found.items() if o == "sent"} == set(seqs) == in_flight(engine, run_id)
    )
    assert all(found[s] == ("planned", 0, None, None) for s in found if s not in seqs)


@pytest.mark.parametrize("seqs", [[2, 3, 4, 5], [2, 4, 5], [5, 3, 4], [7]], ids=str)
def test_a_batch_marked_and_never_sent_is_planned_again(
    journal: tuple[Engine, int], seqs: list[int]
) -> None:
    engine, run_id = journal
    with store.write(engine) as conn:
        store.mark_sent(conn, run_id, [0, 1])
        store.mark_sent(conn, run_id, seqs)
    with store.write(engine) as conn:
        store.Transaction(conn).unmark(run_id, seqs)
    assert in_flight(engine, run_id) == {0, 1}
    assert all(o == "planned" for s, (o, *_) in outcomes(engine, run_id).items() if s > 1)


@pytest.mark.parametrize(
    "results",
    [
        [(3, "ok", None, None), (4, "ok", None, None), (5, "ok", None, None)],
        [(3, "ok", None, None), (5, "ok", None, None)],  # a gap: 4 is not this batch's
        [(3, "ok", None, None), (4, "failed", 400, "bad mobile"), (5, "ok", None, None)],
        [(3, "failed", 500, "down"), (4, "failed", 500, "down")],
    ],
    ids=["one outcome", "gap", "mixed", "all failed"],
)
def test_settled_are_exactly_the_answers(
    journal: tuple[Engine, int], results: list[tuple[int, str, int | None, str | None]]
) -> None:
    engine, run_id = journal
    with store.write(engine) as conn:
        store.mark_sent(conn, run_id, [3, 4, 5])
        store.settle_items(
            conn,
            run_id,
            [{"seq": s, "outcome": o, "status": st, "error": e} for s, o, st, e in results],
        )
    found = outcomes(engine, run_id)
    for seq, outcome, status, error in results:
        assert found[seq] == (outcome, 1, status, error)
    settled = {seq for seq, *_ in results}
    assert all(found[s][0] == "sent" for s in {3, 4, 5} - settled)
    assert all(found[s][0] == "planned" for s in set(found) - {3, 4, 5})
    assert in_flight(engine, run_id) == {3, 4, 5} - settled


def test_an_item_an_earlier_syncd_left_sent_in_place_is_still_in_flight(
    journal: tuple[Engine, int],
) -> None:
    engine, run_id = journal
    with store.write(engine) as conn:  # as syncd before schema version 12 marked a batch
        store_sql.run(
            conn, "UPDATE run_items SET outcome = 'sent', attempts = 1 WHERE seq IN (2, 3)"
        )
    assert in_flight(engine, run_id) == {2, 3}
    assert {s for s, (o, *_) in outcomes(engine, run_id).items() if o == "sent"} == {2, 3}


def test_a_version_4_database_indexes_only_the_items_sent(tmp_path: Path) -> None:
    path = tmp_path / "syncd.db"
    store.open_engine(path).dispose()
    with closing(sqlite3.connect(path)) as db:  # as syncd with schema version 4 left it
        db.execute("DROP INDEX ix_run_items_sent")
        db.execute("CREATE INDEX ix_run_items_outcome ON run_items (outcome)")
        db.execute("PRAGMA user_version = 4")
        db.commit()

    store.open_engine(path).dispose()

    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (store.SCHEMA_VERSION,)
        indexes = {r[1]: r[4] for r in db.execute("PRAGMA index_list(run_items)")}
        assert "ix_run_items_outcome" not in indexes
        assert indexes["ix_run_items_sent"] == 1  # partial
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT run_id, seq FROM run_items WHERE outcome = 'sent'"
        ).fetchall()
        assert "ix_run_items_sent" in str(plan)  # crash recovery's look-up still uses it


def statements(engine: Engine) -> list[tuple[str, int]]:
    """Each statement the engine sends from now on, and how many parameter sets it carried
    (an executemany carries one per row)."""
    sent: list[tuple[str, int]] = []

    def seen(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        sent.append((statement, len(params) if many else 1))

    event.listen(engine, "before_cursor_execute", seen)
    return sent


@pytest.mark.parametrize(
    ("seqs", "ranges"), [([2, 3, 4, 5], 1), ([2, 4, 5], 2), ([5, 3, 4], 1), ([7], 1)], ids=str
)
def test_a_batch_is_marked_sent_in_one_statement_that_writes_no_item(
    journal: tuple[Engine, int], seqs: list[int], ranges: int
) -> None:
    engine, run_id = journal
    sent = statements(engine)
    with store.write(engine) as conn:
        store.mark_sent(conn, run_id, seqs)
    marks = [(s, n) for s, n in sent if "sent_batches" in s]
    assert marks == [(marks[0][0], ranges)]  # one statement, a set of parameters per range
    assert not [s for s, _ in sent if "run_items" in s]


def test_an_answer_several_items_share_is_settled_in_one_statement(
    journal: tuple[Engine, int],
) -> None:
    engine, run_id = journal
    with store.write(engine) as conn:
        store.mark_sent(conn, run_id, [1, 3, 4, 6, 8])
    sent = statements(engine)
    answers = [(1, "ok"), (3, "ok"), (4, "failed"), (6, "ok"), (8, "ok")]  # gaps: 2, 5, 7
    with store.write(engine) as conn:
        store.settle_items(
            conn, run_id, [{"seq": s, "outcome": o, "error": None} for s, o in answers]
        )
    settles = [n for s, n in sent if "UPDATE run_items" in s]
    assert sum(settles) == 2  # the four ok in one statement, the failed one in another
    found = outcomes(engine, run_id)
    assert {s: found[s][0] for s in (1, 3, 4, 6, 8)} == dict(answers)
    assert all(found[s][0] == "planned" for s in (0, 2, 5, 7, 9))


Answer = tuple[str, int | None, str | None]
ANSWERS: list[Answer] = [
    ("ok", None, None),
    ("failed", 400, "bad mobile"),
    ("failed", 500, "down"),
    ("skipped", None, "held back"),
]


@st.composite
def batches(draw: st.DrawFn) -> list[list[tuple[int, Answer]]]:
    """Batches of a 30-item run, each some items in any order, with answers (some shared,
    some an item's own), none sent twice in one run."""
    seqs = draw(st.permutations(range(30)))
    cuts = sorted(draw(st.lists(st.integers(0, 30), max_size=6)))
    found = []
    for start, end in itertools.pairwise([0, *cuts, 30]):
        chunk = list(seqs[start:end])
        if draw(st.booleans()):
            chunk.sort()
        own = st.tuples(st.just("failed"), st.just(422), st.text("abc", min_size=1, max_size=3))
        answers = draw(
            st.lists(st.sampled_from(ANSWERS) | own, min_size=len(chunk), max_size=len(chunk))
        )
        if chunk:
            found.append(list(zip(chunk, answers, strict=True)))
    return found


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(batches(), st.randoms(use_true_random=False))
def test_batches_marked_and_settled_are_journaled_item_by_item(
    journal: tuple[Engine, int], batches: list[list[tuple[int, Answer]]], random: Random
) -> None:
    engine, _ = journal
    run_id = planned_run(engine, 30)
    expected: dict[int, tuple[str, int, int | None, str | None]] = {
        s: ("planned", 0, None, None) for s in range(30)
    }
    for n, batch in enumerate(batches):
        with store.write(engine) as conn:
            store.mark_sent(conn, run_id, [s for s, _ in batch])
        if n % 4 == 3:  # marked ahead, never sent
            with store.write(engine) as conn:
                store.Transaction(conn).unmark(run_id, [s for s, _ in batch])
            continue
        settled = batch if n % 3 else batch[: len(batch) // 2]  # some left sent (a crash)
        with store.write(engine) as conn:
            store.settle_items(
                conn,
                run_id,
                [{"seq": s, "outcome": o, "status": st_, "error": e} for s, (o, st_, e) in settled],
            )
        for s, _ in batch:
            expected[s] = ("sent", 0, None, None)
        for s, (o, st_, e) in settled:
            expected[s] = (o, 1, st_, e)
    # Some of those left in flight are sent again in a batch of their own (a value another
    # account holds: refused, sent again without it), marked again, and answered.
    left = sorted(in_flight(engine, run_id))
    again = sorted(random.sample(left, k=random.randint(0, len(left))))
    with store.write(engine) as conn:
        store.mark_sent(conn, run_id, again)
    answered = again[: len(again) // 2]
    with store.write(engine) as conn:
        store.settle_items(
            conn, run_id, [{"seq": s, "outcome": "ok", "attempts": 2} for s in answered]
        )
    expected |= {s: ("ok", 2, None, None) for s in answered}
    assert outcomes(engine, run_id) == expected
    assert in_flight(engine, run_id) == {s for s, (o, *_) in expected.items() if o == "sent"}
    with store.write(engine) as conn:  # as a run's end does
        store.Transaction(conn).forget_answered(run_id)
    assert outcomes(engine, run_id) == expected
    assert in_flight(engine, run_id) == {s for s, (o, *_) in expected.items() if o == "sent"}
    with engine.connect() as conn:
        marks = store_sql.run(
            conn, "SELECT first_seq, last_seq FROM sent_batches WHERE run_id = ?", (run_id,)
        ).all()
    for first, last in marks:  # each mark left holds an item still in flight
        assert any(expected[s][0] == "sent" for s in range(first, last + 1)), (first, last)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),  # big integers too: the fallback
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.dictionaries(st.text(), json_values, max_size=5)
    | st.dictionaries(st.integers(), json_values, max_size=3)  # the json module's keys
)
def test_the_journal_text_of_a_value_reads_back_as_the_json_module_wrote_it(
    value: dict[Any, Any],
) -> None:
    """orjson's compact text, or the json module's for what orjson refuses (keys that are
    not text, integers past 64 bits): parsed, the same as the text the json module wrote
    before, keys in the same order."""
    text = _json(value)
    assert text is not None
    before = json.dumps(value, ensure_ascii=False, sort_keys=True)
    assert json.loads(text) == json.loads(before)
    assert list(json.loads(text)) == list(json.loads(before))
    assert _json(None) is None
