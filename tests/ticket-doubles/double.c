/* The Jira and Linear test doubles. See README.md and double.h. */
#include "double.h"

#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct td {
  int kind;
  char key[48], title[256], body[1024], user[128], token[256];
  struct MHD_Daemon *d;
  pthread_mutex_t mu;
  char *comments[64];
  size_t n_comments, auth_refused;
  /* every request ("METHOD URL USER-AGENT") and every write the double
   * took beside its own ticket's comments ("edit KEY", "transition KEY",
   * "comment KEY": another issue's comment), for the gateway's controls */
  char *requests[256], *writes[64];
  size_t n_requests, n_writes;
};

/* Append "a b[ c]" to list (at most cap lines). */
static void note(td *d, char **list, size_t *n, size_t cap, const char *a, const char *b,
                 const char *c)
{
  char line[600];
  snprintf(line, sizeof line, "%s %s%s%s", a, b, c ? " " : "", c ? c : "");
  pthread_mutex_lock(&d->mu);
  if (*n < cap)
    list[(*n)++] = strdup(line);
  pthread_mutex_unlock(&d->mu);
}

/* Is s[0..n) the double's second issue, the next number of its project
 * (PROJ-8 beside PROJ-7)? It takes comments only: what a vendor token of
 * the project may do and the gateway refuses (its tests' controls). */
static bool neighbour(const td *d, const char *s, size_t n)
{
  const char *dash = strrchr(d->key, '-');
  if (!dash)
    return false;
  char want[64];
  snprintf(want, sizeof want, "%.*s-%lu", (int)(dash - d->key), d->key,
           strtoul(dash + 1, NULL, 10) + 1);
  return strlen(want) == n && memcmp(want, s, n) == 0;
}

typedef struct conn_buf {
  char *p;
  size_t n;
} conn_buf;

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void base64(const char *in, char *out)
{
  size_t n = strlen(in), o = 0;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned char)in[i] << 16;
    if (i + 1 < n)
      v |= (unsigned char)in[i + 1] << 8;
    if (i + 2 < n)
      v |= (unsigned char)in[i + 2];
    out[o++] = b64[(v >> 18) & 63];
    out[o++] = b64[(v >> 12) & 63];
    out[o++] = (char)(i + 1 < n ? b64[(v >> 6) & 63] : '=');
    out[o++] = (char)(i + 2 < n ? b64[v & 63] : '=');
  }
  out[o] = '\0';
}

static bool auth_ok(td *d, const char *auth)
{
  char want[600];
  if (!auth)
    return false;
  if (d->kind == 1 && !d->user[0]) {
    /* no account e-mail: an OAuth 2.0 access token, as Bearer */
    snprintf(want, sizeof want, "Bearer %s", d->token);
    return strcmp(auth, want) == 0;
  }
  if (d->kind == 1) {
    char up[400], enc[560];
    snprintf(up, sizeof up, "%s:%s", d->user, d->token);
    base64(up, enc);
    snprintf(want, sizeof want, "Basic %s", enc);
    return strcmp(auth, want) == 0;
  }
  snprintf(want, sizeof want, "Bearer %s", d->token);
  return strcmp(auth, d->token) == 0 || strcmp(auth, want) == 0;
}

static json_t *adf(const char *text)
{
  return json_pack("{s:i, s:s, s:[{s:s, s:[{s:s, s:s}]}]}", "version", 1, "type", "doc", "content",
                   "type", "paragraph", "content", "type", "text", "text", text);
}

/* The concatenated text nodes of an ADF document, or NULL when it is not
 * one ({"type": "doc", "version": 1, "content": [...]}). */
static void adf_text(const json_t *n, char *out, size_t cap)
{
  const json_t *t = json_object_get(n, "text");
  if (json_is_string(t))
    strncat(out, json_string_value(t), cap - strlen(out) - 1);
  const char *type = json_string_value(json_object_get(n, "type"));
  if (type && strcmp(type, "hardBreak") == 0)
    strncat(out, "\n", cap - strlen(out) - 1);
  size_t i;
  const json_t *c;
  json_array_foreach(json_object_get(n, "content"), i, c)
  {
    if (i && type && strcmp(type, "doc") == 0)
      strncat(out, "\n\n", cap - strlen(out) - 1);
    adf_text(c, out, cap);
  }
}

