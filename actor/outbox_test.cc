#include "actor/outbox.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
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

// True when thread `tid` of this process sleeps in a futex wait (where
// absl::Mutex::Await blocks), as the kernel reports it: state S in
// /proc/self/task/TID/stat and the futex system call in .../syscall.
bool SleepsInFutex(pid_t tid) {
  const std::string task = "/proc/self/task/" + std::to_string(tid);
  std::ifstream stat(task + "/stat"), call(task + "/syscall");
  std::string line;
  std::getline(stat, line);
  const size_t comm_end = line.rfind(')');
  if (comm_end == std::string::npos || comm_end + 2 >= line.size()) return false;
  long number = -1;
  return line[comm_end + 2] == 'S' && (call >> number) && number == SYS_futex;
}

// Pop waits while the outbox is empty and open; Close wakes it, and it
// returns false. The test makes sure Pop is blocked (asleep in its wait,
// and not returned) before it closes.
TEST(OutboxTest, CloseWakesABlockedPop) {
  auto box = std::make_shared<Outbox>(4);
  std::atomic<pid_t> tid{0};
  auto returned = std::make_shared<std::atomic<bool>>(false);
  std::thread t([box, returned, &tid] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    rlvr::v1::ActorMessage m;
    EXPECT_FALSE(box->Pop(&m));
    *returned = true;
  });
  auto wait_for = [](const std::function<bool()>& done) {
    for (int i = 0; i < 5000 && !done(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return done();
  };
  EXPECT_TRUE(wait_for([&] { return *returned || (tid != 0 && SleepsInFutex(tid)); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(*returned) << "Pop returned while the outbox was empty and open";
  EXPECT_TRUE(SleepsInFutex(tid)) << "Pop is not asleep in its wait";
  box->Close(/*graceful=*/false);
  if (wait_for([&] { return returned->load(); })) {
    t.join();
  } else {
    ADD_FAILURE() << "Close did not wake the blocked Pop within 5 s";
    t.detach();  // It holds the outbox and the flag.
  }
}

}  // namespace
}  // namespace rlvr::actor
