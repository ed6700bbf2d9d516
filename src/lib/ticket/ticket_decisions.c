/* The proxy's decisions in the run record: never lost silently (issue
 * #14). The proxy ends its log with a summary of exact counts
 * (proxy/decisions.h); this says in the record what the lines alone cannot. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "ticket/ticket_internal.h"

size_t tk_decisions_account(struct ticket *t, json_t *decisions, size_t skipped)
{
  json_t *sum = NULL;
  size_t listed_denied = 0;
  for (size_t i = json_array_size(decisions); i-- > 0;) {
    json_t *d = json_array_get(decisions, i);
    const char *ev = json_string_value(json_object_get(d, "event"));
    if (!sum && ev && strcmp(ev, "summary") == 0)
      sum = d;
    if (ev && strcmp(ev, "deny") == 0)
      listed_denied++;
  }
  json_incref(sum);
  for (size_t i = json_array_size(decisions); sum && i-- > 0;)
    if (json_array_get(decisions, i) == sum) {
      json_array_remove(decisions, i); /* its counts go to proxy_decision_counts */
      break;
    }
  json_int_t dropped = (json_int_t)skipped, aggregated = 0;
  bool truncated = t->decisions_truncated || skipped > 0;
  size_t denied = listed_denied;
  if (sum) {
    dropped += json_integer_value(json_object_get(sum, "lines_dropped"));
    aggregated = json_integer_value(json_object_get(sum, "denials_aggregated"));
    truncated = truncated || json_is_true(json_object_get(sum, "capped"));
    denied = (size_t)json_integer_value(json_object_get(sum, "denied"));
    json_object_set_new(
        t->rec, "proxy_decision_counts",
        json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}", "connections",
                  json_object_get(sum, "connections"), "allowed", json_object_get(sum, "allowed"),
                  "denied", json_object_get(sum, "denied"), "failed",
                  json_object_get(sum, "failed"), "denials", json_object_get(sum, "denials")));
  } else if (json_array_size(decisions) > 0) {
    truncated = true; /* the proxy never wrote its closing line: killed, or cut */
    al_warn("the proxy's decisions end without their summary: the proxy did not finish "
            "cleanly, so later decisions may be missing");
  }
  json_decref(sum);
  if (truncated) {
    json_object_set_new(t->rec, "proxy_decisions_truncated", json_true());
    json_object_set_new(t->rec, "proxy_decisions_dropped", json_integer(dropped));
    json_object_set_new(t->rec, "proxy_decisions_aggregated", json_integer(aggregated));
    al_warn("the proxy's decisions in the record are incomplete: %lld line(s) dropped, %lld "
            "denial(s) aggregated (the record's proxy_decision_counts are exact)",
            (long long)dropped, (long long)aggregated);
  }
  return denied;
}
