"""DRA device selectors through the real CEL library (framework/dra)."""
import pytest

from framework.dra.cel_selector import CELCompileError, CELEvalError, compile_selector, device_from_api
from framework.dra.semver import parse_version

GPU = device_from_api("gpu.example.com", {
    "attributes": {"model": {"string": "a100"}, "cores": {"int": 108}, "driverVersion": {"version": "1.2.3-rc.1"},
                   "numa.example.com/node": {"int": 1}},
    "capacity": {"memory": {"value": "40Gi"}},
})


def matches(expression: str, device=GPU, consumable: bool = False) -> bool:
    return compile_selector(expression, consumable).matches(device)


def test_a_selector_is_compiled_once_per_expression_and_gate():
    assert compile_selector("device.driver == 'x'") is compile_selector("device.driver == 'x'")
    assert compile_selector("true", True) is not compile_selector("true", False)


def test_names_without_a_domain_belong_to_the_driver_and_qualified_names_to_their_domain():
    assert matches('device.attributes["gpu.example.com"].model == "a100"')
    assert matches('device.attributes["numa.example.com"].node == 1')
    assert not matches('"node" in device.attributes["gpu.example.com"]')


def test_quantity_functions_compare_amounts_not_spellings():
    assert matches('device.capacity["gpu.example.com"].memory.compareTo(quantity("40960Mi")) == 0')
    assert matches('device.capacity["gpu.example.com"].memory.isLessThan(quantity("41Gi"))')
    assert matches('quantity("1.5").add(quantity("500m")).isInteger() && quantity("2").asInteger() == 2')
    assert matches('quantity("-1").sign() == -1 && isQuantity("1Ki") && !isQuantity("1KiB")')


def test_a_release_orders_after_its_prereleases():
    assert matches('device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.2.3"))')
    assert matches('semver("1.2.3-rc.2").isGreaterThan(semver("1.2.3-rc.1"))')
    assert matches('semver("v1.2", true).compareTo(semver("1.2.0")) == 0 && semver("2.3.4").major() == 2')
    assert parse_version("1.0.0-alpha").compare(parse_version("1.0.0-alpha.1")) == -1


def test_a_malformed_semver_is_an_evaluation_error():
    with pytest.raises(CELEvalError):
        matches('semver("1.x").major() == 1')


def test_an_unknown_domain_is_an_empty_map_and_its_missing_attribute_is_named():
    assert matches('!("other.example.com" in device.attributes)')
    assert matches('size(device.attributes["other.example.com"]) == 0')
    with pytest.raises(CELEvalError, match="no such key: speed"):
        matches('device.attributes["other.example.com"].speed > 1')


def test_allow_multiple_allocations_exists_only_with_consumable_capacity():
    with pytest.raises(CELCompileError, match="undefined field 'allowMultipleAllocations'"):
        compile_selector("device.allowMultipleAllocations")
    assert matches("device.allowMultipleAllocations == false", consumable=True)
    assert matches('"device.allowMultipleAllocations" != ""')  # only the field, not a string naming it


def test_a_selector_must_be_boolean():
    with pytest.raises(CELCompileError, match="must evaluate to bool or the unknown type, not string"):
        compile_selector("'x'")


def test_regex_find_returns_the_first_match_or_empty():
    assert matches("'abc123def456'.find('[0-9]+') == '123' && 'abc'.find('[0-9]') == ''")
    assert matches("'a1b2c3'.findAll('[0-9]') == ['1', '2', '3'] && 'a1b2c3'.findAll('[0-9]', 2) == ['1', '2']")
