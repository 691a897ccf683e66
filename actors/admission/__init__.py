"""The admission actor: Kueue's admission layer in front of the scheduling queue."""
from actors.admission.actor import AdmissionActor, AdmissionConfig

__all__ = ["AdmissionActor", "AdmissionConfig"]
