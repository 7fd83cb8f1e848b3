// Remote datasets (io/dataset_remote.cc, io/http_queue.h) against a real nginx on loopback: a
// dataset opened by URL is the local one (header, chunk locations), its chunks read by the
// ChunkReader over range requests and by ChunkFetcher are the local file's bytes, and what can
// go wrong is named: a missing shard, a base name over HTTP, a refused range, other bytes than
// the index's, a certificate not trusted.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/chunk_fetcher.h"
#include "io/chunk_reader.h"
#include "io/dataset.h"
#include "io/file.h"
#include "tests/io/remote/fetch_testing.h"
#include "tests/io/remote/remote_dataset_testing.h"
#include "tests/testing/nginx_server.h"
#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::LocalBytes;
using testing::NginxServer;
using testing::ReadEveryChunk;

constexpr uint64_t kSamples = 3000;

testing::PositionalDatasetOptions ThreeShards(CodecSpec codec = {}) {
  testing::PositionalDatasetOptions o;
  o.channels = 1;
  o.height = o.width = 16;
  o.shards = 3;
  o.chunk_bytes = 16384;
  o.codec = codec;
  return o;
}

class RemoteDataset : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testing::NginxMissing(); !why.empty()) GTEST_SKIP() << why;
    testing::WritePositionalDataset(root_.File("d.rfd"), kSamples, ThreeShards());
    testing::WritePositionalDataset(root_.File("z.rfd"), kSamples,
                                    ThreeShards(CodecSpec{Codec::kZstd, 3}));
    testing::WritePositionalDataset(root_.File("one.rfd"), 500, {});
    testing::PositionalDatasetOptions named = ThreeShards();
    named.classes = 3;
    named.class_names = {"cat", "dog", "eel"};
    testing::WritePositionalDataset(root_.File("n.rfd"), kSamples, named);
    std::string error;
    server_ = NginxServer::Start({root_.path(), "", "", kDirectives}, &error);
    ASSERT_NE(server_, nullptr) << error;
  }

  // A location that answers 503 for everything under /busy/, 403 under /private/.
  static constexpr const char* kDirectives =
      "location /busy/ { return 503; }\n    location /private/ { return 403 'denied'; }";

  Result<Dataset> OpenUrl(const std::string& path) {
    return Dataset::Open(server_->Url(path), testing::QuickOptions());
  }

  testing::TempDir root_;
  std::unique_ptr<NginxServer> server_;
};

TEST_F(RemoteDataset, AShardsUrlOpensTheWholeSetAsTheLocalDataset) {
  auto local = Dataset::Open(root_.File("d.rfd"));
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  auto remote = OpenUrl("/d-00001-of-00003.rfd");
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  EXPECT_TRUE(remote->remote());
  EXPECT_EQ(remote->header().dataset_id, local->header().dataset_id);
  EXPECT_EQ(remote->sample_count(), kSamples);
  ASSERT_EQ(remote->shard_count(), 3u);
  EXPECT_EQ(remote->shard_path(2), server_->Url("/d-00002-of-00003.rfd"));
  ASSERT_EQ(remote->chunk_count(), local->chunk_count());
  for (size_t g = 0; g < local->chunk_count(); ++g) {
    EXPECT_EQ(remote->chunk(g).shard, local->chunk(g).shard);
    EXPECT_EQ(remote->chunk(g).entry.offset, local->chunk(g).entry.offset);
    EXPECT_EQ(remote->chunk(g).first_sample, local->chunk(g).first_sample);
  }
}

// An open asks each shard for its size with its header, then for its class names and index in
// one range: two requests a shard.
TEST_F(RemoteDataset, AnOpenTakesTwoRequestsAShard) {
  auto remote = OpenUrl("/d-00000-of-00003.rfd");
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  EXPECT_EQ(server_->Requests("/d-", 6), 6u);
  auto local = Dataset::Open(root_.File("n.rfd"));
  auto named = OpenUrl("/n-00002-of-00003.rfd");
  ASSERT_TRUE(local.ok() && named.ok()) << named.status().ToString();
  EXPECT_EQ(named->class_names(), local->class_names());
  EXPECT_EQ(named->class_names(), (std::vector<std::string>{"cat", "dog", "eel"}));
  EXPECT_EQ(server_->Requests("/n-", 6), 6u);
  ReadEveryChunk(*named, *local);
}

