/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "basic/macro.h"

/* Subcommand entry points: argv[0] is the subcommand's name. Each returns
 * the process exit status. */
int cmd_run(int argc, char **argv);
int cmd_job(int argc, char **argv);
int cmd_dryrun(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_rollback(int argc, char **argv);
int cmd_discard(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_receipts(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_ack(int argc, char **argv);
int cmd_approver(int argc, char **argv);
int cmd_classify(int argc, char **argv);
int cmd_hook(int argc, char **argv);
int cmd_permit(int argc, char **argv);
int cmd_ledger(int argc, char **argv);
/* `ledger push` and `ledger mirror ...` (cmd_mirror.c), from cmd_ledger(). */
int cmd_ledger_remote(int argc, char **argv);
int cmd_install(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_witness(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
/* the hidden `__netproxy` (cmd_netproxy.c) */
int cmd_netproxy(int argc, char **argv);
/* `--since WHEN` (cmd_report.c): a date, a UTC time or an age (2h, 7d), as
 * RFC 3339 UTC with milliseconds in buf; -EINVAL when it is none. */
int report_parse_since(const char *s, char *buf, size_t size);

struct session;
struct store;
/* Opens the command's one session (core/session) over --state-dir (NULL:
 * the default) and the caller's environment; every core entry point the
 * command calls is given it. Returns an exit status, having printed any
 * error. */
int cli_session_open(struct session *s, const char *state_dir);
/* The session's state directory without creating it; *ret (the session's)
 * is NULL when it does not exist. Returns an exit status, having printed any
 * error. */
int cli_open_store(struct session *s, struct store **ret);
/* Reads a line from the controlling terminal with echo off: -ENXIO when
 * there is no terminal. buf is wiped by the caller. */
int cli_read_secret(const char *prompt, char *buf, size_t size);

/* "airlock: <message>" on stderr: the only way airlock reports a problem.
 * The message goes through text_for_terminal(): it may quote a path or an
 * argv the command chose. */
void cli_error(const char *fmt, ...) _printf_(1, 2);
/* printf() for text a human reads that quotes what a command chose (its
 * output, its argv, the paths it made): through text_for_terminal(), so
 * none of it drives the terminal. Machine output (JSON) is printed as is. */
void cli_print(const char *fmt, ...) _printf_(1, 2);

struct option;
/* getopt_long() for a subcommand, whose name is argv[0]: the next option,
 * -1 after the last, or '?' once "NAME: bad option 'X'" is printed (unknown,
 * or missing its value). The first call with an argv starts over. */
int cli_option(int argc, char **argv, const char *shortopts, const struct option *options);
/* False, once "NAME: unexpected argument 'X'" is printed, when operands
 * follow the options. */
bool cli_no_operands(int argc, char **argv);
