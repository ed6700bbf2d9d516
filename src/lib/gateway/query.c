/* The forge gateway's query decoder. See query.h. */
#include "gateway/query.h"

#include <stdio.h>
#include <string.h>

#include "gateway/wire.h"

static bool is_sep(char c)
{
  return c == '&' || c == ';';
}

/* Decode s[0..n) into out (room for n + 1 bytes); the decoded length in
 * *olen. Returns 0 or a static reason. */
static const char *pct(const char *s, size_t n, char *out, size_t *olen)
{
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '%') {
      int hi = i + 2 < n ? al_gw_hexval((unsigned char)s[i + 1]) : -1;
      int lo = i + 2 < n ? al_gw_hexval((unsigned char)s[i + 2]) : -1;
      if (hi < 0 || lo < 0)
        return "query-bad-escape";
      c = (unsigned char)(hi * 16 + lo);
      i += 2;
    } else if (c == '+') {
      c = ' ';
    }
    if (c < 0x20 || c == 0x7f)
      return "query-control-byte";
    out[o++] = (char)c;
  }
  out[o] = '\0';
  *olen = o;
  return NULL;
}

void al_gw_query_printable(const char *name, char *out, size_t cap)
{
  size_t o = 0;
  if (cap == 0)
    return;
  for (; name && *name && o + 1 < cap; name++) {
    char c = *name;
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '~' || c == '-' || c == '[' || c == ']' || c == ' ';
    if (!keep)
      c = '?';
    out[o++] = c;
  }
  out[o] = '\0';
}

/* Refuse: why, and the name concerned (raw bytes made printable). */
static int refuse(al_gw_qparams *out, const char *why, const char *name, size_t nl)
{
  char tmp[AL_GW_QUERY_NAME_MAX + 1];
  if (nl > AL_GW_QUERY_NAME_MAX)
    nl = AL_GW_QUERY_NAME_MAX;
  memcpy(tmp, name, nl);
  tmp[nl] = '\0';
  for (size_t i = 0; i < nl; i++)
    if (tmp[i] == '\0')
      tmp[i] = '?';
  al_gw_query_printable(tmp, out->bad, sizeof out->bad);
  out->why = why;
  return -1;
}

int al_gw_query_decode(const char *q, size_t len, al_gw_qparams *out)
{
  out->n = 0;
  out->why = NULL;
  out->bad[0] = '\0';
  if (len > AL_GW_QUERY_MAX)
    return refuse(out, "query-too-long", "", 0);
  size_t used = 0, i = 0;
  while (i < len) {
    size_t s = i;
    while (i < len && !is_sep(q[i]))
      i++;
    size_t e = i++;
    if (e == s)
      continue; /* an empty parameter */
    size_t eq = s;
    while (eq < e && q[eq] != '=')
      eq++;
    if (out->n == AL_GW_QUERY_PARAMS)
      return refuse(out, "query-too-many-params", q + s, eq - s);
    /* the name: decoded, then Rack's key: leading brackets dropped, cut
     * at the first bracket that follows */
    char *name = out->buf + used;
    size_t nl;
    const char *why = pct(q + s, eq - s, name, &nl);
    if (why)
      return refuse(out, why, q + s, eq - s);
    size_t ns = 0;
    while (ns < nl && (name[ns] == '[' || name[ns] == ']'))
      ns++;
    size_t ne = ns;
    while (ne < nl && name[ne] != '[' && name[ne] != ']')
      ne++;
    if (ne == ns || ne - ns > AL_GW_QUERY_NAME_MAX)
      return refuse(out, "query-bad-name", name, nl);
    memmove(name, name + ns, ne - ns);
    nl = ne - ns;
    name[nl] = '\0';
    for (size_t k = 0; k < nl; k++) {
      unsigned char c = (unsigned char)name[k];
      if (c >= 0x80)
        return refuse(out, "query-bad-name", name, nl);
      if (c >= 'A' && c <= 'Z')
        name[k] = (char)(c + 32);
    }
    if (al_gw_query_find(out, name) >= 0)
      return refuse(out, "query-param-duplicate", name, nl);
    used += nl + 1;
    /* the value */
    char *val = out->buf + used;
    size_t vl = 0;
    bool has = eq < e;
    if (has) {
      why = pct(q + eq + 1, e - eq - 1, val, &vl);
      if (why)
        return refuse(out, why, name, nl);
    } else {
      val[0] = '\0';
    }
    used += vl + 1;
    out->p[out->n++] =
        (al_gw_qparam){.name = name, .value = val, .value_len = vl, .has_value = has};
  }
  return 0;
}

