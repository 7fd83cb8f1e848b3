#include "io/dataset.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <thread>

#include "io/checksum.h"
#include "io/dataset_shards.h"
#include "io/file.h"
#include "io/remote/remote_object.h"

namespace rf {

std::vector<std::string> DatasetNamesOf(const std::vector<std::string>& files) {
  const std::string_view ext = format::kExtension;
  std::vector<std::string> names;
  for (const std::string& file : files) {
    if (file.size() <= ext.size() || !file.ends_with(ext)) continue;
    const std::string base = format::ShardBase(file);
    names.push_back(base.empty() ? file : base);
  }
  std::sort(names.begin(), names.end());  // std::string's order: bytes, unsigned
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

namespace {

Result<OpenedShard> OpenShard(const std::string& path) {
  // O_NONBLOCK: a FIFO in a shard's or a part's place opens at once instead of waiting for a
  // writer (forever), and is refused here as what it is; on a regular file it changes nothing.
  RF_ASSIGN_OR_RETURN(File f, File::Open(path, O_RDONLY | O_NONBLOCK));
  if (const char* kind = FileKindName(path); kind != nullptr && !FileExists(path)) {
    return std::move(Status::InvalidArgument(std::string(kind) + ", not a dataset file (" +
                                             "a dataset's files are regular files)")
                         .WithPath(path));
  }
  RF_ASSIGN_OR_RETURN(uint64_t size, f.Size());
  return DecodeShard(
      path, size, [&](void* buf, size_t n, uint64_t offset) { return f.ReadSome(buf, n, offset); });
}

// Fields every shard of one dataset must agree on.
bool SameDataset(const format::Header& a, const format::Header& b) {
  return a.dataset_id == b.dataset_id && a.shard_count == b.shard_count &&
         a.sample_dtype == b.sample_dtype && a.label_dtype == b.label_dtype &&
         a.channels == b.channels && a.height == b.height && a.width == b.width &&
         a.Shape() == b.Shape() && a.num_classes == b.num_classes &&
         a.total_samples == b.total_samples && a.total_chunks == b.total_chunks &&
         a.chunk_samples == b.chunk_samples && a.mean == b.mean && a.stddev == b.stddev &&
         a.version == b.version && a.record_kind == b.record_kind && a.codec == b.codec &&
         a.media_type == b.media_type && a.origin == b.origin && a.names_bytes == b.names_bytes &&
         a.names_checksum == b.names_checksum;
}

// The shard files of every count under the dataset name `base`, sorted.
std::vector<std::string> ShardFilesNamed(const std::string& base) {
  std::string stem = base;
  const std::string ext = format::kExtension;
  bool has_ext = stem.size() > ext.size() && stem.ends_with(ext);
  if (has_ext) stem.resize(stem.size() - ext.size());
  // The name matched as itself: a directory such as "runs[1]" is no pattern.
  std::string pattern;
  for (char c : stem) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern += '\\';
    pattern += c;
  }
  pattern += "-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]";
  pattern += has_ext ? ext : "";
  glob_t g{};
  std::vector<std::string> found;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    found.assign(g.gl_pathv, g.gl_pathv + g.gl_pathc);
  ::globfree(&g);
  return found;
}

// Refuses a dataset name under which more than one dataset exists: the file itself beside
// shards of it, or shards of more than one count. Names one file of each.
Status CheckOneDatasetNamed(const std::string& name) {
  std::vector<std::string> sets;  // one file of each dataset: the file, or a shard of each count
  std::vector<uint32_t> counts;
  if (FileExists(name)) sets.push_back(name);
  for (const std::string& f : ShardFilesNamed(name)) {
    std::string base;
    uint32_t index = 0, count = 0;
    if (!format::ParseShardName(f, &base, &index, &count)) continue;
    if (std::find(counts.begin(), counts.end(), count) != counts.end()) continue;
    counts.push_back(count);
    sets.push_back(f + " (" + std::to_string(count) + " shards)");
  }
  if (sets.size() <= 1) return Status::Ok();
  std::string which;
  for (const std::string& s : sets) which += (which.empty() ? "" : ", ") + s;
  return std::move(Status::InvalidArgument(std::to_string(sets.size()) +
                                           " datasets have this name: " + which +
                                           "; remove the stale one(s) or name one shard")
                       .WithPath(name));
}

// Corruption where a shard's header and its file name disagree on which shard it is: shards
// renamed or swapped, or a header whose shard count does not match the files written.
Status CheckShardName(const std::string& path, const format::Header& h) {
  std::string base;
  uint32_t index = 0, count = 0;
  const bool named = format::ParseShardName(path, &base, &index, &count);
  if (!named && h.shard_count == 1) return Status::Ok();
  if (!named) {
    return std::move(Status::Corruption(path, "header says shard " + std::to_string(h.shard_index) +
                                                  " of " + std::to_string(h.shard_count) +
                                                  " but the file name is not a shard name")
                         .WithOffset(format::kShardFieldsOffset));
  }
  if (index == h.shard_index && count == h.shard_count) return Status::Ok();
  return std::move(Status::Corruption(path, "header says shard " + std::to_string(h.shard_index) +
                                                " of " + std::to_string(h.shard_count) +
                                                ", the file name shard " + std::to_string(index) +
                                                " of " + std::to_string(count) +
                                                " (shards renamed or swapped?)")
                       .WithOffset(format::kShardFieldsOffset));
}

// `name` in directory `dir` ("dir/" and "dir" alike).
std::string InDirectory(const std::string& dir, const std::string& name) {
  return dir.ends_with('/') ? dir + name : dir + "/" + name;
}

// The names of the datasets in directory `dir`, sorted by bytes, each once: every entry whose
// name ends in ".rfd" (".rfd" alone is no name), a shard file's as its shards' base name
// ("d-00001-of-00004.rfd": "d.rfd"). Entries of other names, a writer's temporaries
// ("d.rfd.tmp.<pid>.<n>") among them, are not datasets. What such an entry is (a directory, a
// file that is no dataset, an incomplete or stale set) opening it says.
Result<std::vector<std::string>> DatasetNamesIn(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    files.push_back(it->path().filename().string());
  if (ec) return Status::IOError(dir, "cannot list the directory", ec.value());
  return DatasetNamesOf(files);
}

}  // namespace

Result<Dataset> Dataset::Open(const std::string& path, const HttpFetchOptions& remote) {
  if (IsRemotePath(path)) return OpenRemote(path, remote);
  if (IsDirectory(path)) return OpenDirectory(path);
  return OpenNamed(path);
}

Result<Dataset> Dataset::OpenNamed(const std::string& path) {
  // Anything but a regular file (or nothing: a base name) is named as what it is.
  if (const char* kind = FileKindName(path); kind != nullptr && !FileExists(path)) {
    return std::move(Status::InvalidArgument(std::string(kind) +
                                             ", not a dataset (a .rfd file, or the base name of "
                                             "its shards)")
                         .WithPath(path));
  }
  std::string first = path;
  if (format::ShardBase(path).empty()) {  // not one shard's name: a file or a base name
    RF_RETURN_IF_ERROR(CheckOneDatasetNamed(path));
    if (!FileExists(path)) {
      const std::vector<std::string> shards = ShardFilesNamed(path);
      if (shards.empty())
        return Status::NotFound(path, "no such dataset (no file, no shards)", ENOENT);
      first = shards.front();
    }
  }
  return OpenShardSet(path, first, OpenShard);
}

std::vector<std::optional<Result<OpenedShard>>> Dataset::OpenAll(
    const std::vector<std::string>& paths, const ShardOpener& open, uint32_t threads) {
  std::vector<std::optional<Result<OpenedShard>>> out(paths.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < paths.size();) out[i].emplace(open(paths[i]));
  };
  std::vector<std::thread> pool;
  const size_t n = std::min<size_t>(threads, paths.size());
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return out;
}

