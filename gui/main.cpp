// shardcast-gui: the Qt6 desktop planner. `shardcast-gui [session.json]`.
#include <QApplication>
#include <QMessageBox>

#include "gui/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
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
