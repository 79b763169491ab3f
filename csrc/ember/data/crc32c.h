// CRC-32C (Castagnoli), as TFRecord/TensorBoard event files frame their records.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ember::data {

/// CRC-32C of `n` bytes (SSE4.2's crc32 instruction when compiled for it, else a table).
uint32_t crc32c(const void* data, size_t n);
/// TFRecord's masked form: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(const void* data, size_t n);

}  // namespace ember::data
