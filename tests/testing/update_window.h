// What a window of training looked like, from the times of its updates: the
// hung-actor tests (tests/chaos, tests/interop) compare a learner with a
// stopped actor against a twin without one over the same window.
//
// Stalls are gaps: a stopped actor holding leases stops synchronous
// training for one lease timeout (its leases expire, the prompts are
// re-queued), which is timer-driven and shows as one long gap whatever the
// load; load from other processes stretches every gap a little, in both
// learners. Update counts, in contrast, vary by 2x between two identical
// learners side by side on a loaded 2-core machine.
#ifndef RLVR_TESTS_TESTING_UPDATE_WINDOW_H_
#define RLVR_TESTS_TESTING_UPDATE_WINDOW_H_

#include <algorithm>
#include <vector>

namespace rlvr::testing {

struct UpdateWindow {
  int updates = 0;           // Updates in [from, to).
  double rate = 0;           // updates / (to - from), per second.
  double longest_gap_s = 0;  // Longest time without an update in [from, to).
  int long_gaps = 0;         // Gaps longer than the threshold given.
};

// `times_s`: update times (seconds, on the clock of `from_s` and `to_s`), in
// any order. The gaps are those between consecutive updates in the
// window, from `from_s` to the first and from the last to `to_s` (the whole
// window when there is no update).
inline UpdateWindow SummarizeUpdates(std::vector<double> times_s, double from_s, double to_s,
                                     double long_gap_s) {
  std::sort(times_s.begin(), times_s.end());
  UpdateWindow w;
  double last = from_s;
  auto gap = [&](double g) {
    w.longest_gap_s = std::max(w.longest_gap_s, g);
    w.long_gaps += g > long_gap_s ? 1 : 0;
  };
  for (double t : times_s) {
    if (t < from_s || t >= to_s) continue;
    ++w.updates;
    gap(t - last);
    last = t;
  }
  gap(to_s - last);
  w.rate = to_s > from_s ? w.updates / (to_s - from_s) : 0.0;
  return w;
}

}  // namespace rlvr::testing

#endif  // RLVR_TESTS_TESTING_UPDATE_WINDOW_H_
