// TFRecord framing, the container of TensorBoard's event files. Each record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data |
//   uint32 masked CRC-32C of data
// (both CRCs little-endian). The CRC is CRC-32C (Castagnoli) from Boost.CRC; the mask rotates
// it right by 15 bits and adds 0xa282ead8, so that a CRC of data which itself holds CRCs does
// not look like a CRC.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ag::tensorboard {

uint32_t crc32c(std::string_view data);
uint32_t mask_crc(uint32_t crc);
uint32_t masked_crc32c(std::string_view data);

// The bytes of one record holding data.
std::string frame_record(std::string_view data);

// The records of a TFRecord file, each checked against both of its CRCs. Throws
// std::runtime_error naming the file and the record's offset when the file cannot be read, a
// record is cut short, or a CRC does not match.
std::vector<std::string> read_records(const std::string& path);

}  // namespace ag::tensorboard
