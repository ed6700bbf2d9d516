/* The files of a pull request as GitHub lists them (pullfiles.c). */
#ifndef FORGE_PULLFILES_H
#define FORGE_PULLFILES_H

#include "forge.h"

/* The diff-entry array of base...head in repository `full` (REST › Pulls ›
 * "List pull requests files"): renames detected (status "renamed",
 * previous_filename), `sha` the blob id, `patch` absent for binary files,
 * URLs under api_base ("https://api/repos/o/r") and web_base
 * ("https://git/o/r"). NULL when git fails. Caller owns the result. */
json_t *forge_pull_files(const char *full, const char *base, const char *head, const char *api_base,
                         const char *web_base);

#endif
