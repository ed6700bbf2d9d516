/* GitHub REST wire rules as pure functions: see ghwire.h. */
#include "forge/ghwire.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

#define LINK_TARGET_MAX 8192
#define SECONDARY_CAP_MS (15u * 60u * 1000u)

const char *al_ghapi_class_name(al_ghapi_class c)
{
  switch (c) {
  case AL_GHAPI_OK:
    return "ok";
  case AL_GHAPI_UNAUTHORIZED:
    return "unauthorized";
  case AL_GHAPI_FORBIDDEN:
    return "forbidden";
  case AL_GHAPI_NOT_FOUND:
    return "not found";
  case AL_GHAPI_RATE_LIMITED:
    return "rate limited";
  case AL_GHAPI_REDIRECTED:
    return "redirected";
  case AL_GHAPI_INVALID:
    return "invalid request";
  case AL_GHAPI_SERVER_ERROR:
    return "server error";
  case AL_GHAPI_OTHER:
  default:
    return "unexpected answer";
  }
}

static bool mentions(const char *hay, const char *needle)
{
  if (!hay)
    return false;
  size_t n = strlen(needle);
  for (const char *p = hay; *p; p++)
    if (strncasecmp(p, needle, n) == 0)
      return true;
  return false;
}

al_ghapi_class al_ghapi_classify(long status, const char *message, long long retry_after,
                                 long long rl_remaining, al_ghapi_rate *rate)
{
  al_ghapi_rate rt = AL_GHAPI_RATE_NONE;
  al_ghapi_class c;
  if (status >= 200 && status < 300)
    c = AL_GHAPI_OK;
  else if (status == 403 || status == 429) {
    if (rl_remaining == 0)
      rt = AL_GHAPI_RATE_PRIMARY;
    else if (status == 429 || retry_after >= 0 || mentions(message, "rate limit") ||
             mentions(message, "abuse"))
      rt = AL_GHAPI_RATE_SECONDARY;
    c = rt != AL_GHAPI_RATE_NONE ? AL_GHAPI_RATE_LIMITED : AL_GHAPI_FORBIDDEN;
  } else if (status == 401)
    c = AL_GHAPI_UNAUTHORIZED;
  else if (status == 404 || status == 410)
    c = AL_GHAPI_NOT_FOUND;
  else if (status >= 300 && status < 400 && status != 304)
    c = AL_GHAPI_REDIRECTED;
  else if (status >= 400 && status < 500)
    c = AL_GHAPI_INVALID;
  else if (status >= 500 && status < 600)
    c = AL_GHAPI_SERVER_ERROR;
  else
    c = AL_GHAPI_OTHER;
  if (rate)
    *rate = rt;
  return c;
}

uint64_t al_ghapi_rate_wait_ms(long long retry_after, long long rl_remaining, long long rl_reset,
                               long long now_epoch, unsigned nth, uint64_t secondary_min_ms)
{
  uint64_t ms;
  if (retry_after >= 0)
    ms = retry_after > 86400 ? 86400000u : (uint64_t)retry_after * 1000u;
  else if (rl_remaining == 0 && rl_reset > 0)
    ms = rl_reset > now_epoch ? (uint64_t)(rl_reset - now_epoch) * 1000u + 1000u : 1000u;
  else {
    ms = secondary_min_ms;
    for (unsigned i = 0; i < nth && ms < SECONDARY_CAP_MS; i++)
      ms *= 2;
    if (ms > SECONDARY_CAP_MS)
      ms = SECONDARY_CAP_MS;
  }
  return ms < 1000 ? 1000 : ms;
}

/* ---- Link (RFC 8288 §3) ----------------------------------------------- */

static bool ows(char c)
{
  return c == ' ' || c == '\t';
}

/* Does a rel value (s, n bytes, quotes removed) include "next"? */
static bool rel_has_next(const char *s, size_t n)
{
  size_t i = 0;
  while (i < n) {
    while (i < n && (ows(s[i]) || s[i] == '\n'))
      i++;
    size_t j = i;
    while (j < n && !ows(s[j]))
      j++;
    if (j - i == 4 && strncasecmp(s + i, "next", 4) == 0)
      return true;
    i = j;
  }
  return false;
}

