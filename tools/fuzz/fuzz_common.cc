#include "tools/fuzz/fuzz_common.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "io/checksum.h"
#include "io/dataset_writer.h"
#include "io/format.h"
#include "model/checkpoint.h"

namespace rf::fuzz {
namespace {

// Where a forged value is most likely to slip past a check: around 0, the dtype and alignment
// boundaries, and the 32- and 64-bit limits (an offset near 2^64 that wraps).
constexpr uint64_t kEdgeValues[] = {0,
                                    1,
                                    2,
                                    3,
                                    4,
                                    8,
                                    63,
                                    64,
                                    255,
                                    256,
                                    257,
                                    4095,
                                    4096,
                                    4097,
                                    65535,
                                    65536,
                                    65537,
                                    0x7fffffffull,
                                    0x80000000ull,
                                    0xffffffffull,
                                    0x100000000ull,
                                    0x100000001ull,
                                    uint64_t{1} << 40,
                                    uint64_t{1} << 62,
                                    uint64_t{1} << 63,
                                    ~uint64_t{0} - 4095,
                                    ~uint64_t{0} - 1,
                                    ~uint64_t{0}};

DatasetFiles WriteValid(const std::string& name, const DatasetSpec& spec, uint32_t shards,
                        uint64_t samples, CodecSpec codec = {}, uint64_t chunk_bytes = 4096) {
  const std::string base = ScratchDir() + "/" + name;
  WriterOptions o;
  o.shards = shards;
  o.chunk_bytes = chunk_bytes;
  o.codec = codec;
  o.threads = 1;
  o.dataset_id = 0x5eed0000 + samples + (static_cast<uint64_t>(codec.codec) << 16);
  auto w = DatasetWriter::Create(base, spec, o);
  RF_FUZZ_CHECK(w.ok());
  if (spec.record_kind == format::RecordKind::kFields) {
    // Samples of several fields (io/fields.h): each field's bytes of 0 to 12, a tensor's its own.
    std::vector<uint8_t> record, part(64);
    std::vector<const uint8_t*> parts;
    std::vector<uint64_t> sizes;
    for (uint64_t i = 0; i < samples; ++i) {
      for (size_t k = 0; k < part.size(); ++k) part[k] = static_cast<uint8_t>(i * 5 + k);
      parts.clear();
      sizes.clear();
      for (const format::FieldSpec& f : spec.fields) {
        if (!f.stored()) continue;
        parts.push_back(part.data());
        sizes.push_back(f.kind == format::FieldKind::kTensor ? f.TensorBytes()
                                                             : (i % 7) * DTypeSize(f.dtype));
      }
      record.clear();
      format::EncodeSample(spec.fields, parts.data(), sizes.data(), &record);
      const uint64_t offsets[2] = {0, record.size()};
      const int64_t label = spec.has_labels ? static_cast<int64_t>(i % spec.num_classes) : 0;
      RF_FUZZ_CHECK(
          (*w)->AppendRecords(record.data(), offsets, spec.has_labels ? &label : nullptr, 1).ok());
    }
  } else if (format::IsVariable(spec.record_kind)) {
    // Records of 1 to 13 elements (several to a chunk, so the tables hold many entries).
    const uint64_t elem = DTypeSize(spec.sample_dtype);
    std::vector<uint8_t> record(13 * elem);
    for (uint64_t i = 0; i < samples; ++i) {
      for (size_t k = 0; k < record.size(); ++k) record[k] = static_cast<uint8_t>(i * 7 + k);
      const uint64_t offsets[2] = {0, 1 + i % 13};
      const int64_t label = spec.has_labels ? static_cast<int64_t>(i % spec.num_classes) : 0;
      RF_FUZZ_CHECK(
          (*w)->AppendRecords(record.data(), offsets, spec.has_labels ? &label : nullptr, 1).ok());
    }
  }
  format::Header view;
  view.sample_dtype = spec.sample_dtype;
  RF_FUZZ_CHECK(
      format::SetSampleShape(spec.shape.empty() ? std::vector<uint64_t>{1} : spec.shape, &view)
          .ok());
  const uint64_t sample_bytes = view.SampleBytes();
  std::vector<uint8_t> sample(sample_bytes);
  for (uint64_t i = 0; !format::IsVariable(spec.record_kind) && i < samples; ++i) {
    for (uint64_t k = 0; k < sample_bytes; ++k) sample[k] = static_cast<uint8_t>(i * 31 + k);
    if (spec.sample_dtype == DType::kFloat32) {
      for (uint64_t k = 0; k < sample_bytes / 4; ++k) {
        const float v = static_cast<float>(i) + 0.25f * static_cast<float>(k);
        std::memcpy(&sample[4 * k], &v, 4);
      }
    }
    const int64_t label = spec.has_labels ? static_cast<int64_t>(i % spec.num_classes) : 0;
    RF_FUZZ_CHECK(
        (*w)->Append(sample.data(), spec.has_labels ? static_cast<const void*>(&label) : nullptr, 1)
            .ok());
  }
  RF_FUZZ_CHECK((*w)->Finish().ok());
  DatasetFiles d;
  d.base = base;
  for (const std::string& p : (*w)->paths()) {
    std::ifstream f(p, std::ios::binary);
    d.names.push_back(std::filesystem::path(p).filename());
    d.bytes.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    std::filesystem::remove(p);  // the targets write their own copies
  }
  return d;
}

}  // namespace

const std::string& ScratchDir() {
  static const std::string dir = [] {
    std::string root = "/dev/shm";
    if (::access(root.c_str(), W_OK) != 0) {
      const char* tmp = std::getenv("TMPDIR");
      root = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    }
    std::string tmpl = root + "/ringfeed-fuzz.XXXXXX";
    RF_FUZZ_CHECK(::mkdtemp(tmpl.data()) != nullptr);
    static const std::string made = tmpl;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(made, ec);
    });
    return tmpl;
  }();
  return dir;
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  RF_FUZZ_CHECK(f != nullptr);
  RF_FUZZ_CHECK(bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  RF_FUZZ_CHECK(std::fclose(f) == 0);
}

