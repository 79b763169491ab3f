// A small JSON value, writer and validating parser for the archive's metadata
// (jit/archive.cpp). The parser bounds nesting and string sizes and rejects anything
// malformed with an ember::Error naming the position; it never allocates more than the
// text it reads.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ember::jit {

class Json {
 public:
  enum class Kind : uint8_t { Null, Bool, Int, Double, String, Array, Object };

  Json() = default;
  static Json null() { return Json(); }
  static Json boolean(bool b);
  static Json integer(int64_t i);
  static Json number(double d);
  static Json string(std::string s);
  static Json array();
  static Json object();

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_int() const { return kind_ == Kind::Int; }

  // Accessors raise ember::Error("<what>: expected ...") on the wrong kind.
  bool as_bool(const char* what) const;
  int64_t as_int(const char* what) const;
  double as_double(const char* what) const;  // ints convert
  const std::string& as_string(const char* what) const;
  const std::vector<Json>& items(const char* what) const;
  const std::vector<std::pair<std::string, Json>>& fields(const char* what) const;
  /// The member `key` of an object; raises when absent.
  const Json& at(const std::string& key, const char* what) const;
  const Json* find(const std::string& key) const;

  Json& push(Json v);                         // arrays
  Json& set(const std::string& key, Json v);  // objects (appends; keys unique by use)

  std::string dump() const;
  /// Parses `text`; raises ember::Error on malformed input or nesting deeper than max_depth.
  static Json parse(const std::string& text, int max_depth = 256);

 private:
  Kind kind_ = Kind::Null;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<Json> a_;
  std::vector<std::pair<std::string, Json>> o_;
};

}  // namespace ember::jit
