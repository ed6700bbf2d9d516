/* The HTTP side of kube.h: libcurl, https only, the API server's
 * certificate checked against the service account's CA, the token as a
 * bearer token read per request. */
#include <curl/curl.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "kube/kube.h"
#include "kube/kube_int.h"

#define MAX_RESP (1u << 20)
#define MAX_TOKEN 16384

int al_kube_init(al_kube *k, const char *api, const char *token_file, const char *ca_file,
                 long timeout_ms, al_error *err)
{
  memset(k, 0, sizeof *k);
  if (api && api[0]) {
    snprintf(k->api, sizeof k->api, "%s", api);
  } else {
    const char *h = getenv("KUBERNETES_SERVICE_HOST"), *p = getenv("KUBERNETES_SERVICE_PORT");
    if (!h || !h[0])
      return al_error_set(err, EINVAL,
                          "election: no Kubernetes API address (election.api is empty and "
                          "KUBERNETES_SERVICE_HOST is not set: not in a pod?)");
    bool v6 = strchr(h, ':') != NULL;
    snprintf(k->api, sizeof k->api, "https://%s%s%s:%s", v6 ? "[" : "", h, v6 ? "]" : "",
             p && p[0] ? p : "443");
  }
  size_t n = strlen(k->api);
  while (n > 0 && k->api[n - 1] == '/')
    k->api[--n] = '\0';
  if (strncmp(k->api, "https://", 8) != 0 || n <= 8)
    return al_error_set(err, EINVAL, "election.api `%s`: must be an https:// URL", k->api);
  snprintf(k->token_file, sizeof k->token_file, "%s",
           token_file && token_file[0] ? token_file : AL_KUBE_SA_DIR "/token");
  snprintf(k->ca_file, sizeof k->ca_file, "%s",
           ca_file && ca_file[0] ? ca_file : AL_KUBE_SA_DIR "/ca.crt");
  k->timeout_ms = timeout_ms > 0 ? timeout_ms : 5000;
  return 0;
}

struct body {
  char *buf;
  size_t len;
  bool over;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
  struct body *b = ud;
  size_t add = sz * n;
  if (b->len + add > MAX_RESP) {
    b->over = true;
    return 0;
  }
  char *nb = realloc(b->buf, b->len + add + 1);
  if (!nb)
    return 0;
  memcpy(nb + b->len, p, add);
  b->len += add;
  nb[b->len] = '\0';
  b->buf = nb;
  return add;
}

/* The token: one line of printable ASCII (a JWT), in a buffer the caller
 * wipes. */
static int read_token(const al_kube *k, char *tok, size_t cap, al_error *err)
{
  FILE *f = fopen(k->token_file, "re");
  if (!f)
    return al_make_error(err, errno, "election: the API token file `%s`", k->token_file);
  size_t n = fread(tok, 1, cap - 1, f);
  fclose(f);
  tok[n] = '\0';
  while (n > 0 && (tok[n - 1] == '\n' || tok[n - 1] == '\r'))
    tok[--n] = '\0';
  if (n == 0 || n >= cap - 1)
    return al_error_set(err, EINVAL, "election: the API token file `%s`: empty or too long",
                        k->token_file);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)tok[i] <= 0x20 || (unsigned char)tok[i] >= 0x7f)
      return al_error_set(err, EINVAL,
                          "election: the API token file `%s`: not one line of printable text",
                          k->token_file);
  return 0;
}

static bool name_ok(const char *s)
{
  size_t n = strlen(s);
  return n > 0 && n <= 253 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.") == n;
}

bool al_kube_name_ok(const char *s)
{
  return name_ok(s);
}

