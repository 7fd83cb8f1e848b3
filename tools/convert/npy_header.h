// The NumPy .npy header: parsing (format versions 1.0, 2.0 and 3.0) and writing exactly the
// bytes numpy writes, so a numpy-written file exported back is byte-identical.
//
//   "\x93NUMPY" major minor, header length (uint16 LE in 1.0, uint32 LE in 2.0/3.0), then a
//   Python dict literal such as {'descr': '|u1', 'fortran_order': False, 'shape': (3, 4), }
//   padded with spaces and ended by '\n' so the data starts at a multiple of 64.
//
// numpy also leaves room after the dict for the first axis to grow to 21 digits; FormatNpyHeader
// does the same.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/file.h"
#include "tools/convert/elem_type.h"

namespace rf::convert {

struct NpyHeader {
  std::string descr;  // as written, e.g. "<f4"
  Elem elem = Elem::kU8;
  bool big_endian = false;
  std::vector<uint64_t> shape;
  uint64_t data_offset = 0;   // where the array's bytes start
  uint64_t shape_offset = 0;  // where the shape tuple is written, for error messages

  uint64_t Elems() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return n;
  }
  std::string ShapeText() const;  // "(60000, 28, 28)"
};

// Reads and checks the header of an .npy file of file_size bytes, including that the data size
// agrees with the shape. Errors name the file and the byte they apply to.
Result<NpyHeader> ReadNpyHeader(const File& file, uint64_t file_size);

// The exact header numpy writes for a C-order array of this descr and shape.
std::string FormatNpyHeader(const std::string& descr, const std::vector<uint64_t>& shape);
// The little-endian descr of an element type ("|u1", "<i8", "<f4"); none for bfloat16.
std::optional<std::string> NpyDescrOf(Elem e);

}  // namespace rf::convert
