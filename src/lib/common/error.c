#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 3, 0))) static void vset(al_error *err, int code, const char *fmt,
                                                       va_list ap)
{
  if (vsnprintf(err->msg, sizeof err->msg, fmt, ap) < 0)
    err->msg[0] = '\0';
  err->code = code;
}

int al_make_error(al_error *err, int code, const char *fmt, ...)
{
  if (!err)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  vset(err, code, fmt, ap);
  va_end(ap);
  size_t len = strnlen(err->msg, sizeof err->msg);
  if (code != 0 && len < sizeof err->msg)
    snprintf(err->msg + len, sizeof err->msg - len, ": %s", strerror(code));
  return -1;
}

int al_error_set(al_error *err, int code, const char *fmt, ...)
{
  if (!err)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  vset(err, code, fmt, ap);
  va_end(ap);
  return -1;
}

int al_error_wrap(al_error *err, const char *fmt, ...)
{
  if (!err)
    return -1;
  char prefix[AL_ERROR_MSG_MAX];
  char old[AL_ERROR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  if (n < 0)
    prefix[0] = '\0';
  memcpy(old, err->msg, sizeof old);
  old[sizeof old - 1] = '\0';
  snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, old);
  return -1;
}

void al_error_clear(al_error *err)
{
  if (!err)
    return;
  err->code = 0;
  err->msg[0] = '\0';
}
