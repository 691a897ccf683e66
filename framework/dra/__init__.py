"""Dynamic Resource Allocation (resource.k8s.io/v1): the structured allocator and device selector CEL."""
