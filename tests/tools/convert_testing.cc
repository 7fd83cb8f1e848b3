#include "tests/tools/convert_testing.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "io/dataset.h"
#include "tests/testing/temp_dir.h"
#include "tools/convert/commands.h"

namespace rf::testing {

ProgramOutcome RunConverter(const std::string& args, int timeout_s) {
  ProgramOutcome o;
  const std::string timeout = timeout_s != 0 ? "timeout " + std::to_string(timeout_s) + " " : "";
  o.rc = RunCommand(timeout + ProgramPath("ringfeed-convert") + " " + args, &o.out);
  return o;
}

MeasuredRun RunMeasured(const std::vector<std::string>& argv, int timeout_s) {
  MeasuredRun r;
  TempDir t;
  const std::string log = t.File("output");
  const pid_t pid = ::fork();
  if (pid < 0) return r;
  if (pid == 0) {
    // A forked child starts with this process's peak resident memory, and exec keeps it in
    // ru_maxrss: reset the peak to what the child holds now (clear_refs "5", Linux 4.0), so the
    // figure is the program's own and not the test's inputs.
    const int refs = ::open("/proc/self/clear_refs", O_WRONLY);
    if (refs >= 0) {
      (void)!::write(refs, "5", 1);
      ::close(refs);
    }
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(argv[0].c_str(), args.data());
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  rusage usage{};
  for (;;) {
    const pid_t done = ::wait4(pid, &status, WNOHANG, &usage);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::wait4(pid, &status, 0, &usage);
      break;
    }
    ::usleep(10000);
  }
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.max_rss_kib = static_cast<uint64_t>(usage.ru_maxrss);
  const std::vector<uint8_t> out = ReadAll(log);
  r.output.assign(out.begin(), out.end());
  return r;
}

void WritePieces(const std::string& path, const std::vector<Piece>& pieces) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  for (const Piece& p : pieces) {
    for (size_t i = 0; i < p.count; ++i) {
      ASSERT_EQ(std::fwrite(p.text.data(), 1, p.text.size(), f), p.text.size()) << path;
    }
  }
  ASSERT_EQ(std::fclose(f), 0) << path;
}

std::vector<uint8_t> IdxBytes(uint8_t type, const std::vector<uint32_t>& dims,
                              const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(d >> s));
  }
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::vector<uint8_t> BigEndianFloats(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<uint8_t>(u >> (24 - 8 * b));
  }
  return out;
}

void WriteGzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr) << path;
  ASSERT_EQ(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
}

std::vector<uint8_t> NpyBytes(const std::string& descr, const std::vector<uint64_t>& shape,
                              const void* data, size_t bytes) {
  // Written out the way numpy's format.py does it: the sorted-key dict, room for axis 0 to grow
  // to 21 digits, then spaces and '\n' so magic + length + header is a multiple of 64.
  std::string shape_text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    shape_text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  shape_text += shape.size() == 1 ? ",)" : ")";
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_text + ", }";
  dict += std::string(21 - std::to_string(shape[0]).size(), ' ');
  const size_t hlen = dict.size() + 1;
  const size_t pad = 64 - (10 + hlen) % 64;
  dict += std::string(pad, ' ') + "\n";
  const uint8_t prefix[10] = {0x93,
                              'N',
                              'U',
                              'M',
                              'P',
                              'Y',
                              1,
                              0,
                              static_cast<uint8_t>(dict.size() & 0xff),
                              static_cast<uint8_t>(dict.size() >> 8)};
  std::vector<uint8_t> out(sizeof prefix + dict.size() + bytes);
  std::memcpy(out.data(), prefix, sizeof prefix);
  std::memcpy(out.data() + sizeof prefix, dict.data(), dict.size());
  if (bytes > 0) std::memcpy(out.data() + sizeof prefix + dict.size(), data, bytes);
  return out;
}

Status Convert(const std::vector<std::string>& args, std::string* out) {
  std::ostringstream os;
  const Status st = convert::RunCommand(args, os);
  if (out) *out = os.str();
  return st;
}

