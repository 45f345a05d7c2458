#include "app/flags/flags.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <set>
#include <system_error>
#include <vector>

#include "CLI/CLI.hpp"
#include "files/field_words.h"

namespace mirrorlab::app {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// "'abc'", or "an empty value".
std::string shown(std::string_view text) {
  return text.empty() ? std::string("an empty value") : "'" + std::string(text) + "'";
}

std::string number_text(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

// "1T", "64M", "4K", "12 bytes": the largest unit that divides it.
std::string size_text(std::uint64_t bytes) {
  const char* units[] = {"T", "G", "M", "K"};
  for (int i = 0; i < 4; ++i) {
    const int shift = 10 * (4 - i);
    if (bytes != 0 && bytes % (std::uint64_t{1} << shift) == 0) {
      return std::to_string(bytes >> shift) + units[i];
    }
  }
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

template <class T>
std::string whole_range(T min, T max) {
  return "give a whole number from " + std::to_string(min) + " to " + std::to_string(max);
}

// Whether `text` reads as a real number that is not whole ("1.5", "1e3", "nan"): to say "not a
// whole number" rather than "not a number".
bool looks_real(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string_view without_plus(std::string_view text) {
  if (text.size() > 1 && text.front() == '+' && text[1] != '-' && text[1] != '+') {
    text.remove_prefix(1);
  }
  return text;
}

// "" when the number was read to the end; else why not ("is not a whole number", ...).
template <class T>
std::string read_integer(std::string_view text, T* out, const std::string& what_to_give) {
  const std::string_view digits = without_plus(text);
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *out);
  if (ec == std::errc::result_out_of_range) {
    return shown(text) + " is " + (digits.front() == '-' ? "too small" : "too large") + ": " +
           what_to_give;
  }
  if (ec == std::errc() && end == digits.data() + digits.size()) return "";
  if (std::is_unsigned_v<T> && !digits.empty() && digits.front() == '-') {
    return shown(text) + " is negative: " + what_to_give;
  }
  if (looks_real(digits)) {
    double value = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (std::isnan(value)) return shown(text) + " is not a number: " + what_to_give;
    if (std::isinf(value)) return shown(text) + " is not a finite number: " + what_to_give;
    return shown(text) + " is not a whole number: " + what_to_give;
  }
  return shown(text) + " is not a whole number: " + what_to_give;
}

// A validator that parses with `check` and never changes the text.
CLI::Validator checked(std::function<std::string(const std::string&)> check) {
  return CLI::Validator([check = std::move(check)](std::string& text) { return check(text); }, "",
                        kCheckedFlag);
}

// The option itself: one value a use, every use passed to `assign`, which refuses repeats.
CLI::Option* add_value_flag(CLI::App* command, const std::string& names, const std::string& help,
                            const std::string& type, const std::string& default_text,
                            std::function<std::string(const std::string&)> check,
                            std::function<void(const std::string&)> assign) {
  auto option_name = std::make_shared<std::string>();
  CLI::Option* option = command->add_option(
      names,
      [check, assign, option_name](const CLI::results_t& results) {
        if (results.size() > 1) {
          std::string list;
          for (const std::string& r : results) list += (list.empty() ? "" : ", ") + shown(r);
          throw CLI::ValidationError(*option_name, "given " + std::to_string(results.size()) +
                                                       " times (" + list + "): give it once");
        }
        assign(results.front());
        return true;
      },
      help);
  *option_name = option->get_name();  // as CLI11 names it in its own errors: "--minbytes"
  option->type_name(type)
      ->type_size(1)
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(checked(std::move(check)));
  if (!default_text.empty()) option->default_str(default_text);
  return option;
}

template <class T>
CLI::Option* add_integer(CLI::App* command, const std::string& names, T& value, T min, T max,
                         const std::string& help) {
  auto parse = [min, max](const std::string& text, T* out) {
    if constexpr (std::is_unsigned_v<T>) {
      std::uint64_t v = 0;
      std::string problem = parse_unsigned(text, min, max, &v);
      *out = static_cast<T>(v);
      return problem;
    } else {
      std::int64_t v = 0;
      std::string problem = parse_whole_number(text, min, max, &v);
      *out = static_cast<T>(v);
      return problem;
    }
  };
  return add_value_flag(
      command, names, help, "N", std::to_string(value),
      [parse](const std::string& text) {
        T v{};
        return parse(text, &v);
      },
      [parse, &value](const std::string& text) { parse(text, &value); });
}

template <class T>
CLI::Option* add_real(CLI::App* command, const std::string& names, T& value, double min, double max,
                      const std::string& help) {
  return add_value_flag(
      command, names, help, "X", number_text(value),
      [min, max](const std::string& text) {
        double v = 0;
        return parse_real(text, min, max, &v);
      },
      [min, max, &value](const std::string& text) {
        double v = 0;
        parse_real(text, min, max, &v);
        value = static_cast<T>(v);
      });
}

template <class T>
CLI::Option* add_integer_list(CLI::App* command, const std::string& names, std::vector<T>& values,
                              T min, T max, const std::string& help) {
  return add_value_flag(
      command, names, help, "N[,N...]", "",
      [min, max](const std::string& text) {
        std::vector<std::int64_t> v;
        return parse_whole_number_list(text, min, max, &v);
      },
      [min, max, &values](const std::string& text) {
        std::vector<std::int64_t> v;
        parse_whole_number_list(text, min, max, &v);
        values.assign(v.begin(), v.end());
      });
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string check_choice(std::string_view text, const std::vector<std::string>& choices) {
  for (const std::string& c : choices) {
    if (c == text) return "";
  }
  return shown(text) + " is not one of " + join(choices) +
         files::field_words::did_you_mean(text, choices);
}

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    parts.emplace_back(trim(text.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return parts;
}

// "" when every comma-separated entry is present and passes `check`.
std::string check_list(std::string_view text,
                       const std::function<std::string(std::string_view, std::size_t)>& check) {
  const std::vector<std::string> parts = split_commas(text);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].empty()) {
      return shown(text) + ": entry " + std::to_string(i + 1) + " of " +
             std::to_string(parts.size()) +
             " is empty; write the entries separated by single commas, none empty";
    }
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (std::string problem = check(parts[i], i); !problem.empty()) {
      return parts.size() > 1 ? "in " + shown(text) + ", " + problem : problem;
    }
  }
  return "";
}

template <class T>
std::string parse_integer(std::string_view text, T min, T max, T* out) {
  text = trim(text);
  const std::string give = whole_range(min, max);
  if (text.empty()) return "the value is empty: " + give;
  if (std::string problem = read_integer(text, out, give); !problem.empty()) return problem;
  if (*out < min || *out > max) return shown(text) + " is out of range: " + give;
  return "";
}

}  // namespace

std::string parse_whole_number(std::string_view text, std::int64_t min, std::int64_t max,
                               std::int64_t* out) {
  return parse_integer(text, min, max, out);
}

std::string parse_unsigned(std::string_view text, std::uint64_t min, std::uint64_t max,
                           std::uint64_t* out) {
  return parse_integer(text, min, max, out);
}

std::string parse_real(std::string_view text, double min, double max, double* out) {
  text = trim(text);
  const std::string give = "give a number from " + number_text(min) + " to " + number_text(max);
  if (text.empty()) return "the value is empty: " + give;
  const std::string_view digits = without_plus(text);
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *out);
  if (ec == std::errc::result_out_of_range) return shown(text) + " is out of range: " + give;
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    return shown(text) + " is not a number: " + give;
  }
  if (std::isnan(*out)) return shown(text) + " is not a number: " + give;
  if (std::isinf(*out)) return shown(text) + " is not a finite number: " + give;
  if (*out < min || *out > max) return shown(text) + " is out of range: " + give;
  return "";
}

