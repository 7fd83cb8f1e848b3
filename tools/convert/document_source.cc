#include "tools/convert/document_source.h"

namespace rf::convert {

Status TooLongDocument(const DocumentPosition& at, uint64_t doc, std::optional<uint64_t> ids,
                       uint64_t max_ids) {
  const std::string where = at.detail.empty() ? "" : at.detail + ": ";
  const std::string held =
      ids ? std::to_string(*ids) + " ids, more than the " + std::to_string(max_ids)
          : "more than the " + std::to_string(max_ids) + " ids";
  return std::move(Status::InvalidArgument(where + "document " + std::to_string(doc) + " holds " +
                                           held +
                                           " a record holds (--max-record-size; a record is read "
                                           "whole into one ring slot)")
                       .WithPath(at.path)
                       .WithOffset(at.offset));
}

}  // namespace rf::convert
