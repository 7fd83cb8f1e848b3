// DlpackExport: a LoadedBatch's samples and labels as DLManagedTensors: the batch's own buffer,
// its shape and compact strides, the DLPack type of its dtype; the deleter is what lets the batch
// go; the array API's keywords are taken or refused by name (host batches; the GPU's stream waits
// are python/tests/test_cuda.py's).
#include "python/src/dlpack_export.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/testing/positional_data.h"
#include "tests/testing/temp_dir.h"

namespace rf::python {
namespace {

using testing::TempDir;

class DlpackExport : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::PositionalDatasetOptions d;
    d.channels = 3;
    d.height = 4;
    d.width = 5;
    LoaderOptions o;
    o.pipeline.data = testing::WritePositionalDataset(dir_.File("d.rfd"), 100, d);
    o.pipeline.device = DeviceKind::kCpu;
    o.pipeline.order.batch_size = 8;
    o.pipeline.streaming.io = IoMode::kBuffered;  // temporary directories may be on tmpfs
    o.output.dtype = DType::kFloat32;
    o.output.layout = SampleLayout::kNHWC;
    o.output.normalize = false;
    Result<std::unique_ptr<Loader>> l = Loader::Open(o);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    loader_ = std::move(l).value();
    ASSERT_TRUE(loader_->StartEpoch(0, 0).ok());
    Result<std::shared_ptr<LoadedBatch>> b = loader_->Next();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    batch_ = std::move(b).value();
    ASSERT_NE(batch_, nullptr);
  }

  TempDir dir_;
  std::unique_ptr<Loader> loader_;
  std::shared_ptr<LoadedBatch> batch_;
};

std::vector<int64_t> Dims(const int64_t* p, int n) { return std::vector<int64_t>(p, p + n); }

DlpackRequest Stream(int64_t stream) {
  DlpackRequest r;
  r.stream = stream;
  return r;
}
DlpackRequest Device(DLDeviceType type, int id) {
  DlpackRequest r;
  r.dl_device = DLDevice{type, id};
  return r;
}
DlpackRequest Copy(bool copy) {
  DlpackRequest r;
  r.copy = copy;
  return r;
}

TEST_F(DlpackExport, SamplesViewTheBatchBufferWithShapeStridesAndType) {
  DLManagedTensor* m = ExportBatch(batch_, BatchPart::kSamples);
  const DLTensor& t = m->dl_tensor;
  EXPECT_EQ(t.data, batch_->samples());
  EXPECT_EQ(t.byte_offset, 0u);
  EXPECT_EQ(t.device.device_type, kDLCPU);
  EXPECT_EQ(t.device.device_id, 0);
  EXPECT_EQ(t.dtype.code, kDLFloat);
  EXPECT_EQ(t.dtype.bits, 32);
  EXPECT_EQ(t.dtype.lanes, 1);
  ASSERT_EQ(t.ndim, 4);
  EXPECT_EQ(Dims(t.shape, 4), (std::vector<int64_t>{8, 4, 5, 3}));  // NHWC
  EXPECT_EQ(Dims(t.strides, 4), (std::vector<int64_t>{60, 15, 3, 1}));
  m->deleter(m);
}

TEST_F(DlpackExport, LabelsAreInt64OfTheBatchSize) {
  DLManagedTensor* m = ExportBatch(batch_, BatchPart::kLabels);
  const DLTensor& t = m->dl_tensor;
  EXPECT_EQ(t.data, batch_->labels());
  EXPECT_EQ(t.dtype.code, kDLInt);
  EXPECT_EQ(t.dtype.bits, 64);
  ASSERT_EQ(t.ndim, 1);
  EXPECT_EQ(t.shape[0], 8);
  EXPECT_EQ(t.strides[0], 1);
  const auto* labels = static_cast<const int64_t*>(t.data);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(labels[j], testing::PositionalLabel(batch_->indices()[j]));
  m->deleter(m);
}

TEST_F(DlpackExport, TheDeleterIsWhatLetsTheBatchGo) {
  std::weak_ptr<LoadedBatch> watch = batch_;
  DLManagedTensor* samples = ExportBatch(batch_, BatchPart::kSamples);
  DLManagedTensor* labels = ExportBatch(batch_, BatchPart::kLabels);
  batch_.reset();
  loader_.reset();  // the loader gone too: the exports alone hold the batch
  EXPECT_FALSE(watch.expired());
  samples->deleter(samples);
  EXPECT_FALSE(watch.expired());
  labels->deleter(labels);
  EXPECT_TRUE(watch.expired());
}

TEST_F(DlpackExport, HostBatchTakesNoStreamButNoneOrMinusOne) {
  EXPECT_TRUE(PrepareExport(*batch_, DlpackRequest{}).ok());
  EXPECT_TRUE(PrepareExport(*batch_, Stream(kStreamNoSync)).ok());
  EXPECT_TRUE(PrepareExport(*batch_, Device(kDLCPU, 0)).ok());
  EXPECT_TRUE(PrepareExport(*batch_, Copy(false)).ok());
  const Status st = PrepareExport(*batch_, Stream(kStreamLegacyDefault));
  EXPECT_TRUE(st.IsUsage());
  EXPECT_EQ(st.message(),
            "__dlpack__: stream must be None or -1 for a batch in host memory, got 1");
}

TEST_F(DlpackExport, CopyAndAnotherDeviceAreRefused) {
  Status st = PrepareExport(*batch_, Copy(true));
  EXPECT_TRUE(st.IsUsage());
  EXPECT_EQ(st.message(), "__dlpack__: copy=True is not supported: a batch is exported in place");
  st = PrepareExport(*batch_, Device(kDLCUDA, 1));
  EXPECT_TRUE(st.IsUsage());
  EXPECT_EQ(st.message(),
            "__dlpack__: dl_device (kDLCUDA=2, 1) is not the batch's device (kDLCPU=1, 0) (the "
            "export never copies)");
}

TEST(DlpackTypeOf, EveryDTypeHasItsCode) {
  struct Case {
    DType t;
    uint8_t code, bits;
  };
  for (const Case& c : {Case{DType::kUInt8, kDLUInt, 8}, Case{DType::kUInt16, kDLUInt, 16},
                        Case{DType::kInt32, kDLInt, 32}, Case{DType::kInt64, kDLInt, 64},
                        Case{DType::kFloat16, kDLFloat, 16}, Case{DType::kBFloat16, kDLBfloat, 16},
                        Case{DType::kFloat32, kDLFloat, 32}}) {
    const DLDataType d = DlpackTypeOf(c.t);
    EXPECT_EQ(d.code, c.code) << DTypeName(c.t);
    EXPECT_EQ(d.bits, c.bits) << DTypeName(c.t);
    EXPECT_EQ(d.lanes, 1);
  }
}

}  // namespace
}  // namespace rf::python
