"""`ksched get` for DRA's kinds: their resource names resolve, and the tables have the
columns of upstream's printers."""
from __future__ import annotations

from tests import dra_manifests as m
from transport.cli.dra_tables import dra_table
from transport.cli.tables import resolve_kind


def test_the_resource_names_of_dra_kinds_resolve() -> None:
    assert [resolve_kind(n) for n in ("resourceclaims", "resourceclaim", "ResourceSlice", "deviceclasses",
                                      "resourceclaimtemplates")] == [
        "ResourceClaim", "ResourceClaim", "ResourceSlice", "DeviceClass", "ResourceClaimTemplate"]


def test_claims_and_slices_print_upstreams_columns() -> None:
    claim = m.resource_claim()
    allocated = {**m.resource_claim("held"), "status": {"allocation": m.allocation()}}
    assert dra_table("ResourceClaim", [claim, allocated], 0.0, namespaces=True).splitlines() == [
        "NAMESPACE   NAME      STATE       AGE",
        "default     one-gpu   pending     <unknown>",
        "default     held      allocated   <unknown>"]
    assert dra_table("ResourceSlice", [m.resource_slice()], 0.0, namespaces=False).splitlines() == [
        "NAME          NODE     DRIVER            POOL     AGE",
        "node-1-gpus   node-1   gpu.example.com   node-1   <unknown>"]


def test_describe_of_a_claim_is_kubectls_generic_page_with_smart_labels_and_aligned_blocks() -> None:
    from transport.cli.generic_describe import describe_generic
    claim = m.resource_claim()
    claim["metadata"].update(uid="u-1", labels={"team": "ml", "app": "train"},
                             annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "x"})
    claim["status"] = {"reservedFor": [{"resource": "pods", "name": "p", "uid": "p-1"}]}
    assert describe_generic(claim, [], "").splitlines() == [
        "Name:         one-gpu",
        "Namespace:    default",
        "Labels:       app=train",
        "              team=ml",
        "Annotations:  note: x",
        "API Version:  resource.k8s.io/v1",
        "Kind:         ResourceClaim",
        "Metadata:",
        "  UID:  u-1",
        "Spec:",
        "  Devices:",
        "    Requests:",
        "      Exactly:",
        "        Device Class Name:  gpu.example.com",
        "      Name:                 gpu",
        "Status:",
        "  Reserved For:",
        "    Name:      p",
        "    Resource:  pods",
        "    UID:       p-1",
        "Events:        <none>"]  # aligned with the block above, as tabwriter does


def test_smart_labels_split_camel_case_and_keep_names_with_other_characters() -> None:
    from transport.cli.generic_describe import smart_label
    assert [smart_label(f) for f in ("apiVersion", "resourceSliceCount", "uid", "HTMLParser", "gpu.example.com/model")] == [
        "API Version", "Resource Slice Count", "UID", "HTML Parser", "gpu.example.com/model"]
