"""Device selector expressions: compiled once per (expression, environment), evaluated per device.

The environment is Kubernetes' for DRA (dynamic-resource-allocation/cel): one variable
`device` with `driver`, `attributes` and `capacity` (maps of domain -> id -> value) and,
with DRAConsumableCapacity, `allowMultipleAllocations`; CEL's cel.bind and strings
extensions; Kubernetes' quantity, semver and regex libraries (cel_types)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_strings

from framework.dra.cel_cost import estimate_max_cost
from framework.dra.cel_types import POOL, QuantityMsg, SemverMsg, kubernetes_functions


class CELCompileError(ValueError):
    """The expression does not compile in the device selector environment."""


class CELEvalError(ValueError):
    """Evaluating the expression against one device failed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Device:
    """What a selector sees of one device: attribute and capacity names fully qualified."""
    driver: str
    attributes: Mapping[str, Mapping[str, Any]]  # domain -> id -> bool | int | str | SemverMsg
    capacity: Mapping[str, Mapping[str, Any]]    # domain -> id -> QuantityMsg
    allow_multiple_allocations: bool = False


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.rpartition("/")
    return (domain, ident) if sep else (driver, name)


def device_from_api(driver: str, device: Mapping[str, Any]) -> Device:
    """The selector's view of a resource.k8s.io/v1 Device of `driver` (names without a domain
    are the driver's); CELEvalError for an attribute without a value."""
    attrs: dict[str, dict[str, Any]] = {}
    for name, attr in (device.get("attributes") or {}).items():
        value = _attribute_value(attr)
        if value is None:  # as DeviceMatches: every attribute must hold one value
            raise CELEvalError(f"attribute {name}: unsupported attribute value")
        domain, ident = _split(name, driver)
        attrs.setdefault(domain, {})[ident] = value
    caps: dict[str, dict[str, Any]] = {}
    for name, cap in (device.get("capacity") or {}).items():
        domain, ident = _split(name, driver)
        caps.setdefault(domain, {})[ident] = QuantityMsg(text=str(cap.get("value", "0")))
    return Device(driver=driver, attributes=attrs, capacity=caps,
                  allow_multiple_allocations=bool(device.get("allowMultipleAllocations")))


def _attribute_value(attr: Mapping[str, Any]) -> Any:
    for key in ("bool", "int", "string"):
        if key in attr:
            return attr[key]
    if "version" in attr:
        return SemverMsg(text=attr["version"])
    return None


_DEVICE_TYPE = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)


@lru_cache(maxsize=1)
def _env() -> Any:
    return cel.NewEnv(descriptor_pool=POOL, variables={"device": _DEVICE_TYPE},
                      extensions=[ext_bindings.ExtBindings(), ext_strings.ExtStrings()],
                      functions=kubernetes_functions())


_STRING_LITERAL = re.compile(r"(?s)[rR]?(\"\"\"|'''|\"|')(?:\\.|(?!\1).)*?\1")
_ALLOW_MULTIPLE = re.compile(r"\bdevice\s*\.\s*allowMultipleAllocations\b")


@dataclass(frozen=True, slots=True)
class Selector:
    expression: str
    program: Any
    estimated_cost: int  # cel-go's static estimate of the maximum cost (framework/dra/cel_cost.py)

    def matches(self, device: Device) -> bool:
        """True when the device is selected; CELEvalError when evaluation fails."""
        attrs, caps = dict(device.attributes), dict(device.capacity)
        while True:
            data = {"device": {"driver": device.driver, "attributes": attrs, "capacity": caps,
                               "allowMultipleAllocations": device.allow_multiple_allocations}}
            try:
                value = self.program.eval(data=data)
            except RuntimeError as e:  # the library raises for some failures instead of an error value
                kind, message = "ERROR", str(e)
            else:
                kind = value.type().name()
                if kind == "BOOL":
                    return bool(value.value())
                message = str(value.value()) if kind == "ERROR" else f"expression returned {kind.lower()}"
            missing = _missing_key(message)
            # Kubernetes' attribute and capacity maps answer an unknown domain with an empty
            # map; the library's maps are plain, so a failed domain lookup is retried with it.
            if missing is not None and missing not in attrs and missing not in caps \
                    and _indexes_domain(self.expression, missing):
                attrs.setdefault(missing, {})
                caps.setdefault(missing, {})
                continue
            if missing is not None:
                raise CELEvalError(f"no such key: {missing}")
            if _BUDGET in message:
                # cel-cpp's comprehension iteration budget, the limit this evaluator has; cel-go
                # counts cost units instead (docs/decisions.md). Upstream's words for a run over it:
                raise CELEvalError(f"operation cancelled: actual cost limit exceeded ({message})")
            raise CELEvalError(message)


_BUDGET = "Iteration budget exceeded"
_KEY_NOT_FOUND = re.compile(r'Key not found in map : "((?:[^"\\]|\\.)*)"')


def _missing_key(message: str) -> str | None:
    m = _KEY_NOT_FOUND.search(message)
    if m is None:
        m = re.search(r"no such key: (\S+)", message)
    return m.group(1) if m else None


def _indexes_domain(expression: str, domain: str) -> bool:
    return re.search(r"\b(?:attributes|capacity)\s*\[\s*[\"']" + re.escape(domain) + r"[\"']\s*\]",
                     expression) is not None


_DYN_RANGE = "expression of type 'dyn' cannot be the range of a comprehension"


@lru_cache(maxsize=4096)
def compile_selector(expression: str, consumable_capacity: bool = False) -> Selector:
    """The compiled selector, cached per expression and gate; CELCompileError with upstream's text."""
    if not consumable_capacity and _ALLOW_MULTIPLE.search(_STRING_LITERAL.sub('""', expression)):
        raise CELCompileError("compilation failed: ERROR: <input>: undefined field 'allowMultipleAllocations'")
    try:
        program = _env().compile(expression)
    except RuntimeError as e:
        if _DYN_RANGE not in str(e):
            raise CELCompileError(f"compilation failed: {_strip_status(str(e))}") from None
        # cel-cpp's checker rejects a comprehension over an indexed dyn value (cel-go accepts
        # it: the range of `device.attributes["d"].exists_one(...)` is a map there); such an
        # expression is parsed and run unchecked, its type errors then surface at evaluation.
        program = _env().compile(expression, disable_check=True)
    result = program.return_type().name()
    if result not in ("BOOL", "DYN"):
        raise CELCompileError(f"must evaluate to bool or the unknown type, not {result.lower()}")
    return Selector(expression, program, estimate_max_cost(program.serialize()))


def _strip_status(message: str) -> str:
    return re.sub(r"^INVALID_ARGUMENT: |\s*\[INVALID_ARGUMENT\]$", "", message)
