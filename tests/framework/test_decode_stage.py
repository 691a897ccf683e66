"""kube-apiserver's decode stage as one function given the kind key the write chain
decided (framework.api.decode.decode): the checks that need no walk, the object's one
admission, then what fieldValidation makes of its unknown fields."""
from __future__ import annotations

import pytest

from framework.api.decode import DecodeError, decode

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "i"}], "nodeNmae": "typo"}, "status": None}


def test_under_warn_the_unknown_field_is_named_and_dropped_and_the_nulls_are_gone() -> None:
    checked, said = decode("Pod", POD, "Warn", True)
    assert said == ['unknown field "spec.nodeNmae"']
    assert "nodeNmae" not in checked.raw["spec"] and "status" not in checked.raw and not checked.errors


def test_under_strict_every_unknown_field_is_refused_by_name() -> None:
    with pytest.raises(DecodeError, match=r'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
                                          r'unknown field "spec.nodeNmae"'):
        decode("Pod", POD, "Strict", True)


def test_without_a_field_validation_the_object_is_admitted_only() -> None:
    checked, said = decode("Pod", {**POD, "apiVersion": "v2"}, None, True)
    assert said == [] and checked.raw["spec"]["nodeNmae"] == "typo" and not checked.errors


def test_a_version_that_does_not_serve_the_kind_is_not_decoded() -> None:
    with pytest.raises(DecodeError, match=r"the API version in the data \(v2\) does not match the expected API "
                                          r"version \(v1\)"):
        decode("Pod", {**POD, "apiVersion": "v2"}, "Ignore", True)
