"""Every translated upstream case in ../shared/conformance passes through the real code."""
import os
from pathlib import Path

import pytest

from conformance.runner import evaluate, load_cases

# The Makefile passes SHARED through KSCHED_CONFORMANCE_DIR; by default the
# shared/ folder beside this checkout.
SHARED = Path(os.environ.get("KSCHED_CONFORMANCE_DIR") or Path(__file__).resolve().parents[2] / "shared" / "conformance")
NEXT = SHARED / "next"
# Files of incoming/ the runner handles (the Makefile's INCOMING names the same);
# incoming/ as a whole also holds files for work not done yet.
INCOMING = [SHARED / "incoming" / "QueueingHints.json",
            SHARED / "incoming" / "kueue" / "cases.json",  # Kueue's cases (issue 20)
            # DRA (issue 30): device selectors and the structured allocator, every file there
            # (CASE_SCHEMA.md names a public and a held-out allocator file)
            *sorted((SHARED / "incoming" / "dra").glob("*.json"))]
# Cases translated in this repository (conformance/*.json beside the runner).
OWN = Path(__file__).resolve().parents[1] / "conformance"
CASES = (load_cases([str(SHARED)] + ([str(NEXT)] if NEXT.is_dir() else [])
                    + [str(f) for f in INCOMING if f.is_file()]) if SHARED.is_dir() else []) + load_cases([str(OWN)])

# Cases whose expectation was translated from an older upstream commit than the
# behaviour we follow (the newest release, as CASE_SCHEMA.md says). Each is listed
# with the reason; strict xfail makes the suite fail if one starts passing.
_FAKE_LISTER = ("the expected text comes from upstream's test fake lister ({}); kube-scheduler's informer "
                "listers (client-go listers.New with v1.Resource(\"{}\")) say {}, as ksched does and as "
                "Scheduler-scenarios.json expects")
STALE: dict[str, str] = {
    "VolumeZone/filter/TestWithBinding/unbound volume no storage class":
        _FAKE_LISTER.format('storageclasses.storage.k8s.io "Class_0" not found', "storageclass",
                            'storageclass.storage.k8s.io "Class_0" not found'),
    "NodeVolumeLimits/filter/TestCSILimits/ephemeral volume missing":
        _FAKE_LISTER.format('persistentvolumeclaims "abc-xyz" not found', "persistentvolumeclaim",
                            'persistentvolumeclaim "abc-xyz" not found'),
    "NodeVolumeLimits/filter/TestCSILimits/don't skip Filter when the pod has ephemeral volumes":
        _FAKE_LISTER.format('persistentvolumeclaims "abc-xyz" not found', "persistentvolumeclaim",
                            'persistentvolumeclaim "abc-xyz" not found'),
}


def _param(case):
    # A case file may hold a row ksched answers differently on purpose (`held`: the
    # reason, citing the upstream behaviour it does not follow); strict, as STALE.
    reason = STALE.get(case["name"]) or case.get("held")
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case, id=f"{case['_file']}::{case['name']}", marks=marks)


@pytest.mark.skipif(not CASES, reason="../shared/conformance is not beside this checkout")
@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_conformance_case(case):
    actual, error, diffs = evaluate(case)
    assert error is None, error
    assert not diffs, diffs
