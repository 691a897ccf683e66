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
