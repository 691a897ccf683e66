"""An out-of-tree plugin loaded by its import path in config tests."""
from framework.interface import Code, Status


class AlwaysNo:
    name = "AlwaysNo"

    @classmethod
    def new(cls, args, handle):
        return cls()

    def filter(self, state, pod, node_info):
        return Status(Code.Unschedulable, "never")
