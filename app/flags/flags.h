// The one way every command adds a flag that takes a value: numbers, sizes, lists, choices and
// text. Each value is parsed strictly (every character used; NaN, infinities, fractions where a
// whole number is asked, values out of range and empty list entries are refused) and the error
// names the flag, the value and what to give instead. A flag given twice is refused too.
//
// Every value flag carries the validator named kCheckedFlag, so a test can walk all commands and
// find any flag added some other way (tests/app/test_flags.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "app/flags/cli_declarations.h"
#include "core/io/choice_names.h"

namespace mirrorlab::app {

inline constexpr const char* kCheckedFlag = "mirrorlab-checked";

// --- parsing one value (also used by the flags below); "" or what is wrong with `text` --------
// A whole number in [min, max]: "12", "+12"; not "1.5", "1e3", "abc", "".
std::string parse_whole_number(std::string_view text, std::int64_t min, std::int64_t max,
                               std::int64_t* out);
std::string parse_unsigned(std::string_view text, std::uint64_t min, std::uint64_t max,
                           std::uint64_t* out);
// A finite real number in [min, max]: "0.001", "1e-3"; not "nan", "inf", "1,5", "".
std::string parse_real(std::string_view text, double min, double max, double* out);
// A size in bytes: "4096", "4K", "64M", "1G" (K, M, G, T are powers of 1024; a trailing "B" or
// "iB" is allowed), a multiple of `multiple` in [min, max].
std::string parse_bytes(std::string_view text, std::uint64_t min, std::uint64_t max,
                        std::uint64_t multiple, std::uint64_t* out);
// "1024,512": a comma-separated list of whole numbers in [min, max], none empty.
std::string parse_whole_number_list(std::string_view text, std::int64_t min, std::int64_t max,
                                    std::vector<std::int64_t>* out);

// A count of steps, or of epochs with a trailing "e": "500" (500 steps), "2e" (2 epochs), each
// in [1, max].
struct StepsOrEpochs {
  std::int64_t count = 0;  // 0: not given
  bool epochs = false;
};
std::string parse_steps_or_epochs(std::string_view text, std::int64_t max, StepsOrEpochs* out);

// --- adding flags ------------------------------------------------------------------------------
// `names` as CLI11 takes them ("--gpus", "-b,--minbytes"); the default shown in --help is the
// variable's value when the flag is added.
CLI::Option* add_whole_number_flag(CLI::App* command, const std::string& names, int& value, int min,
                                   int max, const std::string& help);
CLI::Option* add_whole_number_flag(CLI::App* command, const std::string& names, std::int64_t& value,
                                   std::int64_t min, std::int64_t max, const std::string& help);
CLI::Option* add_unsigned_flag(CLI::App* command, const std::string& names, std::uint64_t& value,
                               std::uint64_t min, std::uint64_t max, const std::string& help);
CLI::Option* add_real_flag(CLI::App* command, const std::string& names, double& value, double min,
                           double max, const std::string& help);
CLI::Option* add_real_flag(CLI::App* command, const std::string& names, float& value, double min,
                           double max, const std::string& help);
CLI::Option* add_bytes_flag(CLI::App* command, const std::string& names, std::uint64_t& value,
                            std::uint64_t min, std::uint64_t max, std::uint64_t multiple,
                            const std::string& help);
CLI::Option* add_whole_number_list_flag(CLI::App* command, const std::string& names,
                                        std::vector<std::int64_t>& values, std::int64_t min,
                                        std::int64_t max, const std::string& help);
CLI::Option* add_whole_number_list_flag(CLI::App* command, const std::string& names,
                                        std::vector<int>& values, int min, int max,
                                        const std::string& help);
// One of `choices`.
CLI::Option* add_choice_flag(CLI::App* command, const std::string& names, std::string& value,
                             const std::vector<std::string>& choices, const std::string& help);
// One of `choices`, given to `assign`; `default_text` is shown in --help.
CLI::Option* add_choice_flag(CLI::App* command, const std::string& names,
                             const std::vector<std::string>& choices,
                             const std::string& default_text, const std::string& help,
                             std::function<void(const std::string&)> assign);
// One name of an enum's table (core/io/choice_names.h); the help ends with each name's line.
template <class E>
CLI::Option* add_choice_flag(CLI::App* command, const std::string& names, E& value,
                             const std::string& help) {
  return add_choice_flag(
      command, names, core::choice_name_list<E>(), core::choice_name(value),
      help + ": " + core::choice_help_text<E>(),
      [&value](const std::string& text) { value = *core::find_choice<E>(text); });
}
// A comma-separated list of distinct entries of `choices`.
CLI::Option* add_choice_list_flag(CLI::App* command, const std::string& names,
                                  std::vector<std::string>& values,
                                  const std::vector<std::string>& choices, const std::string& help);
CLI::Option* add_steps_or_epochs_flag(CLI::App* command, const std::string& names,
                                      StepsOrEpochs& value, std::int64_t max,
                                      const std::string& help);
// A comma-separated list of entries of a syntax of their own (faults: "/gpu:1=3,/gpu:2=2"):
// `check` returns "" or what is wrong with one entry; `assign` gets the entries once all passed.
// Empty entries are refused as in every list.
CLI::Option* add_entry_list_flag(CLI::App* command, const std::string& names,
                                 const std::string& type, const std::string& help,
                                 std::function<std::string(std::string_view)> check,
                                 std::function<void(const std::vector<std::string>&)> assign);
// Any non-empty text (a file or folder name).
CLI::Option* add_text_flag(CLI::App* command, const std::string& names, std::string& value,
                           const std::string& help);

// The deepest command chosen on the command line `root` parsed ("allreduce" of "bench allreduce").
const CLI::App& chosen_command(const CLI::App& root);
// "mirrorlab bench allreduce": the commands chosen on the command line `root` parsed.
std::string command_path(const CLI::App& root);
// A command line error as mirrorlab says it: "mirrorlab train: --lr: 'nan' is not a number: give
// a number from 1e-09 to 10", then where the help is.
std::string describe_parse_failure(const CLI::App& root, const CLI::Error& error);

}  // namespace mirrorlab::app
