"""The PodGroup scheduling cycle's own inputs and rules (issue 29), no I/O."""