static json_t *jira_issue(td *d)
{
  return json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:s, s:s}, s:o}}", "id", "10002", "key", d->key,
                   "self", "http://127.0.0.1/rest/api/3/issue/10002", "fields", "summary", d->title,
                   "project", "key", "PROJ", "name", "Project", "description", adf(d->body));
}

static int jira(td *d, const char *method, const char *url, const char *body, size_t len,
                json_t **out)
{
  char base[128], comments[160];
  snprintf(base, sizeof base, "/rest/api/3/issue/%s", d->key);
  snprintf(comments, sizeof comments, "%s/comment", base);
  char transitions[160];
  snprintf(transitions, sizeof transitions, "%s/transitions", base);
  /* Edit issue (PUT, 204) and Transition issue (POST .../transitions,
   * 204) of its ticket, and Add comment on its second issue: what the
   * vendor's token allows and the gateway refuses */
  if (strcmp(method, "PUT") == 0 && strcmp(url, base) == 0) {
    note(d, d->writes, &d->n_writes, 64, "edit", d->key, NULL);
    return 204;
  }
  if (strcmp(method, "POST") == 0 && strcmp(url, transitions) == 0) {
    note(d, d->writes, &d->n_writes, 64, "transition", d->key, NULL);
    return 204;
  }
  size_t ul = strlen(url);
  if (strcmp(method, "POST") == 0 && strncmp(url, "/rest/api/3/issue/", 18) == 0 && ul > 26 &&
      strcmp(url + ul - 8, "/comment") == 0 && neighbour(d, url + 18, ul - 26)) {
    char other[64];
    snprintf(other, sizeof other, "%.*s", (int)(ul - 26), url + 18);
    note(d, d->writes, &d->n_writes, 64, "comment", other, NULL);
    *out = json_pack("{s:s}", "id", "10009");
    return 201;
  }
  if (strncmp(url, "/rest/api/3/issue/", 18) == 0 && strcmp(url, base) != 0 &&
      strcmp(url, comments) != 0) {
    *out = json_pack("{s:[s], s:{}}", "errorMessages",
                     "Issue does not exist or you do not have permission to see it.", "errors");
    return 404;
  }
  if (strcmp(method, "GET") == 0 && strcmp(url, base) == 0) {
    *out = jira_issue(d);
    return 200;
  }
  if (strcmp(method, "GET") == 0 && strcmp(url, comments) == 0) {
    json_t *list = json_array();
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < d->n_comments; i++)
      json_array_append_new(list, json_pack("{s:s+, s:{s:s}, s:o}", "id", "1000", "x", "author",
                                            "displayName", "bot", "body", adf(d->comments[i])));
    size_t n = d->n_comments;
    pthread_mutex_unlock(&d->mu);
    *out = json_pack("{s:i, s:i, s:i, s:o}", "startAt", 0, "maxResults", 50, "total", (int)n,
                     "comments", list);
    return 200;
  }
  if (strcmp(method, "POST") == 0 && strcmp(url, comments) == 0) {
    json_error_t je;
    json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    const json_t *doc = json_object_get(j, "body");
    const char *type = json_string_value(json_object_get(doc, "type"));
    if (!json_is_object(j) || !type || strcmp(type, "doc") != 0 ||
        json_integer_value(json_object_get(doc, "version")) != 1 ||
        !json_is_array(json_object_get(doc, "content"))) {
      json_decref(j);
      *out = json_pack("{s:[], s:{s:s}}", "errorMessages", "errors", "comment",
                       "Comment body is not valid!");
      return 400;
    }
    char text[8192] = "";
    adf_text(doc, text, sizeof text);
    json_decref(j);
    pthread_mutex_lock(&d->mu);
    if (d->n_comments < 64)
      d->comments[d->n_comments++] = strdup(text);
    pthread_mutex_unlock(&d->mu);
    *out = json_pack("{s:s, s:s}", "id", "10001", "self",
                     "http://127.0.0.1/rest/api/3/issue/10002/comment/10001");
    return 201;
  }
  *out = json_pack("{s:[s], s:{}}", "errorMessages", "no such route in the double", "errors");
  return 404;
}

