"""Topology-aware placement of a gang (KEP-5732's TopologyPlacement generator and the
placement loop around the group algorithm, plus ksched's levels and best fit). Pure.

One placement (Domain) per value of the level's node label; nodes lacking the label
are in no domain. Members already bound or assumed pin the domain (upstream: a
mismatch is an Error, "more than 1 domain found for pod group"). The caller's
`try_group(node_names)` runs the real group algorithm inside a domain with nothing
kept (framework/workload/group_cycle.py's place_group, keep=False) and says whether
minCount fit, how many members were placed and what they use; feasible placements
are scored (framework/workload/topology_score.py) and the best one returned for the
caller to place the group in for real.

Beyond upstream: a preferred level (e.g. one rack) tried before the required one
(e.g. one block), as Kueue TAS's preferred annotation and Slurm's block plugin fall
back level by level; with no required level the last resort is the whole cluster.
Domains are tried in best-fit order (least free capacity first, Kueue TAS BestFit),
those whose free cpu or memory cannot hold the quorum's requests are not tried
(the capacity pre-filter KEP-5732 asks for), and trying stops once enough feasible
placements are found (KEP-5732 beta's PercentageOfPlacementsToScore: 100% in small
clusters, then 50 - nodes/125 percent, at least 5%) or at the first feasible domain
that holds every member: a later domain has at least as much free, so it can score
no higher on members placed or on best fit (only the NodeResourcesFit ratio could
differ, which ksched trades for one group cycle instead of dozens). Every domain carries a verdict
saying why it was not chosen; explain prints them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Protocol, Sequence

from framework.types import Code, Status
from framework.workload.topology_score import Capacity, score_placements

# upstream's messages (TopologyPlacement.getScheduledPodsTopologyDomain, GeneratePlacements)
MORE_THAN_ONE_DOMAIN = "more than 1 domain found for pod group: {a}, {b}"
NO_DOMAIN_FOR_POD = "no topology domain found for pod {pod}"
SCHEDULED_DOMAIN_ERROR = "cannot determine domain for already scheduled pods: {err}"
# ksched's
NO_DOMAINS = "no node has the label {key}"
NOT_TRIED = "not tried: enough feasible placements were found"
TOO_SMALL = "free capacity too small for the group: needs cpu {cpu}m, memory {mem}; has cpu {fcpu}m, memory {fmem}"
WORSE = "feasible, scored {score}; {best} scored {best_score}"
NO_PLACEMENT = "no topology domain can hold the pod group: {detail}"
WHOLE_CLUSTER = ""  # the level key of the whole-cluster last resort


@dataclass(frozen=True, slots=True)
class Domain:
    """One candidate placement: the nodes whose label `key` has `value`."""

    key: str
    value: str
    nodes: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.key}={self.value}" if self.key else "all nodes"


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOutcome:
    """What trying the group inside one domain gave: `feasible` (minCount reached),
    members placed, their summed cpu (millicores) and memory requests, and the
    group's reason when not feasible."""

    feasible: bool
    placed: int = 0
    used_cpu: int = 0
    used_memory: int = 0
    reason: str = ""


@dataclass(slots=True, kw_only=True)
class DomainVerdict:
    domain: Domain
    tried: bool = False
    feasible: bool = False
    placed: int = 0
    score: int = 0
    reason: str = ""
    chosen: bool = False


@dataclass(slots=True)
class TopologyResult:
    """The choice: `chosen` (None when no domain can hold the group), the verdict of
    every domain of every level considered, and the group's status: Success,
    Unschedulable (per-domain reasons joined) or Error (pinned members disagree).

    The domains left untried once enough placements were found (in a 250-rack cluster
    all but the first, usually) get their NOT_TRIED verdicts only when someone reads
    `verdicts` (explain), not in every group cycle."""

    chosen: Domain | None = None
    status: Status = field(default_factory=Status)
    _verdicts: list[DomainVerdict] = field(default_factory=list)
    # (position in _verdicts, the level's domains, their positions) of untried tails
    _untried: list[tuple[int, Sequence[Domain], Sequence[int]]] = field(default_factory=list)

    @property
    def verdicts(self) -> list[DomainVerdict]:
        if self._untried:
            for at, domains, positions in reversed(self._untried):
                self._verdicts[at:at] = [DomainVerdict(domain=domains[i], reason=NOT_TRIED) for i in positions]
            self._untried.clear()
        return self._verdicts

    def add_verdict(self, domain: Domain) -> DomainVerdict:
        v = DomainVerdict(domain=domain)
        self._verdicts.append(v)
        return v

    def add_untried(self, domains: Sequence[Domain], positions: Sequence[int]) -> None:
        if positions:
            self._untried.append((len(self._verdicts), domains, positions))

    def view(self) -> dict[str, object]:
        """The choice as explain's JSON: the domain chosen, the group's status and a
        verdict per domain considered."""
        return {"chosen": self.chosen.name if self.chosen is not None else "",
                "status": self.status.code.name, "message": self.status.message(),
                "domains": [{"domain": v.domain.name, "nodes": len(v.domain.nodes), "tried": v.tried,
                             "feasible": v.feasible, "chosen": v.chosen, "placed": v.placed, "score": v.score,
                             "reason": v.reason} for v in self.verdicts]}

    def lines(self) -> list[str]:
        """One line per domain considered, for explain."""
        out: list[str] = []
        for v in self.verdicts:
            mark = "chosen" if v.chosen else ("feasible" if v.feasible else ("tried" if v.tried else "skipped"))
            text = f"{v.domain.name} ({len(v.domain.nodes)} nodes): {mark}"
            if v.reason:
                text += f": {v.reason}"
            out.append(text)
        return out


