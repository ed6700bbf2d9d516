/* `runs.runner: kubernetes` (issue #32): one run as the objects of
 * `airlock render kubernetes --run-id`, driven through the API server by a
 * child of the service (`airlock serve kube-run`, runner_kube.h). The
 * child is reaped, stopped, recovered and capped exactly as a local run's
 * `airlock ticket` is (serve.c, outcome.c, recover.c): only what it does
 * differs.
 *
 * What it does, in order:
 *   1 the policy: a sealed one is refused here, with the reason in the
 *     record, before the broker is asked for anything (sealed delivery
 *     into a pod is not built: docs/scale.md);
 *   2 the run's objects rendered (run id from the queue's instance and
 *     row: the same for every attempt of the row, so a new leader's
 *     attempt meets 409 AlreadyExists and adopts what a dead leader made,
 *     never a second Job), each YAML document turned into JSON; the
 *     Namespace is not created (it must be the service's own);
 *   3 ConfigMap, proxy Deployment and Service, NetworkPolicies created
 *     (409: adopted), then the Job run to its end by al_kube_job_run
 *     (create or adopt, watch with relist on 410, delete);
 *   4 the log of airlock's own init container (netpol-probe: the
 *     fail-closed network probe), never the agent's;
 *   5 every other object deleted (ttlSecondsAfterFinished is the Job's
 *     backstop, the rest is deleted on every path that got this far);
 *   6 a completed Job: the ticket's open PR looked up through the broker's
 *     trigger check (its read token never leaves the broker).
 * The run record is this child's own (the supervisor's), written at the
 * end; a child stopped by a signal writes none and the row is interrupted
 * (outcome.c) and re-queued, and the next attempt adopts. */
#include "serve/runner_kube.h"

#include <errno.h>
#include <limits.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/check.h"
#include "common/lazyfyaml.h"
#include "common/util.h"
#include "kube/jobs.h"
#include "kube/kube.h"
#include "policy/policy.h"
#include "render/render.h"
#include "serve/internal.h"
#include "ticket/ticket.h"

#define OBJECTS_MAX 16

int serve_kube_run_id(const char *instance, int64_t row, char *out, size_t cap)
{
  char inst[9];
  size_t n = 0;
  for (const char *p = instance; *p && n < 8; p++)
    if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z'))
      inst[n++] = *p;
  inst[n] = '\0';
  int w = snprintf(out, cap, "s%s-%lld", inst, (long long)row);
  return w > 0 && (size_t)w < cap && w <= 40 ? 0 : -1;
}

void serve_kube_argv(const struct serve *s, int64_t row, const char *target, const char *policy,
                     const char *record, char buf[2][4096], const char **argv)
{
  snprintf(buf[0], 4096, "%lld", (long long)row);
  if (!realpath(s->cfg->source, buf[1]))
    snprintf(buf[1], 4096, "%s", s->cfg->source);
  size_t n = 0;
  argv[n++] = s->airlock;
  argv[n++] = "serve";
  argv[n++] = "kube-run";
  argv[n++] = "-c";
  argv[n++] = buf[1];
  argv[n++] = "--row";
  argv[n++] = buf[0];
  argv[n++] = "--instance";
  argv[n++] = s->instance;
  argv[n++] = "-p";
  argv[n++] = policy;
  argv[n++] = "--record";
  argv[n++] = record;
  argv[n++] = target;
  argv[n] = NULL;
}

/* ---- YAML (the renderer's output) to JSON ------------------------------ */

/* A plain scalar as YAML 1.2's core schema reads it: null, a boolean, an
 * integer, else a string; a quoted one is always a string. */
static json_t *scalar_json(struct fy_node *n)
{
  size_t len = 0;
  const char *s = fy_node_get_scalar(n, &len);
  if (!s)
    return json_null();
  if (fy_node_get_style(n) != FYNS_PLAIN)
    return json_stringn(s, len);
  if ((len == 4 && !memcmp(s, "null", 4)) || (len == 1 && s[0] == '~') || len == 0)
    return json_null();
  if (len == 4 && !memcmp(s, "true", 4))
    return json_true();
  if (len == 5 && !memcmp(s, "false", 5))
    return json_false();
  size_t i = (s[0] == '-') ? 1 : 0;
  bool digits = len > i && len - i < 19;
  for (size_t j = i; digits && j < len; j++)
    digits = s[j] >= '0' && s[j] <= '9';
  if (digits)
    return json_integer(strtoll(s, NULL, 10));
  return json_stringn(s, len);
}

