#include "learner/core/packing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace rlvr::learner {
namespace {

// A partial packing: one slot per mini-batch, each with its groups and sum.
struct Slot {
  double sum = 0.0;
  std::vector<int> items;
};
using Partial = std::vector<Slot>;

double Spread(const Partial& p) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (const Slot& s : p) {
    lo = std::min(lo, s.sum);
    hi = std::max(hi, s.sum);
  }
  return hi - lo;
}

// Largest sum of `a` with smallest of `b`, and so on.
Partial Merge(Partial a, Partial b) {
  auto by_sum_desc = [](const Slot& x, const Slot& y) { return x.sum > y.sum; };
  std::stable_sort(a.begin(), a.end(), by_sum_desc);
  std::stable_sort(b.begin(), b.end(), by_sum_desc);
  const size_t k = a.size();
  for (size_t j = 0; j < k; ++j) {
    Slot& from = b[k - 1 - j];
    a[j].sum += from.sum;
    a[j].items.insert(a[j].items.end(), from.items.begin(), from.items.end());
  }
  return a;
}

// Slots -> assignment, labelled so that mini-batch b has PackSizes(..)[b]
// groups: larger slots first, then by smallest item index (deterministic).
std::vector<int> Label(std::vector<std::vector<int>> slots, size_t n) {
  for (auto& s : slots) std::sort(s.begin(), s.end());
  std::stable_sort(slots.begin(), slots.end(),
                   [](const std::vector<int>& x, const std::vector<int>& y) {
                     if (x.size() != y.size()) return x.size() > y.size();
                     if (x.empty()) return false;
                     return x.front() < y.front();
                   });
  std::vector<int> assignment(n, 0);
  for (size_t b = 0; b < slots.size(); ++b) {
    for (int i : slots[b]) assignment[static_cast<size_t>(i)] = static_cast<int>(b);
  }
  return assignment;
}

// Improves an assignment by swaps between mini-batches and moves from a larger
// to a smaller one (both keep the multiset of sizes), accepted only when both
// changed mini-batches end strictly below the current worst |sum|. The sorted
// vector of |sums| then decreases lexicographically, so this terminates.
void ImproveBySwaps(const std::vector<double>& values, std::vector<std::vector<int>>* slots) {
  const size_t k = slots->size();
  std::vector<double> sums(k, 0.0);
  for (size_t b = 0; b < k; ++b) {
    for (int i : (*slots)[b]) sums[b] += values[static_cast<size_t>(i)];
  }
  for (int round = 0; round < 10000; ++round) {
    size_t w = 0;
    for (size_t b = 1; b < k; ++b) {
      if (std::fabs(sums[b]) > std::fabs(sums[w])) w = b;
    }
    const double worst = std::fabs(sums[w]);
    bool improved = false;
    std::vector<int>& ws = (*slots)[w];
    for (size_t c = 0; c < k && !improved; ++c) {
      if (c == w) continue;
      std::vector<int>& cs = (*slots)[c];
      for (size_t x = 0; x < ws.size() && !improved; ++x) {
        const double vx = values[static_cast<size_t>(ws[x])];
        if (ws.size() > cs.size()) {  // Move x from w to c.
          const double nw = sums[w] - vx, nc = sums[c] + vx;
          if (std::max(std::fabs(nw), std::fabs(nc)) < worst) {
            cs.push_back(ws[x]);
            ws.erase(ws.begin() + static_cast<std::ptrdiff_t>(x));
            sums[w] = nw;
            sums[c] = nc;
            improved = true;
            break;
          }
        }
        for (size_t y = 0; y < cs.size(); ++y) {
          const double vy = values[static_cast<size_t>(cs[y])];
          const double nw = sums[w] - vx + vy, nc = sums[c] + vx - vy;
          if (std::max(std::fabs(nw), std::fabs(nc)) < worst) {
            std::swap(ws[x], cs[y]);
            sums[w] = nw;
            sums[c] = nc;
            improved = true;
            break;
          }
        }
      }
    }
    if (!improved) return;
  }
}

struct ExactSearch {
  const std::vector<double>* values;
  std::vector<int> order;        // Items, largest |value| first.
  std::vector<size_t> capacity;  // Per mini-batch.
  std::vector<size_t> count;
  std::vector<double> sum;
  std::vector<int> current;  // assignment per item
  std::vector<int> best;
  double best_worst = 0.0;

  void Run(size_t depth, double worst_full) {
    if (depth == order.size()) {
      if (worst_full < best_worst) {
        best_worst = worst_full;
        best = current;
      }
      return;
    }
    const int item = order[depth];
    const double v = (*values)[static_cast<size_t>(item)];
    for (size_t b = 0; b < capacity.size(); ++b) {
      if (count[b] >= capacity[b]) continue;
      // Empty mini-batches of the same capacity are interchangeable: try the first only.
      bool symmetric = false;
      if (count[b] == 0) {
        for (size_t e = 0; e < b; ++e) {
          if (count[e] == 0 && capacity[e] == capacity[b]) symmetric = true;
        }
      }
      if (symmetric) continue;
      sum[b] += v;
      ++count[b];
      double w = worst_full;
      if (count[b] == capacity[b]) w = std::max(w, std::fabs(sum[b]));
      if (w < best_worst) {
        current[static_cast<size_t>(item)] = static_cast<int>(b);
        Run(depth + 1, w);
      }
      --count[b];
      sum[b] -= v;
    }
  }
};

}  // namespace

