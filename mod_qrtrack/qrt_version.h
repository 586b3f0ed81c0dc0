/* qrt_version: the release, shown at start-up, in GET /api/health and in the
 * Debian package's version (debian/changelog carries the same number). */
#ifndef QRT_VERSION_H
#define QRT_VERSION_H

#define QRTRACK_VERSION "0.9.0"

#endif
