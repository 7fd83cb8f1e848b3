#include "tools/convert/image_converter.h"

#include <chrono>
#include <cstdio>
#include <utility>

#include "core/cpus.h"
#include "io/file.h"
#include "io/format.h"
#include "tools/convert/elem_type.h"
#include "tools/convert/image_pipeline.h"
#include "tools/convert/progress.h"
#include "tools/convert/record_output.h"

namespace rf::convert {

Result<ImageConvertSummary> ConvertImages(ImageSource& src, const std::string& out_path,
                                          const ImageConvertOptions& o) {
  // The command checks these first, naming its options; here for any other caller.
  if (o.max_side > o.max_image_side || (o.max_side != 0 && (o.quality < 1 || o.quality > 100)))
    return Status::Usage("max_side " + std::to_string(o.max_side) + " above max_image_side " +
                         std::to_string(o.max_image_side) + ", or quality " +
                         std::to_string(o.quality) + " not 1 to 100");
  const std::vector<std::string> inputs = src.input_paths();
  const std::string report = o.skip_bad ? SkippedReportPath(out_path) : "";
  const std::string list = o.list_images ? ImageListPath(out_path) : "";
  std::vector<std::string> beside;  // the outputs beside the dataset
  for (const std::string& p : {report, list})
    if (!p.empty()) beside.push_back(p);
  RF_RETURN_IF_ERROR(CheckRecordOutputs(out_path, o.shards, inputs, beside));

  const auto start = std::chrono::steady_clock::now();
  ImageConvertSummary s;
  s.classes = src.classes();
  s.label_dtype = s.classes <= 256     ? DType::kUInt8
                  : s.classes <= 65536 ? DType::kUInt16
                                       : DType::kInt32;
  DatasetSpec spec;
  spec.record_kind = format::RecordKind::kBytes;
  spec.sample_dtype = DType::kUInt8;
  spec.media_type = "image/jpeg";  // or another, once the images are known (below)
  spec.has_labels = true;
  spec.label_dtype = s.label_dtype;
  spec.num_classes = s.classes;
  spec.class_names = src.class_names();
  spec.origin = src.origin();  // the input and the order its images were stored in
  // Samples of several fields: each sample's image and its other fields, one record.
  spec.fields = src.fields();
  if (!spec.fields.empty()) {
    spec.record_kind = format::RecordKind::kFields;
    spec.media_type.clear();
    spec.has_labels = s.classes != 0;
    if (!spec.has_labels) spec.label_dtype = DType::kUInt8;
  }
  std::vector<uint8_t> sample;
  std::vector<const uint8_t*> parts;
  std::vector<uint64_t> sizes;
  RF_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> writer,
                      DatasetWriter::Create(out_path, spec, RecordWriterOptions(o, inputs)));

