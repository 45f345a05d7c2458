// How tall the current ImGui window would have to be to show everything drawn in it so far
// without scrolling: its title bar, its padding and its items, whatever it is scrolled to. A
// window whose items fill whatever room they get (a chart sized to the space left, a child of
// height 0) needs all of it; one that said fills_room() needs what the layout would give it
// anyway. For a layout that gives room by what windows hold (the presenter
// strip, gui/panels/strip_fit.h).
#pragma once

namespace mirrorlab::gui {

float content_height();

// How far the current window can scroll down with what is drawn in it so far this frame: ImGui's
// GetScrollMaxY() as it will be next frame (GetScrollMaxY() itself is of the last frame's items,
// so for one frame after its contents change it speaks of what it showed before).
float scroll_max_now();

// An item drawn this frame in the current window would show whole with `px` more height than it
// was given (a table scrolling its rows within the room left): content_height() adds it.
void wants_more_height(float px);

// What is drawn this frame in the current window is sized to the room it has (a picture, a
// chart): whatever its items measure, it would use any room it gets. filling_room() says so.
void fills_room();
bool filling_room();
// What is drawn this frame is sized to the room it has, but uses no more than a window `most`
// pixels tall: more would be left empty below it (a picture at its largest). It takes less.
void fills_room_up_to(float most);
// The most room a window that fills its room uses this frame (0: any it gets).
float most_room_filled();

}  // namespace mirrorlab::gui
