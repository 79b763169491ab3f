// Saving and loading graphs and modules as one safe file. See Note [Archive format].
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "ember/jit/object.h"

namespace ember::jit {

// Note [Archive format]
// An archive is one file in ember's safe format (python/ember/serialization.py, Note [File
// format]): safetensors' layout, so any safetensors reader sees its tensors.
//
//   8 bytes  N, the header length (little-endian)
//   N bytes  a JSON object: "__metadata__" (string values only) and one entry per tensor
//            {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}
//   rest     the tensors' bytes, contiguous, little-endian, in offset order
//
// __metadata__ holds "format": "ember.jit", "format_version", "program" (a JSON text: the
// module tree, each class's attributes and methods as graphs, the constants, and the list
// of ops the graphs call with each op's schema version) and "checksum" (CRC-32C of the
// program text and of the data section). Nothing in the file is code and nothing is
// pickled. load_archive validates everything before building anything: the header's
// bounds, dtypes and offsets, the checksum, that every op is registered with a version at
// least the archive's (an unknown op or a newer version is an error naming it), that each
// graph is well formed (lint) and that the interpreter can run every node (compile).
// Only then are tensors allocated and the module returned.

struct Archive {
  std::shared_ptr<Object> module;      // a module archive
  std::shared_ptr<Function> function;  // a function archive
  std::map<std::string, std::string> extra_files;
};

void save_module(const std::shared_ptr<Object>& module, const std::string& path,
                 const std::map<std::string, std::string>& extra_files = {});
void save_function(const Function& fn, const std::string& path,
                   const std::map<std::string, std::string>& extra_files = {});
/// Reads and validates an archive; tensors go to `device` when given (and device constants
/// in the graphs that named the saved device follow them).
Archive load_archive(const std::string& path, std::optional<Device> device = std::nullopt);
/// The archive as bytes / from bytes (what save and load write and read).
std::string serialize_module(const std::shared_ptr<Object>& module,
                             const std::map<std::string, std::string>& extra_files = {});
Archive deserialize(const std::string& bytes, std::optional<Device> device,
                    const std::string& name);
/// The "format" of an ember/safetensors file's metadata ("ember.jit", "ember", "" when
/// none); raises when the file is not in that layout at all.
std::string file_format(const std::string& path);

/// The format's version this build writes and the newest it reads.
constexpr int kArchiveFormatVersion = 1;

}  // namespace ember::jit
