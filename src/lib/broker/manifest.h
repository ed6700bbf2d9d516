/* The GitHub App manifests of airlock's two Apps: the run's App (the one
 * the broker leases tokens of, and whose webhooks `airlock serve` takes)
 * and the read-only audit App (config `audit.app`, never leased). A
 * manifest is the JSON that GitHub's "Registering a GitHub App from a
 * manifest" flow posts, as the form field `manifest`, to
 * https://github.com/settings/apps/new (or
 * /organizations/ORG/settings/apps/new); GitHub then redirects to
 * redirect_url?code=CODE and `POST /app-manifests/{code}/conversions`
 * returns the App's id, private key and webhook secret (GitHub REST,
 * Apps: "Create a GitHub App from a manifest").
 *
 * The permissions are exactly what the broker mints (config.h's roles:
 * the config's, or the defaults; al_audit_app_perms for the audit App)
 * plus metadata: read, which GitHub gives every token; never a permission
 * al_perm_never_granted() names. */
#ifndef AL_BROKER_MANIFEST_H
#define AL_BROKER_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>

#include "forge/appconfig.h"
#include "common/error.h"

typedef struct al_app_manifest_opts {
  bool audit;       /* the audit App instead of the run's */
  const char *name; /* the App's name (GitHub: at most 34 characters), or NULL */
  const char
      *url; /* its homepage (required by GitHub), or NULL: the webhook's, else https://github.com */
  const char *webhook_url;  /* run's App only: where `airlock serve` listens (behind TLS), or NULL:
                               no webhook */
  const char *redirect_url; /* where GitHub sends the one-time code, or NULL */
  const al_broker_config *cfg; /* roles from this config, or NULL: the defaults */
} al_app_manifest_opts;

/* Build the manifest: {name, url, description, public: false,
 * default_permissions, and for the run's App with a webhook
 * hook_attributes {url, active: true} and default_events [issues,
 * issue_comment] (serve's triggers, docs/serve.md)}. URLs must be https
 * (http only for localhost and loopback), without controls, spaces or
 * quotes, at most 2048 bytes; a name 1 to 34 printable ASCII characters.
 * Returns 0 with *out (a new reference) or -1 with err naming the option
 * and the rule. */
int al_app_manifest(const al_app_manifest_opts *o, json_t **out, al_error *err);

/* An HTML page with a form that posts `manifest` to GitHub's "new App"
 * page of `owner` (an organization login, or NULL: the signed-in user's
 * account) when its button is pressed; the JSON is HTML-escaped. A new
 * string the caller frees; NULL with err on a malformed owner. */
char *al_app_manifest_html(const json_t *manifest, const char *owner, al_error *err);

#endif