::testing::AssertionResult FailsWith(const Status& st, const std::string& fragment) {
  if (st.ok()) return ::testing::AssertionFailure() << "succeeded; expected '" << fragment << "'";
  if (st.ToString().find(fragment) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message '" << st.ToString() << "' lacks '" << fragment << "'";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult FailsWithUsage(const Status& st, const std::string& fragment) {
  if (!st.ok() && !st.IsUsage()) {
    return ::testing::AssertionFailure() << "not a usage error: '" << st.ToString() << "'";
  }
  return FailsWith(st, fragment);
}

::testing::AssertionResult SameChunks(const std::string& a, const std::string& b) {
  Result<Dataset> da = Dataset::Open(a), db = Dataset::Open(b);
  if (!da.ok()) return ::testing::AssertionFailure() << da.status().ToString();
  if (!db.ok()) return ::testing::AssertionFailure() << db.status().ToString();
  const format::Header &ha = da->header(), &hb = db->header();
  if (ha.sample_dtype != hb.sample_dtype || ha.label_dtype != hb.label_dtype ||
      ha.Shape() != hb.Shape() || ha.num_classes != hb.num_classes ||
      ha.total_samples != hb.total_samples || ha.chunk_samples != hb.chunk_samples) {
    return ::testing::AssertionFailure() << a << " and " << b << " differ in their headers";
  }
  if (da->ChunkSampleCounts() != db->ChunkSampleCounts()) {
    return ::testing::AssertionFailure() << a << " and " << b << " have other chunks";
  }
  if (std::memcmp(ha.mean.data(), hb.mean.data(), sizeof ha.mean) != 0 ||
      std::memcmp(ha.stddev.data(), hb.stddev.data(), sizeof ha.stddev) != 0) {
    return ::testing::AssertionFailure() << a << " and " << b << " differ in their statistics";
  }
  std::vector<uint8_t> ca(da->max_chunk_bytes()), cb(db->max_chunk_bytes());
  for (size_t c = 0; c < da->chunk_count(); ++c) {
    if (Status st = da->ReadChunk(c, ca.data()); !st.ok()) {
      return ::testing::AssertionFailure() << st.ToString();
    }
    if (Status st = db->ReadChunk(c, cb.data()); !st.ok()) {
      return ::testing::AssertionFailure() << st.ToString();
    }
    const uint64_t n = da->chunk(c).entry.data_bytes;
    if (n != db->chunk(c).entry.data_bytes || std::memcmp(ca.data(), cb.data(), n) != 0) {
      return ::testing::AssertionFailure()
             << "chunk " << c << " of " << a << " and " << b << " holds other data";
    }
  }
  return ::testing::AssertionSuccess();
}

StoredSize StoredSizeOf(const std::string& dataset) {
  const Result<Dataset> d = Dataset::Open(dataset);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  StoredSize s;
  if (!d.ok()) return s;
  for (size_t c = 0; c < d->chunk_count(); ++c) s.bytes += d->chunk(c).entry.stored_bytes;
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2f",
                static_cast<double>(d->data_bytes()) / static_cast<double>(s.bytes));
  s.ratio = ratio;
  return s;
}

std::vector<std::vector<int64_t>> TokenRecords(const std::string& dataset,
                                               std::vector<int64_t>* labels) {
  Result<Dataset> d = Dataset::Open(dataset);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  if (!d.ok()) return {};
  const DType t = d->header().sample_dtype;
  std::vector<std::vector<int64_t>> out;
  std::vector<uint8_t> buf(d->max_chunk_bytes());
  for (size_t g = 0; g < d->chunk_count(); ++g) {
    EXPECT_TRUE(d->ReadChunk(g, buf.data()).ok());
    const auto* table = reinterpret_cast<const uint64_t*>(buf.data());
    const uint8_t* records = buf.data() + d->RecordsOffset(g);
    for (uint32_t i = 0; i < d->chunk(g).entry.sample_count; ++i) {
      std::vector<int64_t> r;
      for (uint64_t b = table[i]; b < table[i + 1]; b += DTypeSize(t))
        r.push_back(LoadLabel(t, records + b, 0));
      out.push_back(std::move(r));
      if (labels != nullptr) labels->push_back(d->Label(g, buf.data(), i));
    }
  }
  return out;
}

}  // namespace rf::testing
