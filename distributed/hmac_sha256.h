// HMAC-SHA256 (RFC 2104 over FIPS 180-4's SHA-256), for the heartbeats' authentication
// (distributed/heartbeat.h): a datagram is accepted only when it carries the tag of the job's secret,
// which rank 0 draws and sends to the others over MPI and which never travels in a datagram.
// Small and self-contained (no crypto library is linked); checked against RFC 4231's vectors.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace ag::distributed {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(const void* data, size_t bytes);
Sha256Digest hmac_sha256(const void* key, size_t key_bytes, const void* data, size_t bytes);

// a == b without an early exit (the time taken does not tell how many leading bytes agree).
bool digests_equal(const uint8_t* a, const uint8_t* b, size_t bytes);

}  // namespace ag::distributed
