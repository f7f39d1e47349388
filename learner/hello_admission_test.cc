// HelloAdmission: the per-address bound, the pool bound, and displacement of
// the largest holder's oldest stream by an address holding fewer.
#include "learner/hello_admission.h"

#include <gtest/gtest.h>

#include <vector>

namespace rlvr::learner {
namespace {

// Distinct keys (the service uses its reactors' addresses).
const void* K(int i) {
  static char slots[1000];
  return &slots[i];
}

TEST(PeerAddressTest, DropsThePortOfIpPeersOnly) {
  EXPECT_EQ(PeerAddress("ipv4:10.0.0.7:51234"), "ipv4:10.0.0.7");
  EXPECT_EQ(PeerAddress("ipv4:127.0.0.1:1"), "ipv4:127.0.0.1");
  EXPECT_EQ(PeerAddress("ipv6:[fd00::7]:51234"), "ipv6:[fd00::7]");
  EXPECT_EQ(PeerAddress("ipv6:[::ffff:10.0.0.7]:9"), "ipv6:[::ffff:10.0.0.7]");
  EXPECT_EQ(PeerAddress("unix:/tmp/learner.sock"), "unix:/tmp/learner.sock");
  EXPECT_EQ(PeerAddress("unix:"), "unix:");
}

TEST(HelloAdmissionTest, OneAddressGetsAtMostItsPerPeerBound) {
  HelloAdmission a({/*max_awaiting=*/64, /*max_per_peer=*/3});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(a.Admit(K(i), "ipv4:10.0.0.9").admitted);
  HelloAdmission::Decision d = a.Admit(K(3), "ipv4:10.0.0.9");
  EXPECT_FALSE(d.admitted);
  EXPECT_EQ(d.refusal, "peer_awaiting_hello");
  EXPECT_EQ(a.awaiting_from("ipv4:10.0.0.9"), 3);
  // Another address is not affected.
  EXPECT_TRUE(a.Admit(K(4), "ipv4:10.0.0.10").admitted);
  // A stream that says Hello frees its address's slot.
  a.Remove(K(0));
  EXPECT_TRUE(a.Admit(K(5), "ipv4:10.0.0.9").admitted);
  a.Remove(K(999));  // Unknown: ignored.
  EXPECT_EQ(a.awaiting(), 4);
}

TEST(HelloAdmissionTest, AFullPoolMakesTheLargestHolderGiveUpItsOldestStream) {
  HelloAdmission a({/*max_awaiting=*/6, /*max_per_peer=*/3});
  // Two flooding addresses fill the pool.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.Admit(K(i), "ipv4:10.0.0.1").admitted);
  for (int i = 3; i < 6; ++i) ASSERT_TRUE(a.Admit(K(i), "ipv4:10.0.0.2").admitted);
  // A flooder at its share cannot displace anyone.
  HelloAdmission::Decision d = a.Admit(K(6), "ipv4:10.0.0.1");
  EXPECT_EQ(d.refusal, "peer_awaiting_hello");
  // A new address displaces the oldest stream of a largest holder (on a tie,
  // the first address in order: 10.0.0.1, whose oldest is K(0)).
  d = a.Admit(K(7), "ipv4:10.0.0.3");
  EXPECT_TRUE(d.admitted);
  EXPECT_EQ(d.displaced, K(0));
  EXPECT_EQ(a.awaiting(), 6);
  EXPECT_EQ(a.awaiting_from("ipv4:10.0.0.1"), 2);
  // Next the other flooder (now the largest) gives one up.
  d = a.Admit(K(8), "ipv4:10.0.0.4");
  EXPECT_TRUE(d.admitted);
  EXPECT_EQ(d.displaced, K(3));
  // Once every address holds as many as any other, a newcomer whose address
  // already holds that many is refused.
  d = a.Admit(K(9), "ipv4:10.0.0.3");
  EXPECT_TRUE(d.admitted);  // 10.0.0.3 holds 1 < 2.
  d = a.Admit(K(10), "ipv4:10.0.0.3");
  EXPECT_FALSE(d.admitted);
  EXPECT_EQ(d.refusal, "awaiting_hello_full");
  EXPECT_EQ(d.displaced, nullptr);
}

// The scene: a client without credentials that keeps opening
// Hello-less streams, from one address or spread over many. The pool never
// holds more than its bound, the flood churns its own streams, and a real
// actor (another address, Hello right away) is always admitted.
TEST(HelloAdmissionTest, AFloodNeverRefusesAnotherAddress) {
  for (int addresses : {1, 50}) {
    HelloAdmission a({/*max_awaiting=*/6, /*max_per_peer=*/2});
    int refused = 0, displaced = 0;
    for (int i = 0; i < 500; ++i) {
      HelloAdmission::Decision d = a.Admit(K(i), "ipv4:10.9.0." + std::to_string(i % addresses));
      refused += d.admitted ? 0 : 1;
      displaced += d.displaced != nullptr ? 1 : 0;
      ASSERT_LE(a.awaiting(), 6);
    }
    EXPECT_GT(refused + displaced, 0) << addresses;
    HelloAdmission::Decision actor = a.Admit(K(600), "ipv4:10.0.0.200");
    EXPECT_TRUE(actor.admitted) << addresses << " flooding addresses";
  }
}

}  // namespace
}  // namespace rlvr::learner
