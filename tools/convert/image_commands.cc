// The images subcommand: an ImageFolder tree or WebDataset .tar shards as image/jpeg records, one
// an image, its original bytes or (--max-side, --quality) re-encoded, with int labels
// (image_converter.h).
#include <filesystem>
#include <iostream>

#include "tools/convert/cli_options.h"
#include "tools/convert/commands.h"
#include "tools/convert/image_converter.h"
#include "tools/convert/image_inputs.h"
#include "tools/convert/input_file.h"

namespace rf::convert {

Status RunImagesCommand(const std::vector<std::string>& args, std::ostream& out) {
  std::vector<std::string> inputs;
  std::string output, chunk_size = "4MiB", max_record_size = "64MiB";
  uint32_t shards = 1, max_image_side = kDefaultMaxImageSide, max_side = 0, quality = 90,
           threads = 0;
  CodecFlags codec;
  bool quiet = false;
  po::options_description desc("images options");
  auto add = desc.add_options();
  add("input", po::value(&inputs)->required()->multitoken(),
      "an ImageFolder directory (one subfolder a class, indexed in sorted order), or WebDataset "
      ".tar shards (KEY.jpg with KEY.cls), in order (positional)");
  add("output,o", po::value(&output)->required(), "the dataset to write (OUT.rfd)");
  add("chunk-size", po::value(&chunk_size)->default_value(chunk_size),
      "target chunk size (4KiB to 1GiB); a chunk ends where the next image would pass it");
  add("shards", po::value(&shards)->default_value(shards), "number of shard files");
  add("max-record-size", po::value(&max_record_size)->default_value(max_record_size),
      "the largest image file (up to 1GiB); a larger one is refused");
  add("max-image-side", po::value(&max_image_side)->default_value(max_image_side),
      "the most pixels a side of an image stored as it is, from its JPEG header (1 to 65535); a "
      "larger one is refused before anything is allocated for it (with --max-side, which may not "
      "pass it, every stored image is within it)");
  add("max-side", po::value(&max_side),
      "re-encode (1 to 65535): an image with a side above N is resized to N on its longer side, "
      "and a JPEG the decoders do not take as it is (progressive, CMYK, extended, "
      "arithmetic-coded) is converted, each re-encoded as a baseline JPEG at --quality; the "
      "others are stored as they are (without it, nothing is re-encoded)");
  add("quality", po::value(&quality)->default_value(quality),
      "the JPEG quality of a re-encode (1 to 100; only with --max-side)");
  add("threads", po::value(&threads)->default_value(threads),
      "threads that check and re-encode images while one reads and one writes (0: the CPUs this "
      "process may run on); the dataset is the same whatever the count");
  AddCodecOptions(desc, codec);
  add("quiet,q", po::bool_switch(&quiet), "no progress bar and no summary line");
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  if (!ParseCommandLine("images", "DIR | SHARD.tar... -o OUT.rfd [options]", desc, &pos, args, vm,
                        out))
    return Status::Ok();
  ImageConvertOptions o;
  o.chunk_bytes = ParseSizeFlag("--chunk-size", chunk_size);
  if (o.chunk_bytes < format::kAlign || o.chunk_bytes > kMaxChunkBytes)
    throw UsageError("--chunk-size must be from 4KiB to 1GiB, not '" + chunk_size + "'");
  if (shards == 0 || shards > 99999) throw UsageError("--shards must be 1 to 99999");
  o.shards = shards;
  o.max_record_bytes = ParseSizeFlag("--max-record-size", max_record_size);
  if (o.max_record_bytes < 1 || o.max_record_bytes > format::kMaxChunkTarget)
    throw UsageError("--max-record-size must be from 1 byte to 1GiB, not '" + max_record_size +
                     "'");
  if (max_image_side == 0 || max_image_side > 65535)
    throw UsageError("--max-image-side must be 1 to 65535");
  o.max_image_side = max_image_side;
  if (vm.count("max-side") != 0) {
    if (max_side == 0 || max_side > 65535)
      throw UsageError("--max-side must be 1 to 65535, not " + std::to_string(max_side));
    if (max_side > max_image_side)
      throw UsageError("--max-side " + std::to_string(max_side) +
                       " is more than --max-image-side " + std::to_string(max_image_side) +
                       ", which every stored image must be within: raise --max-image-side");
    o.max_side = max_side;
  } else if (!vm["quality"].defaulted()) {
    throw UsageError("--quality is the quality of a re-encode: give --max-side too");
  }
  if (quality == 0 || quality > 100)
    throw UsageError("--quality must be 1 to 100, not " + std::to_string(quality));
  o.quality = static_cast<int>(quality);
  if (threads > 1024) throw UsageError("--threads " + std::to_string(threads) + ": at most 1024");
  o.threads = threads;
  const CodecChoice c = ToCodecChoice(codec);
  if (c.format_version == 1)
    throw UsageError("--format-version 1 holds fixed-shape samples only: images need version 2");
  o.codec = c.codec;
  o.compress_threads = c.threads;
  o.format_version = c.format_version;
  o.progress = !quiet;

  std::error_code ec;
  const bool folder = inputs.size() == 1 && std::filesystem::is_directory(inputs[0], ec);
  if (!folder) {
    for (const std::string& in : inputs) {
      if (std::filesystem::is_directory(in, ec))
        throw UsageError("give one ImageFolder directory, or .tar shards, not both ('" + in + "')");
      if (!in.ends_with(".tar"))
        throw UsageError("'" + in + "' is neither a directory (an ImageFolder) nor a .tar shard");
    }
  }
  if (!folder) RF_RETURN_IF_ERROR(CheckInputsAreRegular(inputs));
  Result<std::unique_ptr<ImageSource>> source =
      folder ? OpenImageFolderSource(inputs[0], o.max_record_bytes)
             : OpenWebDatasetSource(inputs, o.max_record_bytes);
  if (!source.ok()) return source.status();
  // Said before the conversion, and under --quiet too: the tree holds what the dataset will not.
  if (const std::string links = LinksNotFollowedText((*source)->links_not_followed());
      !links.empty()) {
    std::cerr << "ringfeed-convert: passing over " << links << "\n";
  }
  RF_ASSIGN_OR_RETURN(ImageConvertSummary s, ConvertImages(**source, output, o));
  if (!quiet) out << ImageConvertReport(s);
  return Status::Ok();
}

}  // namespace rf::convert
