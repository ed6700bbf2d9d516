/* Webhooks: the forge tells a configured URL about label and comment
 * events, signed as GitHub signs them ("Validating webhook deliveries":
 * X-Hub-Signature-256 = sha256=HMAC-SHA256(secret, body) in hex), with
 * X-GitHub-Event, X-GitHub-Delivery (a fresh id per delivery) and
 * X-GitHub-Hook-Installation-Target-ID headers. Payloads follow "Webhook
 * events and payloads" (`issues` labeled, `issue_comment` created) with the
 * fields a receiver uses: action, issue{number,title,state,labels,user},
 * label{name} / comment{id,body,user}, repository{id,full_name,name,owner,
 * private}, sender{login,id,type}, installation{id}.
 *
 * Humans act through the admin listener (tests only):
 *   POST /hooks/label   {"repo":"o/r","number":N,"label":"airlock","user":"alice"}
 *   POST /hooks/comment {"repo":"o/r","number":N,"body":"/airlock run","user":"bob"}
 *   GET  /hooks/deliveries   every delivery: id, event, status, error
 * The delivery is a plain HTTP POST to --webhook-url (http://IPV4:PORT/path,
 * loopback in tests), sent after the forge's lock is released, 10 s timeout. */
#include "forge.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/util.h"

static char *g_url_host; /* IPv4 literal */
static int g_url_port;
static char *g_url_path;
static char *g_secret; /* NULL: deliveries are not signed */
static size_t g_secret_len;
static json_t *g_deliveries; /* [{id, event, status, error}], under g_forge.lock */

int forge_webhooks_config(const char *url, const char *secret_file, al_error *err)
{
  g_deliveries = json_array();
  if (!url)
    return 0;
  if (strncmp(url, "http://", 7) != 0)
    return al_make_error(err, 0, "--webhook-url `%s`: http://IPV4:PORT/PATH only", url);
  const char *h = url + 7, *colon = strchr(h, ':'), *slash = colon ? strchr(colon, '/') : NULL;
  if (!colon || !slash)
    return al_make_error(err, 0, "--webhook-url `%s`: http://IPV4:PORT/PATH only", url);
  g_url_host = al_strdup_printf("%.*s", (int)(colon - h), h);
  g_url_port = atoi(colon + 1);
  g_url_path = al_xstrdup(slash);
  struct in_addr a;
  if (inet_pton(AF_INET, g_url_host, &a) != 1 || g_url_port <= 0 || g_url_port > 65535)
    return al_make_error(err, 0, "--webhook-url `%s`: http://IPV4:PORT/PATH only", url);
  if (secret_file) {
    if (al_read_file(secret_file, 4096, &g_secret, &g_secret_len, err) < 0)
      return -1;
    while (g_secret_len &&
           (g_secret[g_secret_len - 1] == '\n' || g_secret[g_secret_len - 1] == '\r'))
      g_secret_len--;
  }
  return 0;
}

/* POST body to the configured URL. Returns the HTTP status or -1 with why. */
static int post(const char *event, const char *delivery, const char *body, char *why, size_t wl)
{
  char sig[80] = "";
  if (g_secret) {
    unsigned char md[32];
    unsigned int ml = 0;
    HMAC(EVP_sha256(), g_secret, (int)g_secret_len, (const unsigned char *)body, strlen(body), md,
         &ml);
    strcpy(sig, "sha256=");
    for (unsigned i = 0; i < ml; i++)
      sprintf(sig + 7 + 2 * i, "%02x", md[i]);
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(why, wl, "socket: %s", strerror(errno));
    return -1;
  }
  struct timeval tv = {.tv_sec = 10};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_url_port)};
  inet_pton(AF_INET, g_url_host, &sa.sin_addr);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    snprintf(why, wl, "connect %s:%d: %s", g_url_host, g_url_port, strerror(errno));
    close(fd);
    return -1;
  }
  al_autofree char *head = al_strdup_printf(
      "POST %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: GitHub-Hookshot/airlock-forge\r\n"
      "Content-Type: application/json\r\nX-GitHub-Event: %s\r\nX-GitHub-Delivery: %s\r\n"
      "%s%s%sContent-Length: %zu\r\nConnection: close\r\n\r\n",
      g_url_path, g_url_host, g_url_port, event, delivery, sig[0] ? "X-Hub-Signature-256: " : "",
      sig, sig[0] ? "\r\n" : "", strlen(body));
  if (al_write_all(fd, head, strlen(head)) < 0 || al_write_all(fd, body, strlen(body)) < 0) {
    snprintf(why, wl, "write: %s", strerror(errno));
    close(fd);
    return -1;
  }
  char resp[512];
  ssize_t n = read(fd, resp, sizeof resp - 1);
  close(fd);
  int status = 0;
  if (n <= 0 || (resp[n] = '\0', sscanf(resp, "HTTP/1.%*d %d", &status) != 1)) {
    snprintf(why, wl, "no HTTP answer");
    return -1;
  }
  why[0] = '\0';
  return status;
}

static json_t *repo_payload(json_t *repo)
{
  return json_pack("{s:O, s:O, s:O, s:{s:O}, s:b}", "id", json_object_get(repo, "id"), "full_name",
                   json_object_get(repo, "full_name"), "name", json_object_get(repo, "name"),
                   "owner", "login", json_object_get(repo, "owner"), "private",
                   json_is_true(json_object_get(repo, "private")));
}

static json_t *user_payload(const char *login)
{
  json_t *u = forge_user(login);
  return json_pack("{s:s, s:I, s:s}", "login", login, "id",
                   (json_int_t)(u ? json_integer_value(json_object_get(u, "id")) : 1), "type",
                   "User");
}

