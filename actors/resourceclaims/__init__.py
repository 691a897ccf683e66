"""The resourceclaim controller (upstream's pkg/controller/resourceclaim), run in the daemon."""
from actors.resourceclaims.controller import ResourceClaimController

__all__ = ["ResourceClaimController"]
