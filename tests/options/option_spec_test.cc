// One option's text and values against its declaration: the same rule for every face, the bounds
// at both ends, and messages that name the option, the rule and what was given, with a user's
// bytes escaped.
#include "options/option_spec.h"

#include <gtest/gtest.h>

#include <limits>

namespace rf {
namespace {

std::string Refusal(const OptionSpec& s, std::string_view text,
                    OptionFace face = OptionFace::kCommandLine) {
  Result<OptionValue> v = ParseOptionText(s, text, face);
  if (v.ok()) return "";
  EXPECT_TRUE(v.status().IsUsage());
  return v.status().message();
}

OptionSpec Count(uint64_t max) {
  OptionSpec s = OptionSpec::Of("queue-depth", OptionType::kCount);
  s.Range(1, max);
  return s;
}

TEST(OptionSpec, CountTakesDecimalDigitsOnlyWithinBothBounds) {
  const OptionSpec s = Count(32768);
  Result<OptionValue> v = ParseOptionText(s, "32768", OptionFace::kCommandLine);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(std::get<uint64_t>(*v), 32768u);
  const std::string rule = "--queue-depth must be a whole number from 1 to 32768, got ";
  EXPECT_EQ(Refusal(s, "32769"), rule + "32769");
  EXPECT_EQ(Refusal(s, "0"), rule + "0");
  // What strtoul or Boost would have taken: a sign (-5 wrapped to 4294967291), hex, spaces,
  // exponents, and a value past 64 bits.
  for (const char* bad : {"-5", "+4", "0x10", " 4", "4 ", "1e3", "", "18446744073709551616"}) {
    EXPECT_EQ(Refusal(s, bad), rule + QuoteUserText(bad)) << bad;
  }
  // The Python spelling names it as Python does.
  EXPECT_EQ(Refusal(s, "0", OptionFace::kPython),
            "queue_depth must be a whole number from 1 to 32768, got 0");
}

TEST(OptionSpec, IntegerTakesOneSignAndItsNegativeBound) {
  OptionSpec s = OptionSpec::Of("gpu", OptionType::kInteger);
  s.Range(-1, 1023);
  Result<OptionValue> v = ParseOptionText(s, "-1", OptionFace::kCommandLine);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(std::get<int64_t>(*v), -1);
  EXPECT_EQ(Refusal(s, "-2"), "--gpu must be a whole number from -1 to 1023, got -2");
  EXPECT_EQ(Refusal(s, "--1"), "--gpu must be a whole number from -1 to 1023, got '--1'");
  EXPECT_EQ(Refusal(s, "1024"), "--gpu must be a whole number from -1 to 1023, got 1024");
}

TEST(OptionSpec, NumberIsDecimalAndFiniteWithOpenOrClosedEnds) {
  OptionSpec s = OptionSpec::Of("label-smoothing", OptionType::kNumber);
  s.RangeReal(0, 1, false, /*max_open=*/true);
  EXPECT_EQ(Refusal(s, "0"), "");
  EXPECT_EQ(Refusal(s, "0.999"), "");
  EXPECT_EQ(Refusal(s, "1"), "--label-smoothing must be a number in [0, 1), got 1");
  EXPECT_EQ(Refusal(s, "-0.5"), "--label-smoothing must be a number in [0, 1), got -0.5");
  for (const char* bad : {"nan", "inf", "-inf", "0x1p-2", "1e999", "", ".", "1,5"}) {
    EXPECT_EQ(Refusal(s, bad),
              "--label-smoothing must be a number in [0, 1), got " + QuoteUserText(bad))
        << bad;
  }
  OptionSpec eps = OptionSpec::Of("eps", OptionType::kNumber);
  eps.RangeReal(0, 1, /*min_open=*/true);
  EXPECT_EQ(Refusal(eps, "0"), "--eps must be a number in (0, 1], got 0");
  EXPECT_EQ(Refusal(eps, "1e-30"), "");
}

TEST(OptionSpec, NumbersAreEachHeldToTheRange) {
  OptionSpec s = OptionSpec::Of("std", OptionType::kNumbers);
  s.RangeReal(0, std::numeric_limits<float>::max(), /*min_open=*/true);
  Result<OptionValue> v = ParseOptionText(s, "0.5,2", OptionFace::kPython);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(std::get<std::vector<double>>(*v), (std::vector<double>{0.5, 2}));
  EXPECT_EQ(Refusal(s, "0.5,-1", OptionFace::kPython),
            "std must be a list of finite numbers > 0, got 0.5,-1");
  EXPECT_EQ(CheckOptionValue(s, std::vector<double>{-1.0}, OptionFace::kPython).message(),
            "std must be a list of finite numbers > 0, got -1");
}

// A float field's value is held as the field holds it, so what is written reads back to itself:
// the fuzzer's "--weights 0000000000018446744073709551615" (2^64, which a float holds exactly)
// was written at float precision and read back as another double.
TEST(OptionSpec, AFloatFieldsNumbersAreHeldWrittenAndReadAtFloatPrecision) {
  OptionSpec single = OptionSpec::Of("weights", OptionType::kNumbers);
  single.single_precision = true;
  OptionSpec dual = OptionSpec::Of("weights", OptionType::kNumbers);
  for (const OptionSpec* s : {&single, &dual}) {
    for (const char* text : {"0000000000018446744073709551615", "0.01", "1e-7,3.3", "16777217"}) {
      Result<OptionValue> v = ParseOptionText(*s, text, OptionFace::kCommandLine);
      ASSERT_TRUE(v.ok()) << text;
      const std::string written = OptionValueText(*s, *v);
      Result<OptionValue> back = ParseOptionText(*s, written, OptionFace::kCommandLine);
      ASSERT_TRUE(back.ok()) << written;
      EXPECT_EQ(*back, *v) << text << " written " << written;
    }
  }
  // The float field holds float(0.01) and writes it short; a double field holds 0.01 itself.
  const auto parsed = [](const OptionSpec& s, const char* text) {
    Result<OptionValue> v = ParseOptionText(s, text, OptionFace::kPython);
    EXPECT_TRUE(v.ok()) << text;
    return v.ok() ? *v : OptionValue{};
  };
  EXPECT_EQ(OptionValueText(single, parsed(single, "0.01")), "0.01");
  EXPECT_EQ(std::get<std::vector<double>>(parsed(single, "0.01")),
            std::vector<double>{static_cast<double>(0.01f)});
  EXPECT_EQ(std::get<std::vector<double>>(parsed(dual, "0.01")), std::vector<double>{0.01});
  EXPECT_EQ(OptionValueText(dual, std::vector<double>{static_cast<double>(0.01f)}),
            "0.009999999776482582");
  EXPECT_EQ(OptionValueText(single, parsed(single, "16777217")), "16777216");
  // A number the float field would hold as 0 is refused, saying so.
  OptionSpec eps = OptionSpec::Of("eps", OptionType::kNumber);
  eps.RangeReal(0, 1, /*min_open=*/true);
  EXPECT_EQ(Refusal(eps, "1e-50"), "");
  eps.single_precision = true;
  const std::string below =
      ": 1e-50 is below the smallest float, 1e-45, which the option is held in (it would be 0)";
  EXPECT_EQ(Refusal(eps, "1e-50"), "--eps must be a number in (0, 1], got 1e-50" + below);
  EXPECT_EQ(CheckOptionValue(eps, 1e-50, OptionFace::kPython).message(),
            "eps must be a number in (0, 1], got 1e-50" + below);
}

// Issue 40: weights=[1e308, 1e308] were refused as "must be a list of finite numbers >= 0",
// which they are; a float field says which number a float cannot hold, and one it would hold as
// 0 (weights=[1, 1e-300]: a dataset never drawn) is refused, not taken as 0.
TEST(OptionSpec, AFloatFieldsRefusalSaysWhichNumberNoFloatHolds) {
  OptionSpec weights = OptionSpec::Of("weights", OptionType::kNumbers);
  weights.single_precision = true;
  weights.RangeReal(0, std::numeric_limits<double>::max());
  const std::string rule = "weights must be a list of finite numbers >= 0, got ";
  EXPECT_EQ(Refusal(weights, "1e308,1e308", OptionFace::kPython),
            rule +
                "1e+308,1e+308: 1e+308 is past the largest float, 3.4028235e+38, which the "
                "option is held in");
  EXPECT_EQ(Refusal(weights, "1e300,1e-300", OptionFace::kPython),
            rule +
                "1e+300,1e-300: 1e+300 is past the largest float, 3.4028235e+38, which the "
                "option is held in");
  EXPECT_EQ(
      CheckOptionValue(weights, std::vector<double>{1, 1e-300}, OptionFace::kPython).message(),
      rule +
          "1,1e-300: 1e-300 is below the smallest float, 1e-45, which the option is held "
          "in (it would be 0)");
  EXPECT_EQ(Refusal(weights, "3e38,1e-45", OptionFace::kPython), "");
  EXPECT_EQ(Refusal(weights, "0,1", OptionFace::kPython), "");
}

TEST(OptionSpec, ByteSizeHoldsItsMultipleAndBoundsAndPrintsInUnits) {
  OptionSpec s = OptionSpec::Of("read-size", OptionType::kByteSize);
  s.Range(4096, uint64_t{1} << 30).MultipleOf(4096);
  Result<OptionValue> v = ParseOptionText(s, "64KiB", OptionFace::kCommandLine);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(std::get<uint64_t>(*v), 65536u);
  EXPECT_EQ(OptionValueText(s, *v), "64KiB");
  const std::string rule = "--read-size must be a multiple of 4KiB from 4KiB to 1GiB, got ";
  EXPECT_EQ(Refusal(s, "5000"), rule + "5000");
  EXPECT_EQ(Refusal(s, "2GiB"), rule + "2GiB");
  EXPECT_EQ(Refusal(s, "0x1000"), rule + "'0x1000'");
  EXPECT_EQ(Refusal(s, "64GiB"), rule + "64GiB");
}

TEST(OptionSpec, WordsAndSwitchesTakeOnlyTheirWords) {
  OptionSpec mode = OptionSpec::Of("mode", OptionType::kWord);
  mode.Words({"streaming", "managed"});
  EXPECT_EQ(Refusal(mode, "managed"), "");
  EXPECT_EQ(Refusal(mode, "Managed"), "--mode must be streaming or managed, got \"Managed\"");
  OptionSpec graph = OptionSpec::Of("cuda-graph", OptionType::kOnOff);
  EXPECT_EQ(Refusal(graph, "yes"), "--cuda-graph must be on or off, got 'yes'");
  // A switch on by default is --no-NAME; its text sets that spelling.
  OptionSpec verify = OptionSpec::Of("verify", OptionType::kSwitch);
  verify.default_value = true;
  EXPECT_EQ(OptionName(verify, OptionFace::kCommandLine), "--no-verify");
  EXPECT_EQ(OptionName(verify, OptionFace::kPython), "verify");
  Result<OptionValue> off = ParseOptionText(verify, "true", OptionFace::kCommandLine);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(std::get<bool>(*off));
  EXPECT_EQ(Refusal(verify, "maybe"), "--no-verify is a switch: true or false, got 'maybe'");
}

TEST(OptionSpec, CountsTakeTheirNumberOfItemsEachWithinTheBounds) {
  OptionSpec shape = OptionSpec::Of("shape", OptionType::kCounts);
  shape.Range(1, 4294967295u).Items(1, 4);
  Result<OptionValue> v = ParseOptionText(shape, "3,32,32", OptionFace::kCommandLine);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(std::get<std::vector<uint64_t>>(*v), (std::vector<uint64_t>{3, 32, 32}));
  EXPECT_EQ(OptionValueText(shape, *v), "3,32,32");
  const std::string rule =
      "--shape must be 1 to 4 comma-separated whole numbers from 1 to 4294967295, got ";
  for (const char* bad : {"", "3,", ",3", "3,,3", "1,2,3,4,5", "0,3", "-1", "3 ,4", "4294967296",
                          "0x10", "99999999999999999999"}) {
    EXPECT_EQ(Refusal(shape, bad), rule + QuoteUserText(bad)) << bad;
  }
  // A list built elsewhere (Python's) is held to the same rule, named as that face names it.
  EXPECT_EQ(CheckOptionValue(shape, std::vector<uint64_t>{}, OptionFace::kPython).message(),
            "shape must be 1 to 4 comma-separated whole numbers from 1 to 4294967295, got ");
  EXPECT_TRUE(CheckOptionValue(shape, std::vector<uint64_t>{7}, OptionFace::kPython).ok());
  OptionSpec chw = OptionSpec::Of("shape", OptionType::kCounts);
  chw.Range(1, 65535).Items(3, 3);
  EXPECT_EQ(Refusal(chw, "3,32"),
            "--shape must be 3 comma-separated whole numbers from 1 to 65535, got '3,32'");
}

TEST(OptionSpec, AWordsAliasesAreTakenButNotListedAndAPythonNameIsItsOwn) {
  OptionSpec dtype = OptionSpec::Of("dtype", OptionType::kWord);
  dtype.Words({"uint8", "bfloat16"});
  dtype.word_aliases = {"u8", "bf16"};
  EXPECT_EQ(Refusal(dtype, "bf16"), "");
  EXPECT_EQ(Refusal(dtype, "int8"), "--dtype must be uint8 or bfloat16, got \"int8\"");
  OptionSpec threads = OptionSpec::Of("compress-threads", OptionType::kCount);
  threads.PythonName("threads").Range(0, 1024);
  EXPECT_EQ(OptionName(threads, OptionFace::kCommandLine), "--compress-threads");
  EXPECT_EQ(Refusal(threads, "2000", OptionFace::kPython),
            "threads must be a whole number from 0 to 1024, got 2000");
}

TEST(OptionSpec, QuotedUserTextEscapesControlAndNonUtf8BytesAndIsCut) {
  EXPECT_EQ(QuoteUserText("plain"), "'plain'");
  EXPECT_EQ(QuoteUserText(std::string("a\0b", 3)), "'a\\x00b'");
  EXPECT_EQ(QuoteUserText("\x1b[31mred"), "'\\x1b[31mred'");
  EXPECT_EQ(QuoteUserText("caf\xc3\xa9"), "'caf\xc3\xa9'");  // UTF-8 stays
  EXPECT_EQ(QuoteUserText("\xc3("), "'\\xc3('");             // a cut sequence does not
  EXPECT_EQ(QuoteUserText("\xff\x7f"), "'\\xff\\x7f'");
  EXPECT_EQ(QuoteUserText(std::string(100, 'x'), 4), "'xxxx...'");
}

}  // namespace
}  // namespace rf
