// Internal: JSON text to a document without exceptions, for every parser in
// the library. nlohmann's no-throw parse makes the document; when the text is
// not JSON, a second pass (SAX, which reports errors by call rather than by
// throw) says where it stops being JSON.
#ifndef GRID_LIB_UTIL_JSON_H_
#define GRID_LIB_UTIL_JSON_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace grid::util {

// Accepts everything and keeps the first parse error's message.
template <typename Json>
class JsonErrorFinder final : public nlohmann::json_sax<Json> {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    message = e.what();
    return false;
  }

  std::string message = "not JSON";
};

// `what` names the document in the error ("topology JSON", ...).
template <typename Json>
absl::StatusOr<Json> ParseJson(std::string_view text, std::string_view what) {
  Json doc = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded()) return doc;
  JsonErrorFinder<Json> finder;
  Json::sax_parse(text.begin(), text.end(), &finder);
  return absl::InvalidArgumentError(
      absl::StrCat(absl::string_view(what.data(), what.size()), ": ", finder.message));
}

}  // namespace grid::util

#endif  // GRID_LIB_UTIL_JSON_H_
