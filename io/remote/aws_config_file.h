// The AWS tools' two INI files, ~/.aws/config and ~/.aws/credentials, read as botocore reads
// them: "[section]" headers, "key = value" lines (keys lower-cased, values trimmed), full-line
// comments ('#' or ';'), and nested settings — a key with an empty value followed by indented
// "key = value" lines ("s3 =\n  endpoint_url = http://..."), stored as "s3.endpoint_url".
//
// Which section a profile is: in the config file "[profile NAME]" (and "[default]" for the
// default profile), in the credentials file "[NAME]"; AwsProfileSection says which.
//
// Secrets: the files hold secret keys. No message made here shows a line's text or a value:
// a malformed line is named by the file and its line number only.
//
// Thread safety: pure functions and value types.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "core/status.h"

namespace rf {

// One section's settings: "key" for top-level ones, "parent.key" for nested ones.
using AwsSettings = std::map<std::string, std::string, std::less<>>;

struct AwsConfigFile {
  std::string path;                                          // what was read, for messages
  std::map<std::string, AwsSettings, std::less<>> sections;  // by the name inside the brackets
  // The section `name`, or nullptr.
  const AwsSettings* Find(std::string_view name) const;
};

// The text of an AWS config or credentials file; `path` names it in messages. InvalidArgument
// "PATH:LINE: ..." for a line that is no header, no setting, no comment and no nested setting.
Result<AwsConfigFile> ParseAwsConfigFile(std::string_view text, const std::string& path);

// The file at `path`: an empty AwsConfigFile where there is none (as the AWS tools take it),
// IOError where it exists but cannot be read, or ParseAwsConfigFile's errors.
Result<AwsConfigFile> ReadAwsConfigFile(const std::string& path);

// The section that holds `profile`: in the config file (`config_file` true) "profile NAME",
// but "default" for the default profile; in the credentials file, NAME itself.
std::string AwsProfileSection(std::string_view profile, bool config_file);

}  // namespace rf
