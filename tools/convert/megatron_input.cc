// Megatron-LM's indexed dataset as a DocumentSource (megatron.h), and its dtype codes and origin.
#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "io/file.h"
#include "tools/convert/input_file.h"
#include "tools/convert/megatron.h"

namespace rf::convert {
namespace {

constexpr uint64_t kEntriesAtOnce = 1 << 16;  // entries of an .idx array read at a time

// Reads an array of little-endian T in the .idx front to back, kEntriesAtOnce at a time: memory
// stays a window of the array whatever N.
template <typename T>
class ArrayCursor {
 public:
  ArrayCursor(const File* file, uint64_t offset, uint64_t count)
      : file_(file), offset_(offset), count_(count) {}
  // Entry i (below count), which must lie at or after the window's start.
  Result<T> Get(uint64_t i) {
    if (i < begin_ || i >= begin_ + window_.size()) {
      begin_ = i;
      window_.resize(std::min(kEntriesAtOnce, count_ - i));
      RF_RETURN_IF_ERROR(file_->ReadAt(window_.data(), window_.size() * sizeof(T), ByteOf(begin_)));
    }
    return window_[i - begin_];
  }
  uint64_t ByteOf(uint64_t i) const { return offset_ + i * sizeof(T); }

 private:
  const File* file_;
  uint64_t offset_, count_;
  uint64_t begin_ = 0;
  std::vector<T> window_;
};

Status Bad(const std::string& path, uint64_t offset, const std::string& what) {
  return std::move(Status::Corruption(path, what).WithOffset(offset));
}

const char* MegatronName(Elem e) {
  switch (e) {
    case Elem::kU8:
      return "uint8";
    case Elem::kI8:
      return "int8";
    case Elem::kI16:
      return "int16";
    case Elem::kI32:
      return "int32";
    case Elem::kI64:
      return "int64";
    default:
      return "uint16";
  }
}

class MegatronSource final : public DocumentSource {
 public:
  MegatronSource(File idx, File bin, Elem elem, uint64_t sequences, uint64_t documents,
                 uint64_t idx_bytes, uint64_t bin_bytes, bool in_labels)
      : idx_(std::move(idx)),
        bin_(std::move(bin)),
        elem_(elem),
        n_(sequences),
        d_(documents),
        idx_bytes_(idx_bytes),
        bin_bytes_(bin_bytes),
        in_labels_(in_labels),
        sizes_(&idx_, kMegatronHeaderBytes, n_),
        docs_(&idx_, kMegatronHeaderBytes + 12 * n_, d_ + 1) {}

  Elem elem() const override { return elem_; }

  Result<DocumentBlock> Next(uint64_t block_bytes, uint64_t max_ids) override {
    DocumentBlock b;
    b.first = next_;
    const size_t item = ElemSize(elem_);
    offsets_.assign(1, 0);
    labels_.clear();
    while (next_ < n_ && (offsets_.size() == 1 || offsets_.back() * item < block_bytes)) {
      RF_ASSIGN_OR_RETURN(const int32_t size, sizes_.Get(next_));  // >= 1: checked at open
      if (static_cast<uint64_t>(size) > max_ids) {
        return TooLongDocument({bin_.path(), bin_offset_ + offsets_.back() * item, ""}, next_,
                               static_cast<uint64_t>(size), max_ids);
      }
      offsets_.push_back(offsets_.back() + static_cast<uint64_t>(size));
      if (in_labels_) {
        // The document number: the last k with idx[k] <= the sequence (idx checked at open).
        for (;;) {
          RF_ASSIGN_OR_RETURN(const int64_t next_start, docs_.Get(doc_ + 1));
          if (static_cast<uint64_t>(next_start) > next_) break;
          ++doc_;
        }
        labels_.push_back(static_cast<int64_t>(doc_));
      }
      ++next_;
    }
    b.count = offsets_.size() - 1;
    if (b.count == 0) return b;
    ids_.resize(offsets_.back() * item);
    RF_RETURN_IF_ERROR(bin_.ReadAt(ids_.data(), ids_.size(), bin_offset_));
    block_start_ = bin_offset_;
    bin_offset_ += ids_.size();
    b.ids = ids_.data();
    b.offsets = offsets_.data();
    b.labels = in_labels_ ? labels_.data() : nullptr;
    b.input_bytes_done = idx_bytes_ + bin_offset_;
    return b;
  }

