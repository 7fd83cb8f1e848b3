// IDX input (the MNIST family): an images file of N x H x W (C = 1) or N x C x H x W elements
// and an optional labels file of N integers, each plain or gzipped. IDX stores every multi-byte
// value big-endian; the source hands out host order.
//
//   [00 00][type code][dims count][dims: uint32 big-endian each][data]
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "tools/convert/elem_type.h"
#include "tools/convert/sample_source.h"

namespace rf::convert {

// IDX type codes: 08 uint8, 09 int8, 0B int16, 0C int32, 0D float32, 0E float64.
std::optional<Elem> ElemFromIdxCode(uint8_t code);
std::optional<uint8_t> IdxCodeOf(Elem e);

// labels_path may be empty: every label is then 0.
Result<std::unique_ptr<SampleSource>> OpenIdxSource(const std::string& images_path,
                                                    const std::string& labels_path);

}  // namespace rf::convert