std::string parse_bytes(std::string_view text, std::uint64_t min, std::uint64_t max,
                        std::uint64_t multiple, std::uint64_t* out) {
  text = trim(text);
  const std::string give = "give a size from " + size_text(min) + " to " + size_text(max) +
                           ", a multiple of " + std::to_string(multiple) +
                           " (e.g. 4096, 64K, 16M, 1G)";
  if (text.empty()) return "the value is empty: " + give;
  std::string_view number = text;
  int shift = 0;
  // Suffixes: K, M, G, T (powers of 1024), each optionally followed by "B" or "iB"; or "B".
  auto ends_with = [&](std::string_view s) {
    return number.size() > s.size() &&
           std::equal(s.rbegin(), s.rend(), number.rbegin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) ==
                    std::tolower(static_cast<unsigned char>(b));
           });
  };
  if (ends_with("ib")) {
    number.remove_suffix(2);
    if (!ends_with("k") && !ends_with("m") && !ends_with("g") && !ends_with("t")) {
      return shown(text) + " is not a size: " + give;
    }
  } else if (ends_with("b")) {
    number.remove_suffix(1);
  }
  const std::string units = "kmgt";
  if (!number.empty()) {
    const std::size_t unit =
        units.find(static_cast<char>(std::tolower(static_cast<unsigned char>(number.back()))));
    if (unit != std::string::npos) {
      shift = 10 * static_cast<int>(unit + 1);
      number.remove_suffix(1);
    }
  }
  std::uint64_t count = 0;
  if (std::string problem = read_integer(number, &count, give); !problem.empty()) {
    const bool negative = !number.empty() && number.front() == '-';
    return shown(text) + (negative ? " is negative: " : " is not a size: ") + give;
  }
  if (shift > 0 && count > (std::numeric_limits<std::uint64_t>::max() >> shift)) {
    return shown(text) + " is too large: " + give;
  }
  *out = count << shift;
  if (*out < min || *out > max) return shown(text) + " is out of range: " + give;
  if (*out % multiple != 0) {
    return shown(text) + " is not a multiple of " + std::to_string(multiple) +
           " bytes (the values are float32): " + give;
  }
  return "";
}

