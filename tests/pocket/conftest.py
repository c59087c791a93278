from tests.cassettes.conftest import no_network  # noqa: F401  (the socket guard fixture)