char *al_link_next(const char *v, size_t n, bool *bad)
{
  if (bad)
    *bad = false;
  while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n'))
    n--;
  size_t i = 0;
  char *found = NULL;
  for (;;) {
    while (i < n && (ows(v[i]) || v[i] == ','))
      i++;
    if (i >= n)
      return found;
    if (v[i] != '<')
      goto malformed;
    size_t t0 = ++i;
    while (i < n && v[i] != '>') {
      unsigned char ch = (unsigned char)v[i];
      if (ch <= 0x20 || ch >= 0x7f)
        goto malformed;
      i++;
    }
    if (i >= n || i - t0 > LINK_TARGET_MAX)
      goto malformed;
    size_t t1 = i++;
    bool next = false;
    /* parameters: *( OWS ";" OWS name [ OWS "=" OWS ( token / quoted ) ] ) */
    for (;;) {
      while (i < n && ows(v[i]))
        i++;
      if (i >= n || v[i] == ',')
        break;
      if (v[i] != ';')
        goto malformed;
      i++;
      while (i < n && ows(v[i]))
        i++;
      size_t p0 = i;
      while (i < n && v[i] != '=' && v[i] != ';' && v[i] != ',' && !ows(v[i]))
        i++;
      size_t p1 = i;
      while (i < n && ows(v[i]))
        i++;
      const char *val = NULL;
      size_t vlen = 0;
      if (i < n && v[i] == '=') {
        i++;
        while (i < n && ows(v[i]))
          i++;
        if (i < n && v[i] == '"') {
          size_t q0 = ++i;
          while (i < n && v[i] != '"') {
            if (v[i] == '\\' && i + 1 < n)
              i++;
            i++;
          }
          if (i >= n)
            goto malformed;
          val = v + q0;
          vlen = i - q0;
          i++;
        } else {
          size_t q0 = i;
          while (i < n && v[i] != ';' && v[i] != ',' && !ows(v[i]))
            i++;
          val = v + q0;
          vlen = i - q0;
        }
      }
      if (p1 - p0 == 3 && strncasecmp(v + p0, "rel", 3) == 0 && val && rel_has_next(val, vlen))
        next = true;
    }
    if (next && !found) {
      found = al_xmalloc(t1 - t0 + 1);
      memcpy(found, v + t0, t1 - t0);
      found[t1 - t0] = '\0';
    }
  }
malformed:
  free(found);
  if (bad)
    *bad = true;
  return NULL;
}

/* ---- URLs under the base ---------------------------------------------- */

/* Length of "scheme://authority" at the start of u, or 0. */
static size_t origin_len(const char *u)
{
  const char *p = strstr(u, "://");
  if (!p)
    return 0;
  for (const char *s = u; s < p; s++)
    if (!isalpha((unsigned char)*s))
      return 0;
  p += 3;
  while (*p && *p != '/' && *p != '?' && *p != '#')
    p++;
  return (size_t)(p - u);
}

static bool has_dot_segment(const char *path)
{
  /* Decode %2e/%2E as '.', then look for a "." or ".." segment. */
  size_t n = strlen(path);
  char *d = al_xmalloc(n + 1);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (path[i] == '?')
      break;
    if (path[i] == '%' && i + 2 < n && path[i + 1] == '2' &&
        (path[i + 2] == 'e' || path[i + 2] == 'E')) {
      d[k++] = '.';
      i += 2;
    } else if (path[i] == '%' && i + 2 < n && path[i + 1] == '2' &&
               (path[i + 2] == 'f' || path[i + 2] == 'F')) {
      d[k++] = '/';
      i += 2;
    } else
      d[k++] = path[i];
  }
  d[k] = '\0';
  bool bad = false;
  for (size_t i = 0; i < k && !bad; i++) {
    if (d[i] != '/')
      continue;
    const char *s = d + i + 1;
    if ((s[0] == '.' && (s[1] == '/' || s[1] == '\0')) ||
        (s[0] == '.' && s[1] == '.' && (s[2] == '/' || s[2] == '\0')))
      bad = true;
  }
  free(d);
  return bad;
}

bool al_ghapi_url_under(const char *base, const char *url)
{
  if (!base || !url)
    return false;
  for (const char *p = url; *p; p++) {
    unsigned char ch = (unsigned char)*p;
    if (ch <= 0x20 || ch >= 0x7f || ch == '\\' || ch == '#')
      return false;
  }
  size_t bo = origin_len(base), uo = origin_len(url);
  if (bo == 0 || uo != bo || strncasecmp(base, url, bo) != 0)
    return false;
  /* userinfo in the authority: "https://api.github.com@evil" has a
   * different length or is caught here when it happens to match. */
  if (memchr(url, '@', uo))
    return false;
  const char *bp = base + bo, *up = url + uo;
  size_t bl = strlen(bp);
  if (strncmp(bp, up, bl) != 0)
    return false;
  char after = up[bl];
  if (after != '/' && after != '?' && after != '\0')
    return false;
  return !has_dot_segment(up);
}

void al_ghapi_sanitise(const char *s, char *out, size_t outsz)
{
  if (outsz == 0)
    return;
  size_t k = 0;
  for (size_t i = 0; s && s[i] && k + 1 < outsz; i++)
    out[k++] = isprint((unsigned char)s[i]) ? s[i] : '?';
  out[k] = '\0';
}