static json_t *node_json(struct fy_node *n, int depth)
{
  if (!n || depth > 32)
    return NULL;
  switch (fy_node_get_type(n)) {
  case FYNT_SCALAR:
    return scalar_json(n);
  case FYNT_SEQUENCE: {
    json_t *a = json_array();
    void *it = NULL;
    struct fy_node *c;
    while ((c = fy_node_sequence_iterate(n, &it))) {
      json_t *v = node_json(c, depth + 1);
      if (!v) {
        json_decref(a);
        return NULL;
      }
      json_array_append_new(a, v);
    }
    return a;
  }
  case FYNT_MAPPING:
  default: {
    json_t *o = json_object();
    void *it = NULL;
    struct fy_node_pair *p;
    while ((p = fy_node_mapping_iterate(n, &it))) {
      size_t klen = 0;
      const char *k = fy_node_get_scalar(fy_node_pair_key(p), &klen);
      json_t *v = k ? node_json(fy_node_pair_value(p), depth + 1) : NULL;
      if (!v) {
        json_decref(o);
        return NULL;
      }
      char *kz = al_strdup_printf("%.*s", (int)klen, k);
      json_object_set_new(o, kz, v);
      free(kz);
    }
    return o;
  }
  }
}

/* The manifests as a JSON array of objects (each document one object). */
static json_t *yaml_docs(const char *text, al_error *err)
{
  struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_JSON_NONE};
  struct fy_parser *fyp = fy_parser_create(&cfg);
  if (!fyp || fy_parser_set_string(fyp, text, strlen(text)) != 0) {
    if (fyp)
      fy_parser_destroy(fyp);
    al_error_set(err, ENOMEM, "runner: the rendered manifests: libfyaml parser");
    return NULL;
  }
  json_t *docs = json_array();
  struct fy_document *d;
  while ((d = fy_parse_load_document(fyp))) {
    json_t *o = node_json(fy_document_root(d), 0);
    fy_parse_document_destroy(fyp, d);
    if (!json_is_object(o)) {
      json_decref(o);
      json_decref(docs);
      fy_parser_destroy(fyp);
      al_error_set(err, EINVAL, "runner: a rendered manifest is not a mapping");
      return NULL;
    }
    json_array_append_new(docs, o);
  }
  fy_parser_destroy(fyp);
  return docs;
}

/* ---- the run ----------------------------------------------------------- */

static const char *str_at(json_t *o, const char *a, const char *b)
{
  json_t *v = json_object_get(o, a);
  return json_string_value(b ? json_object_get(v, b) : v);
}

/* The namespace: kubernetes' (= election.namespace), or the file beside
 * the token (the service account's), as the election reads it. */
static int run_namespace(const al_serve_config *cfg, char *ns, size_t cap, al_error *err)
{
  if (cfg->election_namespace[0]) {
    snprintf(ns, cap, "%s", cfg->election_namespace);
    return 0;
  }
  const char *tf = cfg->election_token_file;
  const char *slash = strrchr(tf, '/');
  char path[600];
  snprintf(path, sizeof path, "%.*s/namespace", (int)(slash ? slash - tf : 0), tf);
  al_autofree char *text = NULL;
  if (al_read_file(path, 256, &text, NULL, err) < 0)
    return al_error_wrap(err, "runner: the namespace (election.namespace is empty)");
  text[strcspn(text, "\r\n")] = '\0';
  snprintf(ns, cap, "%s", text);
  return 0;
}

static void phase(json_t *rec, const char *name, const char *status)
{
  json_t *ph = json_object_get(rec, "phases");
  json_array_append_new(ph, json_pack("{s:s, s:s}", "name", name, "status", status));
}

/* The probe's verdict: its last non-empty line, printable ASCII. */
static void probe_line(const char *log, size_t len, char *out, size_t cap)
{
  out[0] = '\0';
  size_t end = len;
  while (end > 0 && (log[end - 1] == '\n' || log[end - 1] == '\r'))
    end--;
  size_t start = end;
  while (start > 0 && log[start - 1] != '\n')
    start--;
  size_t n = 0;
  for (size_t i = start; i < end && n + 1 < cap; i++)
    out[n++] = (char)((log[i] >= ' ' && log[i] <= '~') ? log[i] : '?');
  out[n] = '\0';
}

/* The Job and its objects: created, run, deleted. Fills rec; returns the
 * exit status (0 the Job completed, 1 otherwise). */
