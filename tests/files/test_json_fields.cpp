// The strict reader of a JSON document's fields (files/json_fields.h): each accessor gives the
// field of the kind asked for, or refuses it through the reader's own failure, naming the field
// by its whole path ("a.b[2].c is missing") with the words of files/field_words.h.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "files/field_words.h"
#include "files/json_fields.h"

namespace {

using mirrorlab::files::JsonFields;
using nlohmann::json;
namespace words = mirrorlab::files::field_words;

// The reader's own error, as a checkpoint's or a recording's is.
struct Refused {
  std::string name, problem;
};

JsonFields fields(const json& j) {
  return JsonFields(j, "", [](const std::string& name, const std::string& problem) {
    throw Refused{name, problem};
  });
}

// "name problem" for what `read` refuses, or "read" when it reads it.
template <class Read>
std::string refusal(Read read) {
  try {
    read();
    return "read";
  } catch (const Refused& r) {
    return r.name + " " + r.problem;
  }
}

const json kDocument = json::parse(R"({
  "a": {"b": [1, {"c": 3}, {"d": "x"}, "text"]},
  "whole": 7, "big": 18446744073709551615, "negative": -2, "half": 1.5, "name": "ann",
  "yes": true, "nothing": null, "real": 0.25, "zero": 0, "list": [1, 2, 3],
  "pointed": 2.0, "billion": 1e9, "huge": 1e300, "edge": 9223372036854775808.0
})");