int al_kube_http(const al_kube *k, const char *method, const char *path, const char *json,
                 long timeout_ms, size_t (*sink)(char *, size_t, size_t, void *), void *ud,
                 long *status, al_error *err)
{
  char url[2048];
  if ((size_t)snprintf(url, sizeof url, "%s%s", k->api, path) >= sizeof url)
    return al_error_set(err, EINVAL, "kube: %s %s: the URL is too long", method, path);
  char tok[MAX_TOKEN];
  if (read_token(k, tok, sizeof tok, err) < 0) {
    explicit_bzero(tok, sizeof tok);
    return -1;
  }
  CURL *h = curl_easy_init();
  if (!h) {
    explicit_bzero(tok, sizeof tok);
    return al_error_set(err, ENOMEM, "kube: curl_easy_init");
  }
  struct curl_slist *hd = curl_slist_append(NULL, "Accept: application/json");
  if (json)
    hd = curl_slist_append(hd, "Content-Type: application/json");
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : k->timeout_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, k->timeout_ms);
  curl_easy_setopt(h, CURLOPT_CAINFO, k->ca_file);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
  curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
  curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, tok);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "airlock-serve");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, ud);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  if (json) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(json));
  }
  CURLcode rc = curl_easy_perform(h);
  *status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
  curl_easy_cleanup(h);
  curl_slist_free_all(hd);
  explicit_bzero(tok, sizeof tok);
  if (rc == CURLE_OPERATION_TIMEDOUT && *status >= 200 && *status < 300)
    return 1; /* a stream the timeout ended: the caller's to judge */
  if (rc == CURLE_WRITE_ERROR && *status >= 200 && *status < 300)
    return 2; /* the sink stopped it on purpose (or it overflowed) */
  if (rc != CURLE_OK)
    return al_error_set(err, EIO, "kube: %s %s: %s", method, url,
                        errbuf[0] ? errbuf : curl_easy_strerror(rc));
  return 0;
}

int al_kube_get_body(const al_kube *k, const char *method, const char *path, const char *json,
                     char **buf, size_t *len, long *status, al_error *err)
{
  struct body b = {0};
  int r = al_kube_http(k, method, path, json, 0, on_body, &b, status, err);
  if (r < 0 || r > 0) {
    if (r > 0)
      al_error_set(err, EIO, "kube: %s %s: %s", method, path,
                   b.over ? "response larger than 1 MiB" : "the response was cut short");
    free(b.buf);
    return -1;
  }
  *buf = b.buf;
  *len = b.len;
  return 0;
}

static int request(const al_kube *k, const char *method, const char *ns, const char *name,
                   bool with_name, const al_kube_lease *in, al_kube_lease *out, al_error *err)
{
  if (!name_ok(ns) || !name_ok(name))
    return al_error_set(err, EINVAL, "election: namespace `%s` / lease `%s`: not DNS names", ns,
                        name);
  char path[1024];
  snprintf(path, sizeof path, "/apis/coordination.k8s.io/v1/namespaces/%s/leases%s%s", ns,
           with_name ? "/" : "", with_name ? name : "");
  al_autofree char *json = in ? al_kube_lease_json(ns, name, in) : NULL;
  char *buf = NULL;
  size_t len = 0;
  long status = 0;
  if (al_kube_get_body(k, method, path, json, &buf, &len, &status, err) < 0) {
    return al_error_wrap(err, "election");
  }
  int r;
  if (status == 200 || status == 201)
    r = al_kube_lease_parse(buf ? buf : "", len, out, err) < 0 ? -1 : (int)status;
  else
    r = (int)status;
  free(buf);
  return r;
}

int al_kube_lease_get(const al_kube *k, const char *ns, const char *name, al_kube_lease *out,
                      al_error *err)
{
  return request(k, "GET", ns, name, true, NULL, out, err);
}

int al_kube_lease_create(const al_kube *k, const char *ns, const char *name,
                         const al_kube_lease *in, al_kube_lease *out, al_error *err)
{
  al_kube_lease c = *in;
  c.resource_version[0] = '\0';
  return request(k, "POST", ns, name, false, &c, out, err);
}

int al_kube_lease_update(const al_kube *k, const char *ns, const char *name,
                         const al_kube_lease *in, al_kube_lease *out, al_error *err)
{
  if (!in->resource_version[0])
    return al_error_set(err, EINVAL, "election: an update needs the resourceVersion it read");
  return request(k, "PUT", ns, name, true, in, out, err);
}