static int run_objects(const al_kube *k, const char *ns, json_t *docs, json_t *rec, char *why,
                       size_t whycap)
{
  json_t *objs = json_object_get(rec, "objects");
  json_t *made[OBJECTS_MAX];
  size_t n_made = 0;
  json_t *job = NULL;
  int rc = 1;
  size_t i;
  json_t *d;
  al_error err = {0};
  json_array_foreach(docs, i, d)
  {
    const char *kind = str_at(d, "kind", NULL), *name = str_at(d, "metadata", "name");
    if (!kind || !name) {
      snprintf(why, whycap, "a rendered object has no kind or name");
      goto done;
    }
    if (!strcmp(kind, "Namespace")) {
      if (strcmp(name, ns) != 0) {
        snprintf(why, whycap, "the rendered Namespace `%s` is not the service's `%s`", name, ns);
        goto done;
      }
      continue; /* the service's own: never created or deleted by a run */
    }
    if (!strcmp(kind, "Job")) {
      job = d;
      continue;
    }
    if (n_made == OBJECTS_MAX) {
      snprintf(why, whycap, "more than %d objects rendered", OBJECTS_MAX);
      goto done;
    }
    char *text = json_dumps(d, JSON_COMPACT);
    int c = text ? al_kube_object_create(k, ns, text, &err)
                 : al_error_set(&err, ENOMEM, "out of memory");
    free(text);
    if (c < 0) {
      snprintf(why, whycap, "%s", err.msg);
      goto done;
    }
    made[n_made++] = d;
    json_array_append_new(objs, json_pack("{s:s, s:s, s:s}", "kind", kind, "name", name, "created",
                                          c == 1 ? "adopted" : "created"));
  }
  if (!job) {
    snprintf(why, whycap, "the rendered objects hold no Job");
    goto done;
  }
  {
    json_t *ads = json_object_get(json_object_get(job, "spec"), "activeDeadlineSeconds");
    uint64_t deadline_ms = (uint64_t)(json_integer_value(ads) > 0 ? json_integer_value(ads) : 3600);
    deadline_ms = (deadline_ms + 120) * 1000; /* the cluster's own deadline ends it first */
    bool probe = false;
    size_t j;
    json_t *ic;
    json_t *podspec =
        json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec");
    json_array_foreach(json_object_get(podspec, "initContainers"), j, ic)
    {
      const char *cn = json_string_value(json_object_get(ic, "name"));
      probe |= cn && !strcmp(cn, "netpol-probe");
    }
    char *text = json_dumps(job, JSON_COMPACT);
    al_kube_job_result res = {0};
    int r =
        text ? al_kube_job_run(k, ns, text, probe ? "netpol-probe" : NULL, deadline_ms, &res, &err)
             : al_error_set(&err, ENOMEM, "out of memory");
    free(text);
    static const char *const phases[] = {"pending", "running", "succeeded", "failed"};
    bool ended = res.job.phase == AL_KJOB_SUCCEEDED || res.job.phase == AL_KJOB_FAILED;
    json_t *jr =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:i, s:i, s:b, s:b, s:s}", "name",
                  str_at(job, "metadata", "name"), "uid", res.job.uid, "phase",
                  phases[res.job.phase], "reason", res.job.reason, "message", res.job.message,
                  "adopted", res.adopted, "relists", res.relists, "watches", res.watches,
                  "timed_out", res.timed_out, "deleted", res.deleted, "pod", res.pod);
    json_object_set_new(jr, "pod_phase", json_string(res.pod_phase));
    json_object_set_new(jr, "pod_reason", json_string(res.pod_reason));
    char verdict[300] = "";
    if (res.log) {
      probe_line(res.log, res.log_len, verdict, sizeof verdict);
      json_object_set_new(jr, "probe", json_string(verdict));
    }
    json_object_set_new(rec, "job", jr);
    al_kube_job_result_free(&res);
    if (r < 0 && !ended) {
      snprintf(why, whycap, "%s", err.msg);
    } else if (res.job.phase == AL_KJOB_SUCCEEDED) {
      rc = 0;
    } else {
      snprintf(why, whycap, "the Job failed: %s%s%s%s%s%s%s%s%s", res.job.reason,
               res.job.message[0] ? ": " : "", res.job.message,
               res.pod_phase[0] ? "; its pod: " : "", res.pod_phase, res.pod_reason[0] ? " (" : "",
               res.pod_reason, res.pod_reason[0] ? ")" : "", verdict[0] ? "; the probe: " : "");
      snprintf(why + strlen(why), whycap - strlen(why), "%s", verdict);
    }
  }
done:
  /* every object this attempt created or adopted, the Job's aside (its
   * runner deleted it), in reverse order */
  for (size_t m = n_made; m-- > 0;) {
    al_error derr = {0};
    const char *kind = str_at(made[m], "kind", NULL), *name = str_at(made[m], "metadata", "name");
    int r = al_kube_object_delete(k, ns, str_at(made[m], "apiVersion", NULL), kind, name, &derr);
    json_t *o = json_array_get(objs, m);
    json_object_set_new(o, "deleted", json_boolean(r == 0));
    if (r < 0)
      json_object_set_new(o, "delete_error", json_string(derr.msg));
  }
  return rc;
}

