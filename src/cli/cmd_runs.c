/* airlock runs [--json] [--limit N] [--dir DIR]
 * airlock show [--json] [--dir DIR] RUN
 * airlock gc [--keep N] [--older-than D] [--dry-run] [--dir DIR]
 * Reading the run records of `airlock ticket` and removing old ones: the
 * options and the printing; the reading, summing up and removing are
 * runs/runs.h's (docs/run-record.md, docs/cli.md). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "common/term.h"
#include "common/util.h"
#include "runs/runs.h"

#define DIR_HELP                                                                                   \
  "  --dir DIR     the record directory (default: $XDG_STATE_HOME/airlock/runs, else\n"            \
  "                ~/.local/state/airlock/runs, where `airlock ticket` writes them)\n"

static void runs_usage(FILE *out)
{
  fprintf(out, "usage: airlock runs [--json] [--limit N] [--dir DIR]\n"
               "\n"
               "The recent runs of `airlock ticket`, newest first (by when the record was\n"
               "written): id, start time, ticket, result (exit status), the verified pull\n"
               "request, denials (proxy denials + gateway refusals). A file that is not a\n"
               "readable record is listed with the reason. Text from the records is escaped.\n"
               "  --json        a JSON array of {id, started_at, target, exit_status, result,\n"
               "                pull_request, denials, duration_ms, file, error}\n"
               "  --limit N     the N newest only (default 20; 0: all)\n" DIR_HELP "\n"
               "Exit status: 0 listed (also when there are none); 1 the directory cannot be\n"
               "read; 2 usage.\n");
}

static void show_usage(FILE *out)
{
  fprintf(out, "usage: airlock show [--json] [--dir DIR] RUN\n"
               "\n"
               "One run: its phases with their times, the proxy's and the gateway's decisions\n"
               "grouped by host and rule with counts, each refusal of the gateway, the pull\n"
               "request, the review notes and the revocation of each token. RUN is a run id,\n"
               "a unique prefix of one (at least 4 hex digits) in the record directory, or a\n"
               "path to a record. Text from the record is escaped.\n"
               "  --json        print the record itself (JSON, non-ASCII escaped)\n" DIR_HELP "\n"
               "Exit status: 0 shown; 1 no such run, or not a run record; 2 usage (also a RUN\n"
               "that is neither an id, a prefix of one nor a path).\n");
}

static void gc_usage(FILE *out)
{
  fprintf(out, "usage: airlock gc [--keep N] [--older-than DURATION] [--dry-run] [--dir DIR]\n"
               "\n"
               "Remove old run records. A record is removed when it is not among the N newest\n"
               "(--keep) and was written more than DURATION ago (--older-than: 7d, 12h, 30m);\n"
               "with one of the two, that one alone decides. Only run records are removed:\n"
               "files with a record's name (16 hex digits, or serve's ROW-ATTEMPT, then .json)\n"
               "that are regular files holding a record (schema airlock.run-record/1 and a\n"
               "run id); any other file, symlink or malformed record is kept and named.\n"
               "  --dry-run     say what would be removed, remove nothing\n" DIR_HELP "\n"
               "Exit status: 0 done; 1 the directory cannot be read or a file could not be\n"
               "removed; 2 usage.\n");
}

static const struct option common_opts[] = {{"json", no_argument, NULL, 'j'},
                                            {"limit", required_argument, NULL, 'n'},
                                            {"dir", required_argument, NULL, 'd'},
                                            {"keep", required_argument, NULL, 'k'},
                                            {"older-than", required_argument, NULL, 'o'},
                                            {"dry-run", no_argument, NULL, 'N'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};

struct opts {
  bool json, dry_run, has_keep, has_older;
  uint64_t limit, keep, older_ms;
  const char *dir;
  char dirbuf[4096];
};

/* Parse the options `allowed` (short letters) of common_opts. Returns -1
 * to go on, else the exit status. */