static int linear(td *d, const char *method, const char *url, const char *body, size_t len,
                  json_t **out)
{
  if (strcmp(method, "POST") != 0 || strcmp(url, "/graphql") != 0) {
    *out = json_pack("{s:[{s:s}]}", "errors", "message", "not found");
    return 404;
  }
  json_error_t je;
  json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  const char *q = json_string_value(json_object_get(j, "query"));
  const json_t *vars = json_object_get(j, "variables");
  int status = 200;
  if (q && strstr(q, "issue(id: $id)")) {
    const char *id = json_string_value(json_object_get(vars, "id"));
    if (!id || strcmp(id, d->key) != 0) {
      *out = json_pack("{s:[{s:s}], s:n}", "errors", "message", "Entity not found: Issue", "data");
    } else {
      json_t *nodes = json_array();
      pthread_mutex_lock(&d->mu);
      for (size_t i = 0; i < d->n_comments; i++)
        json_array_append_new(nodes, json_pack("{s:s, s:s, s:{s:s}}", "id", "c1", "body",
                                               d->comments[i], "user", "name", "airlock"));
      pthread_mutex_unlock(&d->mu);
      *out = json_pack("{s:{s:{s:s, s:s, s:s, s:s, s:s, s:{s:s}, s:{s:o}}}}", "data", "issue", "id",
                       "8f1c2d6e-1111-4a2b-9c3d-0123456789ab", "identifier", d->key, "title",
                       d->title, "description", d->body, "url", "https://linear.app/acme/issue/x",
                       "team", "key", "ENG", "comments", "nodes", nodes);
    }
  } else if (q && strstr(q, "commentCreate(input: $input)")) {
    const json_t *in = json_object_get(vars, "input");
    const char *id = json_string_value(json_object_get(in, "issueId"));
    const char *text = json_string_value(json_object_get(in, "body"));
    if (id && text && neighbour(d, id, strlen(id))) {
      note(d, d->writes, &d->n_writes, 64, "comment", id, NULL);
      *out = json_pack("{s:{s:{s:b}}}", "data", "commentCreate", "success", 1);
    } else if (!id || !text || strcmp(id, d->key) != 0) {
      *out = json_pack("{s:[{s:s}], s:n}", "errors", "message", "Entity not found: Issue", "data");
    } else {
      pthread_mutex_lock(&d->mu);
      if (d->n_comments < 64)
        d->comments[d->n_comments++] = strdup(text);
      pthread_mutex_unlock(&d->mu);
      *out = json_pack("{s:{s:{s:b, s:{s:s, s:s}}}}", "data", "commentCreate", "success", 1,
                       "comment", "id", "c2", "url", "https://linear.app/acme/issue/x#comment-c2");
    }
  } else if (q && strstr(q, "issueUpdate(")) {
    /* an edit or a transition (stateId): what the API key allows */
    note(d, d->writes, &d->n_writes, 64, "edit", d->key, NULL);
    *out = json_pack("{s:{s:{s:b}}}", "data", "issueUpdate", "success", 1);
  } else {
    *out = json_pack("{s:[{s:s}]}", "errors", "message", "the double knows only two documents");
    status = 400;
  }
  json_decref(j);
  return status;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
  (void)version;
  td *d = cls;
  conn_buf *b = *con_cls;
  if (!b) {
    *con_cls = calloc(1, sizeof *b);
    return *con_cls ? MHD_YES : MHD_NO;
  }
  if (*upload_size) {
    if (b->n + *upload_size > 1 << 20)
      return MHD_NO;
    char *np = realloc(b->p, b->n + *upload_size + 1);
    if (!np)
      return MHD_NO;
    memcpy(np + b->n, upload, *upload_size);
    b->p = np;
    b->n += *upload_size;
    b->p[b->n] = '\0';
    *upload_size = 0;
    return MHD_YES;
  }
  json_t *out = NULL;
  int status;
  const char *ua = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "User-Agent");
  note(d, d->requests, &d->n_requests, 256, method, url, ua ? ua : "-");
  if (!auth_ok(d, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"))) {
    pthread_mutex_lock(&d->mu);
    d->auth_refused++;
    pthread_mutex_unlock(&d->mu);
    status = 401;
    out = json_pack("{s:[s]}", d->kind == 1 ? "errorMessages" : "errors",
                    "Client must be authenticated to access this resource.");
  } else {
    status = d->kind == 1 ? jira(d, method, url, b->p, b->n, &out)
                          : linear(d, method, url, b->p, b->n, &out);
  }
  char *s = out ? json_dumps(out, JSON_COMPACT) : strdup("");
  json_decref(out);
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
  if (out)
    MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, r);
  MHD_destroy_response(r);
  free(b->p);
  b->p = NULL;
  b->n = 0;
  return ret;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode t)
{
  (void)cls;
  (void)c;
  (void)t;
  conn_buf *b = *con_cls;
  if (b) {
    free(b->p);
    free(b);
  }
  *con_cls = NULL;
}

