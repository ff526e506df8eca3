"""Random trees keep id paths, name paths, levels and counts consistent."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncd.emulator import RunningEmulator
from syncd.emulator.codes import ApiError
from syncd.emulator.people import Staff
from syncd.emulator.tree import OrgTree
from tests.support.examples import examples
from tests.support.payloads import dept

from .support import ORG, Api

NAMES = st.sampled_from(["A", "B", "C", "R&D", "Ops"])
# (operation, a, b): indexes into the current node list (taken modulo its length).
OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["add", "move", "rename", "delete", "place"]),
        st.integers(0, 50),
        st.integers(0, 50),
        NAMES,
    ),
    max_size=60,
)


def check_consistency(tree: OrgTree, staff: Staff) -> None:
    """Every derived field and count equals what a brute-force walk computes."""
    for node in tree.nodes():
        parent = tree.parent(node)
        if parent is None:
            assert node.path == f"/{node.id}/" and node.level == 1 and node.name_path == node.name
            continue
        assert node.path == f"{parent.path}{node.id}/"
        assert node.level == parent.level + 1
        assert node.name_path == f"{parent.name_path}/{node.name}"
        resolved = tree.resolve_name_path(node.name_path)
        assert resolved is not None and resolved.name_path == node.name_path
        assert resolved.id <= node.id
    for node in tree.nodes():
        inside = {
            e.id
            for e in staff
            if any(tree.get(p.org_id).path.startswith(node.path) for p in e.positions)
        }
        assert tree.all_employee_count(node) == len(inside)
        direct = {e.id for e in staff if any(p.org_id == node.id for p in e.positions)}
        assert tree.employee_count(node) == len(direct)


@given(OPERATIONS)
@settings(max_examples=examples(150), deadline=None)
def test_random_operations_keep_the_tree_consistent(
    operations: list[tuple[str, int, int, str]],
) -> None:
    tree = OrgTree.new("acme", "acme", "Acme", 1000, 1)
    staff = Staff(tree)
    never = lambda _: None  # noqa: E731 - no rejection rules here
    for stamp, (operation, a, b, name) in enumerate(operations, start=2):
        nodes = list(tree.nodes())
        first, second = nodes[a % len(nodes)], nodes[b % len(nodes)]
        try:
            if operation == "add":
                tree.add(first, "DEPT", name, stamp)
            elif operation == "move":
                tree.move(first, second, stamp)
            elif operation == "rename" and first.parent_id is not None:
                tree.rename(first, name)
            elif operation == "delete":
                tree.remove(first)
            elif operation == "place":
                staff.import_employees(
                    [
                        {
                            "username": f"u{a % 7}",
                            "name": "U",
                            "positions": [{"org_id": first.id}, {"org_id": second.id}],
                        }
                    ],
                    stamp,
                    never,
                )
        except ApiError:
            pass  # refused operations (moves under oneself, non-empty deletes) change nothing
        check_consistency(tree, staff)


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[int, str]]:
    """A random tree as (parent index, name), parents before children; index 0 is the root."""
    size = draw(st.integers(1, 15))
    return [(draw(st.integers(0, index)), draw(NAMES)) for index in range(size)]


@given(trees())
@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_imported_trees_have_consistent_records(
    emulator: RunningEmulator, shape: list[tuple[int, str]]
) -> None:
    emulator.reset(data=True)
    api = Api(emulator, emulator.client)
    paths = ["Acme"]
    for parent, name in shape:
        paths.append(f"{paths[parent]}/{name}")
    items = [dept(path.rsplit("/", 1)[1], path.rsplit("/", 1)[0]) for path in paths[1:]]
    result = api.import_orgs(items)
    assert result["failures"] == {}
    assert set(result["successes"]) == set(paths[1:])
    records: dict[int, dict[str, Any]] = {r["id"]: r for r in api.all_nodes()}
    assert len(records) == len(paths)  # duplicate name paths: same-named siblings were created
    for record in records.values():
        ids = [int(i) for i in record["path"].strip("/").split("/")]
        assert ids[-1] == record["id"] and record["level"] == len(ids)
        if len(ids) > 1:
            assert record["parent_org_id"] == ids[-2]
            assert records[ids[-2]]["path"] + f"{record['id']}/" == record["path"]
    for path, node_id in result["successes"].items():
        names = [records[int(i)]["name"] for i in records[node_id]["path"].strip("/").split("/")]
        assert "/".join(names) == path
    assert api.ok("GET", ORG)["all_employee_count"] == 0
