"""ImageLocality: favours nodes that already hold the pod's container images
(upstream imagelocality/image_locality.go).

Each image found on the node counts its size scaled by the share of nodes that
have it (spreading the credit so pods do not heap onto one node). The sum, over
init and regular containers, is clamped to [23Mi, 1000Mi x containers] and mapped
linearly onto 0..100 with Go integer division.
"""
from __future__ import annotations

from typing import Any, Hashable, Sequence

import numpy as np

from framework.api.objects import Pod
from framework.cache import ImageStateSummary, NodeInfo
from framework.interface import MAX_NODE_SCORE, CycleState, Handle, SignPurpose, Status
from framework.plugins.helper import flagged_positions, go_div, zeros_column
from framework.plugins.helper.signing import ALL_SIGNED

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Add ":latest" when the reference has no tag after its last '/'."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def scaled_image_score(state: ImageStateSummary, total_num_nodes: int) -> int:
    spread = float(state.num_nodes) / float(total_num_nodes)
    return int(float(state.size) * spread)


def sum_image_scores(node_info: NodeInfo, pod: Pod, total_num_nodes: int) -> int:
    states = node_info.image_states
    total = 0
    for container in (*pod.init_containers, *pod.containers):
        state = states.get(normalized_image_name(container.image))
        if state is not None:
            total += scaled_image_score(state, total_num_nodes)
    return total


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    # Without containers the divisor is negative and the numerator 0, as in Go.
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


class ImageLocality:
    name = "ImageLocality"

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """Reads nothing of the pod beyond the common signature (SignPlugin)."""
        return ALL_SIGNED

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "ImageLocality":
        return cls(handle)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        total_num_nodes = self.handle.snapshot().num_nodes()
        sum_scores = sum_image_scores(node_info, pod, total_num_nodes)
        return calculate_priority(sum_scores, len(pod.init_containers) + len(pod.containers)), None

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[Sequence[int], Status | None]:
        """score() with the pod's image names normalized once and the priority of
        each distinct sum computed once; on a ColumnarNodes only the nodes that report
        images are looked at (the others sum to 0)."""
        num_containers = len(pod.init_containers) + len(pod.containers)
        positions = flagged_positions(nodes, "has_images")
        if positions is not None and not positions.size:  # no node of these reports images
            none = calculate_priority(0, num_containers)
            # All alike, as one read-only column (the runtime reads its one value, no scan).
            return (zeros_column(len(nodes)) if none == 0 else
                    np.full(len(nodes), none, dtype=np.int64)), None
        total_num_nodes = self.handle.snapshot().num_nodes()
        names = [normalized_image_name(c.image) for c in (*pod.init_containers, *pod.containers)]
        priority: dict[int, int] = {}

        def node_priority(ni: NodeInfo) -> int:
            states = ni.image_states
            total = 0
            if states:
                for name in names:
                    st = states.get(name)
                    if st is not None:
                        total += scaled_image_score(st, total_num_nodes)
            p = priority.get(total)
            if p is None:
                p = priority[total] = calculate_priority(total, num_containers)
            return p

        if positions is None:
            return [node_priority(ni) for ni in nodes], None
        # An int64 column, as the runtime keeps scores: no list of the window to convert.
        out = np.full(len(nodes), calculate_priority(0, num_containers), dtype=np.int64)
        for i in positions.tolist():
            out[i] = node_priority(nodes[i])
        return out, None

    def score_extensions(self) -> None:
        return None


PLUGINS = [ImageLocality]