const std::vector<Field>& HeaderFields() {
  static const std::vector<Field> fields = [] {
    std::vector<Field> f = {
        {"magic", 0, 8},
        {"version", 8, 4},
        {"header_bytes", 12, 4},
        {"dataset_id", 16, 8},
        {"shard_index", 24, 4},
        {"shard_count", 28, 4},
        {"sample_dtype", 32, 4},
        {"label_dtype", 36, 4},
        {"channels", 40, 4},
        {"height", 44, 4},
        {"width", 48, 4},
        {"num_classes", 52, 4},
        {"total_samples", 56, 8},
        {"total_chunks", 64, 8},
        {"chunk_samples", 72, 4},
        {"shard_chunks", 76, 4},
        {"shard_samples", 80, 8},
        {"index_offset", 88, 8},
        {"file_size", 96, 8},
        {"mean[0]", 128, 4},
        {"std[0]", 384, 4},
        {"mean[2]", 136, 4},
        {"std[2]", 392, 4},
        {"ndim", 640, 4},
        {"dims[0]", 644, 4},
        {"dims[1]", 648, 4},
        {"dims[2]", 652, 4},
        {"dims[3]", 656, 4},
        // Version 2.
        {"codec", 660, 4},
        {"codec_level", 664, 4},
        {"record_kind", 668, 4},
        // Any version: the class names block (offset, size, checksum).
        {"names_offset", 800, 8},
        {"names_bytes", 808, 8},
        {"names_checksum", 816, 8},
    };
    // The table against the encoder: a header of distinct values puts each where it says.
    format::Header h;
    h.dataset_id = 0x1111111111111111ull;
    h.shard_index = 0x22;
    h.shard_count = 0x33;
    h.num_classes = 0x44;
    h.total_samples = 0x5555555555ull;
    h.total_chunks = 0x6666666666ull;
    h.chunk_samples = 0x77;
    h.shard_chunks = 0x88;
    h.shard_samples = 0x9999999999ull;
    h.index_offset = 0xaaaaaaaaaaull;
    h.file_size = 0xbbbbbbbbbbull;
    h.channels = 3;
    h.height = 0xcc;
    h.width = 0xdd;
    h.version = 2;
    h.codec = {Codec::kZstd, 0x11};
    h.names_offset = 0xeeeeeeeeeeull;
    h.names_bytes = 0xfffffffffull;
    h.names_checksum = 0x1212121212121212ull;
    std::vector<uint8_t> b(format::kHeaderBytes);
    format::EncodeHeader(h, b.data());
    const uint64_t want[] = {
        h.dataset_id,   h.shard_index,   h.shard_count,  h.num_classes,   h.total_samples,
        h.total_chunks, h.chunk_samples, h.shard_chunks, h.shard_samples, h.index_offset,
        h.file_size,    h.height,        h.width,        h.version,       2,
        0x11,           h.names_offset,  h.names_bytes,  h.names_checksum};
    const char* names[] = {"dataset_id",    "shard_index",  "shard_count",   "num_classes",
                           "total_samples", "total_chunks", "chunk_samples", "shard_chunks",
                           "shard_samples", "index_offset", "file_size",     "height",
                           "width",         "version",      "codec",         "codec_level",
                           "names_offset",  "names_bytes",  "names_checksum"};
    for (size_t i = 0; i < std::size(want); ++i) {
      for (const Field& x : f) {
        if (std::strcmp(x.name, names[i]) == 0)
          RF_FUZZ_CHECK(GetField(b, x.offset, x.width) == want[i]);
      }
    }
    return f;
  }();
  return fields;
}