class ClusterView(Protocol):
    """The nodes of the cycle's view as the choice reads them: their count and names,
    one node's label, the domains of a label (only the pinned value's when given) and
    a domain's summed capacity. LabelledNodes is the plain form; topology_view.py's
    TableView reads the snapshot's columns."""

    def node_count(self) -> int: ...

    def all_nodes(self) -> tuple[str, ...]: ...

    def label(self, node: str, key: str) -> str | None: ...

    def domains(self, key: str, pinned_value: str | None) -> list[Domain]: ...

    def free(self, domain: Domain) -> Capacity: ...

    def best_fit_order(self, domains: Sequence[Domain]) -> Sequence[int]:
        """Positions in `domains` (all of one key) by free cpu, then free memory, then
        value, least first: Kueue TAS's BestFit order the choice tries them in."""
        ...


def best_fit_order(view: ClusterView, domains: Sequence[Domain]) -> list[int]:
    """The BestFit order read domain by domain through `view.free` (the plain form)."""
    caps = [view.free(d) for d in domains]
    return sorted(range(len(domains)), key=lambda i: (caps[i].free_cpu, caps[i].free_memory, domains[i].value))


class LabelledNodes:
    """A ClusterView over (name, labels) pairs in view order and a per-node capacity."""

    def __init__(self, nodes: Sequence[tuple[str, Mapping[str, str]]], capacity: Callable[[str], Capacity],
                 others: Sequence[tuple[str, Mapping[str, str]]] = ()) -> None:
        """`others`: nodes outside the parent placement whose labels members already
        placed on them are looked up by (upstream reads them from the snapshot)."""
        self.nodes, self.capacity = nodes, capacity
        self.labels = {**dict(others), **dict(nodes)}

    def node_count(self) -> int:
        return len(self.nodes)

    def all_nodes(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.nodes)

    def label(self, node: str, key: str) -> str | None:
        return self.labels.get(node, {}).get(key)

    def domains(self, key: str, pinned_value: str | None) -> list[Domain]:
        return generate_domains(key, self.nodes, pinned_value)

    def free(self, domain: Domain) -> Capacity:
        return Capacity.total(self.capacity(n) for n in domain.nodes)

    def best_fit_order(self, domains: Sequence[Domain]) -> list[int]:
        return best_fit_order(self, domains)


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyRequest:
    """Everything the choice reads. `view`: the nodes of the cycle's view; `pinned`:
    (pod key, node name) of members already bound or assumed; `scheduled`: how many
    count toward the quorum; `demand_cpu` / `demand_memory`: the least the missing
    quorum needs in total (pre-filter); `members`: how many members each try places
    at most."""

    required_key: str
    preferred_key: str = ""
    view: ClusterView
    pinned: Sequence[tuple[str, str]] = ()
    scheduled: int = 0
    members: int = 0  # members tried in each domain (0: unknown, no early stop)
    demand_cpu: int = 0
    demand_memory: int = 0


def generate_domains(key: str, nodes: Iterable[tuple[str, Mapping[str, str]]],
                     pinned_value: str | None = None) -> list[Domain]:
    """upstream's GeneratePlacements: one domain per label value, in first-seen order,
    only the pinned one when members are already placed."""
    groups: dict[str, list[str]] = {}
    for name, labels in nodes:
        value = labels.get(key)
        if value is None or (pinned_value is not None and value != pinned_value):
            continue
        groups.setdefault(value, []).append(name)
    return [Domain(key, v, tuple(ns)) for v, ns in groups.items()]


def pinned_domain(key: str, view: ClusterView, pinned: Sequence[tuple[str, str]]) -> str | None:
    """The one domain value of the members already placed (None when there are none);
    raises ValueError with upstream's message when they lack the label or disagree."""
    value: str | None = None
    for pod_key, node in pinned:
        got = view.label(node, key)
        if got is None:
            raise ValueError(NO_DOMAIN_FOR_POD.format(pod=pod_key))
        if value is not None and value != got:
            raise ValueError(MORE_THAN_ONE_DOMAIN.format(a=value, b=got))
        value = got
    return value


