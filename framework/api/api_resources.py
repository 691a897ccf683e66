"""The REST resources ksched serves: every stored kind (framework.api.objects.KINDS)
under its upstream group-version, plural, singular and short names, and whether it
is namespaced (core/v1 Events included: stored objects like the rest); bindings a
create-only verb onto the store's Bind.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY, api_kind
from framework.api.objects import KINDS

ALL_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class Resource:
    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()  # "status", "binding"
    categories: tuple[str, ...] = ()
    stored: bool = True  # False: a verb (Binding), not a KINDS entry
    served: bool = True  # False: listed for kubectl's mapping only, every request a 404 naming it (UNSERVED)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_kind(self) -> str:
        """The kind objects of this resource write: `kind` less its group qualifier
        (the store keys scheduling.k8s.io's Workload as `Workload.scheduling.k8s.io`)."""
        return api_kind(self.kind)

    @property
    def singular(self) -> str:
        return self.api_kind.lower()

    @property
    def qualified(self) -> str:
        """`pods` in the core group, `podgroups.scheduling.x-k8s.io` elsewhere (kube's messages)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _kueue_resources(version: str) -> tuple[Resource, ...]:
    g = "kueue.x-k8s.io"
    return (
        Resource("ResourceFlavor", g, version, "resourceflavors", False, ("flavor", "flavors", "rf")),
        Resource("ClusterQueue", g, version, "clusterqueues", False, ("cq",), subresources=("status",)),
        Resource("Cohort", g, version, "cohorts", False, ("co",), subresources=("status",)),
        Resource("LocalQueue", g, version, "localqueues", True, ("queue", "queues", "lq"), subresources=("status",)),
        Resource("Workload", g, version, "workloads", True, ("kwl", "kueueworkload", "kueueworkloads"),
                 subresources=("status",)),
        Resource("WorkloadPriorityClass", g, version, "workloadpriorityclasses", False),
    )


RESOURCES: tuple[Resource, ...] = (
    Resource("Pod", "", "v1", "pods", True, ("po",), subresources=("binding", "status"), categories=("all",)),
    Resource("Node", "", "v1", "nodes", False, ("no",), subresources=("status",)),
    Resource("Namespace", "", "v1", "namespaces", False, ("ns",), subresources=("status",)),
    Resource("Event", "", "v1", "events", True, ("ev",)),
    Resource("Binding", "", "v1", "bindings", True, verbs=("create",), stored=False),
    Resource("Service", "", "v1", "services", True, ("svc",), subresources=("status",), categories=("all",)),
    Resource("ReplicationController", "", "v1", "replicationcontrollers", True, ("rc",),
             subresources=("status",), categories=("all",)),
    Resource("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", True, ("pvc",), subresources=("status",)),
    Resource("PersistentVolume", "", "v1", "persistentvolumes", False, ("pv",), subresources=("status",)),
    Resource("ReplicaSet", "apps", "v1", "replicasets", True, ("rs",), subresources=("status",), categories=("all",)),
    Resource("StatefulSet", "apps", "v1", "statefulsets", True, ("sts",), subresources=("status",),
             categories=("all",)),
    Resource("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True, ("pdb",), subresources=("status",)),
    Resource("StorageClass", "storage.k8s.io", "v1", "storageclasses", False, ("sc",)),
    Resource("CSINode", "storage.k8s.io", "v1", "csinodes", False),
    Resource("CSIDriver", "storage.k8s.io", "v1", "csidrivers", False),
    Resource("VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments", False, subresources=("status",)),
    Resource("PodGroup", "scheduling.x-k8s.io", "v1alpha1", "podgroups", True, ("pg", "pgs"),
             subresources=("status",)),
    # DRA (issue 30): upstream gives these no short names
    Resource("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", False),
    Resource("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", True, subresources=("status",)),
    Resource("ResourceClaimTemplate", "resource.k8s.io", "v1", "resourceclaimtemplates", True),
    Resource("ResourceSlice", "resource.k8s.io", "v1", "resourceslices", False),
    # `kubectl auth can-i` (access_review.py): create-only, as the Binding
    Resource("SelfSubjectAccessReview", "authorization.k8s.io", "v1", "selfsubjectaccessreviews", False,
             verbs=("create",), stored=False),
    Resource("SelfSubjectRulesReview", "authorization.k8s.io", "v1", "selfsubjectrulesreviews", False,
             verbs=("create",), stored=False),
    # Kueue's kinds (issue 20), with Kueue's plural and short names (+kubebuilder:resource lines), in each
    # served version (framework.kueue.versions: stored in v1beta2, converted for v1beta1), v1beta2 first
    *(r for version in ("v1beta2", "v1beta1") for r in _kueue_resources(version)),
    # scheduling.k8s.io last: with Kubernetes' own gang API (issue 29, keyed by group:
    # framework.api.groups) listed after Coscheduling's and Kueue's groups, kubectl's bare
    # `podgroups` and `workloads` keep naming those (it prefers the group discovery lists
    # first; docs/decisions.md); `workloads.scheduling.k8s.io` names these.
    Resource("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False, ("pc",)),
    Resource(WORKLOAD_KEY, "scheduling.k8s.io", "v1alpha2", "workloads", True),
    Resource(POD_GROUP_KEY, "scheduling.k8s.io", "v1alpha2", "podgroups", True, subresources=("status",)),
)

# Workload controllers' kinds, common in users' manifests, that ksched does not store (it
# schedules pods; no controller makes pods from these). They are listed in discovery so
# that kubectl maps a manifest's kind to a URL and reaches the server, whose 404 Status
# says what ksched does not serve and what it does (transport/kube/unserved.py), rather
# than kubectl's own "no matches for kind ... ensure CRDs are installed first".
UNSERVED: tuple[Resource, ...] = tuple(
    Resource(kind, group, "v1", plural, True, shorts, stored=False, served=False)
    for kind, group, plural, shorts in (("Deployment", "apps", "deployments", ("deploy",)),
                                        ("DaemonSet", "apps", "daemonsets", ("ds",)),
                                        ("Job", "batch", "jobs", ()),
                                        ("CronJob", "batch", "cronjobs", ("cj",))))
LISTED: tuple[Resource, ...] = RESOURCES + UNSERVED

# kind -> the resource of its preferred (first listed) version
BY_KIND: dict[str, Resource] = {}
for _r in RESOURCES:
    BY_KIND.setdefault(_r.kind, _r)
# (group-version, plural) -> resource, the unserved ones included (their requests are 404)
BY_PATH: dict[tuple[str, str], Resource] = {(r.group_version, r.plural): r for r in LISTED}


@dataclass(frozen=True, slots=True)
class GroupVersion:
    group: str
    version: str
    resources: tuple[Resource, ...] = field(default=())

    @property
    def name(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def group_versions(listed: bool = False, hidden: frozenset[str] = frozenset()) -> list[GroupVersion]:
    """Every served group-version, the core group first, in the order of RESOURCES;
    with `listed`, discovery's view: the UNSERVED kinds' too. The kinds in `hidden`
    (those a feature gate turns off: KubeDeps.hidden) are left out, and a
    group-version left with none."""
    seen: dict[str, list[Resource]] = {}
    for r in LISTED if listed else RESOURCES:
        if r.kind not in hidden:
            seen.setdefault(r.group_version, []).append(r)
    return [GroupVersion(rs[0].group, rs[0].version, tuple(rs)) for rs in seen.values()]


def api_version_of(kind: str) -> str:
    res = BY_KIND.get(kind)
    return res.group_version if res is not None else "v1"


def _check_every_kind_served() -> None:
    missing = set(KINDS) - {r.kind for r in RESOURCES if r.stored}
    if missing:  # a kind added to the store must be added here too
        raise RuntimeError(f"framework.api.api_resources: stored kinds without a REST resource: {sorted(missing)}")


_check_every_kind_served()