size_t EntryBytes(const std::vector<uint8_t>& file) {
  return format::IndexEntryBytes(static_cast<uint32_t>(GetField(file, 8, 4)));
}

std::vector<Field> IndexFields(const std::vector<uint8_t>& file) {
  const uint64_t at = GetField(file, 88, 8);
  uint64_t entries = GetField(file, 76, 4);
  if (at >= file.size()) return {};
  const size_t entry_bytes = EntryBytes(file);
  const bool v2 = entry_bytes >= format::kIndexEntryBytesV2;  // versions 2 and 3
  entries = std::min<uint64_t>(entries, (file.size() - at) / entry_bytes);
  std::vector<Field> f;
  for (uint64_t i = 0; i < entries; ++i) {
    const uint64_t e = at + i * entry_bytes;
    f.push_back({"index", e, 8});
    f.push_back({"first_sample", e + 8, 8});
    f.push_back({"offset", e + 16, 8});
    f.push_back({"stored_bytes", e + 24, 8});
    f.push_back({"sample_count", e + 32, 4});
    // Version 2's codec byte, and its three zero bytes; version 1's four spare bytes.
    f.push_back({v2 ? "codec" : "spare", e + 36, v2 ? size_t{1} : size_t{4}});
    if (v2) f.push_back({"codec_spare", e + 37, 2});
    f.push_back({"checksum", e + 40, 8});
    if (v2) {
      f.push_back({"frame_bytes", e + 48, 8});
      f.push_back({"data_bytes", e + 56, 8});
    }
    if (entry_bytes >= format::kIndexEntryBytesV3) f.push_back({"record_bytes", e + 64, 8});
  }
  return f;
}

