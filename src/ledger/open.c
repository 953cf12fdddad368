/* SPDX-License-Identifier: MIT */
/* The ledger's handle: its root directory, its schema, its remotes. */
#include "ledger/internal.h"

int ledger_open(int root_fd, const char *root_path, const struct ledger_schema *schema,
		struct ledger **ret, struct error *err)
{
	cleanup_with(ledger_freep) struct ledger *ledger = calloc(1, sizeof(*ledger));
	if (!ledger)
		return error_set(err, ENOMEM, "out of memory");
	ledger->root_fd = -1;
	ledger->schema = schema;
	ledger->durable = true;
	ledger->root_path = strdup(root_path);
	if (!ledger->root_path)
		return error_set(err, ENOMEM, "out of memory");
	ledger->root_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
	if (ledger->root_fd < 0)
		return error_set_errno(err, errno, "ledger of '%s'", root_path);
	*ret = TAKE_PTR(ledger);
	return 0;
}

void ledger_free(struct ledger *ledger)
{
	if (!ledger)
		return;
	for (size_t i = 0; i < ledger->n_remotes; i++)
		if (ledger->remotes[i].ops->free)
			ledger->remotes[i].ops->free(ledger->remotes[i].ctx);
	free(ledger->remotes);
	if (ledger->root_fd >= 0)
		close(ledger->root_fd);
	free(ledger->root_path);
	free(ledger);
}

void ledger_set_durable(struct ledger *ledger, bool durable)
{
	ledger->durable = durable;
}

void ledger_defer_sync(struct ledger *ledger, bool deferred)
{
	ledger->sync_deferred = deferred;
}

const struct ledger_schema *ledger_schema(const struct ledger *ledger)
{
	return ledger->schema;
}
