#include "actor/outbox.h"

#include <gtest/gtest.h>

#include <thread>

namespace rlvr::actor {
namespace {

rlvr::v1::ActorMessage Return(uint64_t id) {
  rlvr::v1::ActorMessage m;
  m.mutable_return_leases()->add_lease_ids(id);
  return m;
}

TEST(OutboxTest, BoundedAndOrdered) {
  Outbox box(2);
  EXPECT_TRUE(box.Push(Return(1)));
  EXPECT_TRUE(box.Push(Return(2)));
  EXPECT_FALSE(box.Push(Return(3)));  // Full: never blocks the producer.
  rlvr::v1::ActorMessage m;
  ASSERT_TRUE(box.Pop(&m));
  EXPECT_EQ(m.return_leases().lease_ids(0), 1u);
  EXPECT_TRUE(box.Push(Return(3)));
}

TEST(OutboxTest, GracefulCloseDrainsAbortDiscards) {
  Outbox graceful(8);
  graceful.Push(Return(1));
  graceful.Close(/*graceful=*/true);
  EXPECT_FALSE(graceful.Push(Return(2)));
  rlvr::v1::ActorMessage m;
  EXPECT_TRUE(graceful.Pop(&m));
  EXPECT_FALSE(graceful.Pop(&m));
  EXPECT_TRUE(graceful.graceful());

  Outbox aborted(8);
  aborted.Push(Return(1));
  aborted.Close(/*graceful=*/false);
  EXPECT_FALSE(aborted.Pop(&m));
  EXPECT_FALSE(aborted.graceful());
}

TEST(OutboxTest, CloseWakesABlockedPop) {
  Outbox box(4);
  std::thread t([&] {
    rlvr::v1::ActorMessage m;
    EXPECT_FALSE(box.Pop(&m));
  });
  box.Close(/*graceful=*/false);
  t.join();
}

}  // namespace
}  // namespace rlvr::actor
