#include "pipeline/stage/slot_ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace rf {
namespace {

using State = SlotRing::State;

std::unique_ptr<SlotRing> MakeRing(uint32_t slots) {
  auto r = SlotRing::Create(slots, 4096, PinMode::kOff);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

TEST(SlotRing, SlotsMoveFreeFillingReadyInUseFree) {
  auto ring = MakeRing(2);
  EXPECT_EQ(ring->state(0), State::kFree);
  auto s = ring->AcquireFree();
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, 0u);
  EXPECT_EQ(ring->state(0), State::kFilling);
  ring->MarkReady(0, 42, 100);
  EXPECT_EQ(ring->state(0), State::kReady);
  auto f = ring->AcquireReady();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->slot, 0u);
  EXPECT_EQ(f->chunk, 42u);
  EXPECT_EQ(f->bytes, 100u);
  EXPECT_EQ(f->seq, 0u);
  EXPECT_EQ(ring->state(0), State::kInUse);
  ring->Release(0);
  EXPECT_EQ(ring->state(0), State::kFree);
}

TEST(SlotRing, SlotsAreAlignedAndDisjoint) {
  auto ring = MakeRing(3);
  auto iov = ring->iovecs();
  ASSERT_EQ(iov.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(iov[i].iov_base) % 4096, 0u);
    EXPECT_EQ(iov[i].iov_len, 4096u);
    EXPECT_EQ(iov[i].iov_base, ring->data(i));
  }
  EXPECT_EQ(ring->data(1) - ring->data(0), 4096);
}

// Issue 40, M1: a reader registers (pins) only what its reads of raw chunks fill of each slot.
TEST(SlotRing, TheRegisteredPartOfEachSlotIsWhatTheReadsFillAtMost) {
  auto ring = SlotRing::Create(2, 3 * 4096, PinMode::kOff);
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  for (const uint64_t bytes : {uint64_t{4096}, uint64_t{3 * 4096}, uint64_t{1} << 40}) {
    const std::vector<iovec> iov = (*ring)->iovecs(bytes);
    ASSERT_EQ(iov.size(), 2u);
    for (uint32_t i = 0; i < 2; ++i) {
      EXPECT_EQ(iov[i].iov_base, (*ring)->data(i));
      EXPECT_EQ(iov[i].iov_len, std::min<uint64_t>(bytes, 3 * 4096));
    }
  }
}

TEST(SlotRing, ConsumerGetsChunksInScheduledOrderWhenReadsCompleteOutOfOrder) {
  auto ring = MakeRing(4);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ring->AcquireFree());
  // Reads complete 3, 1, 0, 2; chunk number = 10 + slot.
  for (uint32_t s : {3u, 1u, 0u, 2u}) ring->MarkReady(s, 10 + s, 1);
  for (uint32_t want = 0; want < 4; ++want) {
    auto f = ring->AcquireReady();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->seq, want);
    EXPECT_EQ(f->chunk, 10 + want);
    ring->Release(f->slot);
  }
}

TEST(SlotRing, TryAcquireFreeFailsWhenTheNextSlotIsHeld) {
  auto ring = MakeRing(2);
  ASSERT_TRUE(ring->TryAcquireFree());
  ASSERT_TRUE(ring->TryAcquireFree());
  EXPECT_FALSE(ring->TryAcquireFree());  // slot 0 is still filling
  ring->MarkReady(0, 0, 1);
  auto f = ring->AcquireReady();
  ASSERT_TRUE(f);
  EXPECT_FALSE(ring->TryAcquireFree());  // slot 0 is in use
  ring->Release(f->slot);
  auto s = ring->TryAcquireFree();
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, 0u);
}

TEST(SlotRing, ProducerBlocksUntilConsumerReleases) {
  auto ring = MakeRing(2);
  ASSERT_TRUE(ring->AcquireFree());
  ASSERT_TRUE(ring->AcquireFree());
  ring->MarkReady(0, 0, 1);
  ring->MarkReady(1, 1, 1);
  std::atomic<bool> got{false};
  std::thread producer([&] {
    auto s = ring->AcquireFree();
    EXPECT_TRUE(s);
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load());  // every slot is full: back-pressure
  auto f = ring->AcquireReady();
  ASSERT_TRUE(f);
  ring->Release(f->slot);
  producer.join();
  EXPECT_TRUE(got.load());
  EXPECT_GT(ring->producer_wait_ns(), 0u);
}

TEST(SlotRing, FailWakesABlockedConsumerWithTheStatus) {
  auto ring = MakeRing(2);
  std::optional<SlotRing::Filled> got;
  std::thread consumer([&] { got = ring->AcquireReady(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ring->Fail(std::move(Status::IOError("/data/x.rfd", "read failed", 5).WithChunk(3)));
  consumer.join();
  EXPECT_FALSE(got);
  EXPECT_EQ(ring->status().ToString(),
            "/data/x.rfd: chunk 3: read failed: Input/output error (errno 5)");
}

TEST(SlotRing, FailWakesABlockedProducer) {
  auto ring = MakeRing(2);
  ASSERT_TRUE(ring->AcquireFree());
  ASSERT_TRUE(ring->AcquireFree());
  std::optional<uint32_t> got = 7;
  std::thread producer([&] { got = ring->AcquireFree(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ring->Fail(Status::Aborted("training stopped"));
  producer.join();
  EXPECT_FALSE(got);
  EXPECT_FALSE(ring->TryAcquireFree());
}

TEST(SlotRing, FirstFailureIsKept) {
  auto ring = MakeRing(2);
  ring->Fail(Status::Aborted("first"));
  ring->Fail(Status::Aborted("second"));
  EXPECT_EQ(ring->status().message(), "first");
}

TEST(SlotRing, CloseLetsTheConsumerDrainThenEnd) {
  auto ring = MakeRing(3);
  ASSERT_TRUE(ring->AcquireFree());
  ring->MarkReady(0, 5, 1);
  ring->Close();
  auto f = ring->AcquireReady();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->chunk, 5u);
  ring->Release(f->slot);
  EXPECT_FALSE(ring->AcquireReady());
  EXPECT_TRUE(ring->status().ok());
}

TEST(SlotRing, CloseWakesAWaitingConsumer) {
  auto ring = MakeRing(2);
  std::optional<SlotRing::Filled> got;
  std::thread consumer([&] { got = ring->AcquireReady(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ring->Close();
  consumer.join();
  EXPECT_FALSE(got);
  EXPECT_TRUE(ring->status().ok());
}

TEST(SlotRing, ManyChunksFlowThroughASmallRingInOrder) {
  auto ring = MakeRing(3);
  constexpr uint64_t kN = 20000;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kN; ++i) {
      auto s = ring->AcquireFree();
      ASSERT_TRUE(s);
      *reinterpret_cast<uint64_t*>(ring->data(*s)) = i;
      ring->MarkReady(*s, i, 8);
    }
    ring->Close();
  });
  uint64_t next = 0;
  while (auto f = ring->AcquireReady()) {
    ASSERT_EQ(f->chunk, next);
    ASSERT_EQ(*reinterpret_cast<uint64_t*>(ring->data(f->slot)), next);
    ring->Release(f->slot);
    ++next;
  }
  producer.join();
  EXPECT_EQ(next, kN);
}

TEST(SlotRing, RingOfFewerThanTwoSlotsIsRefused) {
  auto r = SlotRing::Create(1, 4096, PinMode::kOff);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "the ring needs at least 2 slots");
}

}  // namespace
}  // namespace rf
