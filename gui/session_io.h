// Session files on disk from the GUI: save through QSaveFile (atomic; a full disk is an
// error, never half a file), open through the Qt-free reader (session.h), and the list of
// recent files kept in QSettings (never in the session file).
//
// What it is: thin Qt glue around gui/session.h. What it is not: the format (session.h).
// Functions are GUI-thread only (QSettings of the application).
#pragma once

#include <QString>
#include <QStringList>

#include "shared/session.h"

namespace shardcast::gui {

// Write a session; returns "" on success, else the reason.
QString save_session_file(const QString& path, const session::Session& s);
// Read a session; on failure returns false and sets `error` (with the key path when the
// config is at fault).
bool load_session_file(const QString& path, session::Session& out, QString& error);

// Recent session files, most recent first (at most 8), in QSettings key "recent_sessions".
QStringList recent_sessions();
void add_recent_session(const QString& path);

}  // namespace shardcast::gui
