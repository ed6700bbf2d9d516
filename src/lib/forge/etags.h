/* A small per-repository cache of REST answers and their ETags, for
 * conditional requests (issue #33): the next audit of the same repository
 * sends If-None-Match with the ETags of the last one, and a 304 Not
 * Modified reuses the body kept here. GitHub does not count a 304 against
 * the primary rate limit, and the answer is as fresh as a 200: the forge
 * itself says the body has not changed ("Best practices for using the REST
 * API" § Use conditional requests if appropriate). The cache never decides
 * anything: an entry is only ever used when the forge answers 304 to it.
 *
 * The file (JSON, mode 0600, written atomically):
 *   {"version": 1, "api": BASE, "repo": "owner/name",
 *    "entries": [{"path", "etag", "body", "next"?}, ...]}
 * It is not a secret (what the audit reads is the repository's settings)
 * but it is read as hostile input: a regular file (never a symlink) owned
 * by this user and writable by no one else, at most 8 MiB; version, api and
 * repo must be this client's; at most AL_ETAGS_MAX entries, each path under
 * /repos/OWNER/NAME (printable ASCII, no space), each ETag a quoted
 * entity-tag of at most 200 printable bytes (optionally W/), each body at
 * most 1 MiB. Anything else and the whole file is ignored (a warning names
 * the file and the rule), as if there were none: the reads are then plain.
 * A file of another API URL is stale, not hostile: ignored without a
 * warning (and replaced on save).
 *
 * Thread-safe (one mutex). */
#ifndef AL_FORGE_ETAGS_H
#define AL_FORGE_ETAGS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#define AL_ETAGS_MAX 128    /* entries kept */
#define AL_ETAGS_PER_PATH 4 /* answers kept per path (one per viewpoint) */
#define AL_ETAGS_BODY_MAX (1 << 20)

typedef struct al_etags al_etags;

/* The cache of repo ("owner/name") on the API at api_base, kept in file
 * (created on save). A missing file is an empty cache; a file that breaks
 * a rule above is an empty cache and a warning (al_warn). Returns 0 with
 * *out, or -1 with err only for bad arguments (EINVAL). */
int al_etags_open(const char *file, const char *api_base, const char *repo, al_etags **out,
                  al_error *err);

/* Write the cache back when an answer was added or dropped (tmp + rename,
 * 0600). -1 with err naming the file. */
int al_etags_save(al_etags *e, al_error *err);
void al_etags_free(al_etags *e);

/* The If-None-Match value for path ("/repos/o/r/..."[?query]): the ETags
 * kept for it, comma-separated, malloc'd; NULL when none. */
char *al_etags_if_none_match(al_etags *e, const char *path);

/* The 304 for path named etag (the answer's ETag header; NULL when it had
 * none: then only a path with one kept answer matches): its body (malloc'd,
 * *len) and Link next (malloc'd or NULL). false when no kept answer is it. */
bool al_etags_hit(al_etags *e, const char *path, const char *etag, char **body, size_t *len,
                  char **next);

/* Keep a 200's body under path and etag (replacing an answer with the
 * same ETag; the oldest answer of the path goes past AL_ETAGS_PER_PATH, the
 * oldest entry past AL_ETAGS_MAX). A path outside the repository, a bad
 * ETag or a body over the cap is not kept. */
void al_etags_store(al_etags *e, const char *path, const char *etag, const char *body, size_t len,
                    const char *next);

/* How many answers were reused (304) and kept (200) since open. */
void al_etags_stats(const al_etags *e, unsigned *reused, unsigned *stored);

#endif
