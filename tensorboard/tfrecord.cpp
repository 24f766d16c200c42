#include "tensorboard/tfrecord.h"

#include <boost/crc.hpp>
#include <boost/endian/conversion.hpp>
#include <stdexcept>

#include "base/input_file.h"
#include "base/memory_limit.h"

namespace ag::tensorboard {

uint32_t crc32c(std::string_view data) {
  // Castagnoli's polynomial, all-ones initial value and final XOR, reflected in and out.
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

uint32_t mask_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

uint32_t masked_crc32c(std::string_view data) { return mask_crc(crc32c(data)); }

std::string frame_record(std::string_view data) {
  unsigned char head[12];
  boost::endian::store_little_u64(head, static_cast<uint64_t>(data.size()));
  boost::endian::store_little_u32(head + 8, masked_crc32c(std::string_view(reinterpret_cast<const char*>(head), 8)));
  unsigned char tail[4];
  boost::endian::store_little_u32(tail, masked_crc32c(data));
  std::string rec;
  rec.reserve(sizeof head + data.size() + sizeof tail);
  rec.append(reinterpret_cast<const char*>(head), sizeof head);
  rec.append(data);
  rec.append(reinterpret_cast<const char*>(tail), sizeof tail);
  return rec;
}

std::vector<std::string> read_records(const std::string& path) {
  const MemoryLimit limit = memory_limit();
  const std::string bytes = read_input_file({path, path, limit.bytes, "what this process may use: " + limit.where, ""});
  std::vector<std::string> records;
  size_t at = 0;
  auto fail = [&](const std::string& what) {
    throw std::runtime_error(path + ": record at byte " + std::to_string(at) + ": " + what);
  };
  auto u32 = [&](size_t o) { return boost::endian::load_little_u32(reinterpret_cast<const unsigned char*>(bytes.data() + o)); };
  while (at < bytes.size()) {
    if (bytes.size() - at < 12) fail("cut short in its header");
    const uint64_t len = boost::endian::load_little_u64(reinterpret_cast<const unsigned char*>(bytes.data() + at));
    if (u32(at + 8) != masked_crc32c(std::string_view(bytes).substr(at, 8))) fail("the CRC of its length does not match");
    if (len > bytes.size() - at - 12 || bytes.size() - at - 12 - len < 4) fail("cut short in its data");
    const std::string_view data = std::string_view(bytes).substr(at + 12, len);
    if (u32(at + 12 + len) != masked_crc32c(data)) fail("the CRC of its data does not match");
    records.emplace_back(data);
    at += 12 + len + 4;
  }
  return records;
}

}  // namespace ag::tensorboard
