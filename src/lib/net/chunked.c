/* The one chunked transfer-coding decoder (RFC 9112 §7.1). See chunked.h. */
#include "net/chunked.h"

#include <stdio.h>
#include <string.h>

static int hexval(unsigned char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

enum {
  CH_SIZE0,   /* first hex digit */
  CH_SIZE,    /* more hex digits, or ';', BWS, CR */
  CH_EXT,     /* extension bytes until CR */
  CH_SIZE_LF, /* LF after the size line's CR */
  CH_DATA,
  CH_DATA_CR,
  CH_DATA_LF,
  CH_TRAILER,  /* after the last chunk: CR (end) or a trailer field */
  CH_FIELD,    /* a trailer field's bytes until CR (skip_trailers only) */
  CH_FIELD_LF, /* LF after a trailer field's CR */
  CH_FINAL_LF, /* LF of the final CRLF */
  CH_DONE
};

void al_chunked_init(al_chunked *c)
{
  memset(c, 0, sizeof *c);
  c->st = CH_SIZE0;
}

int al_chunked_decode(al_chunked *c, const char *in, size_t *in_len, char *out, size_t *out_len,
                      const char **why)
{
  size_t n = *in_len, i = 0, o = 0;

  *out_len = 0;
  while (i < n) {
    unsigned char ch = (unsigned char)in[i];
    switch (c->st) {
    case CH_SIZE0:
    case CH_SIZE: {
      int v = hexval(ch);
      if (v >= 0) {
        if (c->left > (UINT64_MAX >> 5)) { /* keeps the size below 2^63 */
          *why = "chunk-size-overflow";
          return -1;
        }
        c->left = (c->left << 4) | (uint64_t)v;
        c->digits++;
        c->st = CH_SIZE;
        i++;
        break;
      }
      if (c->st == CH_SIZE0) {
        *why = "chunk-size-bad";
        return -1;
      }
      if (ch == ';' || ch == ' ' || ch == '\t') {
        c->st = CH_EXT;
        c->ext = 0;
        break; /* the byte is counted by CH_EXT */
      }
      if (ch == '\r') {
        c->st = CH_SIZE_LF;
        i++;
        break;
      }
      *why = "chunk-size-bad";
      return -1;
    }
    case CH_EXT:
      if (ch == '\r') {
        c->st = CH_SIZE_LF;
        i++;
        break;
      }
      if ((ch < 0x20 && ch != '\t') || ch >= 0x7f) {
        *why = "chunk-ext-bad";
        return -1;
      }
      if (++c->ext > AL_CHUNK_EXT_MAX) {
        *why = "chunk-ext-too-long";
        return -1;
      }
      i++;
      break;
    case CH_SIZE_LF:
      if (ch != '\n') {
        *why = "chunk-line-bad";
        return -1;
      }
      i++;
      c->digits = 0;
      c->st = c->left ? CH_DATA : CH_TRAILER;
      break;
    case CH_DATA: {
      size_t take = n - i;
      if ((uint64_t)take > c->left)
        take = (size_t)c->left;
      memmove(out + o, in + i, take);
      o += take;
      i += take;
      c->left -= take;
      c->total += take;
      if (c->left == 0)
        c->st = CH_DATA_CR;
      break;
    }
    case CH_DATA_CR:
      if (ch != '\r') {
        *why = "chunk-missing-crlf";
        return -1;
      }
      c->st = CH_DATA_LF;
      i++;
      break;
    case CH_DATA_LF:
      if (ch != '\n') {
        *why = "chunk-missing-crlf";
        return -1;
      }
      c->st = CH_SIZE0;
      i++;
      break;
    case CH_TRAILER:
      if (ch != '\r') {
        if (!c->skip_trailers) {
          *why = "chunked-trailer";
          return -1;
        }
        c->st = CH_FIELD;
        break; /* the byte is counted by CH_FIELD */
      }
      c->st = CH_FINAL_LF;
      i++;
      break;
    case CH_FIELD:
      if (ch == '\r') {
        c->st = CH_FIELD_LF;
        i++;
        break;
      }
      if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
        *why = "chunk-trailer-bad";
        return -1;
      }
      if (++c->trailer > AL_CHUNK_TRAILER_MAX) {
        *why = "chunk-trailer-too-long";
        return -1;
      }
      i++;
      break;
    case CH_FIELD_LF:
      if (ch != '\n') {
        *why = "chunk-line-bad";
        return -1;
      }
      c->st = CH_TRAILER;
      i++;
      break;
    case CH_FINAL_LF:
      if (ch != '\n') {
        *why = "chunk-line-bad";
        return -1;
      }
      c->st = CH_DONE;
      i++;
      *in_len = i;
      *out_len = o;
      return 1;
    case CH_DONE:
      *in_len = 0;
      return 1;
    default:
      *why = "chunk-state";
      return -1;
    }
  }
  *in_len = i;
  *out_len = o;
  return c->st == CH_DONE ? 1 : 0;
}

size_t al_chunk_header(size_t n, char out[20])
{
  int k = snprintf(out, 20, "%zx\r\n", n);
  return k > 0 ? (size_t)k : 0;
}
