#include "relay/usage.h"

#include "common/util.h"
#include "net/chunked.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void al_usage_init(al_usage *u, bool sse, bool chunked)
{
  memset(u, 0, sizeof *u);
  u->sse = sse;
  u->chunked = chunked;
  al_chunked_init(&u->ch);
  u->ch.skip_trailers = true; /* trailers carry no usage: skipped, as before */
}

void al_usage_free(al_usage *u)
{
  free(u->buf);
  free(u->event);
  u->buf = u->event = NULL;
  u->len = u->cap = u->elen = u->ecap = 0;
}

static bool append(char **b, size_t *len, size_t *cap, size_t max, const char *d, size_t n)
{
  if (*len + n > max)
    return false;
  if (*len + n + 1 > *cap) {
    size_t nc = *cap ? *cap : 4096;
    while (nc < *len + n + 1)
      nc *= 2;
    char *nb = realloc(*b, nc);
    if (!nb)
      return false;
    *b = nb;
    *cap = nc;
  }
  memcpy(*b + *len, d, n);
  *len += n;
  (*b)[*len] = '\0';
  return true;
}

static uint64_t num(json_t *o, const char *k)
{
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static void usage_of(al_usage *u, json_t *usage)
{
  if (!json_is_object(usage))
    return;
  uint64_t in = num(usage, "input_tokens") + num(usage, "prompt_tokens") +
                num(usage, "cache_creation_input_tokens") + num(usage, "cache_read_input_tokens");
  uint64_t out = num(usage, "output_tokens") + num(usage, "completion_tokens");
  u->seen = true;
  if (in > u->tokens_in)
    u->tokens_in = in;
  if (out > u->tokens_out)
    u->tokens_out = out;
}

static void scan_json(al_usage *u, const char *text, size_t len)
{
  json_t *o = json_loadb(text, len, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, NULL);
  if (!json_is_object(o)) {
    json_decref(o);
    return;
  }
  usage_of(u, json_object_get(o, "usage"));
  usage_of(u, json_object_get(json_object_get(o, "message"), "usage"));
  usage_of(u, json_object_get(json_object_get(o, "response"), "usage"));
  json_decref(o);
}

static void sse_dispatch(al_usage *u)
{
  if (u->elen && !u->eoverflow)
    scan_json(u, u->event, u->elen);
  if (u->elen || u->eoverflow)
    u->events++;
  u->elen = 0;
  u->eoverflow = false;
}

/* One complete SSE line (without its end-of-line). */
static void sse_line(al_usage *u, char *line, size_t n)
{
  if (n && line[n - 1] == '\r')
    n--;
  if (n == 0) {
    sse_dispatch(u);
    return;
  }
  if (n >= 5 && memcmp(line, "data:", 5) == 0) {
    const char *v = line + 5;
    size_t vn = n - 5;
    if (vn && *v == ' ')
      v++, vn--;
    if (vn == 6 && memcmp(v, "[DONE]", 6) == 0)
      return;
    if (u->elen && !append(&u->event, &u->elen, &u->ecap, AL_USAGE_EVENT_MAX, "\n", 1))
      u->eoverflow = true;
    if (!u->eoverflow && !append(&u->event, &u->elen, &u->ecap, AL_USAGE_EVENT_MAX, v, vn))
      u->eoverflow = true;
  }
}

static void body(al_usage *u, const char *d, size_t n)
{
  if (!u->sse) {
    if (!u->overflow && !append(&u->buf, &u->len, &u->cap, AL_USAGE_JSON_MAX, d, n))
      u->overflow = true;
    return;
  }
  while (n) {
    const char *nl = memchr(d, '\n', n);
    size_t take = nl ? (size_t)(nl - d) : n;
    if (!u->overflow && !append(&u->buf, &u->len, &u->cap, AL_USAGE_EVENT_MAX, d, take))
      u->overflow = true;
    if (!nl)
      return;
    if (!u->overflow)
      sse_line(u, u->buf, u->len);
    u->len = 0;
    u->overflow = false;
    d += take + 1;
    n -= take + 1;
  }
}

void al_usage_feed(al_usage *u, const char *d, size_t n)
{
  if (u->bad || u->done)
    return;
  if (!u->chunked) {
    body(u, d, n);
    return;
  }
  /* decoded by airlock's one chunked decoder (net/chunked.h), a slice at
   * a time: the wire bytes are forwarded as they are, so not in place */
  char tmp[16384];
  while (n && !u->bad && !u->done) {
    size_t used = n < sizeof tmp ? n : sizeof tmp, got = 0;
    const char *why = NULL;
    int r = al_chunked_decode(&u->ch, d, &used, tmp, &got, &why);
    if (r < 0) {
      u->bad = true;
      return;
    }
    body(u, tmp, got);
    if (r == 1)
      u->done = true;
    d += used;
    n -= used;
  }
}

void al_usage_finish(al_usage *u)
{
  if (u->sse) {
    if (u->len && !u->overflow)
      sse_line(u, u->buf, u->len);
    u->len = 0;
    sse_dispatch(u);
  } else if (u->len && !u->overflow) {
    scan_json(u, u->buf, u->len);
  }
}

void al_usage_request_model(const char *body_text, size_t len, char *out, size_t outlen)
{
  out[0] = '\0';
  json_t *o = json_loadb(body_text, len, 0, NULL);
  const char *m = json_string_value(json_object_get(o, "model"));
  if (m && strlen(m) <= 128) {
    size_t j = 0;
    for (const char *p = m; *p && j + 1 < outlen; p++) {
      char ch = *p;
      if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\')
        ch = '?';
      out[j++] = ch;
    }
    out[j] = '\0';
  }
  json_decref(o);
}
