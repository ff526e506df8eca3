"""The request's JSON body says what httpx's ``json=`` said, for any JSON value."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.platform._envelope import request_body
from tests.support.examples import examples

# JSON values as syncd's bodies hold them, and what orjson refuses: integer keys (the json
# module writes them as text) and integers past 64 bits.
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=examples(300))
@given(values.filter(lambda v: v is not None))
def test_the_body_reads_back_as_the_json_module_writes_it(value: Any) -> None:
    body = request_body(value)
    assert body is not None
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assert json.loads(body.decode("utf-8")) == json.loads(expected)


def test_no_body_for_no_value() -> None:
    assert request_body(None) is None
