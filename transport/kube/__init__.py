"""The Kubernetes REST API on the daemon's HTTP port, for kubectl, client-go and the
official Python client (mounted by transport.http.app when HttpDeps.kube is given).

    routes.py     mount_kube(app, deps): paths -> handlers
    resources.py  the served kinds: group-version, plural, short names, scope, verbs
    discovery.py  /version, /api, /apis, group-versions          openapi.py  minimal OpenAPI v3
    request.py    deps, parsed paths, request bodies              status.py   Status errors
    reads.py      get, list (selectors, paging)                   watch.py    watch streams
    writes.py     create, update, delete, status, bindings        patching.py PATCH and server-side apply
    patch.py      merge, JSON and strategic merge patches         table.py    Table output (kubectl get)
    protobuf.py   kubectl's protobuf bodies                       tls.py      CA and certificate, kubeconfig
    patch_fields.py  unknown fields a patch brings in, per fieldValidation (Strict, Warn, Ignore)
"""
from transport.kube.request import KubeDeps
from transport.kube.routes import mount_kube

__all__ = ["KubeDeps", "mount_kube"]