int al_serve_kube_run(const al_serve_config *cfg, const struct al_serve_kube_args *a, al_error *err)
{
  json_t *rec = json_pack("{s:s, s:s, s:s, s:s, s:[], s:[]}", "runner", "kubernetes", "ticket",
                          a->target, "policy", a->policy, "run_id", "", "phases", "objects");
  char why[900] = "";
  int rc = 1;
  bool refused = false;
  al_policy *p = NULL;
  char repo[200], key[64];
  unsigned long number = 0;
  char run[48];
  al_error e = {0};
  if (serve_kube_run_id(a->instance, a->row, run, sizeof run) < 0) {
    snprintf(why, sizeof why, "instance `%s`, row %lld: no run id", a->instance, (long long)a->row);
    goto out;
  }
  json_object_set_new(rec, "run_id", json_string(run));
  if (al_ticket_parse_target_key(a->target, repo, sizeof repo, &number, key, sizeof key, &e) < 0 ||
      al_policy_load_file(a->policy, &p, &e) < 0 ||
      al_policy_check_for(p, AL_POLICY_FOR_TICKET, repo, &e) < 0) {
    snprintf(why, sizeof why, "%s", e.msg);
    phase(rec, "policy", "failed");
    goto out;
  }
  json_object_set_new(rec, "credentials_mode",
                      json_string(p->credentials.mode == AL_CRED_SEALED ? "sealed" : "env"));
  if (p->credentials.present && p->credentials.mode == AL_CRED_SEALED) {
    /* Fail closed: no token has left the broker (this child asked it for
     * nothing) and none will. */
    snprintf(why, sizeof why,
             "runner: kubernetes cannot run a sealed policy: the sealed forge gateway and the "
             "tokens' delivery into the run's pod (pods/attach) are not built (docs/scale.md); "
             "refused before any token left the broker, no object created. Use runs.runner: "
             "local for sealed runs, or credentials.mode: env");
    refused = true;
    phase(rec, "policy", "failed");
    goto out;
  }
  phase(rec, "policy", "ok");
  {
    char ns[254];
    al_kube k;
    al_autofree char *text = NULL;
    al_autofree char *yaml = NULL;
    if (run_namespace(cfg, ns, sizeof ns, &e) < 0 ||
        al_kube_init(&k, cfg->election_api, cfg->election_token_file, cfg->election_ca_file, 10000,
                     &e) < 0 ||
        al_read_file(a->policy, 1 << 20, &text, NULL, &e) < 0) {
      snprintf(why, sizeof why, "%s", e.msg);
      phase(rec, "kubernetes", "failed");
      goto out;
    }
    json_object_set_new(rec, "namespace", json_string(ns));
    al_render_opts ro = {.policy_text = text, .k8s_namespace = ns, .run_id = run};
    json_t *docs = NULL;
    if (al_render_kubernetes(p, &ro, &yaml, &e) < 0 || !(docs = yaml_docs(yaml, &e))) {
      snprintf(why, sizeof why, "render kubernetes: %s", e.msg);
      phase(rec, "render", "failed");
      goto out;
    }
    phase(rec, "render", "ok");
    /* env mode: the Job names the per-run Secret; this runner creates no
     * Secret (it would put the tokens in etcd), so no token is delivered */
    json_object_set_new(rec, "credentials",
                        json_pack("{s:b, s:s}", "delivered", 0, "why",
                                  "runner: kubernetes delivers no token to the pod: env mode's "
                                  "per-run Secret is not created (it would hold the tokens in "
                                  "etcd) and sealed delivery is not built (docs/scale.md)"));
    rc = run_objects(&k, ns, docs, rec, why, sizeof why);
    json_decref(docs);
    phase(rec, "job", rc == 0 ? "ok" : "failed");
  }
  if (rc == 0 && number) {
    /* the ticket's PR, as the forge lists it (the broker's read token
     * never leaves the broker) */
    al_check_result cr;
    if (al_broker_check(cfg->broker, repo, number, NULL, &cr, &e) == 0 && cr.n_open_prs > 0)
      json_object_set_new(rec, "pull_request",
                          json_pack("{s:s, s:b}", "url", cr.open_prs[0].url, "verified", 1));
    else {
      snprintf(why, sizeof why,
               "the Job completed, but the forge lists no open PR from airlock/%lu-* (%s; "
               "runner: kubernetes delivers no token into the pod: docs/scale.md)",
               number, e.msg[0] ? e.msg : "the broker's trigger check");
      phase(rec, "pull_request", "failed");
      rc = 1;
    }
  }
out:
  if (why[0])
    json_object_set_new(rec, "error", json_string(why));
  if (refused) {
    json_object_set_new(rec, "refused", json_true());
    rc = 3;
  }
  al_policy_free(p);
  char *out = json_dumps(rec, JSON_INDENT(1) | JSON_SORT_KEYS);
  json_decref(rec);
  int w = out ? serve_write_atomic(a->record, out, err) : al_error_set(err, ENOMEM, "record");
  free(out);
  if (w < 0)
    return -1;
  return rc;
}
