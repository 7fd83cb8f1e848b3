#include "tools/convert/cifar_input.h"

#include <algorithm>

#include "io/file.h"
#include "tools/convert/input_file.h"

namespace rf::convert {
namespace {

class CifarSource final : public SampleSource {
 public:
  CifarSource(std::vector<File> files, std::vector<uint64_t> counts, bool cifar100)
      : files_(std::move(files)), counts_(std::move(counts)), label_bytes_(cifar100 ? 2 : 1) {
    shape_.dims = {3, 32, 32};
    shape_.elem = Elem::kU8;
    shape_.label_dtype = DType::kUInt8;
    shape_.num_classes = cifar100 ? 100 : 10;
    for (uint64_t c : counts_) shape_.samples += c;
  }

  const SourceShape& shape() const override { return shape_; }

  // The samples are cut out of the records here: CIFAR's files are small.
  Result<SampleBlock> Read(uint64_t max_samples, BlockBuffers& buf) override {
    SampleBlock b;
    b.first = next_;
    const uint64_t n = std::min(max_samples, shape_.samples - next_);
    if (n == 0) return b;
    const uint64_t rec = RecordBytes();
    buf.bytes.resize(n * kCifarPixels);
    buf.labels.resize(n);
    records_.resize(std::min<uint64_t>(n, kRecordsPerRead) * rec);
    uint64_t done = 0;
    while (done < n) {
      while (in_file_ == counts_[file_]) {  // next file (empty files are skipped)
        ++file_;
        in_file_ = 0;
      }
      const uint64_t take =
          std::min({n - done, counts_[file_] - in_file_, uint64_t{kRecordsPerRead}});
      RF_RETURN_IF_ERROR(files_[file_].ReadAt(records_.data(), take * rec, in_file_ * rec));
      for (uint64_t i = 0; i < take; ++i) {
        const uint8_t* r = &records_[i * rec];
        buf.labels[done + i] = r[label_bytes_ - 1];
        std::copy_n(r + label_bytes_, kCifarPixels, &buf.bytes[(done + i) * kCifarPixels]);
      }
      done += take;
      in_file_ += take;
    }
    next_ += n;
    b.samples = buf.bytes.data();
    b.labels = buf.labels.data();
    b.count = n;
    return b;
  }

  InputPosition LabelAt(uint64_t sample) const override {
    size_t f = 0;
    while (f + 1 < counts_.size() && sample >= counts_[f]) sample -= counts_[f++];
    return {files_[f].path(), sample * RecordBytes() + label_bytes_ - 1};
  }

  InputPosition SampleAt(uint64_t sample) const override {
    const InputPosition label = LabelAt(sample);
    return {label.path, label.offset + 1};
  }

  std::vector<std::string> input_paths() const override {
    std::vector<std::string> p;
    for (const File& f : files_) p.push_back(f.path());
    return p;
  }

 private:
  static constexpr uint64_t kRecordsPerRead = 4096;  // ~12 MiB of records per pread
  uint64_t RecordBytes() const { return label_bytes_ + kCifarPixels; }

  std::vector<File> files_;
  std::vector<uint64_t> counts_;
  uint32_t label_bytes_;
  SourceShape shape_;
  uint64_t next_ = 0;
  size_t file_ = 0;
  uint64_t in_file_ = 0;
  std::vector<uint8_t> records_;
};

}  // namespace

Result<std::unique_ptr<SampleSource>> OpenCifarSource(const std::vector<std::string>& paths,
                                                      bool cifar100) {
  const uint64_t rec = (cifar100 ? 2 : 1) + kCifarPixels;
  std::vector<File> files;
  std::vector<uint64_t> counts;
  for (const std::string& p : paths) {
    RF_ASSIGN_OR_RETURN(File f, OpenInputFile(p));
    RF_ASSIGN_OR_RETURN(uint64_t size, f.Size());
    if (size % rec != 0) {
      return std::move(Status::Corruption(
                           p, "file size " + std::to_string(size) + " is not a multiple of the " +
                                  std::to_string(rec) + "-byte CIFAR record: a partial record of " +
                                  std::to_string(size % rec) + " bytes starts here")
                           .WithOffset(size - size % rec));
    }
    counts.push_back(size / rec);
    files.push_back(std::move(f));
  }
  return std::unique_ptr<SampleSource>(
      new CifarSource(std::move(files), std::move(counts), cifar100));
}

}  // namespace rf::convert