TEST(JsonFields, GivesEachFieldOfTheKindAskedFor) {
  const JsonFields f = fields(kDocument);
  EXPECT_EQ(f.integer("whole", 0, 7), 7);
  EXPECT_EQ(f.integer("negative", -2, 0), -2);
  EXPECT_EQ(f.unsigned_integer("big"), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(f.real("whole"), 7.0);  // a whole number is a number too
  EXPECT_EQ(f.real("real", 0, 1), 0.25);
  EXPECT_EQ(f.real("zero", 1, 2, true), 0.0);
  EXPECT_EQ(f.text("name"), "ann");
  EXPECT_TRUE(f.flag("yes"));
  EXPECT_TRUE(f.has("whole"));
  EXPECT_FALSE(f.has("nothing"));
  EXPECT_FALSE(f.has("none"));
  EXPECT_EQ(f.at("nothing"), json());
  const auto b = f.object("a").list("b");
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b.path(), "a.b");
  EXPECT_EQ(b.at(0), 1);
  EXPECT_EQ(b.object(1).integer("c", 0, 3), 3);
  EXPECT_EQ(b.object(2).path(), "a.b[2]");
  EXPECT_EQ(b.text(3), "text");
  EXPECT_EQ(f.list("list", 3).size(), 3u);
  // A whole number written with a point or an exponent (some JSON writers give 2.0) is one.
  EXPECT_EQ(f.integer("pointed", 0, 7), 2);
  EXPECT_EQ(f.unsigned_integer("pointed", 7), 2u);
  EXPECT_EQ(f.integer("billion", 0, 2'000'000'000), 1'000'000'000);
}

TEST(JsonFields, RefusesEachFieldNamingItsPath) {
  const JsonFields f = fields(kDocument);
  const auto b = f.object("a").list("b");
  EXPECT_EQ(refusal([&] { b.object(2).text("c"); }), "a.b[2].c is missing");
  EXPECT_EQ(refusal([&] { b.object(1).integer("c", 4, 5); }), "a.b[1].c is 3, outside [4, 5]");
  EXPECT_EQ(refusal([&] { b.object(0); }), "a.b[0] is not an object ({...})");
  EXPECT_EQ(refusal([&] { b.text(0); }), "a.b[0] is not text (\"...\")");
  EXPECT_EQ(refusal([&] { b.fail(3, "is one too many"); }), "a.b[3] is one too many");
  EXPECT_EQ(refusal([&] { b.fail("holds a gap"); }), "a.b holds a gap");
  EXPECT_EQ(refusal([&] { f.object("a").fail("", "is wrong"); }), "a is wrong");

  EXPECT_EQ(refusal([&] { f.integer("name", 0, 1); }), "name is not a whole number");
  EXPECT_EQ(refusal([&] { f.integer("half", 0, 1); }), "half is 1.5, not a whole number");
  EXPECT_EQ(refusal([&] { f.integer("whole", 0, 5); }), "whole is 7, outside [0, 5]");
  EXPECT_EQ(refusal([&] { f.integer("big", 0, 5); }),
            "big is 18446744073709551615, outside [0, 5]");
  EXPECT_EQ(refusal([&] { f.unsigned_integer("negative"); }),
            "negative is -2, outside [0, 18446744073709551615]");
  EXPECT_EQ(refusal([&] { f.unsigned_integer("whole", 6); }), "whole is 7, outside [0, 6]");
  EXPECT_EQ(refusal([&] { f.unsigned_integer("half"); }), "half is 1.5, not a whole number");
  // Too big, and said so (it was "not a whole number"), not cut down to fit.
  EXPECT_EQ(refusal([&] { f.integer("billion", 0, 64); }),
            "billion is 1000000000.0, outside [0, 64]");
  EXPECT_EQ(refusal([&] { f.unsigned_integer("huge"); }),
            "huge is 1e+300, outside [0, 18446744073709551615]");
  EXPECT_EQ(refusal([&] { f.integer("edge", 0, std::numeric_limits<std::int64_t>::max()); }),
            "edge is 9.223372036854776e+18, outside [0, 9223372036854775807]");
  EXPECT_EQ(refusal([&] { f.real("name"); }), "name is not a number");
  EXPECT_EQ(refusal([&] { f.real("real", 0.5, 1e18); }), "real is 0.25, outside [0.5, 1e+18]");
  EXPECT_EQ(refusal([&] { f.real("negative", 1, 2, true); }),
            "negative is -2, outside [1, 2] and not 0");
  EXPECT_EQ(refusal([&] { f.text("whole"); }), "whole is not text (\"...\")");
  EXPECT_EQ(refusal([&] { f.flag("zero"); }), "zero is not true or false");
  EXPECT_EQ(refusal([&] { f.object("list"); }), "list is not an object ({...})");
  EXPECT_EQ(refusal([&] { f.list("a"); }), "a is not a list ([...])");
  EXPECT_EQ(refusal([&] { f.list("list", 2); }), "list holds 3 entries, more than 2");
  EXPECT_EQ(refusal([&] { f.at("none"); }), "none is missing");
  // A document that is not an object is refused as a whole, named by its path ("" at the top).
  EXPECT_EQ(refusal([&] { fields(json::array()); }), " is not an object ({...})");
}

TEST(JsonFields, ANumberJsonCannotWriteIsNotFinite) {
  // A document built in memory may hold what JSON text cannot.
  const json j = {{"inf", std::numeric_limits<double>::infinity()}};
  EXPECT_EQ(refusal([&] { fields(j).real("inf"); }), "inf is inf, not a finite number");
}

TEST(JsonFields, AFailureThatReturnsIsStillARefusal) {
  const JsonFields f(kDocument, "doc", [](const std::string&, const std::string&) {});
  try {
    f.text("none");
    ADD_FAILURE() << "read a missing field";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "doc.none is missing");
  }
}

TEST(FieldWords, SayEachProblemAfterTheFieldsName) {
  EXPECT_EQ(words::outside(std::int64_t{7}, 0, 5), "is 7, outside [0, 5]");
  EXPECT_EQ(words::outside(2e6, 0, 1e6), "is 2e+06, outside [0, 1e+06]");
  EXPECT_EQ(words::out_of_range("20"), "is 20, out of range");
  EXPECT_EQ(words::not_one_of("lion", "sgd, adam or nadam"),
            "is 'lion', not one of sgd, adam or nadam");
  EXPECT_EQ(words::not_table("memory"), "is not a table ([memory])");
  EXPECT_EQ(words::number_text(1e-9), "1e-09");
  EXPECT_EQ(words::number_text(1024), "1024");
}

}  // namespace
