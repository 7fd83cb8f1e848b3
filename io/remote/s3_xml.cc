#include "io/remote/s3_xml.h"

#include <expat.h>

#include <memory>

namespace rf {
namespace {

// A document walked element by element: `path` is the open elements' names joined by '/'
// ("ListBucketResult/Contents/Key"), `text` the character data of the innermost one.
struct Walk {
  XML_Parser parser = nullptr;
  std::string path, text;
  bool doctype = false;
  // Called at each element's end with its path and its text.
  virtual void End(const std::string& path, const std::string& text) = 0;
  virtual ~Walk() = default;
};

void OnStart(void* data, const XML_Char* name, const XML_Char**) {
  auto* w = static_cast<Walk*>(data);
  if (!w->path.empty()) w->path += '/';
  w->path += name;
  w->text.clear();
}

void OnEnd(void* data, const XML_Char*) {
  auto* w = static_cast<Walk*>(data);
  w->End(w->path, w->text);
  w->text.clear();
  size_t slash = w->path.rfind('/');
  w->path.resize(slash == std::string::npos ? 0 : slash);
}

void OnText(void* data, const XML_Char* s, int len) {
  static_cast<Walk*>(data)->text.append(s, static_cast<size_t>(len));
}

void OnDoctype(void* data, const XML_Char*, const XML_Char*, const XML_Char*, int) {
  auto* w = static_cast<Walk*>(data);
  w->doctype = true;
  XML_StopParser(w->parser, XML_FALSE);
}

// Parses `body` through `w`; false, with expat's reason in *why, where it is not well formed.
bool Parse(std::string_view body, Walk& w, std::string* why) {
  std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> p(XML_ParserCreate("UTF-8"),
                                                                 XML_ParserFree);
  if (!p) {
    *why = "out of memory";
    return false;
  }
  w.parser = p.get();
  XML_SetUserData(p.get(), &w);
  XML_SetElementHandler(p.get(), OnStart, OnEnd);
  XML_SetCharacterDataHandler(p.get(), OnText);
  XML_SetStartDoctypeDeclHandler(p.get(), OnDoctype);
  bool ok =
      XML_Parse(p.get(), body.data(), static_cast<int>(body.size()), XML_TRUE) == XML_STATUS_OK;
  if (w.doctype) {
    *why = "a DOCTYPE, which an S3 answer never has";
    return false;
  }
  if (!ok) {
    *why = std::string(XML_ErrorString(XML_GetErrorCode(p.get()))) + " at line " +
           std::to_string(XML_GetCurrentLineNumber(p.get()));
  }
  return ok;
}

struct ErrorWalk : Walk {
  std::string code;
  void End(const std::string& path, const std::string& text) override {
    if (path == "Error/Code") code = text;
  }
};

struct ListWalk : Walk {
  S3ListPage page;
  bool root = false;
  void End(const std::string& path, const std::string& text) override {
    if (path == "ListBucketResult") {
      root = true;
    } else if (path == "ListBucketResult/Contents/Key") {
      page.keys.push_back(text);
    } else if (path == "ListBucketResult/CommonPrefixes/Prefix") {
      page.common_prefixes.push_back(text);
    } else if (path == "ListBucketResult/IsTruncated") {
      page.truncated = text == "true";
    } else if (path == "ListBucketResult/NextContinuationToken") {
      page.next_token = text;
    }
  }
};

}  // namespace

std::string S3ErrorCode(std::string_view body) {
  ErrorWalk w;
  std::string why;
  // A body cut short (only its first KiBs are kept) still names its code: <Code> comes first,
  // and the walk has seen it before the parse fails at the cut.
  if (body.empty() || body.size() > (1u << 20)) return "";
  Parse(body, w, &why);
  return w.code;
}

Result<S3ListPage> ParseListObjectsV2(std::string_view body, const std::string& shown) {
  ListWalk w;
  std::string why;
  if (body.size() > (1u << 30)) why = "a page over 1 GiB";
  if (why.empty() && !Parse(body, w, &why))
    return Status::Corruption(shown, "the ListObjectsV2 answer is not XML: " + why);
  if (!w.root)
    return Status::Corruption(shown, "the ListObjectsV2 answer has no <ListBucketResult>");
  if (w.page.truncated && w.page.next_token.empty())
    return Status::Corruption(shown,
                              "the ListObjectsV2 answer is truncated without a "
                              "NextContinuationToken");
  return std::move(w.page);
}

}  // namespace rf