TEST_F(RemoteDataset, TheChunkReaderReadsEveryChunkAsStored) {
  auto local = Dataset::Open(root_.File("d.rfd"));
  auto remote = OpenUrl("/d-00000-of-00003.rfd");
  ASSERT_TRUE(local.ok() && remote.ok()) << remote.status().ToString();
  ReadEveryChunk(*remote, *local);
}

TEST_F(RemoteDataset, CompressedChunksAreReadAndDecodedAsLocally) {
  auto local = Dataset::Open(root_.File("z.rfd"));
  auto remote = OpenUrl("/z-00002-of-00003.rfd");
  ASSERT_TRUE(local.ok() && remote.ok()) << remote.status().ToString();
  ASSERT_TRUE(remote->compressed());
  ReadEveryChunk(*remote, *local);
  // The slow path: whole chunks, decompressed, checked.
  auto fetcher = ChunkFetcher::Create(*remote);
  ASSERT_TRUE(fetcher.ok()) << fetcher.status().ToString();
  std::vector<uint8_t> got(remote->max_chunk_bytes()), want(local->max_chunk_bytes());
  for (size_t g = 0; g < remote->chunk_count(); ++g) {
    ASSERT_TRUE(fetcher->Fetch(g, got.data()).ok());
    ASSERT_TRUE(local->ReadChunk(g, want.data()).ok());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), remote->chunk(g).entry.data_bytes), 0) << g;
  }
}

TEST_F(RemoteDataset, ASingleFileOpensAndReadsWholeChunks) {
  auto remote = OpenUrl("/one.rfd");
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  std::vector<uint8_t> buf(remote->max_chunk_bytes());
  for (size_t g = 0; g < remote->chunk_count(); ++g) {
    Status st = remote->ReadChunk(g, buf.data());
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(testing::SampleIndex(buf.data()), remote->chunk(g).first_sample);
  }
}

TEST_F(RemoteDataset, ABaseNameOverHttpIsRefusedSayingHowToNameIt) {
  auto remote = OpenUrl("/d.rfd");
  ASSERT_TRUE(remote.status().IsNotFound()) << remote.status().ToString();
  EXPECT_NE(remote.status().ToString().find("one shard's URL"), std::string::npos)
      << remote.status().ToString();
}

TEST_F(RemoteDataset, AMissingShardIsNamed) {
  std::filesystem::remove(root_.File("d-00002-of-00003.rfd"));
  auto remote = OpenUrl("/d-00000-of-00003.rfd");
  ASSERT_TRUE(remote.status().IsNotFound()) << remote.status().ToString();
  EXPECT_NE(remote.status().ToString().find("d-00002-of-00003.rfd"), std::string::npos);
  EXPECT_NE(remote.status().ToString().find("shard 2 of 3 is missing"), std::string::npos)
      << remote.status().ToString();
}

TEST_F(RemoteDataset, OtherBytesThanTheIndexSaysAreCorruptionNamingTheChunk) {
  auto remote = OpenUrl("/d-00000-of-00003.rfd");
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  // The object changes under the open dataset: one byte of chunk 1's samples.
  auto local = Dataset::Open(root_.File("d.rfd"));
  ASSERT_TRUE(local.ok());
  const ChunkLocation& at = remote->chunk(1);
  const std::string file = local->shard_path(at.shard);
  {
    auto f = File::Open(file, O_RDWR);
    ASSERT_TRUE(f.ok());
    std::vector<uint8_t> b = LocalBytes(file, at.entry.offset + 9, 1);
    b[0] ^= 0x5a;
    ASSERT_TRUE(f->WriteAt(b.data(), 1, at.entry.offset + 9).ok());
  }
  std::vector<uint8_t> buf(remote->max_chunk_bytes());
  Status st = remote->ReadChunk(1, buf.data());
  ASSERT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_EQ(st.chunk(), std::optional<uint64_t>(at.entry.index)) << st.ToString();
  EXPECT_NE(st.ToString().find(remote->shard_path(at.shard)), std::string::npos);
  EXPECT_NE(st.ToString().find("checksum mismatch"), std::string::npos) << st.ToString();
}

