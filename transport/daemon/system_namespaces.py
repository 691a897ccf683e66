"""The namespaces every Kubernetes cluster has, created when a daemon starts if they
are absent, as kube-apiserver's system namespaces controller does
(pkg/controlplane/controller/systemnamespaces): kube-system, kube-public,
kube-node-lease and default. They are ordinary stored objects (durable, listed,
watched); the store refuses to delete the first three and default
(actors/store/front_door.IMMORTAL_NAMESPACES), as NamespaceLifecycle does."""
from __future__ import annotations

import logging
from typing import Any

from transport.protocol.wire import ApiError, Reason

log = logging.getLogger("ksched.daemon")

SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "default")


async def create_system_namespaces(service: Any) -> list[str]:
    """Create the absent ones through `service` (a transport.server.service.Service);
    the names created. Another daemon on the same store creating one first is fine;
    any other refusal is logged and the daemon starts without it (the next start
    tries again, as the upstream controller retries)."""
    created = []
    for name in SYSTEM_NAMESPACES:
        try:
            await service.get("Namespace", "", name)
            continue
        except ApiError as err:
            if err.reason != Reason.NOT_FOUND:
                log.warning("system namespace %s: cannot read it: %s", name, err.message)
                continue
        try:
            await service.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            created.append(name)
        except ApiError as err:
            if err.reason != Reason.ALREADY_EXISTS:
                log.warning("system namespace %s: not created: %s", name, err.message)
    if created:
        log.info("created the system namespaces %s", ", ".join(created))
    return created
