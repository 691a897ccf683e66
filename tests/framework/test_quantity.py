from fractions import Fraction

import pytest

from framework.api.errors import ValidationError
from framework.api.quantity import milli_value, parse_quantity, value


@pytest.mark.parametrize(
    "text, expected",
    [
        ("100m", Fraction(1, 10)),
        ("1.5", Fraction(3, 2)),
        ("1Gi", Fraction(2**30)),
        ("2e3", Fraction(2000)),
        ("1E-3", Fraction(1, 1000)),
        ("5k", Fraction(5000)),
        ("3M", Fraction(3 * 10**6)),
        ("1Ki", Fraction(1024)),
        ("12n", Fraction(12, 10**9)),
        ("7u", Fraction(7, 10**6)),
        ("-2", Fraction(-2)),
        (".5", Fraction(1, 2)),
        ("2Ei", Fraction(2 * 2**60)),
        ("0", Fraction(0)),
    ],
    ids=lambda x: str(x),
)
def test_quantities_parse_exactly_as_kubernetes_does(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["1.5.5", "", "abc", "1Qi", "1 Gi", "--1", "1e", "m"])
def test_invalid_quantities_are_rejected_naming_the_field(text):
    with pytest.raises(ValidationError) as err:
        parse_quantity(text, "spec.containers[0].resources.requests.cpu")
    assert str(err.value).startswith("spec.containers[0].resources.requests.cpu: quantity")


def test_milli_value_and_value_round_up_like_upstream():
    assert milli_value(parse_quantity("0.0001")) == 1
    assert milli_value(parse_quantity("100m")) == 100
    assert value(parse_quantity("0.5")) == 1
    assert value(parse_quantity("1Gi")) == 2**30
    assert milli_value(parse_quantity("-0.0001")) == 0
