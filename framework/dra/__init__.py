"""Dynamic Resource Allocation (resource.k8s.io/v1): the CEL environment for device selectors."""
