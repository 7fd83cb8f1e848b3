// Negative values for unsigned options. Boost.Program_options reads "--batch-size -5" into a
// uint32_t as 4294967291 (lexical_cast wraps), so a typo became an absurd size: "--batch-size -5"
// said "max_batch 4294967291 is too large", "read --passes -1" ran 4294967295 passes. Both
// programs (ringfeed and ringfeed-convert) check what Boost parsed before storing it.
//
// Header-only, so ringfeed-convert (tools/convert) uses it without linking src/.
// Thread safety: a function of its arguments.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace rf {

// The message for the first option of `parsed` whose value in `options` is an unsigned integer
// and whose text is negative ("--batch-size must not be negative, got -5"), or nullopt.
inline std::optional<std::string> NegativeUnsignedFlag(
    const boost::program_options::parsed_options& parsed,
    const boost::program_options::options_description& options) {
  namespace po = boost::program_options;
  const auto is_unsigned = [](const po::value_semantic* s) {
    return dynamic_cast<const po::typed_value<unsigned char>*>(s) != nullptr ||
           dynamic_cast<const po::typed_value<unsigned short>*>(s) != nullptr ||
           dynamic_cast<const po::typed_value<unsigned int>*>(s) != nullptr ||
           dynamic_cast<const po::typed_value<unsigned long>*>(s) != nullptr ||
           dynamic_cast<const po::typed_value<unsigned long long>*>(s) != nullptr;
  };
  for (const po::option& o : parsed.options) {
    if (o.unregistered || o.string_key.empty()) continue;
    const po::option_description* d = options.find_nothrow(o.string_key, false);
    if (d == nullptr || !is_unsigned(d->semantic().get())) continue;
    for (const std::string& v : o.value) {
      const size_t first = v.find_first_not_of(" \t");
      if (first != std::string::npos && v[first] == '-')
        return "--" + o.string_key + " must not be negative, got " + v;
    }
  }
  return std::nullopt;
}

}  // namespace rf