std::string parse_whole_number_list(std::string_view text, std::int64_t min, std::int64_t max,
                                    std::vector<std::int64_t>* out) {
  out->clear();
  return check_list(text, [&](std::string_view entry, std::size_t) {
    std::int64_t value = 0;
    std::string problem = parse_whole_number(entry, min, max, &value);
    out->push_back(value);
    return problem;
  });
}

std::string parse_steps_or_epochs(std::string_view text, std::int64_t max, StepsOrEpochs* out) {
  text = trim(text);
  const std::string give = "give a number of steps from 1 to " + std::to_string(max) +
                           ", or of epochs with an e after it (e.g. 500 or 2e)";
  if (text.empty()) return "the value is empty: " + give;
  const bool epochs = text.size() > 1 && (text.back() == 'e' || text.back() == 'E') &&
                      std::isdigit(static_cast<unsigned char>(text[text.size() - 2]));
  const std::string_view number = epochs ? text.substr(0, text.size() - 1) : text;
  std::int64_t count = 0;
  if (const std::string problem = read_integer(number, &count, give); !problem.empty()) {
    return epochs ? shown(text) + " is not a whole number of epochs: " + give : problem;
  }
  if (count < 1 || count > max) return shown(text) + " is out of range: " + give;
  *out = StepsOrEpochs{count, epochs};
  return "";
}

CLI::Option* add_steps_or_epochs_flag(CLI::App* command, const std::string& names,
                                      StepsOrEpochs& value, std::int64_t max,
                                      const std::string& help) {
  return add_value_flag(
      command, names, help, "STEPS", "",
      [max](const std::string& text) {
        StepsOrEpochs v;
        return parse_steps_or_epochs(text, max, &v);
      },
      [max, &value](const std::string& text) { parse_steps_or_epochs(text, max, &value); });
}

CLI::Option* add_entry_list_flag(CLI::App* command, const std::string& names,
                                 const std::string& type, const std::string& help,
                                 std::function<std::string(std::string_view)> check,
                                 std::function<void(const std::vector<std::string>&)> assign) {
  return add_value_flag(
      command, names, help, type, "",
      [check](const std::string& text) {
        return check_list(text, [&](std::string_view entry, std::size_t) { return check(entry); });
      },
      [assign](const std::string& text) { assign(split_commas(text)); });
}