Result<Dataset> Dataset::OpenShardSet(const std::string& path, const std::string& first,
                                      const ShardOpener& given, uint32_t threads) {
  // Opened ahead, all at once, where `first`'s name says how many shards there are: the same
  // results, taken below in the order one by one would take them (so the same error first).
  std::vector<std::optional<Result<OpenedShard>>> ahead;
  std::string named_base;
  uint32_t named_index = 0, named_count = 0;
  if (threads > 1 && format::ParseShardName(first, &named_base, &named_index, &named_count) &&
      named_count > 1 && named_count <= kMaxShardsOpenedAhead) {
    std::vector<std::string> all;
    for (uint32_t i = 0; i < named_count; ++i)
      all.push_back(format::ShardPath(named_base, i, named_count));
    ahead = OpenAll(all, given, threads);
  }
  auto open = [&](const std::string& p) -> Result<OpenedShard> {
    uint32_t i = 0, count = 0;
    std::string base;
    if (!ahead.empty() && format::ParseShardName(p, &base, &i, &count) && base == named_base &&
        count == named_count && ahead[i].has_value()) {
      Result<OpenedShard> r = std::move(*ahead[i]);
      ahead[i].reset();
      return r;
    }
    return given(p);
  };
  RF_ASSIGN_OR_RETURN(OpenedShard s0, open(first));
  RF_RETURN_IF_ERROR(CheckShardName(first, s0.header));
  const uint32_t n = s0.header.shard_count;
  std::vector<OpenedShard> shards;
  std::vector<std::string> paths;
  if (n == 1) {
    paths.push_back(first);
    shards.push_back(std::move(s0));
  } else {
    const std::string base = format::ShardBase(first);
    for (uint32_t i = 0; i < n; ++i) {
      std::string p = format::ShardPath(base, i, n);
      if (p == first) {
        paths.push_back(p);
        shards.push_back(s0);
        continue;
      }
      auto si = open(p);
      if (!si.ok() && si.status().IsNotFound() && !FileExists(p)) {
        return Status::NotFound(p,
                                "shard " + std::to_string(i) + " of " + std::to_string(n) +
                                    " is missing: an incomplete dataset (an interrupted "
                                    "conversion?); convert it again",
                                ENOENT);
      }
      if (!si.ok()) return si.status();
      RF_RETURN_IF_ERROR(CheckShardName(p, si->header));
      paths.push_back(p);
      shards.push_back(std::move(si.value()));
    }
  }
  for (uint32_t i = 1; i < n; ++i) {
    if (!SameDataset(shards[i].header, shards[0].header)) {
      return std::move(
          Status::Corruption(paths[i], "shard does not belong to the dataset of " + paths[0])
              .WithOffset(0));
    }
  }
  uint64_t samples = 0;
  for (auto& s : shards) samples += s.header.shard_samples;
  if (samples != shards[0].header.total_samples) {
    return Status::Corruption(paths[0], "shards hold " + std::to_string(samples) +
                                            " samples, header says " +
                                            std::to_string(shards[0].header.total_samples));
  }

  Dataset d;
  d.header_ = shards[0].header;
  d.class_names_ = shards[0].class_names;
  d.path_ = path;
  const bool records = d.header_.variable();
  d.shard_paths_ = std::move(paths);
  d.chunks_.resize(d.header_.total_chunks);
  for (uint32_t i = 0; i < n; ++i) {
    d.shard_bytes_.push_back(shards[i].size);
    for (const format::ChunkEntry& e : shards[i].entries) {
      d.chunks_[e.index] = ChunkLocation{i, e, e.first_sample};
      d.max_chunk_bytes_ = std::max(d.max_chunk_bytes_, e.data_bytes);
      uint64_t& most = e.compressed() ? d.max_stored_bytes_ : d.max_raw_bytes_;
      most = std::max(most, e.stored_bytes);
      d.compressed_chunks_ += e.compressed() ? 1 : 0;
      d.data_bytes_ += e.data_bytes;
    }
  }
  // Records of any size: each chunk's first record is where the chunk before it ended (within a
  // file DecodeIndex checked the order; across the shards it is checked here).
  for (uint64_t g = 0, next = 0; records && g < d.chunks_.size(); ++g) {
    const ChunkLocation& c = d.chunks_[g];
    if (c.entry.first_sample != next) {
      return std::move(
          Status::Corruption(d.shard_paths_[c.shard],
                             "chunk's first record is " + std::to_string(c.entry.first_sample) +
                                 ", the chunk before it ends at " + std::to_string(next))
              .WithChunk(c.entry.index)
              .WithOffset(c.entry.offset));
    }
    next += c.entry.sample_count;
  }
  d.parts_.push_back(DatasetPart{path, d.header_, 0, d.shard_paths_.size(), 0, d.chunks_.size(), 0,
                                 d.header_.total_samples});
  return d;
}

