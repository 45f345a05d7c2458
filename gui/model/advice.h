// What a user of the window can do about an error of the layers below, in the window's words:
// its settings on the left, never the command line's flags. (app/advice.h says the same for the
// command line.)
#pragma once

#include <exception>
#include <string>

#include "core/session/training_session.h"

namespace mirrorlab::gui {

// A sentence for the typed errors (configuration, out of memory, divergence); a general one
// otherwise. `config`: the run's settings, to say what to change.
std::string advice(const std::exception& error, const core::SessionConfig& config);
// The same for a stored failure; "" when there is none.
std::string advice(const std::exception_ptr& error, const core::SessionConfig& config);

}  // namespace mirrorlab::gui