td *td_start(int kind, const char *key, const char *title, const char *body, const char *user,
             const char *token, unsigned *port)
{
  return td_start_tls(kind, key, title, body, user, token, NULL, NULL, port);
}

td *td_start_tls(int kind, const char *key, const char *title, const char *body, const char *user,
                 const char *token, const char *key_pem, const char *cert_pem, unsigned *port)
{
  td *d = calloc(1, sizeof *d);
  if (!d)
    return NULL;
  d->kind = kind;
  snprintf(d->key, sizeof d->key, "%s", key);
  snprintf(d->title, sizeof d->title, "%s", title);
  snprintf(d->body, sizeof d->body, "%s", body);
  snprintf(d->user, sizeof d->user, "%s", user ? user : "");
  snprintf(d->token, sizeof d->token, "%s", token);
  pthread_mutex_init(&d->mu, NULL);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION;
  if (key_pem && cert_pem)
    d->d = MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, handler, d, MHD_OPTION_SOCK_ADDR,
                            &sa, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
                            MHD_OPTION_HTTPS_MEM_KEY, key_pem, MHD_OPTION_HTTPS_MEM_CERT, cert_pem,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
  else
    d->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, d, MHD_OPTION_SOCK_ADDR, &sa,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
  if (!d->d) {
    free(d);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d->d, MHD_DAEMON_INFO_BIND_PORT);
  *port = info ? info->port : 0;
  return d;
}

size_t td_comments(td *d)
{
  pthread_mutex_lock(&d->mu);
  size_t n = d->n_comments;
  pthread_mutex_unlock(&d->mu);
  return n;
}

const char *td_comment(td *d, size_t i)
{
  return i < d->n_comments ? d->comments[i] : NULL;
}

size_t td_requests(td *d)
{
  pthread_mutex_lock(&d->mu);
  size_t n = d->n_requests;
  pthread_mutex_unlock(&d->mu);
  return n;
}

const char *td_request(td *d, size_t i)
{
  return i < d->n_requests ? d->requests[i] : NULL;
}

size_t td_writes(td *d)
{
  pthread_mutex_lock(&d->mu);
  size_t n = d->n_writes;
  pthread_mutex_unlock(&d->mu);
  return n;
}

const char *td_write(td *d, size_t i)
{
  return i < d->n_writes ? d->writes[i] : NULL;
}

size_t td_auth_refused(td *d)
{
  pthread_mutex_lock(&d->mu);
  size_t n = d->auth_refused;
  pthread_mutex_unlock(&d->mu);
  return n;
}

void td_stop(td *d)
{
  if (!d)
    return;
  MHD_stop_daemon(d->d);
  for (size_t i = 0; i < d->n_comments; i++)
    free(d->comments[i]);
  for (size_t i = 0; i < d->n_requests; i++)
    free(d->requests[i]);
  for (size_t i = 0; i < d->n_writes; i++)
    free(d->writes[i]);
  pthread_mutex_destroy(&d->mu);
  free(d);
}