void EditFrames(FuzzedDataProvider& in, size_t max_edits, std::vector<uint8_t>* file) {
  const uint64_t at = GetField(*file, 88, 8);
  const uint64_t entries = GetField(*file, 76, 4);
  const size_t entry_bytes = EntryBytes(*file);
  if (entries == 0 || at >= file->size() || entries > (file->size() - at) / entry_bytes) {
    return;
  }
  for (size_t n = 0; n < max_edits && in.remaining_bytes() > 0; ++n) {
    const uint64_t e = at + in.ConsumeIntegralInRange<uint64_t>(0, entries - 1) * entry_bytes;
    const uint64_t offset = GetField(*file, e + 16, 8), stored = GetField(*file, e + 24, 8);
    const uint64_t frame =
        entry_bytes >= format::kIndexEntryBytesV2 ? GetField(*file, e + 48, 8) : stored;
    if (offset > file->size() || stored > file->size() - offset || stored == 0) continue;
    switch (in.ConsumeIntegralInRange<int>(0, 2)) {
      case 0: {  // bytes inside the frame overwritten (the frame's own structure damaged)
        if (frame == 0 || frame > stored) break;
        const uint64_t p = offset + in.ConsumeIntegralInRange<uint64_t>(0, frame - 1);
        const std::vector<uint8_t> v = in.ConsumeBytes<uint8_t>(
            in.ConsumeIntegralInRange<size_t>(1, std::min<uint64_t>(16, offset + frame - p)));
        std::copy(v.begin(), v.end(), file->begin() + static_cast<ptrdiff_t>(p));
        break;
      }
      case 1: {  // the frame cut short (or grown into its padding): only frame_bytes changes
        if (entry_bytes < format::kIndexEntryBytesV2) break;
        PutField(file, e + 48, 8, in.ConsumeIntegralInRange<uint64_t>(1, stored));
        break;
      }
      case 2: {  // the frame replaced by the fuzzer's bytes, the sizes made to agree with them
        const std::vector<uint8_t> v =
            in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<uint64_t>(1, stored));
        if (v.empty()) break;
        std::fill(file->begin() + static_cast<ptrdiff_t>(offset),
                  file->begin() + static_cast<ptrdiff_t>(offset + stored), 0);
        std::copy(v.begin(), v.end(), file->begin() + static_cast<ptrdiff_t>(offset));
        if (entry_bytes >= format::kIndexEntryBytesV2) {
          PutField(file, e + 48, 8, v.size());
          PutField(file, e + 24, 8, format::RoundUp(v.size(), format::kAlign));
          PutField(file, e + 36, 1, in.ConsumeIntegralInRange<uint8_t>(0, 3));
        }
        break;
      }
    }
  }
}

const std::vector<DatasetFiles>& ValidDatasets() {
  static const std::vector<DatasetFiles> sets = [] {
    std::vector<DatasetFiles> s;
    DatasetSpec images;
    images.shape = {3, 4, 5};
    images.num_classes = 10;
    s.push_back(WriteValid("images.rfd", images, 1, 100));
    s.push_back(WriteValid("shards.rfd", images, 2, 200));
    DatasetSpec tokens;
    tokens.sample_dtype = DType::kInt64;
    tokens.shape = {16};
    tokens.has_labels = false;
    s.push_back(WriteValid("tokens.rfd", tokens, 1, 40));
    DatasetSpec floats;
    floats.sample_dtype = DType::kFloat32;
    floats.label_dtype = DType::kInt32;
    floats.shape = {6, 7};
    floats.num_classes = 300;
    s.push_back(WriteValid("floats.rfd", floats, 1, 50));
    // Version 2: compressed chunks (16 KiB of data each, the last one stored raw), so the
    // fuzzer's mutations reach the codec frames and the decompression behind them.
    DatasetSpec wide;
    wide.shape = {3, 16, 16};
    wide.num_classes = 10;
    s.push_back(WriteValid("zstd.rfd", wide, 1, 60, {Codec::kZstd, 3}, 16384));
    s.push_back(WriteValid("lz4.rfd", wide, 2, 100, {Codec::kLz4, 0}, 16384));
    // Records of any size: token documents (two shards, zstd) and labelled bytes.
    DatasetSpec docs;
    docs.record_kind = format::RecordKind::kTokens;
    docs.sample_dtype = DType::kUInt16;
    docs.has_labels = false;
    s.push_back(WriteValid("docs.rfd", docs, 2, 900, {Codec::kZstd, 1}, 8192));
    DatasetSpec blobs;
    blobs.record_kind = format::RecordKind::kBytes;
    blobs.media_type = "image/jpeg";
    blobs.num_classes = 5;
    s.push_back(WriteValid("blobs.rfd", blobs, 1, 300));
    // Samples of several fields (the header's field table at byte 1024, each sample's lengths).
    DatasetSpec pairs;
    pairs.record_kind = format::RecordKind::kFields;
    pairs.num_classes = 3;
    pairs.fields = format::ParseFields(
                       "jpg=image/jpeg,txt=tokens:int32,emb=tensor:uint16:3x2,"
                       "cls=label")
                       .value();
    s.push_back(WriteValid("pairs.rfd", pairs, 1, 120, {Codec::kLz4, 0}, 4096));
    // The class names block (header byte 800), in each of two shards: JPEG-like records of 4
    // named classes (one name of several bytes, one of one byte, one UTF-8), and fixed-shape
    // images of 3 named classes compressed with zstd.
    DatasetSpec named = blobs;
    named.num_classes = 4;
    named.class_names = {"n01440764", "b", "caf\xc3\xa9 au lait", "dog"};
    s.push_back(WriteValid("named.rfd", named, 2, 120));
    DatasetSpec named_images = wide;
    named_images.num_classes = 3;
    named_images.class_names = {"cat", "dog", "a name with spaces"};
    s.push_back(WriteValid("named_images.rfd", named_images, 1, 40, {Codec::kZstd, 1}, 16384));
    return s;
  }();
  return sets;
}