static int parse(int argc, char **argv, const char *allowed, void (*usage)(FILE *), struct opts *o)
{
  int c;
  optind = 0;
  while ((c = al_cli_getopt(argc, argv, "jn:d:k:o:Nh", common_opts)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    if (c == '?')
      return al_cli_usage_error(NULL);
    if (!strchr(allowed, c))
      return al_cli_usage_error("option `%s` is not one of this command's", argv[optind - 1]);
    switch (c) {
    case 'j':
      o->json = true;
      break;
    case 'N':
      o->dry_run = true;
      break;
    case 'd':
      o->dir = optarg;
      break;
    case 'n':
      if (al_cli_uint("--limit", optarg, 0, 1000000, &o->limit) != 0)
        return AL_EXIT_USAGE;
      break;
    case 'k':
      if (al_cli_uint("--keep", optarg, 0, 1000000, &o->keep) != 0)
        return AL_EXIT_USAGE;
      o->has_keep = true;
      break;
    case 'o': {
      const char *why;
      if (al_parse_duration_ms(optarg, &o->older_ms, &why) < 0)
        return al_cli_usage_error("--older-than `%s`: %s", optarg, why);
      o->has_older = true;
      break;
    }
    default:
      return al_cli_usage_error(NULL);
    }
  }
  if (!o->dir) {
    al_error err = {0};
    if (al_runs_default_dir(o->dirbuf, sizeof o->dirbuf, false, &err) < 0) {
      al_cli_error("%s", err.msg);
      return AL_EXIT_FAILED;
    }
    o->dir = o->dirbuf;
  }
  return -1;
}

static int runs_main(int argc, char **argv)
{
  struct opts o = {.limit = 20};
  int r = parse(argc, argv, "jnd", runs_usage, &o);
  if (r >= 0)
    return r;
  if (al_cli_max_operands(argc, argv, optind, 0) != 0)
    return AL_EXIT_USAGE;
  al_run_entry *v = NULL;
  size_t n = 0;
  al_error err = {0};
  if (al_runs_list(o.dir, &v, &n, &err) < 0) {
    al_cli_error("%s", err.msg);
    return AL_EXIT_FAILED;
  }
  size_t shown = o.limit && o.limit < n ? (size_t)o.limit : n;
  r = al_runs_print_list(o.dir, v, n, shown, o.json, stdout);
  free(v);
  return r < 0 ? AL_EXIT_FAILED : AL_EXIT_OK;
}

static int show_main(int argc, char **argv)
{
  struct opts o = {0};
  int r = parse(argc, argv, "jd", show_usage, &o);
  if (r >= 0)
    return r;
  if (optind >= argc)
    return al_cli_usage_error("which run? give a run id, a prefix of one or a path");
  if (al_cli_max_operands(argc, argv, optind, 1) != 0)
    return AL_EXIT_USAGE;
  al_error err = {0};
  if (al_runs_ref_check(argv[optind], &err) < 0)
    return al_cli_usage_error("%s", err.msg);
  al_autofree char *path = NULL;
  json_t *rec = NULL;
  if (al_runs_resolve(o.dir, argv[optind], &path, &err) < 0 ||
      al_run_record_loadat(AT_FDCWD, path, &rec, NULL, &err) < 0) {
    al_cli_error("%s", err.msg);
    return AL_EXIT_FAILED;
  }
  if (o.json) {
    char *text = json_dumps(rec, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    if (text)
      printf("%s\n", text);
    free(text);
    json_decref(rec);
    return text ? AL_EXIT_OK : AL_EXIT_FAILED;
  }
  al_run_show(rec, path, stdout);
  json_decref(rec);
  return AL_EXIT_OK;
}

static void gc_report(void *ctx, const char *what, const char *name, const char *why)
{
  (void)ctx;
  al_autofree char *n = al_term_escape_line(name);
  al_autofree char *w = al_term_escape_line(why);
  printf("%-16s %s: %s\n", what, n, w);
}

static int gc_main(int argc, char **argv)
{
  struct opts o = {0};
  int r = parse(argc, argv, "kodN", gc_usage, &o);
  if (r >= 0)
    return r;
  if (al_cli_max_operands(argc, argv, optind, 0) != 0)
    return AL_EXIT_USAGE;
  if (!o.has_keep && !o.has_older)
    return al_cli_usage_error("give --keep N, --older-than DURATION or both");
  al_runs_gc_opts g = {.has_keep = o.has_keep,
                       .keep = (size_t)o.keep,
                       .has_older_than = o.has_older,
                       .older_than_ms = o.older_ms,
                       .dry_run = o.dry_run,
                       .now = time(NULL)};
  al_runs_gc_result res;
  al_error err = {0};
  int rc = al_runs_gc(o.dir, &g, gc_report, NULL, &res, &err);
  al_autofree char *dir = al_term_escape_line(o.dir);
  struct stat st;
  /* a mistyped --dir reads as an empty directory: say it is not there */
  bool absent = rc == 0 && stat(o.dir, &st) < 0 && errno == ENOENT;
  printf("%s: %zu record(s) %s, %zu kept, %zu other file(s) kept (not run records)%s\n", dir,
         res.removed, o.dry_run ? "would be removed" : "removed", res.kept, res.not_records,
         absent ? "; no such directory" : "");
  if (rc < 0) {
    al_cli_error("%s", err.msg);
    return AL_EXIT_FAILED;
  }
  return AL_EXIT_OK;
}

int cmd_runs(int argc, char **argv)
{
  al_cli_init("runs", runs_usage);
  return runs_main(argc, argv);
}

int cmd_show(int argc, char **argv)
{
  al_cli_init("show", show_usage);
  return show_main(argc, argv);
}

int cmd_gc(int argc, char **argv)
{
  al_cli_init("gc", gc_usage);
  return gc_main(argc, argv);
}