  constexpr size_t kNamed = 10;
  std::vector<std::string> bad;
  uint64_t bad_count = 0, read_bytes = 0;
  std::string skipped = "# ringfeed-convert images: the images left out of " + out_path +
                        " (--skip-bad): path, tab, reason\n";
  std::string listed = "# ringfeed-convert images: the source of each sample of " + out_path +
                       ", in the dataset's order: sample index, tab, path, tab, label\n";
  std::vector<uint8_t> label(8);
  Progress progress("converting", src.input_bytes(), o.progress);
  ImageRules rules;
  rules.max_image_side = o.max_image_side;
  rules.max_side = o.max_side;
  rules.quality = o.quality;
  const uint32_t threads = o.threads != 0 ? o.threads : AvailableCpus();
  RF_RETURN_IF_ERROR(RunImagePipeline(src, rules, threads, [&](const CheckedImage& c) -> Status {
    read_bytes += c.item.bytes.size();
    progress.Update(read_bytes);
    if (!c.refused.empty()) {
      if (bad.size() < kNamed) bad.push_back(c.item.name + ": " + c.refused);
      ++bad_count;
      if (o.skip_bad) {
        skipped += c.item.name;
        skipped += '\t';
        skipped += c.refused;
        skipped += '\n';
      }
      return Status::Ok();
    }
    // Without skip_bad, nothing more is written once one is refused; every bad one is named.
    if (bad_count != 0 && !o.skip_bad) return Status::Ok();
    StoreInteger(ElemOf(s.label_dtype), c.item.label, label.data(), 0);
    const std::vector<uint8_t>* record = &c.stored();
    if (!spec.fields.empty()) {
      // The image in its field's place, the others in theirs (the label is the chunk's).
      parts.clear();
      sizes.clear();
      size_t extra = 0;
      for (const format::FieldSpec& f : spec.fields) {
        if (!f.stored()) continue;
        const std::vector<uint8_t>& b = f.image() ? c.stored() : c.item.extras.at(extra++);
        parts.push_back(b.data());
        sizes.push_back(b.size());
      }
      sample.clear();
      format::EncodeSample(spec.fields, parts.data(), sizes.data(), &sample);
      record = &sample;
    }
    const uint64_t offsets[2] = {0, record->size()};
    RF_RETURN_IF_ERROR(writer->AppendRecords(record->data(), offsets,
                                             spec.has_labels ? label.data() : nullptr, 1));
    if (o.list_images) {
      listed += std::to_string(s.images);
      listed += '\t';
      listed += c.item.name;
      listed += '\t';
      listed += std::to_string(c.item.label);
      listed += '\n';
    }
    ++s.images;
    s.reencoded += c.reencoded;
    const ImageCodec codec = c.stored_codec();
    ++(codec == ImageCodec::kPng ? s.png : codec == ImageCodec::kWebp ? s.webp : s.jpeg);
    if (codec == ImageCodec::kJpeg && !c.reencoded) {
      s.progressive += c.header.kind.find("progressive") != std::string::npos;
      s.cmyk += c.header.kind.starts_with("CMYK");
    }
    return Status::Ok();
  }));
  progress.Finish();
  if (bad_count != 0 && (!o.skip_bad || s.images == 0)) {
    std::string what = std::to_string(bad_count) + " image" + (bad_count == 1 ? "" : "s");
    what += s.images == 0 && o.skip_bad ? " refused and none left, nothing written: "
                                        : " refused, nothing written: ";
    for (size_t i = 0; i < bad.size(); ++i) what += (i ? "; " : "") + bad[i];
    if (bad_count > bad.size()) what += "; and " + std::to_string(bad_count - bad.size()) + " more";
    if (!o.skip_bad) {
      what += " (--skip-bad writes the others and lists these in " + SkippedReportPath(out_path);
      what += o.max_side == 0 ? "; --max-side N resizes images above --max-image-side)" : ")";
    }
    return Status::InvalidArgument(what);
  }
  // The media type names the codec where the records hold one, image/* where several.
  const int codecs = (s.jpeg != 0) + (s.png != 0) + (s.webp != 0);
  s.media_type = codecs > 1 ? "image/*"
                 : s.png    ? "image/png"
                 : s.webp   ? "image/webp"
                            : "image/jpeg";
  RF_RETURN_IF_ERROR(writer->SetMediaType(s.media_type));
  if (!spec.fields.empty()) s.fields = format::FieldsText(writer->fields());
  RF_ASSIGN_OR_RETURN(RecordOutput written, FinishRecordOutput(*writer, out_path));
  if (o.skip_bad) {
    RF_RETURN_IF_ERROR(WriteFileAtomically(report, skipped));
    s.skipped = bad_count;
    s.skipped_report = report;
  }
  if (o.list_images) {
    RF_RETURN_IF_ERROR(WriteFileAtomically(list, listed));
    s.image_list = list;
  }
  s.seconds = std::chrono::duration<double>(written.finished - start).count();
  s.bytes = written.bytes;
  s.paths = std::move(written.paths);
  s.removed = std::move(written.removed);
  s.chunks = written.chunks;
  s.input_bytes = read_bytes;
  s.passed_over = src.passed_over();
  s.links_not_followed = src.links_not_followed();
  s.max_side = o.max_side;
  s.quality = o.quality;
  return s;
}

namespace {

std::string Beside(const std::string& out_path, const char* suffix) {
  const std::string ext = format::kExtension;
  const std::string stem =
      out_path.ends_with(ext) ? out_path.substr(0, out_path.size() - ext.size()) : out_path;
  return stem + suffix;
}

}  // namespace