const std::vector<uint8_t>& ValidCheckpoint() {
  static const std::vector<uint8_t> bytes = [] {
    Checkpoint c;
    c.config.channels = 1;
    c.config.height = c.config.width = 8;
    c.config.classes = 3;
    c.config.conv = {2, 3};
    c.config.hidden = 5;
    c.config.batch_norm = true;  // its scales and running statistics in the file too
    c.params = InitialParameters(c.config, 7);
    c.momentum = ZerosLike(c.config);
    c.running_stats = InitialRunningStats(c.config);
    c.epoch = 1;
    c.next_sample = 10;
    c.step = 12;
    c.order.batch_size = 4;
    c.dataset_samples = 40;
    c.order.world_size = 2;
    c.order.resumed = {c.epoch, {{3, 6}}};
    auto b = EncodeCheckpoint(c);
    RF_FUZZ_CHECK(b.ok());
    return *b;
  }();
  return bytes;
}

const std::vector<uint8_t>& ValidMixtureCheckpoint() {
  static const std::vector<uint8_t> bytes = [] {
    const std::vector<uint8_t>& one = ValidCheckpoint();
    Result<Checkpoint> c = DecodeCheckpoint(one.data(), one.size(), "seed");
    RF_FUZZ_CHECK(c.ok());
    c->datasets = {{11, 40, 0.75}, {12, 24, 0.25}};
    c->mixture.steps = 16;
    c->mixture.drawn = {12, 4};
    c->mixture.sources = {{1, 2, {{3, 6}}}, {0, 4, {}}};
    auto b = EncodeCheckpoint(*c);
    RF_FUZZ_CHECK(b.ok());
    return *b;
  }();
  return bytes;
}

const std::vector<Field>& CheckpointFields() {
  // model/checkpoint.h's layout for ValidCheckpoint's two conv blocks and one stretch.
  static const std::vector<Field> fields = {
      {"magic", 0, 8},
      {"version", 8, 4},
      {"channels", 12, 4},
      {"height", 16, 4},
      {"width", 20, 4},
      {"classes", 24, 4},
      {"blocks", 28, 4},
      {"conv[0]", 32, 4},
      {"conv[1]", 36, 4},
      {"hidden", 40, 4},
      {"lr", 44, 4},
      {"momentum", 48, 4},
      {"weight_decay", 52, 4},
      {"seed", 56, 8},
      {"epoch", 64, 8},
      {"next_sample", 72, 8},
      {"step", 80, 8},
      {"batch_size", 88, 4},
      {"order_window", 92, 4},
      {"dataset_id", 96, 8},
      {"dataset_samples", 104, 8},
      {"world_size", 112, 4},
      {"stretches", 116, 4},
      {"stretch.world_size", 120, 4},
      {"stretch.position", 124, 8},
      {"optimizer", 132, 4},
      {"beta1", 136, 4},
      {"beta2", 140, 4},
      {"eps", 144, 4},
      {"label_smoothing", 148, 4},
      {"schedule", 152, 4},
      {"warmup_epochs", 156, 4},
      {"steps_per_epoch", 160, 8},
      {"schedule_epochs", 168, 8},
      {"augment_crop_pad", 176, 4},
      {"augment_flip", 180, 4},
      {"augment_erase_threshold", 184, 8},
      {"batch_norm", 192, 4},
      {"tensors", 196, 4},
      {"tensor[0].count", 200, 8},
  };
  return fields;
}

uint64_t GetField(const std::vector<uint8_t>& bytes, size_t offset, size_t width) {
  if (offset > bytes.size() || width > bytes.size() - offset) return 0;
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + offset, width);  // little-endian, as every target
  return v;
}

