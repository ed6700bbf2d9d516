/* What the durable queue's files share (queue_db.c: the file, its schema,
 * migrations and integrity, open and close; queue.c: the rows'
 * operations): the handle. Not installed; queue.h is the contract. */
#ifndef AL_SERVE_QUEUE_INT_H
#define AL_SERVE_QUEUE_INT_H

#include <pthread.h>
#include <sqlite3.h>

#include "serve/queue.h"

/* The queue: one SQLite connection, and the lock every operation holds
 * around its statements. */
struct al_queue {
  sqlite3 *db;
  pthread_mutex_t lock;
};

#endif
