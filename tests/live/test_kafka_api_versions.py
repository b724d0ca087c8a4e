"""`kgroup serve` advertises, for every API it serves, the versions a real Kafka 4.4 broker does.

Every group API matches exactly. The deliberate differences are the data-plane APIs, which serve
implements only as far as kgroup's clients and the tests' real clients need (they negotiate down),
and kgroup's experimental Connect APIs, which Kafka has not; each is listed here with its reason and
in docs/conformance.md.
"""

from __future__ import annotations

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from kgroup.server.handlers.apis import build_api_table
from kgroup.server.harness import ThreadedBroker, raw_request

GROUP_APIS = {8, 9, 10, 11, 12, 13, 14, 15, 16, 42, 47, 68, 69}

# api key -> why serve's range differs from Kafka 4.4's
DELIBERATE = {
    0: "Produce: serve takes v3-v11; v12 (KIP-890's transactional semantics) and v13 (topic ids, "
       "KIP-516) are not implemented, and Kafka 4.4 lists v0-v2 as well",
    1: "Fetch: serve answers v4-v12; v13+ (topic ids, KIP-516) and later additions are not implemented",
    2: "ListOffsets: serve answers v1-v7; v8-v11 (tiered-storage offsets: KIP-405, KIP-1005, "
       "KIP-1075, KIP-1023) are not implemented",
    3: "Metadata: serve answers v0-v12; v13 (REBOOTSTRAP_REQUIRED, KIP-1102) is not implemented",
    18: "ApiVersions: serve answers v0-v4; v5 (cluster and node id checks, KIP-1242) is not implemented",
    22: "InitProducerId: serve answers v0-v4 for idempotent producers; v5 (TRANSACTION_ABORTABLE, "
        "KIP-890) is not implemented",
    1000: "ConnectGroupHeartbeat: kgroup's experimental Connect API, not in Kafka",
    1001: "ConnectGroupPrepareAssignment: kgroup's experimental Connect API, not in Kafka",
    1002: "ConnectGroupInstallAssignment: kgroup's experimental Connect API, not in Kafka",
    1003: "ConnectGroupSetConnectors: kgroup's experimental Connect API, not in Kafka",
    1004: "ConnectGroupDescribe: kgroup's experimental Connect API, not in Kafka",
}


def _versions(address: str) -> dict:
    host, port = address.rsplit(":", 1)
    raw = raw_request((host, int(port)), ApiVersionsRequest(
        version=3, client_software_name="kgroup-test", client_software_version="1"))
    response = ApiVersionsResponse.decode(raw, version=3, header=True)
    assert response.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


def test_serve_advertises_kafka_44s_versions_for_every_api_it_serves(kafka, tmp_path):
    real = _versions(kafka.bootstrap)
    serve = ThreadedBroker(tmp_path / "logs", topics=[("t", 1)])
    try:
        ours = _versions(serve.bootstrap)
    finally:
        serve.stop()
    assert set(ours) == set(build_api_table())
    assert GROUP_APIS <= set(ours)
    differences = {key: (ours[key], real.get(key)) for key in ours if ours[key] != real.get(key)}
    # every difference is a deliberate one, and every deliberate one is still a difference
    assert set(differences) == set(DELIBERATE), differences
    assert not GROUP_APIS & set(DELIBERATE)
    for key in GROUP_APIS:
        assert ours[key] == real[key], (key, ours[key], real[key])
