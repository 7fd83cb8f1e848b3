// The --augment option (`ringfeed train --augment SPEC`, the Python Loader's augment="SPEC"): one
// parser, so both accept and refuse the same texts with the same messages.
//
//   SPEC := ITEM (',' ITEM)*      each transform at most once, in any order; "" or "none": none
//   ITEM := 'crop:' P             random crop with zero padding of P pixels, 1 <= P <= 1024,
//                                 P in decimal digits only ("crop:0x4", "crop:+4" are refused)
//         | 'flip'                random horizontal flip, probability 1/2
//         | 'erase:' p            random erasing with probability p, 0 < p <= 1
//
// What the transforms do is core/augment.h's.
#pragma once

#include <string>
#include <string_view>

#include "core/augment.h"
#include "core/status.h"

namespace rf {

// The largest crop padding SPEC may ask for, and AugmentParams::erase_threshold for p = 1: the
// bounds a decoded checkpoint's augmentation is held to as well (model/checkpoint.h).
inline constexpr uint32_t kMaxAugmentCropPad = 1024;
inline constexpr uint64_t kAugmentEraseAlways = uint64_t{1} << 32;

// The parameters SPEC asks for, or a Usage error naming --augment, the item and what is wrong.
Result<AugmentParams> ParseAugmentSpec(std::string_view spec);

// The canonical text of `p` ("crop:4,flip,erase:0.5"; "none" where nothing is on), which
// ParseAugmentSpec reads back to the same parameters.
std::string AugmentSpecText(const AugmentParams& p);

}  // namespace rf