std::string SkippedReportPath(const std::string& out_path) {
  return Beside(out_path, ".skipped.tsv");
}

std::string ImageListPath(const std::string& out_path) { return Beside(out_path, ".images.tsv"); }

namespace {

std::string Images(uint64_t n) { return std::to_string(n) + (n == 1 ? " image" : " images"); }

// "re-encoded 3 images above --max-side 512 at quality 90: resized to 512 pixels on the longer
// side, as baseline JPEGs".
std::string ReencodeReport(const ImageConvertSummary& s) {
  const std::string side = std::to_string(s.max_side);
  if (s.reencoded == 0)
    return "re-encoded no image: each is within --max-side " + side +
           " pixels a side, stored as it is\n";
  return "re-encoded " + Images(s.reencoded) + " above --max-side " + side + " at quality " +
         std::to_string(s.quality) + ": resized to " + side +
         " pixels on the longer side, as baseline JPEGs\n";
}

// "27000 JPEG (2443 progressive, 22 CMYK), 300 PNG, 12 WebP".
std::string CodecsText(const ImageConvertSummary& s) {
  std::string out;
  const auto add = [&](uint64_t n, const char* name) {
    if (n == 0) return;
    if (!out.empty()) out += ", ";
    out += std::to_string(n) + " " + name;
  };
  add(s.jpeg, "JPEG");
  if (s.progressive != 0 || s.cmyk != 0) {
    out += " (";
    if (s.progressive != 0) out += std::to_string(s.progressive) + " progressive";
    if (s.progressive != 0 && s.cmyk != 0) out += ", ";
    if (s.cmyk != 0) out += std::to_string(s.cmyk) + " CMYK";
    out += ")";
  }
  add(s.png, "PNG");
  add(s.webp, "WebP");
  return out;
}

}  // namespace

std::string LinksNotFollowedText(const std::vector<std::string>& links) {
  if (links.empty()) return "";
  constexpr size_t kNamed = 5;
  std::string out = std::to_string(links.size()) +
                    (links.size() == 1 ? " link to a directory" : " links to directories") +
                    ", not followed: ";
  for (size_t i = 0; i < links.size() && i < kNamed; ++i) out += (i ? ", " : "") + links[i];
  if (links.size() > kNamed) out += " and " + std::to_string(links.size() - kNamed) + " more";
  return out;
}

std::string ImageConvertReport(const ImageConvertSummary& s) {
  char line[512];
  const double mb = static_cast<double>(s.input_bytes) / 1e6;
  std::snprintf(line, sizeof line,
                "wrote %s: %llu images (%s; %s) %s, %llu chunks, %.1f MB "
                "stored; %.1f MB of images in %.2f s (%.1f MB/s)\n",
                s.paths.front().c_str(), static_cast<unsigned long long>(s.images),
                CodecsText(s).c_str(), s.media_type.c_str(),
                (s.classes == 0 ? std::string("without labels")
                                : "of " + std::to_string(s.classes) + " classes (" +
                                      std::string(DTypeName(s.label_dtype)) + " labels)")
                    .c_str(),
                static_cast<unsigned long long>(s.chunks), static_cast<double>(s.bytes) / 1e6, mb,
                s.seconds, s.seconds > 0 ? mb / s.seconds : 0.0);
  std::string out = line;
  if (s.passed_over != 0)
    out += "passed over " + std::to_string(s.passed_over) + " file" +
           (s.passed_over == 1 ? "" : "s") + " that are not images (by extension)\n";
  if (!s.links_not_followed.empty())
    out += "passed over " + LinksNotFollowedText(s.links_not_followed) + "\n";
  if (!s.fields.empty()) out += "each sample's fields: " + s.fields + "\n";
  if (s.max_side != 0) out += ReencodeReport(s);
  if (!s.skipped_report.empty())
    out += "left out " + Images(s.skipped) +
           " that could not be stored (--skip-bad): " + (s.skipped == 0 ? "none; " : "") +
           "listed in " + s.skipped_report + "\n";
  if (!s.image_list.empty())
    out += "listed each sample's source (--list-images) in " + s.image_list + "\n";
  return out + RemovedReport(s.removed);
}

}  // namespace rf::convert