CLI::Option* add_whole_number_flag(CLI::App* command, const std::string& names, int& value, int min,
                                   int max, const std::string& help) {
  return add_integer<int>(command, names, value, min, max, help);
}
CLI::Option* add_whole_number_flag(CLI::App* command, const std::string& names, std::int64_t& value,
                                   std::int64_t min, std::int64_t max, const std::string& help) {
  return add_integer<std::int64_t>(command, names, value, min, max, help);
}
CLI::Option* add_unsigned_flag(CLI::App* command, const std::string& names, std::uint64_t& value,
                               std::uint64_t min, std::uint64_t max, const std::string& help) {
  return add_integer<std::uint64_t>(command, names, value, min, max, help);
}
CLI::Option* add_real_flag(CLI::App* command, const std::string& names, double& value, double min,
                           double max, const std::string& help) {
  return add_real<double>(command, names, value, min, max, help);
}
CLI::Option* add_real_flag(CLI::App* command, const std::string& names, float& value, double min,
                           double max, const std::string& help) {
  return add_real<float>(command, names, value, min, max, help);
}

CLI::Option* add_bytes_flag(CLI::App* command, const std::string& names, std::uint64_t& value,
                            std::uint64_t min, std::uint64_t max, std::uint64_t multiple,
                            const std::string& help) {
  return add_value_flag(
      command, names, help, "SIZE", std::to_string(value),
      [=](const std::string& text) {
        std::uint64_t v = 0;
        return parse_bytes(text, min, max, multiple, &v);
      },
      [=, &value](const std::string& text) { parse_bytes(text, min, max, multiple, &value); });
}

CLI::Option* add_whole_number_list_flag(CLI::App* command, const std::string& names,
                                        std::vector<std::int64_t>& values, std::int64_t min,
                                        std::int64_t max, const std::string& help) {
  return add_integer_list<std::int64_t>(command, names, values, min, max, help);
}
CLI::Option* add_whole_number_list_flag(CLI::App* command, const std::string& names,
                                        std::vector<int>& values, int min, int max,
                                        const std::string& help) {
  return add_integer_list<int>(command, names, values, min, max, help);
}

CLI::Option* add_choice_flag(CLI::App* command, const std::string& names, std::string& value,
                             const std::vector<std::string>& choices, const std::string& help) {
  return add_choice_flag(command, names, choices, value, help,
                         [&value](const std::string& text) { value = text; });
}

CLI::Option* add_choice_flag(CLI::App* command, const std::string& names,
                             const std::vector<std::string>& choices,
                             const std::string& default_text, const std::string& help,
                             std::function<void(const std::string&)> assign) {
  std::string type;
  for (const std::string& c : choices) type += (type.empty() ? "" : "|") + c;
  return add_value_flag(
      command, names, help, type, default_text,
      [choices](const std::string& text) { return check_choice(trim(text), choices); },
      [assign = std::move(assign)](const std::string& text) { assign(std::string(trim(text))); });
}

CLI::Option* add_choice_list_flag(CLI::App* command, const std::string& names,
                                  std::vector<std::string>& values,
                                  const std::vector<std::string>& choices,
                                  const std::string& help) {
  return add_value_flag(
      command, names, help, "NAME[,NAME...]", join(values),
      [choices](const std::string& text) {
        std::set<std::string> seen;
        return check_list(text, [&](std::string_view entry, std::size_t) {
          if (!seen.insert(std::string(entry)).second) {
            return shown(entry) + " is listed twice";
          }
          return check_choice(entry, choices);
        });
      },
      [&values](const std::string& text) { values = split_commas(text); });
}

CLI::Option* add_text_flag(CLI::App* command, const std::string& names, std::string& value,
                           const std::string& help) {
  return add_value_flag(
      command, names, help, "TEXT", value,
      [](const std::string& text) {
        return text.empty() ? std::string("the value is empty: give a name") : std::string();
      },
      [&value](const std::string& text) { value = text; });
}

const CLI::App& chosen_command(const CLI::App& root) {
  const CLI::App* command = &root;
  while (!command->get_subcommands().empty()) command = command->get_subcommands().front();
  return *command;
}

std::string command_path(const CLI::App& root) {
  std::string path = "mirrorlab";
  for (const CLI::App* c = &root; !c->get_subcommands().empty();) {
    c = c->get_subcommands().front();
    path += " " + c->get_name();
  }
  return path;
}