Result<Dataset> Dataset::OpenDirectory(const std::string& dir) {
  RF_ASSIGN_OR_RETURN(const std::vector<std::string> names, DatasetNamesIn(dir));
  return OpenParts(dir, names,
                   [&](const std::string& name) { return OpenNamed(InDirectory(dir, name)); });
}

Result<Dataset> Dataset::OpenParts(const std::string& dir, const std::vector<std::string>& names,
                                   const PartOpener& open) {
  if (names.empty()) {
    return Status::NotFound(dir,
                            "no dataset in this directory (a directory is read as the datasets "
                            "in it: .rfd files, or complete shard sets)");
  }
  Dataset d;
  d.path_ = dir;
  d.directory_ = true;
  uint64_t samples = 0;
  for (const std::string& name : names) {
    RF_ASSIGN_OR_RETURN(Dataset part, open(name));
    if (!d.parts_.empty()) {
      RF_RETURN_IF_ERROR(CheckSameRecords(d.parts_[0].header, d.shard_paths_[0], part.header(),
                                          part.shard_path(0)));
    }
    // Each part's count fits 64 bits (its header's); their sum could wrap.
    if (part.sample_count() > UINT64_MAX - samples) {
      return std::move(
          Status::InvalidArgument("its parts hold more than 2^64 - 1 samples").WithPath(dir));
    }
    samples += part.sample_count();
    d.AppendPart(std::move(part));
  }
  format::Header& h = d.header_;
  h = d.parts_[0].header;
  if (d.parts_.size() == 1) return d;  // the directory reads as its one dataset, id and all
  std::vector<const format::Header*> headers;
  std::vector<uint64_t> ids;
  h.total_samples = h.total_chunks = 0;
  for (const DatasetPart& p : d.parts_) {
    headers.push_back(&p.header);
    ids.push_back(p.header.dataset_id);
    h.total_samples += p.sample_count;
    h.total_chunks += p.chunk_count;
    h.chunk_samples = std::max(h.chunk_samples, p.header.chunk_samples);
    h.version = std::max(h.version, p.header.version);
    if (!(p.header.codec == h.codec)) h.codec = CodecSpec{};
    // Image parts of several codecs (CheckSameRecords let them differ): images of any codec.
    if (p.header.media_type != h.media_type) h.media_type = "image/*";
  }
  h.dataset_id = PartsDatasetId(ids);
  if (h.variable()) {  // the shape bounds every record: the largest part's
    uint64_t largest = 0;
    for (const DatasetPart& p : d.parts_) largest = std::max(largest, p.header.Shape().front());
    RF_RETURN_IF_ERROR(format::SetSampleShape({largest}, &h));
  }
  if (!PoolStatistics(headers, h.channels, &h.mean, &h.stddev)) {
    return std::move(Status::InvalidArgument(
                         "its parts' channel statistics, pooled, overflow float32 (samples near "
                         "its range)")
                         .WithPath(dir));
  }
  return d;
}

