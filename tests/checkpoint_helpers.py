"""Helpers for tests that tamper with ember checkpoints."""
import json
import struct

import ember
from ember import serialization


def rechecksummed(data):
    """`data` with header_crc32c recomputed, as a writer of a hostile file would."""
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    crc = ember._C._crc32c(serialization._canonical_header_bytes(header))
    header["__metadata__"]["header_crc32c"] = f"{crc:08x}"
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    return struct.pack("<Q", len(hb)) + hb + data[8 + n:]