namespace {

// The flag of `command` a user most likely meant by `given`: the nearest by a letter or two
// ("--gpu": "--gpus"), the one flag it begins ("--mem": "--memory-limit"), or the flag whose help
// says its words ("--learning-rate": "--lr", "Learning rate"); "" when none is.
std::string flag_meant(const CLI::App& command, std::string given) {
  given = given.substr(0, given.find('='));
  const std::size_t dashes = given.find_first_not_of('-');
  if (dashes == std::string::npos) return "";
  const std::string name = given.substr(dashes);
  std::vector<std::string> flags;
  std::string described;
  std::string words = files::field_words::lowered(name);
  std::replace(words.begin(), words.end(), '-', ' ');
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& long_name : option->get_lnames()) {
      flags.push_back(long_name);
      if (described.empty() && words.find(' ') != std::string::npos &&
          files::field_words::lowered(option->get_description()).find(words) != std::string::npos) {
        described = "--" + long_name;
      }
    }
  }
  const std::string meant = files::field_words::nearest_name(name, flags);
  return meant.empty() ? described : "--" + meant;
}

// "no flag --gpu (did you mean --gpus?)" for a flag the command does not have; for a word that
// follows no flag, that it does not.
std::string unknown_flag(const CLI::App& root) {
  const CLI::App& command = chosen_command(root);
  const std::vector<std::string> extra = command.remaining();
  for (const std::string& arg : extra) {
    const bool number =
        arg.size() > 1 && (std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.');
    if (arg.size() < 2 || arg[0] != '-' || number) continue;
    const std::string meant = flag_meant(command, arg);
    return "no flag " + arg.substr(0, arg.find('=')) +
           (meant.empty() ? "" : " (did you mean " + meant + "?)");
  }
  if (extra.empty()) return "";
  return "'" + extra.front() + "' follows no flag: give each value after its flag (--NAME VALUE)";
}

// CLI11's words, where they read as its own ("--gpus: 1 required N missing", "Could not convert:
// --overlap = maybe", "file is required"), said as what was wrong and what to give; else its own.
std::string said_plainly(const CLI::App& command, const std::string& path,
                         const CLI::Error& error) {
  const std::string what = error.what();
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    const std::size_t colon = what.find(": "), required = what.find(" required ");
    if (colon != std::string::npos && required != std::string::npos && required > colon &&
        what.ends_with(" missing")) {
      const std::string flag = what.substr(0, colon);
      const std::size_t type = required + std::string(" required ").size();
      return flag + ": no value after it: give one, as in " + flag + " " +
             what.substr(type, what.size() - std::string(" missing").size() - type);
    }
  }
  const std::string unconverted = "Could not convert: ";
  const std::size_t equals = what.find(" = ");
  if (dynamic_cast<const CLI::ConversionError*>(&error) != nullptr &&
      what.starts_with(unconverted) && equals != std::string::npos) {
    const std::string name = what.substr(unconverted.size(), equals - unconverted.size());
    const CLI::Option* option = command.get_option_no_throw(name);
    if (option != nullptr && option->get_expected_max() == 0) {    // a flag: on when given
      const std::vector<std::string>& off = option->get_fnames();  // its "no" form, if any
      return name + " is on or off, not \"" + what.substr(equals + 3) + "\": " +
             (off.empty() ? "give " + name + " alone to turn it on"
                          : name + " turns it on, --" + off.front() + " off");
    }
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr &&
      what.ends_with(" is required")) {
    const std::string name = what.substr(0, what.size() - std::string(" is required").size());
    for (const CLI::Option* option : command.get_options()) {
      if (option->get_positional() && option->get_name() == name) {
        return "which " + name + "? give it after the command, as in: " + path + " " +
               option->get_type_name();
      }
    }
  }
  return what;
}

}  // namespace

std::string describe_parse_failure(const CLI::App& root, const CLI::Error& error) {
  const std::string path = command_path(root);
  const std::string unknown =
      dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr ? unknown_flag(root) : "";
  return path + ": " +
         (unknown.empty() ? said_plainly(chosen_command(root), path, error) : unknown) + "\nRun '" +
         path + " --help' for the flags.\n";
}

}  // namespace mirrorlab::app