void PutField(std::vector<uint8_t>* bytes, size_t offset, size_t width, uint64_t value) {
  if (offset > bytes->size() || width > bytes->size() - offset) return;
  std::memcpy(bytes->data() + offset, &value, width);
}

uint64_t EdgeValue(FuzzedDataProvider& in) {
  return in.PickValueInArray(kEdgeValues) + in.ConsumeIntegralInRange<int64_t>(-2, 2);
}

void ApplyEdits(FuzzedDataProvider& in, const std::vector<Field>& fields, size_t max_edits,
                std::vector<uint8_t>* bytes) {
  for (size_t e = 0; e < max_edits && in.remaining_bytes() > 0; ++e) {
    switch (in.ConsumeIntegralInRange<int>(0, 5)) {
      case 0:  // a field to an edge value, or that value plus a small step
      case 1: {
        if (fields.empty()) break;  // a file without such fields (an index of no entries)
        const Field& f = fields[in.ConsumeIntegralInRange<size_t>(0, fields.size() - 1)];
        PutField(bytes, f.offset, f.width, EdgeValue(in));
        break;
      }
      case 2: {  // a field to the input's own value
        if (fields.empty()) break;
        const Field& f = fields[in.ConsumeIntegralInRange<size_t>(0, fields.size() - 1)];
        PutField(bytes, f.offset, f.width, in.ConsumeIntegral<uint64_t>());
        break;
      }
      case 3: {  // any bytes, anywhere
        if (bytes->empty()) break;
        const size_t at = in.ConsumeIntegralInRange<size_t>(0, bytes->size() - 1);
        const std::vector<uint8_t> v = in.ConsumeBytes<uint8_t>(
            in.ConsumeIntegralInRange<size_t>(1, std::min<size_t>(16, bytes->size() - at)));
        std::copy(v.begin(), v.end(), bytes->begin() + static_cast<ptrdiff_t>(at));
        break;
      }
      case 4:  // cut
        bytes->resize(in.ConsumeIntegralInRange<size_t>(0, bytes->size()));
        break;
      case 5:  // extend
        bytes->resize(bytes->size() + in.ConsumeIntegralInRange<size_t>(1, 8192),
                      in.ConsumeIntegral<uint8_t>());
        break;
    }
  }
}

void FixHeaderChecksum(std::vector<uint8_t>* file) {
  if (file->size() < format::kHeaderBytes) return;
  PutField(file, format::kHeaderBytes - 8, 8, Checksum(file->data(), format::kHeaderBytes - 8));
}

void FixIndexChecksum(std::vector<uint8_t>* file) {
  const uint64_t chunks = GetField(*file, 76, 4);
  const uint64_t at = GetField(*file, 88, 8);
  const uint64_t body = chunks * EntryBytes(*file);
  if (file->size() < format::kHeaderBytes || at > file->size() || body + 8 > file->size() - at) {
    return;
  }
  PutField(file, at + body, 8, Checksum(file->data() + at, body));
}

void FixNamesChecksum(std::vector<uint8_t>* file) {
  if (file->size() < format::kHeaderBytes) return;
  const uint64_t at = GetField(*file, 800, 8), bytes = GetField(*file, 808, 8);
  if (bytes == 0 || at > file->size() || bytes > file->size() - at) return;
  PutField(file, 816, 8, Checksum(file->data() + at, bytes));
}

void FixChunkChecksums(std::vector<uint8_t>* file) {
  const uint64_t chunks = GetField(*file, 76, 4);
  const uint64_t at = GetField(*file, 88, 8);
  const size_t entry_bytes = EntryBytes(*file);
  if (file->size() < format::kHeaderBytes || at > file->size() ||
      chunks * entry_bytes > file->size() - at) {
    return;
  }
  for (uint64_t i = 0; i < chunks; ++i) {
    const uint64_t e = at + i * entry_bytes;
    const uint64_t offset = GetField(*file, e + 16, 8), stored = GetField(*file, e + 24, 8);
    if (offset > file->size() || stored > file->size() - offset) continue;
    PutField(file, e + 40, 8, Checksum(file->data() + offset, stored));
  }
}

}  // namespace rf::fuzz