TEST_F(RemoteDataset, AnObjectGoneAfterOpenEndsTheChunkNamingUrlChunkAndStatus) {
  auto remote = OpenUrl("/d-00000-of-00003.rfd");
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  std::filesystem::remove(root_.File("d-00001-of-00003.rfd"));
  size_t chunk = 0;  // the first chunk of shard 1
  while (remote->chunk(chunk).shard != 1) ++chunk;
  std::vector<uint8_t> buf(remote->max_chunk_bytes() + 4096);
  iovec iov{buf.data(), buf.size()};
  ReaderOptions o;
  o.mode = IoMode::kBuffered;
  auto reader = ChunkReader::Create(*remote, {&iov, 1}, o);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  ASSERT_TRUE((*reader)->Submit(chunk, 0).ok());
  std::vector<ChunkDone> done;
  Status st = (*reader)->Wait(done, 1);
  ASSERT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_EQ(st.chunk(), std::optional<uint64_t>(remote->chunk(chunk).entry.index));
  EXPECT_NE(st.ToString().find(server_->Url("/d-00001-of-00003.rfd")), std::string::npos)
      << st.ToString();
  EXPECT_NE(st.ToString().find("404"), std::string::npos) << st.ToString();
  // A store answering 503 is retried until the deadline, then named with its status.
  std::filesystem::create_directory(root_.File("busy"));
  HttpFetchOptions quick = testing::QuickOptions();
  quick.deadline = std::chrono::milliseconds(600);
  auto busy = Dataset::Open(server_->Url("/busy/one.rfd"), quick);
  ASSERT_FALSE(busy.ok());
  EXPECT_NE(busy.status().ToString().find("HTTP 503"), std::string::npos)
      << busy.status().ToString();
  EXPECT_NE(busy.status().ToString().find("/busy/one.rfd"), std::string::npos);
}

TEST_F(RemoteDataset, ARefusedObjectIsNamedAtOnceWithoutItsCredentials) {
  auto remote =
      Dataset::Open("http://reader:SECRETpw@127.0.0.1:" + std::to_string(server_->port()) +
                        "/private/one.rfd?X-Amz-Signature=SECRETsig",
                    testing::QuickOptions());
  ASSERT_FALSE(remote.ok());
  const std::string msg = remote.status().ToString();
  EXPECT_NE(msg.find("403"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("SECRET"), std::string::npos) << msg;
  // Not retried: the open's two requests (the head and, at once, the tail) refused once each.
  EXPECT_EQ(server_->Requests("/private/", 2), 2u);
}

TEST_F(RemoteDataset, APresignedUrlOfOneShardCannotNameItsSiblings) {
  auto remote = OpenUrl("/d-00000-of-00003.rfd?X-Amz-Signature=abc");
  ASSERT_TRUE(remote.status().IsInvalidArgument()) << remote.status().ToString();
  EXPECT_NE(remote.status().ToString().find("presigned"), std::string::npos);
  EXPECT_EQ(remote.status().ToString().find("abc"), std::string::npos);
}

TEST(RemoteDatasetTls, TheCaBundleOptionIsUsedByOpenAndByTheReader) {
  if (std::string why = testing::NginxMissing(true); !why.empty()) GTEST_SKIP() << why;
  testing::TempDir root, certs;
  std::string error;
  ASSERT_TRUE(testing::MakeTestCertificate(certs.path(), "server", &error)) << error;
  testing::WritePositionalDataset(root.File("one.rfd"), 700, {});
  auto server = NginxServer::Start(
      {root.path(), certs.File("server.pem"), certs.File("server.key"), ""}, &error);
  ASSERT_NE(server, nullptr) << error;
  HttpFetchOptions o = testing::QuickOptions();
  auto untrusted = Dataset::Open(server->Url("/one.rfd"), o);
  ASSERT_FALSE(untrusted.ok());
  EXPECT_NE(untrusted.status().ToString().find("certificate"), std::string::npos)
      << untrusted.status().ToString();
  o.ca_bundle = certs.File("server.pem");
  auto remote = Dataset::Open(server->Url("/one.rfd"), o);
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  auto local = Dataset::Open(root.File("one.rfd"));
  ASSERT_TRUE(local.ok());
  ReadEveryChunk(*remote, *local);
}

}  // namespace
}  // namespace rf
