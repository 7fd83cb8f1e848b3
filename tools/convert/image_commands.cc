// The images subcommand: an ImageFolder tree or WebDataset .tar shards as image records, one
// an image, its original bytes or (--max-side, --quality) re-encoded, with int labels
// (image_converter.h).
#include <filesystem>
#include <iostream>

#include "tools/convert/commands.h"
#include "tools/convert/convert_options.h"
#include "tools/convert/image_converter.h"
#include "tools/convert/image_inputs.h"
#include "tools/convert/input_file.h"

namespace rf::convert {

Status RunImagesCommand(const std::vector<std::string>& args, std::ostream& out) {
  static constexpr ConvertCommand kImages = {"images", kConvertImages,
                                             "DIR | SHARD.tar... -o OUT.rfd [options]"};
  RF_ASSIGN_OR_RETURN(const std::optional<ConvertFlags> f, ReadConvertFlags(kImages, args, out));
  if (!f) return Status::Ok();  // --help
  const ConvertConfig& c = f->config;
  const ConvertConfig::Images& images = c.images_options;
  if (f->given.count("max-side") != 0 && images.max_side > images.max_image_side) {
    return Status::Usage("--max-side " + std::to_string(images.max_side) +
                         " is more than --max-image-side " + std::to_string(images.max_image_side) +
                         ", which every stored image must be within: raise --max-image-side");
  }
  if (f->given.count("quality") != 0 && f->given.count("max-side") == 0) {
    return Status::Usage("--quality is the quality of a re-encode: give --max-side too");
  }
  WriterConfig writer = c.writer;
  writer.spec.record_kind =
      images.fields.empty() ? format::RecordKind::kBytes : format::RecordKind::kFields;
  RF_RETURN_IF_ERROR(CheckWriterVersion(writer, OptionFace::kCommandLine));
  ImageConvertOptions o;
  o.chunk_bytes = c.writer.options.chunk_bytes;
  o.shards = c.writer.options.shards;
  o.max_record_bytes = c.writer.options.max_record_bytes;
  o.max_image_side = images.max_image_side;
  o.max_side = images.max_side;
  o.quality = static_cast<int>(images.quality);
  o.skip_bad = images.skip_bad;
  o.list_images = images.list_images;
  o.threads = c.threads;
  SetCodecFlags(c, &o);
  const std::vector<std::string>& inputs = c.inputs;

  std::error_code ec;
  const bool folder = inputs.size() == 1 && std::filesystem::is_directory(inputs[0], ec);
  if (!folder) {
    for (const std::string& in : inputs) {
      if (std::filesystem::is_directory(in, ec)) {
        return Status::Usage("give one ImageFolder directory, or .tar shards, not both (" +
                             QuoteUserText(in) + ")");
      }
      if (!in.ends_with(".tar")) {
        return Status::Usage(QuoteUserText(in) +
                             " is neither a directory (an ImageFolder) nor a .tar shard");
      }
    }
  }
  if (!folder) RF_RETURN_IF_ERROR(CheckInputsAreRegular(inputs));
  // --fields jpg,txt,cls (or given again): each extension once, in the order named.
  std::vector<std::string> fields;
  for (const std::string& item : images.fields) {
    size_t start = 0;
    for (size_t comma; (comma = item.find(',', start)) != std::string::npos; start = comma + 1)
      fields.push_back(item.substr(start, comma - start));
    fields.push_back(item.substr(start));
  }
  Result<std::unique_ptr<ImageSource>> source =
      folder ? OpenImageFolderSource(inputs[0], o.max_record_bytes, images.keep_order, fields)
             : OpenWebDatasetSource(inputs, o.max_record_bytes, fields);
  if (!source.ok()) return source.status();
  // Said before the conversion, and under --quiet too: the tree holds what the dataset will not.
  if (const std::string links = LinksNotFollowedText((*source)->links_not_followed());
      !links.empty()) {
    std::cerr << "ringfeed-convert: passing over " << links << "\n";
  }
  RF_ASSIGN_OR_RETURN(ImageConvertSummary s, ConvertImages(**source, c.output, o));
  if (!c.quiet) out << ImageConvertReport(s);
  return Status::Ok();
}

}  // namespace rf::convert
