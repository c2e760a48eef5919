// Session files from the GUI: see session_io.h.
#include "gui/session_io.h"

#include <QFileInfo>
#include <QSaveFile>
#include <QSettings>

namespace shardcast::gui {

QString save_session_file(const QString& path, const session::Session& s) {
  const std::string text = session::write_session(s);
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return QString("cannot write %1: %2").arg(path, f.errorString());
  if (f.write(text.data(), qint64(text.size())) != qint64(text.size()))
    return QString("cannot write %1: %2").arg(path, f.errorString());
  if (!f.commit()) return QString("cannot save %1: %2").arg(path, f.errorString());
  return {};
}

bool load_session_file(const QString& path, session::Session& out, QString& error) {
  try {
    out = session::read_session(path.toStdString());
    return true;
  } catch (const std::exception& e) {
    error = QString::fromStdString(e.what());
    return false;
  }
}

QStringList recent_sessions() { return QSettings().value("recent_sessions").toStringList(); }

void add_recent_session(const QString& path) {
  const QString abs = QFileInfo(path).absoluteFilePath();
  QStringList l = recent_sessions();
  l.removeAll(abs);
  l.prepend(abs);
  while (l.size() > 8) l.removeLast();
  QSettings().setValue("recent_sessions", l);
}

}  // namespace shardcast::gui