void Dataset::AppendPart(Dataset&& part) {
  DatasetPart p = std::move(part.parts_.front());
  p.first_file = shard_paths_.size();
  p.first_chunk = chunks_.size();
  p.first_sample = parts_.empty() ? 0 : parts_.back().first_sample + parts_.back().sample_count;
  for (ChunkLocation c : part.chunks_) {
    c.shard += static_cast<uint32_t>(p.first_file);
    c.first_sample += p.first_sample;
    chunks_.push_back(c);
  }
  if (parts_.empty())
    class_names_ = std::move(part.class_names_);  // every part's (CheckSameRecords)
  for (std::string& f : part.shard_paths_) shard_paths_.push_back(std::move(f));
  for (uint64_t b : part.shard_bytes_) shard_bytes_.push_back(b);
  for (RemoteObject& o : part.objects_) objects_.push_back(std::move(o));
  max_chunk_bytes_ = std::max(max_chunk_bytes_, part.max_chunk_bytes_);
  max_raw_bytes_ = std::max(max_raw_bytes_, part.max_raw_bytes_);
  max_stored_bytes_ = std::max(max_stored_bytes_, part.max_stored_bytes_);
  compressed_chunks_ += part.compressed_chunks_;
  data_bytes_ += part.data_bytes_;
  parts_.push_back(std::move(p));
}

std::vector<std::string> DatasetFilesNamed(const std::string& name) {
  std::vector<std::string> files;
  if (FileExists(name)) files.push_back(name);
  for (std::string& f : ShardFilesNamed(name)) files.push_back(std::move(f));
  return files;
}

bool IsDatasetFileNamed(std::string_view file, std::string_view name) {
  if (file == name) return true;
  std::string base;
  uint32_t index = 0, count = 0;
  return format::ParseShardName(std::string(file), &base, &index, &count) && base == name;
}

bool IsDatasetFile(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  Result<File> f = File::Open(path, O_RDONLY);
  char magic[sizeof format::kMagic];
  return f.ok() && f->ReadAt(magic, sizeof magic, 0).ok() &&
         std::memcmp(magic, format::kMagic, sizeof magic) == 0;
}