int al_gw_query_find(const al_gw_qparams *qp, const char *name)
{
  for (size_t i = 0; qp && i < qp->n; i++)
    if (strcmp(qp->p[i].name, name) == 0)
      return (int)i;
  return -1;
}

bool al_gw_query_name_is_credential(const char *name)
{
  char flat[AL_GW_QUERY_NAME_MAX + 1];
  size_t o = 0;
  for (; *name && o + 1 < sizeof flat; name++) {
    char c = *name;
    if (c >= 'A' && c <= 'Z')
      c = (char)(c + 32);
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
      flat[o++] = c;
  }
  flat[o] = '\0';
  return strcmp(flat, "accesstoken") == 0 || strcmp(flat, "clientsecret") == 0;
}

static size_t enc(const char *s, size_t n, char *out)
{
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out[o++] = (char)c;
    } else {
      out[o++] = '%';
      out[o++] = hex[c >> 4];
      out[o++] = hex[c & 15];
    }
  }
  return o;
}

int al_gw_query_canon(const al_gw_qparams *qp, char *out, size_t cap)
{
  size_t o = 0;
  if (cap == 0)
    return -1;
  out[0] = '\0';
  for (size_t i = 0; qp && i < qp->n; i++) {
    const al_gw_qparam *p = &qp->p[i];
    size_t need = (o ? 1 : 0) + 3 * strlen(p->name) + (p->has_value ? 1 + 3 * p->value_len : 0);
    if (o + need + 1 > cap) {
      out[0] = '\0';
      return -1;
    }
    if (o)
      out[o++] = '&';
    o += enc(p->name, strlen(p->name), out + o);
    if (p->has_value) {
      out[o++] = '=';
      o += enc(p->value, p->value_len, out + o);
    }
  }
  out[o] = '\0';
  return (int)o;
}

void al_gw_query_log(const al_gw_qparams *qp, char *out, size_t out_cap)
{
  size_t o = 0;
  if (out_cap == 0)
    return;
  out[0] = '\0';
  for (size_t i = 0; qp && i <= qp->n; i++) {
    const char *name;
    bool keep = false, has;
    char pname[AL_GW_QUERY_NAME_MAX + 1];
    if (i < qp->n) {
      al_gw_query_printable(qp->p[i].name, pname, sizeof pname);
      name = pname;
      has = qp->p[i].has_value;
      /* service= is the one value the record keeps: it says which git
       * service, and the rule admits only two spellings */
      keep = strcmp(name, "service") == 0 && has &&
             (strcmp(qp->p[i].value, "git-upload-pack") == 0 ||
              strcmp(qp->p[i].value, "git-receive-pack") == 0);
    } else if (qp->why && qp->bad[0]) {
      name = qp->bad;
      has = true;
    } else {
      break;
    }
    size_t nl = strlen(name), vl = keep ? qp->p[i].value_len : has ? 1 : 0;
    if (o + 1 + nl + 1 + vl + 1 > out_cap)
      break;
    if (o)
      out[o++] = '&';
    memcpy(out + o, name, nl);
    o += nl;
    if (has) {
      out[o++] = '=';
      memcpy(out + o, keep ? qp->p[i].value : "*", vl);
      o += vl;
    }
  }
  out[o] = '\0';
}