/* Build the payload of a label or comment event (lock held). Returns the
 * payload or NULL with resp filled. */
static json_t *build(const char *kind, json_t *b, struct forge_resp *resp, char *event)
{
  const char *full = json_string_value(json_object_get(b, "repo"));
  const char *user = json_string_value(json_object_get(b, "user"));
  json_int_t num = json_integer_value(json_object_get(b, "number"));
  const char *sl = full ? strchr(full, '/') : NULL;
  al_autofree char *own = sl ? al_strdup_printf("%.*s", (int)(sl - full), full) : NULL;
  json_t *repo = sl ? forge_repo(own, sl + 1) : NULL;
  json_t *issue = NULL;
  size_t i;
  json_t *v;
  json_array_foreach(g_forge.issues, i, v)
  {
    if (repo && !strcasecmp(json_string_value(json_object_get(v, "repo")), full) &&
        json_integer_value(json_object_get(v, "number")) == num)
      issue = v;
  }
  if (!issue || !user) {
    forge_resp_error(resp, 400, "body must be {repo, number (an existing issue), user, ...}", NULL);
    return NULL;
  }
  json_t *p = json_object();
  if (!strcmp(kind, "label")) {
    const char *label = json_string_value(json_object_get(b, "label"));
    if (!label) {
      forge_resp_error(resp, 400, "body needs label", NULL);
      json_decref(p);
      return NULL;
    }
    json_t *labels = json_object_get(issue, "labels");
    if (!json_is_array(labels)) {
      labels = json_array();
      json_object_set_new(issue, "labels", labels);
    }
    json_array_append_new(labels, json_string(label));
    json_object_set_new(p, "action", json_string("labeled"));
    json_object_set_new(p, "label", json_pack("{s:s, s:s}", "name", label, "color", "ededed"));
    strcpy(event, "issues");
  } else {
    const char *text = json_string_value(json_object_get(b, "body"));
    if (!text) {
      forge_resp_error(resp, 400, "body needs body", NULL);
      json_decref(p);
      return NULL;
    }
    json_int_t id = (json_int_t)g_forge.next_id++;
    char now[32];
    forge_iso8601(forge_now(), now);
    json_array_append_new(g_forge.comments, json_pack("{s:I, s:s, s:I, s:s, s:s, s:s}", "id", id,
                                                      "repo", full, "issue_number", num, "body",
                                                      text, "user", user, "created_at", now));
    json_object_set_new(p, "action", json_string("created"));
    json_object_set_new(
        p, "comment",
        json_pack("{s:I, s:s, s:o}", "id", id, "body", text, "user", user_payload(user)));
    strcpy(event, "issue_comment");
  }
  json_t *labels = json_array();
  json_array_foreach(json_object_get(issue, "labels"), i, v)
      json_array_append_new(labels, json_pack("{s:O}", "name", v));
  json_object_set_new(
      p, "issue",
      json_pack("{s:O, s:O, s:O, s:o, s:o}", "number", json_object_get(issue, "number"), "title",
                json_object_get(issue, "title"), "state", json_object_get(issue, "state"), "labels",
                labels, "user", user_payload(json_string_value(json_object_get(issue, "user")))));
  json_object_set_new(p, "repository", repo_payload(repo));
  json_object_set_new(p, "sender", user_payload(user));
  if (g_forge.n_apps) {
    json_t *inst = forge_installation_for_repo(&g_forge.apps[0], full);
    if (inst)
      json_object_set_new(p, "installation", json_pack("{s:O}", "id", json_object_get(inst, "id")));
  }
  return p;
}

bool forge_webhooks_admin(struct forge_req *rq, struct forge_resp *resp)
{
  if (strncmp(rq->path, "/hooks/", 7) != 0)
    return false;
  const char *what = rq->path + 7;
  if (!strcmp(rq->method, "GET") && !strcmp(what, "deliveries")) {
    pthread_mutex_lock(&g_forge.lock);
    forge_resp_json(resp, 200, json_deep_copy(g_deliveries));
    pthread_mutex_unlock(&g_forge.lock);
    return true;
  }
  if (strcmp(rq->method, "POST") || (strcmp(what, "label") && strcmp(what, "comment"))) {
    forge_resp_error(resp, 404, "Not Found", NULL);
    return true;
  }
  if (!g_url_host) {
    forge_resp_error(resp, 409, "no --webhook-url configured", NULL);
    return true;
  }
  json_t *b = json_loadb(rq->body, rq->body_len, 0, NULL);
  char event[32];
  pthread_mutex_lock(&g_forge.lock);
  json_t *p = json_is_object(b) ? build(what, b, resp, event) : NULL;
  pthread_mutex_unlock(&g_forge.lock);
  json_decref(b);
  if (!p) {
    if (resp->status != 400)
      forge_resp_error(resp, 400, "body must be a JSON object", NULL);
    return true;
  }
  char *body = json_dumps(p, JSON_COMPACT);
  json_decref(p);
  char delivery[40], why[200];
  al_error err;
  if (al_random_hex(delivery, 16, &err) < 0)
    snprintf(delivery, sizeof delivery, "forge-%lld", (long long)forge_now());
  int status = post(event, delivery, body, why, sizeof why);
  free(body);
  pthread_mutex_lock(&g_forge.lock);
  json_array_append_new(g_deliveries, json_pack("{s:s, s:s, s:i, s:s}", "id", delivery, "event",
                                                event, "status", status, "error", why));
  pthread_mutex_unlock(&g_forge.lock);
  forge_resp_json(resp, 200,
                  json_pack("{s:s, s:s, s:i, s:s}", "delivery", delivery, "event", event, "status",
                            status, "error", why));
  return true;
}
