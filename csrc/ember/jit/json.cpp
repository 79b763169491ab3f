// See json.h.
#include "ember/jit/json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ember/core/error.h"

namespace ember::jit {

Json Json::boolean(bool b) {
  Json j;
  j.kind_ = Kind::Bool;
  j.b_ = b;
  return j;
}
Json Json::integer(int64_t i) {
  Json j;
  j.kind_ = Kind::Int;
  j.i_ = i;
  return j;
}
Json Json::number(double d) {
  Json j;
  j.kind_ = Kind::Double;
  j.d_ = d;
  return j;
}
Json Json::string(std::string s) {
  Json j;
  j.kind_ = Kind::String;
  j.s_ = std::move(s);
  return j;
}
Json Json::array() {
  Json j;
  j.kind_ = Kind::Array;
  return j;
}
Json Json::object() {
  Json j;
  j.kind_ = Kind::Object;
  return j;
}

namespace {
[[noreturn]] void wrong(const char* what, const char* want) {
  raise(ErrorKind::Runtime, what, ": expected ", want);
}
}  // namespace

bool Json::as_bool(const char* what) const {
  if (kind_ != Kind::Bool) wrong(what, "a bool");
  return b_;
}
int64_t Json::as_int(const char* what) const {
  if (kind_ != Kind::Int) wrong(what, "an integer");
  return i_;
}
double Json::as_double(const char* what) const {
  if (kind_ == Kind::Int) return double(i_);
  if (kind_ != Kind::Double) wrong(what, "a number");
  return d_;
}
const std::string& Json::as_string(const char* what) const {
  if (kind_ != Kind::String) wrong(what, "a string");
  return s_;
}
const std::vector<Json>& Json::items(const char* what) const {
  if (kind_ != Kind::Array) wrong(what, "a list");
  return a_;
}
const std::vector<std::pair<std::string, Json>>& Json::fields(const char* what) const {
  if (kind_ != Kind::Object) wrong(what, "an object");
  return o_;
}
const Json* Json::find(const std::string& key) const {
  if (kind_ != Kind::Object) return nullptr;
  for (const auto& [k, v] : o_)
    if (k == key) return &v;
  return nullptr;
}
const Json& Json::at(const std::string& key, const char* what) const {
  if (kind_ != Kind::Object) wrong(what, "an object");
  const Json* v = find(key);
  if (!v) raise(ErrorKind::Runtime, what, ": missing field '", key, "'");
  return *v;
}
Json& Json::push(Json v) {
  a_.push_back(std::move(v));
  return a_.back();
}
Json& Json::set(const std::string& key, Json v) {
  for (auto& [k, old] : o_)
    if (k == key) {
      old = std::move(v);
      return old;
    }
  o_.emplace_back(key, std::move(v));
  return o_.back().second;
}

namespace {

void dump_string(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
}

void dump_to(const Json& j, std::string& out) {
  switch (j.kind()) {
    case Json::Kind::Null:
      out += "null";
      return;
    case Json::Kind::Bool:
      out += j.as_bool("") ? "true" : "false";
      return;
    case Json::Kind::Int:
      out += std::to_string(j.as_int(""));
      return;
    case Json::Kind::Double: {
      double d = j.as_double("");
      EMBER_CHECK(std::isfinite(d), "json: a non-finite number cannot be written");
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", d);
      std::string s = buf;
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";
      out += s;
      return;
    }
    case Json::Kind::String:
      dump_string(j.as_string(""), out);
      return;
    case Json::Kind::Array: {
      out += '[';
      bool first = true;
      for (const Json& v : j.items("")) {
        if (!first) out += ',';
        first = false;
        dump_to(v, out);
      }
      out += ']';
      return;
    }
    case Json::Kind::Object: {
      out += '{';
      bool first = true;
      for (const auto& [k, v] : j.fields("")) {
        if (!first) out += ',';
        first = false;
        dump_string(k, out);
        out += ':';
        dump_to(v, out);
      }
      out += '}';
      return;
    }
  }
}

struct Parser {
  const std::string& s;
  size_t i = 0;
  int max_depth;

  [[noreturn]] void fail(const char* what) const {
    raise(ErrorKind::Runtime, "json: ", what, " at offset ", i);
  }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  }
  bool lit(const char* w) {
    size_t n = std::char_traits<char>::length(w);
    if (s.compare(i, n, w) == 0) {
      i += n;
      return true;
    }
    return false;
  }
  void put_utf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }
  uint32_t hex4() {
    if (i + 4 > s.size()) fail("truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s[i++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= uint32_t(c - 'A' + 10);
      else
        fail("bad \\u escape");
    }
    return v;
  }
  std::string str() {
    if (s[i] != '"') fail("expected a string");
    ++i;
    std::string out;
    for (;;) {
      if (i >= s.size()) fail("unterminated string");
      char c = s[i++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i >= s.size()) fail("unterminated escape");
      char e = s[i++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (!lit("\\u")) fail("lone surrogate");
            uint32_t lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(cp, out);
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }
  Json value(int depth) {
    if (depth > max_depth) fail("nesting too deep");
    ws();
    if (i >= s.size()) fail("unexpected end");
    char c = s[i];
    if (c == '{') {
      ++i;
      Json o = Json::object();
      ws();
      if (i < s.size() && s[i] == '}') {
        ++i;
        return o;
      }
      for (;;) {
        ws();
        if (i >= s.size()) fail("unexpected end");
        std::string k = str();
        ws();
        if (i >= s.size() || s[i] != ':') fail("expected ':'");
        ++i;
        if (o.find(k)) fail("duplicate key");
        o.set(k, value(depth + 1));
        ws();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        if (i < s.size() && s[i] == '}') {
          ++i;
          return o;
        }
        fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      ++i;
      Json a = Json::array();
      ws();
      if (i < s.size() && s[i] == ']') {
        ++i;
        return a;
      }
      for (;;) {
        a.push(value(depth + 1));
        ws();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        if (i < s.size() && s[i] == ']') {
          ++i;
          return a;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c == '"') return Json::string(str());
    if (lit("true")) return Json::boolean(true);
    if (lit("false")) return Json::boolean(false);
    if (lit("null")) return Json();
    // number
    size_t b = i;
    if (i < s.size() && s[i] == '-') ++i;
    bool floating = false;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == 'e' ||
                            s[i] == 'E' || s[i] == '+' || s[i] == '-')) {
      if (s[i] == '.' || s[i] == 'e' || s[i] == 'E') floating = true;
      ++i;
    }
    if (i == b || (i == b + 1 && s[b] == '-')) fail("unexpected character");
    std::string tok = s.substr(b, i - b);
    char* end = nullptr;
    if (!floating) {
      errno = 0;
      long long v = std::strtoll(tok.c_str(), &end, 10);
      if (*end != '\0' || errno == ERANGE) fail("bad integer");
      return Json::integer(v);
    }
    double d = std::strtod(tok.c_str(), &end);
    if (*end != '\0' || !std::isfinite(d)) fail("bad number");
    return Json::number(d);
  }
};

}  // namespace

std::string Json::dump() const {
  std::string out;
  dump_to(*this, out);
  return out;
}

Json Json::parse(const std::string& text, int max_depth) {
  Parser p{text, 0, max_depth};
  Json v = p.value(0);
  p.ws();
  if (p.i != text.size()) p.fail("trailing characters");
  return v;
}

}  // namespace ember::jit
