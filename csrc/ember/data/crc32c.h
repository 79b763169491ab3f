// CRC-32C (Castagnoli): TFRecord/TensorBoard event files frame their records with it, and
// ember.save checksums a checkpoint's header and tensor data with it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ember::data {

/// CRC-32C of `n` bytes (SSE4.2's crc32 instruction when the CPU has it, else a table).
uint32_t crc32c(const void* data, size_t n);
/// The CRC-32C of (bytes whose CRC-32C is `crc`) followed by these `n` bytes, so a long
/// stream is checksummed in pieces: crc32c_extend(crc32c(a), b) == crc32c(a + b).
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);
/// TFRecord's masked form: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(const void* data, size_t n);

}  // namespace ember::data
