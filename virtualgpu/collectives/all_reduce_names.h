// The names of the all-reduce algorithms, for the algorithms themselves and what sits below the
// table that makes them (all_reduce_algorithms.h: every row names itself with one of these).
#pragma once

#include <string>
#include <string_view>

namespace mirrorlab::vgpu {

inline constexpr std::string_view kReduceToOneName = "reduce-to-one";
inline constexpr std::string_view kRingName = "ring";
inline constexpr std::string_view kOneShotName = "one-shot";
inline constexpr std::string_view kNcclName = "nccl";
// What to ask for to get what TensorFlow chooses; not an algorithm of its own.
inline constexpr std::string_view kAutoAllReduce = "auto";

// "reduce-to-one, ring, one-shot or nccl": every algorithm of the table in its order but
// `except`, the last two joined by `last` (defined with the table, all_reduce_algorithms.cpp).
std::string all_reduce_name_list(std::string_view last = "or", std::string_view except = "");

}  // namespace mirrorlab::vgpu
