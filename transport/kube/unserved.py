"""404 Status objects that say what ksched does not serve, and what it does: the
workload controllers' kinds listed for kubectl's sake (resources.UNSERVED) and
subresources other than a kind's own (a kubelet's logs and exec, eviction, scale).
kube-apiserver answers an unknown path with a bare "the server could not find the
requested resource"; a user of ksched needs to know it is the product, not a typo."""
from __future__ import annotations

from framework.api.api_resources import RESOURCES, Resource
from transport.kube.status import KubeError

# What a kubelet answers for the API server: ksched runs no containers.
KUBELET_SUBRESOURCES = frozenset({"log", "exec", "attach", "portforward", "proxy"})


def served() -> str:
    """The resources ksched stores, as `kubectl api-resources` names them."""
    return ", ".join(dict.fromkeys(r.qualified for r in RESOURCES if r.stored))


def kind_not_served(res: Resource, name: str) -> KubeError:
    return KubeError(404, "NotFound", f"ksched stores no {res.qualified}: it is a scheduler, and no controller here "
                     f"makes pods from a {res.kind}; create the pods (or a PodGroup of them) instead. "
                     f"ksched serves: {served()}", name=name, group=res.group, kind=res.plural)


def subresource_not_served(res: Resource, name: str, sub: str) -> KubeError:
    why = ("ksched runs no containers (there is no kubelet)" if sub in KUBELET_SUBRESOURCES
           else "ksched does not serve it")
    own = ", ".join(f"{res.plural}/{s}" for s in res.subresources) or "none"
    return KubeError(404, "NotFound", f"ksched serves no {res.plural}/{sub}: {why}; the subresources of "
                     f"{res.qualified} it serves: {own}", name=name, group=res.group, kind=f"{res.plural}/{sub}")
