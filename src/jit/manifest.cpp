#include "jit/manifest.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "common/error.hpp"
#include "expr/expression.hpp"

namespace attnjit {
namespace {

using nlohmann::json;

constexpr int kMaxJsonDepth = 64;

// The deepest nesting of arrays and objects in `text`, from its brackets outside strings. Exact
// for valid JSON, which is all the parser accepts.
std::size_t json_nesting_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

class ManifestParser {
 public:
  explicit ManifestParser(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const std::string& pointer, std::string_view reason) const {
    throw_error(Status::invalid_argument, "{}: {}: {}", source_, pointer.empty() ? "/" : pointer,
                reason);
  }

  Manifest parse(std::string_view text) {
    if (text.size() > kMaxManifestBytes) {
      fail("", fmt::format("the manifest is larger than {} bytes", kMaxManifestBytes));
    }
    // Note: nlohmann::json parses iteratively but copies and compares recursively, so a deeply
    // nested manifest (say 100000 '[' in "example") would overflow the stack after parsing. The
    // depth is checked on the text first: a parser callback could do it, but nlohmann's callback
    // parser rescans an array's elements at the end of each object in it, quadratic in the size
    // of an array of objects.
    if (json_nesting_depth(text) > kMaxJsonDepth) {
      fail("", fmt::format("JSON nests deeper than {} levels", kMaxJsonDepth));
    }
    json root;
    try {
      root = json::parse(text);
    } catch (const json::parse_error& e) {
      const auto [line, column] = line_column(text, e.byte);
      throw_error(Status::invalid_argument, "{}: line {}, column {}: invalid JSON: {}", source_,
                  line, column, e.what());
    }
    if (!root.is_object()) fail("", "a manifest is a JSON object");
    check_keys(root, "", {"version", "dtypes", "head_dims", "paged_kv", "variants", "description"});
    if (!root.contains("version") || root["version"] != 1) {
      fail("/version", "expected \"version\": 1");
    }
    const auto dtypes = root.contains("dtypes") ? parse_dtypes(root["dtypes"], "/dtypes")
                                                : std::vector<DType>{DType::bf16};
    const auto head_dims = root.contains("head_dims")
                               ? parse_head_dims(root["head_dims"], "/head_dims")
                               : std::vector<int>{128};
    const bool paged_kv = bool_field(root, "", "paged_kv", false);
    if (!root.contains("variants") || !root["variants"].is_array() || root["variants"].empty()) {
      fail("/variants", "expected a non-empty array of variants");
    }
    Manifest manifest;
    manifest.source = source_;
    std::set<std::string> names;
    for (std::size_t i = 0; i < root["variants"].size(); ++i) {
      const std::string pointer = "/variants/" + std::to_string(i);
      ManifestVariant variant =
          parse_variant(root["variants"][i], pointer, dtypes, head_dims, paged_kv);
      if (!names.insert(variant.name).second) {
        fail(pointer + "/name", fmt::format("duplicate variant name '{}'", variant.name));
      }
      manifest.variants.push_back(std::move(variant));
    }
    return manifest;
  }

 private:
  static std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t byte) {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return {line, column};
  }

