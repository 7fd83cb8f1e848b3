// RINGFEED_FAULTS's grammar (io/fault_plan.h): every kind and condition parses to the fault it
// names, which requests it matches, and every malformed spec is a Usage error naming the rule
// and what is wrong with it.
#include "io/fault_plan.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <string>

namespace rf {
namespace {

FaultPlan Parse(const std::string& spec) {
  Result<FaultPlan> p = ParseFaultPlan(spec);
  EXPECT_TRUE(p.ok()) << spec << ": " << p.status().ToString();
  return p.ok() ? std::move(p).value() : FaultPlan{};
}

TEST(FaultPlan, ParsesEveryKindAndCondition) {
  const FaultPlan p = Parse(
      "read:eio@chunk=5,times=always;read:eagain@chunk=1,times=3;read:eintr@attempt=2;"
      "read:short=4096@chunk=2;read:delay=200ms@chunk=3;read:delay=2s;read:eio@chunk=7,after=1;"
      "read:reorder");
  ASSERT_EQ(p.reads.size(), 7u);
  EXPECT_TRUE(p.reorder);
  const ReadFault& eio = p.reads[0];
  EXPECT_EQ(eio.kind, ReadFault::Kind::kError);
  EXPECT_EQ(eio.err, EIO);
  EXPECT_EQ(eio.chunk, 5u);
  EXPECT_EQ(eio.first, 1u);
  EXPECT_EQ(eio.last, ReadFault::kAlways);
  EXPECT_EQ(p.reads[1].err, EAGAIN);
  EXPECT_EQ(p.reads[1].last, 3u);
  EXPECT_EQ(p.reads[2].err, EINTR);
  EXPECT_FALSE(p.reads[2].chunk.has_value());
  EXPECT_EQ(p.reads[2].first, 2u);
  EXPECT_EQ(p.reads[2].last, 2u);
  EXPECT_EQ(p.reads[3].kind, ReadFault::Kind::kShort);
  EXPECT_EQ(p.reads[3].short_bytes, 4096u);
  EXPECT_EQ(p.reads[3].last, 1u);  // times=1 unless said
  EXPECT_EQ(p.reads[4].kind, ReadFault::Kind::kDelay);
  EXPECT_EQ(p.reads[4].delay.count(), 200);
  EXPECT_EQ(p.reads[5].delay.count(), 2000);
  EXPECT_EQ(p.reads[6].first, 2u);  // after=1: the second request on
  EXPECT_EQ(p.reads[6].last, ReadFault::kAlways);
  // Back to text: the same plan, every default spelled out.
  EXPECT_EQ(p.ToString(),
            "read:eio@chunk=5,times=always;read:eagain@chunk=1,times=3;read:eintr@attempt=2;"
            "read:short=4096@chunk=2,times=1;read:delay=200ms@chunk=3,times=1;"
            "read:delay=2000ms@times=1;read:eio@chunk=7,after=1;read:reorder");
}

TEST(FaultPlan, MatchesByChunkAndAttemptFirstRuleFirst) {
  const FaultPlan p = Parse("read:eio@chunk=5,times=2;read:short=100@chunk=5,attempt=4;read:eintr");
  EXPECT_EQ(p.Match(5, 1)->err, EIO);
  EXPECT_EQ(p.Match(5, 2)->err, EIO);
  EXPECT_EQ(p.Match(5, 3), nullptr);
  EXPECT_EQ(p.Match(5, 4)->kind, ReadFault::Kind::kShort);
  EXPECT_EQ(p.Match(6, 1)->err, EINTR);  // no chunk=: every chunk, first request
  EXPECT_EQ(p.Match(6, 2), nullptr);
  const FaultPlan later = Parse("read:eio@chunk=1,after=2");
  EXPECT_EQ(later.Match(1, 2), nullptr);
  EXPECT_EQ(later.Match(1, 3)->err, EIO);
  EXPECT_EQ(later.Match(1, 3000)->err, EIO);
  EXPECT_TRUE(Parse("").empty());
}

// Write and fsync rules sit in the same spec as read rules: each fails only its own operation on
// paths holding its text, and a plan of file rules alone leaves the readers unwrapped.
TEST(FaultPlan, WriteAndFsyncRulesFailTheirOperationOnTheirPaths) {
  const FaultPlan p =
      Parse("read:eio@chunk=2;write:enospc@path=-00001-of-;fsync:eio@path=run.ckpt");
  ASSERT_EQ(p.reads.size(), 1u);
  ASSERT_EQ(p.files.size(), 2u);
  EXPECT_EQ(p.FileError(FileFault::Op::kWrite, "/d/x-00001-of-00002.rfd"), ENOSPC);
  EXPECT_EQ(p.FileError(FileFault::Op::kFsync, "/d/x-00001-of-00002.rfd"), 0);
  EXPECT_EQ(p.FileError(FileFault::Op::kFsync, "/d/run.ckpt"), EIO);
  EXPECT_EQ(p.FileError(FileFault::Op::kWrite, "/d/run.ckpt"), 0);
  EXPECT_EQ(p.ToString(),
            "read:eio@chunk=2,times=1;write:enospc@path=-00001-of-;fsync:eio@path=run.ckpt");
  EXPECT_EQ(Parse(p.ToString()).ToString(), p.ToString());
  const FaultPlan files = Parse("write:efbig@path=a");
  EXPECT_FALSE(files.has_read_faults());
  EXPECT_FALSE(files.empty());
  EXPECT_EQ(files.FileError(FileFault::Op::kWrite, "a"), EFBIG);
}

TEST(FaultPlan, MalformedSpecsAreUsageErrorsNamingTheRule) {
  const std::pair<const char*, const char*> bad[] = {
      {"read:eoi",
       "RINGFEED_FAULTS: rule \"read:eoi\": unknown read fault \"eoi\": expected "
       "eio, eagain, eintr, short=BYTES, delay=TIME or reorder"},
      {"eio@chunk=1",
       "RINGFEED_FAULTS: rule \"eio@chunk=1\": expected read:KIND[@CONDITIONS], "
       "write:ERROR@path=TEXT or fsync:ERROR@path=TEXT"},
      {"read:eio;",
       "RINGFEED_FAULTS: rule \"\": expected read:KIND[@CONDITIONS], write:ERROR@path=TEXT or "
       "fsync:ERROR@path=TEXT"},
      {"read:eio@chunk=x",
       "RINGFEED_FAULTS: rule \"read:eio@chunk=x\": chunk= takes a chunk "
       "number"},
      {"read:eio@chunk=1,chunk=2",
       "RINGFEED_FAULTS: rule \"read:eio@chunk=1,chunk=2\": chunk= "
       "given twice"},
      {"read:eio@times=0",
       "RINGFEED_FAULTS: rule \"read:eio@times=0\": times= takes a number of "
       "at least 1 or always"},
      {"read:eio@attempt=2,times=3",
       "RINGFEED_FAULTS: rule \"read:eio@attempt=2,times=3\": give "
       "one of attempt=, times= and after=, once"},
      {"read:eio@after=x",
       "RINGFEED_FAULTS: rule \"read:eio@after=x\": after= takes a number of "
       "at least 1"},
      {"read:eio@when=3",
       "RINGFEED_FAULTS: rule \"read:eio@when=3\": unknown condition "
       "\"when=3\": expected chunk=N, attempt=N, times=N|always or after=N"},
      {"read:short=0",
       "RINGFEED_FAULTS: rule \"read:short=0\": short= takes a byte count of at "
       "least 1"},
      {"read:delay=5",
       "RINGFEED_FAULTS: rule \"read:delay=5\": delay= takes a duration such as "
       "200ms or 2s (at most an hour)"},
      {"read:reorder@chunk=1",
       "RINGFEED_FAULTS: rule \"read:reorder@chunk=1\": reorder takes no "
       "conditions"},
      {"read:eio@chunk=1@chunk=2",
       "RINGFEED_FAULTS: rule \"read:eio@chunk=1@chunk=2\": more than "
       "one '@'"},
      {"write:enospc", "RINGFEED_FAULTS: rule \"write:enospc\": expected write:ERROR@path=TEXT"},
      {"fsync:eio@path=",
       "RINGFEED_FAULTS: rule \"fsync:eio@path=\": expected fsync:ERROR@path=TEXT"},
      {"write:full@path=x",
       "RINGFEED_FAULTS: rule \"write:full@path=x\": unknown error \"full\": expected enospc, "
       "eio or efbig"},
  };
  for (const auto& [spec, message] : bad) {
    Result<FaultPlan> p = ParseFaultPlan(spec);
    ASSERT_FALSE(p.ok()) << spec;
    EXPECT_TRUE(p.status().IsUsage()) << spec;
    EXPECT_EQ(p.status().ToString(), message);
  }
}

TEST(FaultPlan, ComesFromTheEnvironmentOnlyWhereSet) {
  ::unsetenv(kFaultsEnv);
  auto none = FaultPlanFromEnv();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ::setenv(kFaultsEnv, "", 1);
  EXPECT_FALSE(FaultPlanFromEnv()->has_value());
  ::setenv(kFaultsEnv, "read:eio@chunk=3", 1);
  auto one = FaultPlanFromEnv();
  ASSERT_TRUE(one.ok() && one->has_value());
  EXPECT_EQ((*one)->reads.at(0).chunk, 3u);
  ::setenv(kFaultsEnv, "read:nope", 1);
  EXPECT_TRUE(FaultPlanFromEnv().status().IsUsage());
  ::unsetenv(kFaultsEnv);
}

// What tests plant replaces the environment's plan (the empty spec: no faults at all), until it
// is removed.
TEST(FaultPlan, ATestsPlanStandsInForTheEnvironmentsUntilRemoved) {
  ::setenv(kFaultsEnv, "read:eio@chunk=3", 1);
  SetFaultSpecForTesting("fsync:eio@path=x");
  auto planted = FaultPlanFromEnv();
  ASSERT_TRUE(planted.ok() && planted->has_value());
  EXPECT_EQ((*planted)->ToString(), "fsync:eio@path=x");
  SetFaultSpecForTesting("");
  EXPECT_FALSE(FaultPlanFromEnv()->has_value());
  SetFaultSpecForTesting(std::nullopt);
  auto env = FaultPlanFromEnv();
  ASSERT_TRUE(env.ok() && env->has_value());
  EXPECT_EQ((*env)->ToString(), "read:eio@chunk=3,times=1");
  ::unsetenv(kFaultsEnv);
}

}  // namespace
}  // namespace rf
