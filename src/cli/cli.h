/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdio.h>

#include "basic/macro.h"

/* Subcommand entry points: argv[0] is the subcommand's name. Each returns
 * the process exit status. */
int cmd_run(int argc, char **argv);
int cmd_job(int argc, char **argv);
int cmd_receipts(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

/* "airlock: <message>" on stderr: the only way airlock reports a problem. */
void cli_error(const char *fmt, ...) _printf_(1, 2);