  Status Rewind() override {
    next_ = 0;
    doc_ = 0;
    bin_offset_ = 0;
    return Status::Ok();
  }

  DocumentPosition IdAt(uint64_t doc, uint64_t j) const override {
    const uint64_t first = next_ - (offsets_.size() - 1);
    return {bin_.path(), block_start_ + (offsets_[doc - first] + j) * ElemSize(elem_), ""};
  }

  std::vector<std::string> input_paths() const override { return {idx_.path(), bin_.path()}; }
  uint64_t input_bytes() const override { return idx_bytes_ + bin_bytes_; }

  std::optional<DocumentLabels> labels() const override {
    if (!in_labels_) return std::nullopt;
    DocumentLabels l;
    l.classes = static_cast<uint32_t>(d_);
    l.dtype = d_ <= format::MaxClassesFor(DType::kUInt8)    ? DType::kUInt8
              : d_ <= format::MaxClassesFor(DType::kUInt16) ? DType::kUInt16
                                                            : DType::kInt32;
    return l;
  }

  std::string origin() const override { return MegatronOriginText({elem_, in_labels_}); }

 private:
  File idx_, bin_;
  Elem elem_;
  uint64_t n_, d_;  // sequences, documents
  uint64_t idx_bytes_, bin_bytes_;
  bool in_labels_;
  ArrayCursor<int32_t> sizes_;
  ArrayCursor<int64_t> docs_;
  uint64_t next_ = 0;         // the next sequence
  uint64_t doc_ = 0;          // the document of the last sequence handed out
  uint64_t bin_offset_ = 0;   // where the next sequence starts in .bin
  uint64_t block_start_ = 0;  // where the last block's first sequence starts
  std::vector<uint8_t> ids_;
  std::vector<uint64_t> offsets_;
  std::vector<int64_t> labels_;
};

// The sizes and pointers against each other and the .bin (megatron.h's rules).
Status CheckSequences(const File& idx, uint64_t n, size_t item, uint64_t bin_bytes,
                      const std::string& bin_path) {
  ArrayCursor<int32_t> sizes(&idx, kMegatronHeaderBytes, n);
  ArrayCursor<int64_t> pointers(&idx, kMegatronHeaderBytes + 4 * n, n);
  uint64_t end = 0;  // where the sequences so far end in .bin
  for (uint64_t i = 0; i < n; ++i) {
    RF_ASSIGN_OR_RETURN(const int32_t size, sizes.Get(i));
    RF_ASSIGN_OR_RETURN(const int64_t pointer, pointers.Get(i));
    const std::string seq = "sequence " + std::to_string(i);
    if (size <= 0) {
      return Bad(idx.path(), sizes.ByteOf(i),
                 seq + " has size " + std::to_string(size) +
                     (size == 0 ? " (a record holds one id at least: an empty sequence is refused, "
                                  "not skipped, so that an export gives the input back)"
                                : ""));
    }
    if (pointer != static_cast<int64_t>(end)) {
      std::string what =
          seq + "'s pointer is " + std::to_string(pointer) + ", not " + std::to_string(end) + ": ";
      if (i == 0) {
        what += "the first sequence starts the .bin";
      } else if (pointer < static_cast<int64_t>(end)) {
        what +=
            "it overlaps the sequence before it, or runs out of order (sequences lie back "
            "to back in order)";
      } else {
        what += "it leaves " + std::to_string(pointer - static_cast<int64_t>(end)) +
                " bytes after the sequence before it that no sequence holds";
      }
      return Bad(idx.path(), pointers.ByteOf(i), what);
    }
    const uint64_t bytes = static_cast<uint64_t>(size) * item;
    if (bytes > bin_bytes - end) {
      return Bad(idx.path(), sizes.ByteOf(i),
                 seq + " of " + std::to_string(size) + " ids (" + std::to_string(bytes) +
                     " bytes from byte " + std::to_string(end) + ") runs past the end of " +
                     bin_path + " (" + std::to_string(bin_bytes) + " bytes)");
    }
    end += bytes;
  }
  if (end != bin_bytes) {
    return Bad(bin_path, end,
               "the .idx's " + std::to_string(n) + " sequences end here, but the file holds " +
                   std::to_string(bin_bytes) +
                   " bytes (sizes times the dtype's size must add up to the .bin's size)");
  }
  return Status::Ok();
}

// The document indices: 0 first, N last, never decreasing. *identity: they are 0, 1, ..., N.
Status CheckDocuments(const File& idx, uint64_t n, uint64_t count, bool* identity) {
  ArrayCursor<int64_t> docs(&idx, kMegatronHeaderBytes + 12 * n, count);
  *identity = count == n + 1;
  int64_t prev = 0;
  for (uint64_t k = 0; k < count; ++k) {
    RF_ASSIGN_OR_RETURN(const int64_t v, docs.Get(k));
    const std::string at = "document index " + std::to_string(k) + " is " + std::to_string(v);
    if (k == 0 && v != 0) return Bad(idx.path(), docs.ByteOf(k), at + ", not 0 (the first is 0)");
    if (v < prev)
      return Bad(idx.path(), docs.ByteOf(k),
                 at + ", below the one before it (" + std::to_string(prev) + ")");
    if (static_cast<uint64_t>(v) > n || (k + 1 == count && static_cast<uint64_t>(v) != n)) {
      return Bad(idx.path(), docs.ByteOf(k),
                 at + (k + 1 == count ? ", the last" : "") + "; the last is the sequence count, " +
                     std::to_string(n));
    }
    if (static_cast<uint64_t>(v) != k) *identity = false;
    prev = v;
  }
  return Status::Ok();
}

std::string WithoutExtension(const std::string& prefix) {
  for (const char* ext : {".idx", ".bin"}) {
    const std::string e = ext;
    if (prefix.size() > e.size() && prefix.ends_with(e) &&
        FileKindName(prefix + ".idx") == nullptr) {
      return prefix.substr(0, prefix.size() - e.size());
    }
  }
  return prefix;
}

}  // namespace

std::optional<Elem> ElemFromMegatronCode(uint8_t code) {
  switch (code) {
    case 1:
      return Elem::kU8;
    case 2:
      return Elem::kI8;
    case 3:
      return Elem::kI16;
    case 4:
      return Elem::kI32;
    case 5:
      return Elem::kI64;
    case 8:
      return Elem::kU16;
    default:
      return std::nullopt;
  }
}

std::optional<uint8_t> MegatronCodeOf(Elem e) {
  for (uint8_t code = 1; code <= 8; ++code) {
    if (ElemFromMegatronCode(code) == e) return code;
  }
  return std::nullopt;
}

std::string MegatronOriginText(const MegatronOrigin& o) {
  return std::string("megatron;dtype=") + MegatronName(o.elem) +
         (o.documents_in_labels ? ";documents=labels" : ";documents=sequences");
}

Result<std::optional<MegatronOrigin>> ParseMegatronOrigin(const format::Header& h,
                                                          const std::string& path) {
  if (!h.origin.starts_with("megatron")) return std::optional<MegatronOrigin>();
  for (uint8_t code = 1; code <= 8; ++code) {
    const std::optional<Elem> e = ElemFromMegatronCode(code);
    if (!e) continue;
    for (bool labels : {false, true}) {
      if (h.origin == MegatronOriginText({*e, labels}))
        return std::optional<MegatronOrigin>(MegatronOrigin{*e, labels});
    }
  }
  return Bad(path, 736,
             "origin '" + h.origin +
                 "' names Megatron but not as ringfeed-convert writes it "
                 "(megatron;dtype=NAME;documents=sequences|labels)");
}

std::vector<std::string> MegatronPaths(const std::string& prefix) {
  return {prefix + ".bin", prefix + ".idx"};
}

Result<std::unique_ptr<DocumentSource>> OpenMegatronSource(const std::string& given) {
  const std::string prefix = WithoutExtension(given);
  const std::string idx_path = prefix + ".idx", bin_path = prefix + ".bin";
  RF_ASSIGN_OR_RETURN(File idx, OpenInputFile(idx_path));
  RF_ASSIGN_OR_RETURN(File bin, OpenInputFile(bin_path));
  RF_ASSIGN_OR_RETURN(const uint64_t idx_bytes, idx.Size());
  RF_ASSIGN_OR_RETURN(const uint64_t bin_bytes, bin.Size());
  if (idx_bytes < kMegatronHeaderBytes) {
    return Bad(idx_path, idx_bytes,
               "file is " + std::to_string(idx_bytes) + " bytes, shorter than the " +
                   std::to_string(kMegatronHeaderBytes) + "-byte header of Megatron's index");
  }
  uint8_t head[kMegatronHeaderBytes];
  RF_RETURN_IF_ERROR(idx.ReadAt(head, sizeof head, 0));
  if (std::memcmp(head, kMegatronMagic, sizeof kMegatronMagic) != 0)
    return Bad(idx_path, 0, "not a Megatron index (its magic is not MMIDIDX\\0\\0)");
  uint64_t version, n, count;
  std::memcpy(&version, head + 9, 8);
  std::memcpy(&n, head + 18, 8);
  std::memcpy(&count, head + 26, 8);
  if (version != 1)
    return Bad(idx_path, 9, "index version " + std::to_string(version) + " (this reads 1)");
  const uint8_t code = head[17];
  const std::optional<Elem> elem = ElemFromMegatronCode(code);
  if (!elem) {
    return Bad(idx_path, 17,
               "dtype code " + std::to_string(code) +
                   (code == 6 || code == 7 ? " (float" + std::string(code == 6 ? "64" : "32") +
                                                 "): token ids are integers"
                                           : ": Megatron's codes are 1 to 8"));
  }
  if (n == 0) return Bad(idx_path, 18, "no sequences (a dataset holds one record at least)");
  // Each count bounded by the file before anything is multiplied or sized from it.
  const uint64_t room = idx_bytes - kMegatronHeaderBytes;
  const bool fits = n <= room / 12 && count <= (room - 12 * n) / 8;
  if (!fits || kMegatronHeaderBytes + 12 * n + 8 * count != idx_bytes) {
    const std::string make = fits ? "make an index of " +
                                        std::to_string(kMegatronHeaderBytes + 12 * n + 8 * count) +
                                        " bytes"
                                  : "do not fit it";
    return Bad(idx_path, 18,
               std::to_string(n) + " sequences and " + std::to_string(count) +
                   " document indices " + make + "; the file is " + std::to_string(idx_bytes) +
                   " bytes (a multimodal index's sequence modes are not read)");
  }
  if (count < 2) {
    return Bad(idx_path, 26,
               "document count " + std::to_string(count) +
                   ": the document indices start with 0 and end with the sequence count");
  }
  if (count - 1 > format::MaxClassesFor(DType::kInt32)) {
    return Bad(idx_path, 26, std::to_string(count - 1) + " documents; at most 2^31 are kept");
  }
  RF_RETURN_IF_ERROR(CheckSequences(idx, n, ElemSize(*elem), bin_bytes, bin_path));
  bool identity = false;
  RF_RETURN_IF_ERROR(CheckDocuments(idx, n, count, &identity));
  posix_fadvise(bin.fd(), 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<DocumentSource>(new MegatronSource(
      std::move(idx), std::move(bin), *elem, n, count - 1, idx_bytes, bin_bytes, !identity));
}

}  // namespace rf::convert