def generate_placements(key: str, view: ClusterView,
                        pinned: Sequence[tuple[str, str]]) -> tuple[list[Domain] | None, Status]:
    """upstream's TopologyPlacement.GeneratePlacements: None (the parent placement
    unchanged) with no key, else one domain per value of the view's nodes, only the
    pinned members' one when there are some; an Error when they cannot be placed in
    one domain."""
    if not key:
        return None, Status()
    try:
        pin = pinned_domain(key, view, pinned)
    except ValueError as e:
        return [], Status(Code.Error, SCHEDULED_DOMAIN_ERROR.format(err=e))
    return view.domains(key, pin), Status()


def placements_to_find(node_count: int, domains: int) -> int:
    """How many feasible placements to score (KEP-5732 beta's adaptive percentage,
    the same curve as kube-scheduler's percentageOfNodesToScore)."""
    if node_count <= 100:
        return domains
    percent = max(5, 50 - node_count // 125)
    return max(1, domains * percent // 100)


def choose_placement(req: TopologyRequest,
                     try_group: Callable[[tuple[str, ...] | None], GroupOutcome]) -> TopologyResult:
    """Try the preferred level, then the required one (the whole cluster when there is
    no required level), and return the best feasible domain of the first level that
    has one."""
    result = TopologyResult()
    levels = [k for k in (req.preferred_key, req.required_key) if k]
    levels = list(dict.fromkeys(levels))
    for key in levels:
        domains, status = generate_placements(key, req.view, req.pinned)
        if not status.is_success():
            if key == req.required_key:
                result.status = status
                return result
            continue  # members already spread over the preferred level: only the required one is left
        assert domains is not None
        if not domains:
            result.add_verdict(Domain(key, "", ())).reason = NO_DOMAINS.format(key=key)
            continue
        chosen = _choose_in_level(req, domains, try_group, result)
        if chosen is not None:
            result.chosen = chosen
            return result
    if not req.required_key:
        whole = Domain(WHOLE_CLUSTER, "", req.view.all_nodes())
        chosen = _choose_in_level(req, [whole], lambda _nodes: try_group(None), result)
        if chosen is not None:
            result.chosen = chosen
            return result
    detail = "; ".join(result.lines()) or NO_DOMAINS.format(key=req.required_key)
    result.status = Status(Code.UnschedulableAndUnresolvable if not any(v.domain.nodes for v in result.verdicts)
                           else Code.Unschedulable, NO_PLACEMENT.format(detail=detail))
    return result


def _choose_in_level(req: TopologyRequest, domains: list[Domain],
                     try_group: Callable[[tuple[str, ...] | None], GroupOutcome],
                     result: TopologyResult) -> Domain | None:
    # Only the domains reached before trying stops have their capacity read: in a
    # 250-rack cluster the first rack tried usually holds the gang.
    ranked = req.view.best_fit_order(domains)
    want = placements_to_find(req.view.node_count(), len(domains))
    feasible: list[tuple[DomainVerdict, GroupOutcome, Capacity]] = []
    for k, i in enumerate(ranked):
        if len(feasible) >= want:
            result.add_untried(domains, ranked[k:])
            break
        v = result.add_verdict(domains[i])
        f = req.view.free(v.domain)
        if f.free_cpu < req.demand_cpu or f.free_memory < req.demand_memory:
            v.reason = TOO_SMALL.format(cpu=req.demand_cpu, mem=req.demand_memory, fcpu=f.free_cpu,
                                        fmem=f.free_memory)
            continue
        outcome = try_group(v.domain.nodes)
        v.tried, v.feasible, v.placed = True, outcome.feasible, outcome.placed
        if outcome.feasible:
            feasible.append((v, outcome, f))
            if req.members and outcome.placed >= req.members:
                want = len(feasible)  # every member placed in the fullest feasible domain: see below
        else:
            v.reason = outcome.reason
    if not feasible:
        return None
    scores = score_placements([(f, o.placed, o.used_cpu, o.used_memory) for _, o, f in feasible],
                              scheduled=req.scheduled)
    for (v, _, _), score in zip(feasible, scores):
        v.score = score
    best = max(range(len(feasible)), key=lambda k: (feasible[k][0].score, -k))  # ties: the one tried first
    chosen = feasible[best][0]
    chosen.chosen = True
    for v, _, _ in feasible:
        if v is not chosen:
            v.reason = WORSE.format(score=v.score, best=chosen.domain.name, best_score=chosen.score)
    return chosen.domain


__all__ = ["ClusterView", "Domain", "DomainVerdict", "GroupOutcome", "LabelledNodes", "TopologyRequest",
           "TopologyResult", "best_fit_order", "choose_placement", "generate_domains", "generate_placements",
           "pinned_domain", "placements_to_find"]
