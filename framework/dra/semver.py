"""Semantic versions as Kubernetes' CEL semver library parses and orders them (blang/semver v4)."""
from __future__ import annotations

import re
from dataclasses import dataclass

_STRICT = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
                     r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")
_LEADING_ZERO = re.compile(r"^0[0-9]+$")


@dataclass(frozen=True, slots=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()

    def compare(self, other: Version) -> int:
        for a, b in ((self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)):
            if a != b:
                return -1 if a < b else 1
        return _compare_pre(self.pre, other.pre)


def _compare_pre(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    # A release orders after any of its pre-releases; identifiers compare numerically
    # when both are numbers, numbers before words, then the shorter list first.
    if not a or not b:
        return 0 if a == b else (1 if not a else -1)
    for x, y in zip(a, b):
        if x == y:
            continue
        xn, yn = x.isdigit(), y.isdigit()
        if xn and yn:
            return -1 if int(x) < int(y) else 1
        if xn != yn:
            return -1 if xn else 1
        return -1 if x < y else 1
    return 0 if len(a) == len(b) else (-1 if len(a) < len(b) else 1)


def parse_version(text: str, normalize: bool = False) -> Version:
    """The version `text` names; ValueError when it is not a semantic version.

    `normalize` accepts what Kubernetes' semver(s, true) does: a leading "v" and a
    missing minor or patch number (taken as 0)."""
    if normalize:
        text = text[1:] if text.startswith("v") else text
        core, sep, rest = _split_core(text)
        parts = core.split(".")
        if 0 < len(parts) < 3:
            parts += ["0"] * (3 - len(parts))
        text = ".".join(p.lstrip("0") or "0" for p in parts) + sep + rest
    m = _STRICT.match(text)
    if m is None:
        raise ValueError(f"No Major.Minor.Patch elements found in {text!r}" if text.count(".") < 2
                         else f"invalid semantic version {text!r}")
    pre = tuple(m.group(4).split(".")) if m.group(4) else ()
    for ident in pre:
        if _LEADING_ZERO.match(ident):
            raise ValueError(f"Numeric PreRelease version must not contain leading zeroes {ident!r}")
    return Version(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre)


def _split_core(text: str) -> tuple[str, str, str]:
    cut = min((i for i in (text.find("-"), text.find("+")) if i >= 0), default=len(text))
    return text[:cut], text[cut:cut + 1], text[cut + 1:]