std::vector<size_t> PackSizes(size_t n, size_t parts) {
  std::vector<size_t> sizes(parts, n / parts);
  for (size_t i = 0; i < n % parts; ++i) ++sizes[i];
  return sizes;
}

double WorstImbalance(const std::vector<double>& values, const std::vector<int>& assignment,
                      size_t parts) {
  std::vector<double> sums(parts, 0.0);
  for (size_t i = 0; i < values.size(); ++i) sums[static_cast<size_t>(assignment[i])] += values[i];
  double worst = 0.0;
  for (double s : sums) worst = std::max(worst, std::fabs(s));
  return worst;
}

std::vector<int> PackLargestDifferencing(const std::vector<double>& values, size_t parts) {
  const size_t n = values.size();
  if (n == 0) return {};
  const size_t k = parts;
  const size_t r = n % k;
  std::vector<int> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  // The r values closest to zero form the partial row.
  std::vector<int> by_abs = idx;
  std::stable_sort(by_abs.begin(), by_abs.end(), [&](int a, int b) {
    return std::fabs(values[static_cast<size_t>(a)]) < std::fabs(values[static_cast<size_t>(b)]);
  });
  std::vector<bool> in_partial(n, false);
  for (size_t i = 0; i < r; ++i) in_partial[static_cast<size_t>(by_abs[i])] = true;
  std::vector<int> rest;
  for (int i : idx) {
    if (!in_partial[static_cast<size_t>(i)]) rest.push_back(i);
  }
  std::stable_sort(rest.begin(), rest.end(), [&](int a, int b) {
    return values[static_cast<size_t>(a)] < values[static_cast<size_t>(b)];
  });
  std::vector<Partial> partials;
  for (size_t at = 0; at < rest.size(); at += k) {
    Partial p(k);
    for (size_t j = 0; j < k; ++j) {
      p[j].sum = values[static_cast<size_t>(rest[at + j])];
      p[j].items = {rest[at + j]};
    }
    partials.push_back(std::move(p));
  }
  if (r > 0) {
    Partial p(k);
    size_t j = 0;
    for (int i : by_abs) {
      if (j == r) break;
      p[j].sum = values[static_cast<size_t>(i)];
      p[j].items = {i};
      ++j;
    }
    partials.push_back(std::move(p));
  }
  while (partials.size() > 1) {
    // The two largest spreads (first occurrence on ties).
    size_t a = 0, b = 1;
    if (Spread(partials[b]) > Spread(partials[a])) std::swap(a, b);
    for (size_t i = 2; i < partials.size(); ++i) {
      const double s = Spread(partials[i]);
      if (s > Spread(partials[a])) {
        b = a;
        a = i;
      } else if (s > Spread(partials[b])) {
        b = i;
      }
    }
    Partial merged = Merge(partials[a], partials[b]);
    partials.erase(partials.begin() + static_cast<std::ptrdiff_t>(std::max(a, b)));
    partials.erase(partials.begin() + static_cast<std::ptrdiff_t>(std::min(a, b)));
    partials.push_back(std::move(merged));
  }
  std::vector<std::vector<int>> slots;
  for (Slot& s : partials[0]) slots.push_back(std::move(s.items));
  ImproveBySwaps(values, &slots);
  return Label(std::move(slots), n);
}

std::vector<int> PackExact(const std::vector<double>& values, size_t parts) {
  const size_t n = values.size();
  if (n == 0) return {};
  // Start from the LDM packing; the search only accepts strictly better ones.
  std::vector<int> start = PackLargestDifferencing(values, parts);
  ExactSearch search;
  search.values = &values;
  search.order.resize(n);
  std::iota(search.order.begin(), search.order.end(), 0);
  std::stable_sort(search.order.begin(), search.order.end(), [&](int a, int b) {
    return std::fabs(values[static_cast<size_t>(a)]) > std::fabs(values[static_cast<size_t>(b)]);
  });
  search.capacity = PackSizes(n, parts);
  search.count.assign(parts, 0);
  search.sum.assign(parts, 0.0);
  search.current.assign(n, 0);
  search.best = start;
  search.best_worst = WorstImbalance(values, start, parts);
  search.Run(0, 0.0);
  std::vector<std::vector<int>> slots(parts);
  for (size_t i = 0; i < n; ++i)
    slots[static_cast<size_t>(search.best[i])].push_back(static_cast<int>(i));
  return Label(std::move(slots), n);
}

std::vector<int> PackMiniBatches(const std::vector<double>& values, size_t parts) {
  return values.size() <= kExactPackLimit ? PackExact(values, parts)
                                          : PackLargestDifferencing(values, parts);
}

}  // namespace rlvr::learner
