// One table of names per choice a run's settings make (a model, an optimizer, a loss scaling):
// the flags' choices and help, lesson files, checkpoints, JSON and the GUI's lists all read the
// names from the one table beside the enum, so no face spells a name of its own.
//
// An enum E takes part by declaring, in its own namespace,
//   std::span<const ChoiceName<E>> choice_names(E);
// (found by argument-dependent lookup; the argument only picks the table).
#pragma once

#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mirrorlab::core {

template <class E>
struct ChoiceName {
  E value;
  const char* name;  // as files and flags write it: "replica-mean"
  const char* what;  // one line saying what it is, for help texts
};

template <class E>
std::span<const ChoiceName<E>> choices_of() {
  return choice_names(E{});
}

// The value named `name`, or nothing.
template <class E>
std::optional<E> find_choice(std::string_view name) {
  for (const ChoiceName<E>& c : choices_of<E>()) {
    if (name == c.name) return c.value;
  }
  return std::nullopt;
}

// The name of `value` ("?" for a value outside the table, which is a programming error).
template <class E>
const char* choice_name(E value) {
  for (const ChoiceName<E>& c : choices_of<E>()) {
    if (c.value == value) return c.name;
  }
  return "?";
}

template <class E>
std::vector<std::string> choice_name_list() {
  std::vector<std::string> names;
  for (const ChoiceName<E>& c : choices_of<E>()) names.emplace_back(c.name);
  return names;
}

// "sgd, adam or nadam".
template <class E>
std::string choice_names_text() {
  const std::vector<std::string> names = choice_name_list<E>();
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return text;
}

// "sgd: Keras' SGD ...; adam: ...": each name with what it is.
template <class E>
std::string choice_help_text() {
  std::string text;
  for (const ChoiceName<E>& c : choices_of<E>()) {
    text += (text.empty() ? "" : "; ") + std::string(c.name) + ": " + c.what;
  }
  return text;
}

// The value named `name`; std::invalid_argument "unknown optimizer 'x': choose sgd, adam or
// nadam" else (`kind` names what is chosen).
template <class E>
E parse_choice(std::string_view name, std::string_view kind) {
  if (const std::optional<E> value = find_choice<E>(name)) return *value;
  throw std::invalid_argument("unknown " + std::string(kind) + " '" + std::string(name) +
                              "': choose " + choice_names_text<E>());
}

}  // namespace mirrorlab::core
