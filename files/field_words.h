// The words every reader of a user's file says of a field that is wrong: a checkpoint's state, a
// recording, a topology, a run's settings. Each is what follows the field's name, as in
// "position.epoch is missing" or "`nodes` is 2000, outside [1, 1024]"; the reader puts the name
// (and the file, and the line where it knows it) in front.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mirrorlab::files::field_words {

std::string missing();                                      // is missing
std::string not_whole();                                    // is not a whole number
std::string not_whole(std::string_view value);              // is 1.5, not a whole number
std::string not_number();                                   // is not a number
std::string not_finite(std::string_view value);             // is inf, not a finite number
std::string not_text();                                     // is not text ("...")
std::string not_flag();                                     // is not true or false
std::string not_object();                                   // is not an object ({...})
std::string not_table(std::string_view name);               // is not a table ([name])
std::string not_list();                                     // is not a list ([...])
std::string too_many(std::size_t count, std::size_t most);  // holds 70 entries, more than 64
std::string too_few(std::size_t count, std::size_t least);  // holds 2 entries, fewer than 3

// is 7, outside [0, 5] (the bounds included)
std::string outside(std::int64_t value, std::int64_t min, std::int64_t max);
std::string outside(double value, double min, double max);
std::string outside(std::string_view value, std::string_view min, std::string_view max);
// is 7, out of range: for a reader that says the range itself ("give a number from 0 to 5")
std::string out_of_range(std::string_view value);
// is 'lion', not one of sgd, adam or nadam (`names` as the reader lists them)
std::string not_one_of(std::string_view value, std::string_view names);

// The one of `names` a user most likely meant by `given` ("trian": "train"): the nearest by a
// letter or two (more for a longer name), else the one name it begins ("comp": "compare"); ""
// when none is. Letters are compared whatever their case.
std::string nearest_name(std::string_view given, const std::vector<std::string>& names);
// " (did you mean train?)" where nearest_name finds one, else "".
std::string did_you_mean(std::string_view given, const std::vector<std::string>& names);
// ": did you mean `title`?" where nearest_name finds one, else "": for a file's unknown key,
// before the list of the keys it may have.
std::string did_you_mean_key(std::string_view given, const std::vector<std::string>& names);
std::string lowered(std::string text);  // "ABC" -> "abc" (ASCII letters)

// The shortest text that reads back to `value` ("1e-09", "0.5", "1024", "1e+18").
std::string number_text(double value);

}  // namespace mirrorlab::files::field_words
