import pytest

from framework.interface import NodeScore
from framework.plugins.helper import default_normalize_score, go_div


def _scores(values):
    return [NodeScore(f"n{i}", v) for i, v in enumerate(values)]


@pytest.mark.parametrize(
    ("reverse", "given", "expected"),
    [
        (False, [1, 2, 3, 4], [25, 50, 75, 100]),
        (True, [1, 2, 3, 4], [75, 50, 25, 0]),
        (False, [1000, 10, 20, 30], [100, 1, 2, 3]),
        (True, [1000, 10, 20, 30], [0, 99, 98, 97]),
        (False, [1, 1, 1, 1], [100, 100, 100, 100]),
        (False, [1, 0, 1, 1], [100, 0, 100, 100]),
        (True, [0, 1, 0, 1], [100, 0, 100, 0]),
        (False, [0, 0, 0], [0, 0, 0]),
        (True, [0, 0, 0], [100, 100, 100]),
        (False, [3, 7], [42, 100]),
        (True, [], []),
    ],
    ids=["scaled", "reversed", "truncates", "reversed-truncates", "all-equal", "with-zero",
         "reversed-with-zero", "all-zero-stay", "all-zero-reversed-max", "integer-division", "empty"],
)
def test_default_normalize_score_scales_to_max_priority(reverse, given, expected):
    scores = _scores(given)
    assert default_normalize_score(100, reverse, scores) is None
    assert [s.score for s in scores] == expected


@pytest.mark.parametrize(("a", "b", "q"), [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0)])
def test_go_div_truncates_toward_zero(a, b, q):
    assert go_div(a, b) == q