Status CheckSameRecords(const format::Header& a, const std::string& a_path, const format::Header& b,
                        const std::string& b_path, RecordsUse use) {
  auto differ = [&](std::string_view field, std::string_view in_a, std::string_view in_b) {
    std::string what = "holds other records than " + a_path + ": ";
    what.append(field).append(" ").append(in_b).append(", not ").append(in_a);
    what += use == RecordsUse::kDirectory
                ? " (the datasets of a directory are read as one, so they must hold the same "
                  "records)"
                : " (the datasets of a mixture are drawn into the same batches, so they must "
                  "hold the same records)";
    return std::move(Status::InvalidArgument(what).WithPath(b_path));
  };
  auto labels = [](const format::Header& h) {
    return h.HasLabels() ? std::to_string(h.num_classes) + " classes" : std::string("no labels");
  };
  if (a.record_kind != b.record_kind) {
    return differ("record kind", format::RecordKindName(a.record_kind),
                  format::RecordKindName(b.record_kind));
  }
  if (a.sample_dtype != b.sample_dtype)
    return differ("sample dtype", DTypeName(a.sample_dtype), DTypeName(b.sample_dtype));
  // Records of any size: the shape is each part's largest record, not what a record is.
  if (!a.variable() && a.Shape() != b.Shape()) {
    return differ("sample shape", format::ShapeText(a.Shape()), format::ShapeText(b.Shape()));
  }
  // Image records of any codecs read alike (each record's codec is known by its first bytes).
  if (a.media_type != b.media_type &&
      !(format::IsImageMediaType(a.media_type) && format::IsImageMediaType(b.media_type))) {
    return differ("media type", a.media_type.empty() ? "(none)" : a.media_type,
                  b.media_type.empty() ? "(none)" : b.media_type);
  }
  // Samples of several fields: the same fields, in the same order.
  if (format::FieldsText(a.fields) != format::FieldsText(b.fields))
    return differ("fields", format::FieldsText(a.fields), format::FieldsText(b.fields));
  // Where the records came from: a tool writing them back (export --format megatron) reads
  // the first part's origin for all of them (token records'; an image dataset's origin, its
  // input and order, is the parts' own).
  if (use == RecordsUse::kDirectory && a.record_kind == format::RecordKind::kTokens &&
      a.origin != b.origin) {
    return differ("origin", a.origin.empty() ? "(none)" : a.origin,
                  b.origin.empty() ? "(none)" : b.origin);
  }
  // The labels' names (their blocks' size and checksum: the same names give the same block).
  if (a.names_bytes != b.names_bytes || a.names_checksum != b.names_checksum) {
    auto names = [](const format::Header& h) {
      return h.names_bytes == 0 ? std::string("(none)")
                                : "a block of " + std::to_string(h.names_bytes) + " bytes";
    };
    return differ("class names", names(a), names(b));
  }
  if (a.num_classes != b.num_classes) return differ("labels", labels(a), labels(b));
  if (a.HasLabels() && a.label_dtype != b.label_dtype)
    return differ("label dtype", DTypeName(a.label_dtype), DTypeName(b.label_dtype));
  return Status::Ok();
}

bool PoolStatistics(const std::vector<const format::Header*>& parts, uint32_t channels,
                    std::array<float, format::kMaxChannels>* mean,
                    std::array<float, format::kMaxChannels>* stddev) {
  *mean = parts[0]->mean;
  *stddev = parts[0]->stddev;
  double n = 0;
  for (const format::Header* p : parts) n += static_cast<double>(p->total_samples);
  for (uint32_t c = 0; c < std::min(channels, format::kMaxChannels); ++c) {
    double m = 0;
    for (const format::Header* p : parts) m += static_cast<double>(p->total_samples) * p->mean[c];
    m /= n;
    double var = 0;
    for (const format::Header* p : parts) {
      const double s = p->stddev[c], d = p->mean[c] - m;
      var += static_cast<double>(p->total_samples) * (s * s + d * d);
    }
    (*mean)[c] = static_cast<float>(m);
    (*stddev)[c] = static_cast<float>(std::sqrt(var / n));
    if (!std::isfinite((*mean)[c]) || !std::isfinite((*stddev)[c])) return false;
  }
  return true;
}

uint64_t PartsDatasetId(const std::vector<uint64_t>& part_ids) {
  std::vector<uint64_t> words = {part_ids.size()};
  words.insert(words.end(), part_ids.begin(), part_ids.end());
  return Checksum(words.data(), words.size() * sizeof(uint64_t)) | 1;
}

std::vector<uint32_t> Dataset::ChunkSampleCounts() const {
  std::vector<uint32_t> n(chunks_.size());
  for (size_t g = 0; g < n.size(); ++g) n[g] = chunks_[g].entry.sample_count;
  return n;
}

uint64_t Dataset::total_bytes() const {
  uint64_t t = 0;
  for (uint64_t b : shard_bytes_) t += b;
  return t;
}

}  // namespace rf
