// Fuzz target: the IDX loader (core/io/dataset.h), as `mirrorlab train --data DIR` reads
// Fashion-MNIST. The input is an images file and a labels file (fuzz_input.h), gzipped or
// plain; they are written to a folder of this process's own, because the loader reads files
// through zlib. Any input must load or be refused with a DataError; anything else (another
// exception, a crash, a sanitizer's report) is a finding.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "core/io/dataset.h"
#include "fuzz/fuzz_input.h"
#include "tests/support/temp_folder.h"

namespace {

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) std::abort();  // the fuzzer's own folder must be writable
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const mirrorlab::testing::TempFolder folder("fuzz-idx");
  const auto [images, labels] = mirrorlab::fuzz::two_files(mirrorlab::fuzz::as_text(data, size));
  write_file(folder / "images", images);
  write_file(folder / "labels", labels);
  try {
    const mirrorlab::core::Dataset d =
        mirrorlab::core::load_idx_images_and_labels(folder / "images", folder / "labels");
    // What the loader promises of a data set it returns.
    if (d.size() == 0 || d.images.size() != d.size() * d.image_bytes()) std::abort();
    for (const std::uint8_t label : d.labels) {
      if (label > 9) std::abort();
    }
  } catch (const mirrorlab::core::DataError&) {
  }
  return 0;
}
