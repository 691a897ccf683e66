"""The real-daemon fixtures of the end-to-end tests, for the validation tests too."""
from tests.e2e.conftest import daemon_factory  # noqa: F401 (a fixture)
