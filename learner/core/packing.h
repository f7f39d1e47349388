// Assignment of whole groups to the mini-batches of one epoch so that every
// mini-batch's positive and negative mass balance (batching.reward_balance =
// pack; ALGORITHMS.md, "Batching").
//
// Each group g has a signed value d_g = U+_g - U-_g (in batching.balance_unit).
// A packing puts every group in exactly one of `parts` mini-batches whose
// sizes (numbers of groups) are PackSizes(n, parts): they differ by at most
// one, the larger ones first. The objective is the worst mini-batch
// imbalance max_b |sum_{g in b} d_g| (WorstImbalance).
//
// Methods:
//   - PackExact: exhaustive search (branch and bound), optimal; for small n.
//   - PackLargestDifferencing: the balanced k-way largest differencing method
//     (Karmarkar-Karp style). Sort the values; cut them into rows of `parts`
//     consecutive values (the n mod parts values closest to 0 form one partial
//     row, padded with empty slots, so every mini-batch takes at most one group
//     of it: sizes stay balanced); each row is a partial packing with one group
//     per mini-batch. Repeatedly merge the two partial packings with the
//     largest spread (max - min of their mini-batch sums), pairing the largest
//     sum of one with the smallest of the other, until one is left; then
//     improve by pairwise swaps/moves that keep the sizes.
//     Guarantee: merging packings of spreads a and b in reverse order gives a
//     spread <= max(a, b), so the final spread is at most the largest row's
//     spread s_row, and, since every packing has max_b |S_b| >= |sum d| / parts,
//       WorstImbalance(LDM) <= OPT + s_row <= OPT + (max d - min d).
//     (Swaps never make it worse.)
//   - PackMiniBatches: PackExact when n <= kExactPackLimit, else LDM.
//
// Ties are broken by input order, so a caller that shuffles the groups with a
// seed first gets a deterministic, seed-dependent packing. Torch-free.
// Thread-compatible: pure functions.
#ifndef RLVR_LEARNER_CORE_PACKING_H_
#define RLVR_LEARNER_CORE_PACKING_H_

#include <cstddef>
#include <vector>

namespace rlvr::learner {

// Up to this many groups, PackMiniBatches searches exhaustively.
inline constexpr size_t kExactPackLimit = 12;

// Mini-batch sizes for n groups in `parts` mini-batches: n / parts each, the
// first n % parts one more. Requires 1 <= parts.
std::vector<size_t> PackSizes(size_t n, size_t parts);

// max over mini-batches b of |sum of values assigned to b|; assignment[i] is
// the mini-batch (0..parts-1) of value i.
double WorstImbalance(const std::vector<double>& values, const std::vector<int>& assignment,
                      size_t parts);

// Each returns assignment[i] in [0, parts) with PackSizes(n, parts) groups per
// mini-batch (mini-batch b has exactly PackSizes(..)[b] groups). Require
// 1 <= parts <= values.size() (an empty input gives an empty result).
std::vector<int> PackExact(const std::vector<double>& values, size_t parts);
std::vector<int> PackLargestDifferencing(const std::vector<double>& values, size_t parts);
std::vector<int> PackMiniBatches(const std::vector<double>& values, size_t parts);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_PACKING_H_
