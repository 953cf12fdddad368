/* SPDX-License-Identifier: MIT */
#include "core/agents/agenthost.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/macro.h"
#include "basic/path.h"

/* The rows, one file each. */
extern const struct agent_host agenthost_claude;
extern const struct agent_host agenthost_codex;
extern const struct agent_host agenthost_gemini;
extern const struct agent_host agenthost_copilot;

/* The table. Its order is the order of usage lines and messages
 * ("claude, codex or gemini") and of the protected and hidden paths. */
static const struct agent_host *const agenthost_table[] = {
	&agenthost_claude,
	&agenthost_codex,
	&agenthost_gemini,
	&agenthost_copilot,
};

_Static_assert(ARRAY_SIZE(agenthost_table) <= AGENTHOST_MAX, "AGENTHOST_MAX is too small");

size_t agenthost_count(void)
{
	return ARRAY_SIZE(agenthost_table);
}

const struct agent_host *agenthost_at(size_t i)
{
	return i < ARRAY_SIZE(agenthost_table) ? agenthost_table[i] : NULL;
}

const struct agent_host *agenthost_find(const char *s)
{
	for (size_t i = 0; s && i < ARRAY_SIZE(agenthost_table); i++)
		if (strcmp(s, agenthost_table[i]->name) == 0)
			return agenthost_table[i];
	return NULL;
}

/* The table's names (display: the display names) joined into buf: with
 * "|" (bars), else ", " and a last " or ". */
static void agenthost_join(char *buf, size_t size, bool bars, bool display)
{
	size_t used = 0, n = ARRAY_SIZE(agenthost_table);

	for (size_t i = 0; i < n; i++) {
		const char *sep = i == 0 ? "" : bars ? "|" : i + 1 == n ? " or " : ", ";
		used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s", sep,
					 display ? agenthost_table[i]->display
						 : agenthost_table[i]->name);
	}
}

const char *agenthost_names(bool bars)
{
	static char list[2][256];
	char *buf = list[bars];

	if (!buf[0])
		agenthost_join(buf, sizeof(list[0]), bars, false);
	return buf;
}

const char *agenthost_displays(void)
{
	static char list[256];

	if (!list[0])
		agenthost_join(list, sizeof(list), false, true);
	return list;
}

int agenthost_from_string(const char *s, const struct agent_host **ret, struct error *err)
{
	*ret = agenthost_find(s);
	if (!*ret)
		return error_set(err, EINVAL, "unknown host '%.100s' (%s)", s, agenthost_names(false));
	return 0;
}

bool agenthost_tool_in(const char *const *names, const char *tool)
{
	for (size_t i = 0; tool && names && names[i]; i++)
		if (strcmp(names[i], tool) == 0)
			return true;
	return false;
}

char *agenthost_path(const struct agent_host *host, enum agenthost_base base, const char *rel,
		     const char *home, const char *host_home)
{
	switch (base) {
	case AGENTHOST_BASE_PROJECT:
		return NULL;
	case AGENTHOST_BASE_USER:
		return home && home[0] == '/' ? path_join(home, rel) : NULL;
	case AGENTHOST_BASE_HOST_HOME:
		if (host->home_env && host_home && host_home[0] == '/')
			return path_join(host_home, rel);
		if (home && home[0] == '/' && host->home_dir) {
			cleanup_free char *dir = path_join(home, host->home_dir);
			return dir ? path_join(dir, rel) : NULL;
		}
		return NULL;
	case AGENTHOST_BASE_SYSTEM:
		return strdup(rel);
	}
	return NULL;
}

int agenthost_read_payload(const struct agent_host *host, json_t *payload, json_t **ret,
			   struct error *err)
{
	if (!host->payload) {
		*ret = json_incref(payload);
		return 0;
	}
	if (host->payload(payload, ret, err) < 0)
		return error_prefix(err, "%s's payload", host->display);
	if (!json_is_object(*ret)) {
		json_decref(*ret);
		*ret = NULL;
		return error_set(err, EINVAL, "%s's payload is not one airlock reads", host->display);
	}
	return 0;
}

void agenthost_exit_unknown(struct agent_exit *ret, bool failed, const char *why)
{
	*ret = (struct agent_exit){ .kind = AGENT_EXIT_UNKNOWN, .known_failed = failed, .why = why };
}

bool agenthost_reply_refuse_tool(const struct agent_decision *d, struct agent_reply *ret)
{
	if (!d->block || d->event == AGENT_EVENT_STOP)
		return false;
	*ret = (struct agent_reply){ .stderr_text = d->message, .exit_status = 2 };
	return true;
}

const char *agenthost_event_name(const struct agent_decision *d, const char *pre, const char *post,
				 const char *stop)
{
	if (d->event_name && d->event_name[0])
		return d->event_name;
	return d->event == AGENT_EVENT_PRE_TOOL	   ? pre
	       : d->event == AGENT_EVENT_POST_TOOL ? post
						   : stop;
}
