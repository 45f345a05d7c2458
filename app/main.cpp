// mirrorlab: mirrored (synchronous data-parallel) training on virtual GPUs, for teaching.
#include <cstdio>
#include <exception>

#include "CLI/CLI.hpp"
#include "app/bench_command.h"
#include "app/devices_command.h"
#include "app/gui_command.h"
#include "app/train_command.h"
#include "core/dataset.h"
#include "virtualgpu/device_registry.h"
#include "virtualgpu/memory_arena.h"

namespace {

// What went wrong, after whatever the run printed so far.
void report(const std::exception& e) {
  std::fflush(stdout);
  std::fprintf(stderr, "\nmirrorlab: error: %s\n", e.what());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mirrorlab;
  CLI::App app{
      "mirrorlab: watch and run mirrored (synchronous data-parallel) training, as TensorFlow's "
      "MirroredStrategy does it, on virtual GPUs"};
  app.require_subcommand(1);
  app::TrainOptions train_options;
  CLI::App* train = app::add_train_command(app, train_options);
  app::BenchAllReduceOptions bench_options;
  CLI::App* bench_allreduce = app::add_bench_command(app, bench_options);
  app::DevicesOptions devices_options;
  CLI::App* devices = app::add_devices_command(app, devices_options);
  app::GuiOptions gui_options;
  CLI::App* gui = app::add_gui_command(app, gui_options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A command that needs a subcommand ("mirrorlab", "mirrorlab bench"): show what there is.
    CLI::App* deepest = &app;
    while (!deepest->get_subcommands().empty()) deepest = deepest->get_subcommands().front();
    if (deepest->get_subcommands().empty() && deepest->get_require_subcommand_min() > 0 &&
        dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
      std::fprintf(stderr, "%s\nmirrorlab: choose a command, for example: %s\n",
                   deepest->help().c_str(),
                   deepest == &app ? "mirrorlab train --help" : "mirrorlab bench allreduce --help");
      return 2;
    }
    const int status = app.exit(e);  // prints help, or the error and a hint
    return status == 0 ? 0 : 2;
  }
  try {
    if (*train) return app::run_train(train_options);
    if (*bench_allreduce) return app::run_bench_allreduce(bench_options);
    if (*devices) return app::run_devices(devices_options);
    if (*gui) return app::run_gui(gui_options);
  } catch (const vgpu::OutOfMemoryError& e) {
    report(e);
  } catch (const core::DataError& e) {
    report(e);
  } catch (const vgpu::ConfigurationError& e) {
    report(e);
    return 2;
  } catch (const std::exception& e) {  // vgpu::CudaError among them
    report(e);
  }
  return 1;
}
