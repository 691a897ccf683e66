"""Preempting extenders over DefaultPreemption's candidates (upstream's
callExtenders): the candidates they keep, in order, then the nodes they add."""
from __future__ import annotations

from typing import Mapping, Sequence

from framework.api.objects import Pod
from framework.extender import Extender, Victims, call_preemption_extenders
from framework.preemption import Candidate


async def narrow_preemption_candidates(extenders: Sequence[Extender], pod: Pod, candidates: list[Candidate],
                                       pods_on_node: Mapping[str, Sequence[Pod]]) -> list[Candidate]:
    """call_preemption_extenders over DefaultPreemption's candidates; the kept nodes
    keep their order, nodes an extender added come after."""
    if not any(e.config.supports_preemption() for e in extenders):
        return candidates
    victims = {c.name: Victims(list(c.victims), c.num_pdb_violations) for c in candidates}
    narrowed = await call_preemption_extenders(extenders, pod, victims, pods_on_node)
    order = [c.name for c in candidates if c.name in narrowed] + [n for n in narrowed if n not in victims]
    return [Candidate(n, narrowed[n].pods, narrowed[n].num_pdb_violations) for n in order]
