"""A ResourceClaim the resourceclaim controller makes from a template is admitted with
the template's already admitted spec (not walked again), and is stored as a full
admission would store it; a create that cannot prove its spec is the template's own
object goes through the whole chain. A real Store on SQLite."""
from __future__ import annotations

import pytest

from actors.resourceclaims import ResourceClaimController
from actors.store import Invalid
from actors.store.sqlite import SQLiteBackend
from framework.api.dra_kinds import ResourceClaimTemplate
from framework.api.objects import Pod
from framework.dra.pod_claims import claim_from_template
from tests import dra_manifests as m
from tests.actors.resourceclaims.test_controller import controlled, settle, claims_of
from tests.actors.store_helpers import running


async def test_the_controllers_claim_shares_its_templates_admitted_spec_and_is_stored_as_in_full(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (store, c, ctl):
        await c.apply([m.claim_template(), m.pod_with_template()])
        await settle(c, ctl)
        [claim] = await claims_of(c)
        template = store.peek("ResourceClaimTemplate", "default", "one-gpu")
        assert store.write_chain.claim_specs.proven_count == 1 and ctl.created == 1
        stored = store.peek("ResourceClaim", "default", claim["metadata"]["name"])
        assert stored.raw["spec"] is template.raw["spec"]["spec"]  # one object, not a copy
        # the same claim admitted in full is stored alike
        full = await c.create({**claim_from_template(Pod(await c.get("Pod", "default", "trainer")), "gpu",
                                                     ResourceClaimTemplate(m.claim_template())),
                               "metadata": {"name": "by-hand", "namespace": "default"}})
        assert full["spec"] == claim["spec"] and store.write_chain.claim_specs.proven_count == 1
    async with running(SQLiteBackend(str(tmp_path))) as (_, c):  # and read back alike after a restart
        stored = await c.get("ResourceClaim", "default", claim["metadata"]["name"])
        assert stored["spec"] == claim["spec"]


async def test_a_create_naming_a_template_with_another_spec_object_is_walked_in_full() -> None:
    async with running() as (store, c):
        await c.create(m.claim_template())
        template = store.peek("ResourceClaimTemplate", "default", "one-gpu")
        request = template.raw["spec"]["spec"]["devices"]["requests"][0]
        spec = {"devices": {"requests": [{**request, "name": "Not_A_Label"}]}}  # a look-alike, made invalid
        with pytest.raises(Invalid) as e:
            await c.create({**m.resource_claim("bad"), "spec": spec}, template="default/one-gpu")
        assert e.value.field == "spec.devices.requests[0].name"
        assert store.peek("ResourceClaim", "default", "bad") is None


async def test_the_templates_spec_object_in_another_namespace_or_with_a_status_is_walked_in_full() -> None:
    async with running() as (store, c):
        await c.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}, m.claim_template()])
        spec = store.peek("ResourceClaimTemplate", "default", "one-gpu").raw["spec"]["spec"]
        await c.create({**m.resource_claim("elsewhere", ns="other"), "spec": spec}, template="default/one-gpu")
        await c.create({**m.resource_claim("with-status"), "spec": spec, "status": {}}, template="default/one-gpu")
        await c.create({**m.resource_claim("no-such"), "spec": spec}, template="default/missing")
        assert store.write_chain.claim_specs.proven_count == 0
        await c.create({**m.resource_claim("proven"), "spec": spec}, template="default/one-gpu")
        assert store.write_chain.claim_specs.proven_count == 1
