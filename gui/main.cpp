// shardcast-gui: the Qt6 desktop planner. `shardcast-gui [--help] [--version] [SESSION.json]`.
//
// --help and --version are answered before QApplication exists, so they need no display.
// Without a display Qt would abort (SIGABRT) inside QApplication's constructor; instead the
// missing display is named and the exit status is 1, as is any fatal error Qt reports while it
// connects to one (a DISPLAY that no X server answers).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <QApplication>
#include <QMessageBox>

#include "gui/main_window.h"
#include "shared/runtime_default.h"

namespace {

constexpr const char* kUsage =
    "usage: shardcast-gui [--help] [--version] [SESSION.json]\n"
    "\n"
    "The Shardcast desktop planner: a form of one training run (model, hardware, cluster,\n"
    "sharding strategy, batch, activation checkpointing, precision, runtime), planned again on\n"
    "every change, with its memory, timeline, search, scaling, validation and run tabs.\n"
    "\n"
    "  SESSION.json   a session saved with File > Save session (optional)\n"
    "  -h, --help     print this help and exit\n"
    "  --version      print the version and exit\n"
    "\n"
    "It needs a display: an X11 or Wayland session (DISPLAY or WAYLAND_DISPLAY), or\n"
    "QT_QPA_PLATFORM=offscreen for a window nobody sees.\n"
    "Environment: SHARDCAST_CONFIG_DIR (the configs/ folder), SHARDCAST_TRAIN (the trainer the\n"
    "Run tab starts; default: shardcast-train next to shardcast-gui), SHARDCAST_RUNTIME (the\n"
    "runtime a new form plans for, as shardcast's default: a preset of configs/runtimes/; unset:\n"
    "shardcast-train). The summary line names the runtime and where it came from.\n";

constexpr const char* kNoDisplayHint =
    "shardcast-gui needs a display: run it in an X11 or Wayland session (DISPLAY or WAYLAND_DISPLAY "
    "set), under xvfb-run, or with QT_QPA_PLATFORM=offscreen. The command-line planner, shardcast, "
    "needs none.\n";

bool set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

// Whether the platform plugin Qt will pick can open a window here: xcb needs DISPLAY, wayland
// WAYLAND_DISPLAY, the default (unset) either; any other plugin (offscreen, minimal, vnc,
// eglfs, linuxfb) is Qt's to try. A list "wayland;xcb" is fine when one entry is.
bool display_available(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "-platform") == 0 || std::strcmp(argv[i], "--platform") == 0) return true;
  const char* env = std::getenv("QT_QPA_PLATFORM");
  const std::string platforms = env ? env : "";
  if (platforms.empty()) return set("DISPLAY") || set("WAYLAND_DISPLAY");
  size_t start = 0;
  while (start <= platforms.size()) {
    size_t end = platforms.find(';', start);
    if (end == std::string::npos) end = platforms.size();
    const std::string p = platforms.substr(start, end - start);
    const std::string name = p.substr(0, p.find(':'));  // "xcb:option" -> "xcb"
    if (name == "xcb" ? set("DISPLAY") : name.rfind("wayland", 0) == 0 ? set("WAYLAND_DISPLAY") : !name.empty())
      return true;
    start = end + 1;
  }
  return false;
}

// While QApplication connects to the display: a fatal message ends the program with status 1
// and the hint, instead of Qt's abort.
void startup_message_handler(QtMsgType type, const QMessageLogContext&, const QString& msg) {
  std::fprintf(stderr, "%s\n", msg.toLocal8Bit().constData());
  if (type == QtFatalMsg) {
    std::fprintf(stderr, "shardcast-gui: cannot open a window. %s", kNoDisplayHint);
    std::fflush(stderr);
    std::_Exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("shardcast-gui %s\n", SHARDCAST_VERSION);
      return 0;
    }
  }
  // A SHARDCAST_RUNTIME that names no runtime is refused as the CLI refuses it (exit 2), before
  // any window: the form never plans for a runtime other than the one the user set.
  try {
    (void)shardcast::env_runtime();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardcast-gui: %s\n", e.what());
    return 2;
  }
#if defined(__linux__) || defined(__FreeBSD__)
  if (!display_available(argc, argv)) {
    std::fprintf(stderr, "shardcast-gui: no display (DISPLAY and WAYLAND_DISPLAY are unset). %s", kNoDisplayHint);
    return 1;
  }
#endif
  const QtMessageHandler previous = qInstallMessageHandler(startup_message_handler);
  QApplication app(argc, argv);
  qInstallMessageHandler(previous);
  QApplication::setOrganizationName("Shardcast");
  QApplication::setApplicationName("shardcast-gui");
  QApplication::setApplicationVersion(SHARDCAST_VERSION);
  shardcast::gui::MainWindow w;
  w.show();
  const QStringList args = QApplication::arguments();
  if (args.size() > 1) {
    const QString err = w.openSession(args[1]);
    if (!err.isEmpty()) QMessageBox::warning(&w, "Open session", err);
  }
  return app.exec();
}