  void check_keys(const json& object, const std::string& pointer,
                  std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, value] : object.items()) {
      bool known = false;
      for (const auto name : allowed) known = known || key == name;
      if (!known) {
        fail(pointer + "/" + key,
             fmt::format("unknown field '{}' (expected one of: {})", key, fmt::join(allowed, ", ")));
      }
    }
  }

  std::string string_field(const json& object, const std::string& pointer, const char* key) const {
    if (!object.contains(key)) return {};
    if (!object[key].is_string()) fail(pointer + "/" + key, "expected a string");
    return object[key].get<std::string>();
  }

  std::vector<DType> parse_dtypes(const json& value, const std::string& pointer) const {
    if (!value.is_array() || value.empty()) fail(pointer, "expected a non-empty array such as [\"bf16\"]");
    std::vector<DType> dtypes;
    for (std::size_t i = 0; i < value.size(); ++i) {
      const std::string item = pointer + "/" + std::to_string(i);
      if (!value[i].is_string()) fail(item, "expected \"bf16\" or \"fp16\"");
      try {
        dtypes.push_back(parse_kernel_dtype(value[i].get<std::string>()));
      } catch (const Error& e) {
        fail(item, e.what());
      }
    }
    return dtypes;
  }

  std::vector<int> parse_head_dims(const json& value, const std::string& pointer) const {
    if (!value.is_array() || value.empty()) fail(pointer, "expected a non-empty array such as [128]");
    std::vector<int> head_dims;
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_number_integer() || value[i].get<long long>() <= 0 ||
          value[i].get<long long>() > 1024) {
        fail(pointer + "/" + std::to_string(i), "expected a positive head dim such as 128");
      }
      head_dims.push_back(value[i].get<int>());
    }
    return head_dims;
  }

  template <typename Decl, typename ParseFn>
  std::vector<Decl> parse_decls(const json& variant, const std::string& pointer, const char* key,
                                ParseFn parse_decl) const {
    std::vector<Decl> decls;
    if (!variant.contains(key)) return decls;
    const json& list = variant[key];
    if (!list.is_array()) fail(pointer + "/" + key, "expected an array of declarations");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string item = pointer + "/" + key + "/" + std::to_string(i);
      if (!list[i].is_string()) fail(item, "expected a declaration string");
      try {
        decls.push_back(parse_decl(list[i].get<std::string>()));
      } catch (const Error& e) {
        fail(item, e.what());
      }
    }
    return decls;
  }

  // An optional boolean field; `fallback` when absent.
  bool bool_field(const json& object, const std::string& pointer, const char* key,
                  bool fallback) const {
    if (!object.contains(key)) return fallback;
    if (!object[key].is_boolean()) fail(pointer + "/" + key, "expected true or false");
    return object[key].get<bool>();
  }

  ManifestVariant parse_variant(const json& value, const std::string& pointer,
                                const std::vector<DType>& default_dtypes,
                                const std::vector<int>& default_head_dims,
                                bool default_paged_kv) const {
    if (!value.is_object()) fail(pointer, "a variant is a JSON object");
    check_keys(value, pointer,
               {"name", "mask", "score", "params", "tensors", "dtypes", "head_dims", "paged_kv",
                "example", "description"});
    ManifestVariant variant;
    variant.paged_kv = bool_field(value, pointer, "paged_kv", default_paged_kv);
    variant.name = string_field(value, pointer, "name");
    if (variant.name.empty()) fail(pointer + "/name", "every variant needs a non-empty name");
    variant.mask = string_field(value, pointer, "mask");
    variant.score = string_field(value, pointer, "score");
    variant.signature.params = parse_decls<expr::ParamDecl>(
        value, pointer, "params", [](const std::string& s) { return expr::parse_param_decl(s); });
    variant.signature.tensors = parse_decls<expr::TensorDecl>(
        value, pointer, "tensors", [](const std::string& s) { return expr::parse_tensor_decl(s); });
    try {
      expr::validate_signature(variant.signature);
    } catch (const Error& e) {
      fail(pointer, e.what());
    }
    variant.dtypes = value.contains("dtypes") ? parse_dtypes(value["dtypes"], pointer + "/dtypes")
                                              : default_dtypes;
    variant.head_dims = value.contains("head_dims")
                            ? parse_head_dims(value["head_dims"], pointer + "/head_dims")
                            : default_head_dims;
    // Check the expressions now, so a bad manifest fails at load with its location.
    const std::pair<expr::ExprKind, const std::string*> expressions[] = {
        {expr::ExprKind::mask, &variant.mask}, {expr::ExprKind::score, &variant.score}};
    for (const auto& [kind, text] : expressions) {
      try {
        expr::parse_expression(kind, *text, variant.signature);
      } catch (const Error& e) {
        fail(pointer + (kind == expr::ExprKind::mask ? "/mask" : "/score"), e.what());
      }
    }
    if (value.contains("example")) {
      if (!value["example"].is_object()) fail(pointer + "/example", "expected an object");
      variant.example = value["example"];
    }
    return variant;
  }

  std::string source_;
};

}  // namespace

DType parse_kernel_dtype(std::string_view text) {
  if (text == "bf16" || text == "bfloat16") return DType::bf16;
  if (text == "fp16" || text == "float16") return DType::fp16;
  throw_error(Status::invalid_argument, "unknown kernel dtype '{}' (choices: bf16, fp16)", text);
}

Manifest parse_manifest(std::string_view json_text, std::string_view source_name) {
  return ManifestParser(source_name).parse(json_text);
}

Manifest load_manifest(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw_error(Status::io, "cannot read manifest {}: {}", path.string(), std::strerror(errno));
  // Note: one byte more than a manifest may have, so an oversized file (or /dev/zero) is refused
  // by parse_manifest without being read whole.
  std::string text(kMaxManifestBytes + 1, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (file.bad()) throw_error(Status::io, "cannot read manifest {}", path.string());
  text.resize(static_cast<std::size_t>(file.gcount()));
  return parse_manifest(text, path.string());
}

const Manifest& standard_manifest() {
  static const Manifest manifest =
      parse_manifest(standard_manifest_json(), "standard.json (embedded)");
  return manifest;
}

std::vector<NamedVariantSpec> expand_manifest(const Manifest& manifest) {
  std::vector<NamedVariantSpec> specs;
  for (const ManifestVariant& variant : manifest.variants) {
    for (const DType dtype : variant.dtypes) {
      for (const int head_dim : variant.head_dims) {
        VariantSpec spec;
        spec.mask = variant.mask;
        spec.score = variant.score;
        spec.signature = variant.signature;
        spec.dtype = dtype;
        spec.head_dim = head_dim;
        spec.name = variant.name;
        specs.push_back({variant.name, std::move(spec), variant.paged_kv});
      }
    }
  }
  return specs;
}

}  // namespace attnjit
